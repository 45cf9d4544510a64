// swift-tools-version:6.0
// Pier: the backend a mobile app docks at. Every target names its folder explicitly, so the
// folder tree is the architecture: Client/ is the package apps add (PierClient and the wire
// types, PierModels, which the server shares), Shared/ holds the libraries every service stands
// on, Services/ one plugin library plus one thin executable per service.
import PackageDescription

/// Debian's C libraries, wrapped once; only the Shared modules import them.
func system(_ name: String, pkgConfig: String, apt: [String]) -> Target {
    .systemLibrary(
        name: name, path: "Shared/System/\(name)", pkgConfig: pkgConfig,
        providers: [.apt(apt)])
}

/// The wire types and the client, from the package apps add.
let models: Target.Dependency = .product(name: "PierModels", package: "Client")
let client: Target.Dependency = .product(name: "PierClient", package: "Client")

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "Pier",
    // The client's platforms (`pier` is built on it). The services and the gateway run on Linux.
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        .executable(name: "pier-auth", targets: ["pier-auth"]),
        .executable(name: "pier-feedback", targets: ["pier-feedback"]),
        .executable(name: "pier-subscriptions", targets: ["pier-subscriptions"]),
        .executable(name: "pier-console", targets: ["pier-console"]),
        .executable(name: "pier-gateway", targets: ["pier-gateway"]),
        .library(name: "FeedbackService", targets: ["FeedbackService"]),
        .library(name: "SubscriptionsService", targets: ["SubscriptionsService"]),
        .library(name: "AuthService", targets: ["AuthService"]),
        .library(name: "PierService", targets: ["PierService"]),
        // What a team's own package builds a plugin with (docs/plugins.md): hosting, HTTP, the
        // database, callers and their roles, the audit and event logs, HTML for console pages.
        .library(
            name: "PierPlugin",
            targets: [
                "PierService", "PierHTTP", "PierPostgres", "PierIdentity", "PierAudit", "PierEvents", "PierHTML", "PierJSON",
                "PierRuntime",
            ]),
        // A gateway hosting Pier's plugins and a team's: `Gateway.main(plugins: Gateway.builtIn + […])`.
        .library(name: "Gateway", targets: ["Gateway"]),
        .executable(name: "pier", targets: ["pier"]),
    ],
    // Apps add Client/ alone (README, "For app developers"); a path, never fetched.
    dependencies: [.package(path: "Client")],
    targets: [
        system("CPostgres", pkgConfig: "libpq", apt: ["libpq-dev"]),
        system("COpenSSL", pkgConfig: "libcrypto", apt: ["libssl-dev"]),
        system("CMicroHTTPD", pkgConfig: "libmicrohttpd", apt: ["libmicrohttpd-dev"]),
        system("CArgon2", pkgConfig: "libargon2", apt: ["libargon2-dev"]),
        system("CCurl", pkgConfig: "libcurl", apt: ["libcurl4-openssl-dev"]),
        system("CQREncode", pkgConfig: "libqrencode", apt: ["libqrencode-dev"]),
        system("CCBOR", pkgConfig: "libcbor", apt: ["libcbor-dev"]),
        // glibc's epoll and eventfd, which Swift's Glibc module leaves out (headers only).
        .systemLibrary(name: "CSystem", path: "Shared/System/CSystem"),

        .target(name: "PierRuntime", dependencies: ["CSystem"], path: "Shared/Runtime", swiftSettings: strict),
        .target(name: "PierJSON", dependencies: [models, "PierRuntime"], path: "Shared/JSON", swiftSettings: strict),
        // The API document, generated from the endpoints' definitions and their types.
        .target(name: "PierDocument", dependencies: [models], path: "Shared/Document", swiftSettings: strict),
        .executableTarget(name: "pier", dependencies: [client, models], path: "Tools/pier", swiftSettings: strict),
        .target(
            name: "PierCrypto", dependencies: ["COpenSSL", "CArgon2", "PierJSON", "PierRuntime"],
            path: "Shared/Crypto", swiftSettings: strict),
        .target(
            name: "PierPostgres", dependencies: ["CPostgres", "PierJSON", "PierRuntime"],
            path: "Shared/Postgres", swiftSettings: strict),
        .target(
            name: "PierHTTP", dependencies: ["CMicroHTTPD", "CCurl", "PierJSON", models, "PierRuntime"],
            path: "Shared/HTTP", swiftSettings: strict),
        .target(name: "PierQR", dependencies: ["CQREncode"], path: "Shared/QR", swiftSettings: strict),
        .target(name: "PierCBOR", dependencies: ["CCBOR"], path: "Shared/CBOR", swiftSettings: strict),
        .target(name: "PierMail", dependencies: ["CCurl", "PierRuntime"], path: "Shared/Mail", swiftSettings: strict),
        .target(name: "PierHTML", dependencies: [models], path: "Shared/HTML", swiftSettings: strict),
        // What a plugin stands on: the event log, who is calling, the host, and the features
        // every service shares (audit log, data export, app association).
        .target(
            name: "PierEvents", dependencies: ["PierHTTP", "PierJSON", "PierPostgres", models, "PierRuntime"],
            path: "Shared/Events", swiftSettings: strict),
        .target(
            name: "PierIdentity",
            dependencies: ["PierEvents", "PierHTTP", "PierJSON", "PierPostgres", "PierCrypto", models, "PierRuntime"],
            path: "Shared/Identity", swiftSettings: strict),
        .target(
            name: "PierService",
            dependencies: [
                "PierEvents", "PierIdentity", "PierHTTP", "PierHTML", "PierJSON", "PierPostgres", "PierCrypto", models,
                "PierRuntime",
            ],
            path: "Shared/Service", swiftSettings: strict),
        .target(
            name: "PierAudit", dependencies: ["PierIdentity", "PierHTTP", "PierPostgres", models, "PierRuntime"],
            path: "Shared/Audit", swiftSettings: strict),
        .target(
            name: "PierExport", dependencies: ["PierService", "PierIdentity", "PierHTTP", "PierJSON", models],
            path: "Shared/Export", swiftSettings: strict),
        .target(
            name: "PierAppAssociation", dependencies: ["PierService", "PierCrypto", "PierJSON"],
            path: "Shared/AppAssociation", swiftSettings: strict),

        .target(
            name: "AuthService",
            dependencies: [
                "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport", "PierAppAssociation", "PierHTML",
                "PierHTTP", "PierJSON", "PierMail", "PierPostgres", "PierCrypto", "PierQR", "PierCBOR", models,
                "PierRuntime",
            ],
            path: "Services/Auth",
            exclude: ["Main"], sources: ["Sources"],
            resources: [
                .embedInCode("Migrations"), .embedInCode("common-passwords.txt"),
                .embedInCode("Resources/AppleAppAttestationRootCA.pem"),
            ],
            swiftSettings: strict),
        .executableTarget(
            name: "pier-auth", dependencies: ["AuthService"],
            path: "Services/Auth/Main", swiftSettings: strict),

        .target(
            name: "FeedbackService",
            dependencies: [
                "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport", "PierAppAssociation", "PierHTML",
                "PierHTTP", "PierJSON", "PierPostgres", "PierCrypto", models, "PierRuntime",
            ],
            path: "Services/Feedback",
            exclude: ["Main"], sources: ["Sources"], resources: [.embedInCode("Migrations")],
            swiftSettings: strict),
        .executableTarget(
            name: "pier-feedback", dependencies: ["FeedbackService"],
            path: "Services/Feedback/Main", swiftSettings: strict),

        .target(
            name: "SubscriptionsService",
            dependencies: [
                "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport", "PierAppAssociation", "PierHTML",
                "PierHTTP", "PierJSON", "PierPostgres", "PierCrypto", models, "PierRuntime",
            ],
            path: "Services/Subscriptions",
            exclude: ["Main"], sources: ["Sources"],
            resources: [.embedInCode("Migrations"), .embedInCode("Resources/AppleRootCA-G3.pem")],
            swiftSettings: strict),
        .executableTarget(
            name: "pier-subscriptions", dependencies: ["SubscriptionsService"],
            path: "Services/Subscriptions/Main", swiftSettings: strict),

        .target(
            name: "ConsoleService",
            dependencies: [
                "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport", "PierAppAssociation", "PierHTML",
                "PierHTTP", "PierJSON", "PierPostgres", "PierCrypto", models, "PierRuntime",
            ],
            path: "Services/Console",
            exclude: ["Main"], sources: ["Sources"],
            resources: [
                .embedInCode("Migrations"), .embedInCode("Resources/console.css"), .embedInCode("Resources/console.js"),
                .embedInCode("Resources/favicon.svg"),
            ],
            swiftSettings: strict),
        .executableTarget(
            name: "pier-console", dependencies: ["ConsoleService"],
            path: "Services/Console/Main", swiftSettings: strict),

        .target(
            name: "Gateway",
            dependencies: [
                "AuthService", "FeedbackService", "SubscriptionsService", "ConsoleService", "PierService", "PierEvents",
                "PierIdentity", "PierAudit", "PierExport", "PierAppAssociation", "PierHTML", "PierHTTP",
                "PierPostgres", models, "PierRuntime", "PierDocument",
            ],
            path: "Services/Gateway", exclude: ["Main"], sources: ["Sources"], swiftSettings: strict),
        .executableTarget(
            name: "pier-gateway", dependencies: ["Gateway"], path: "Services/Gateway/Main",
            swiftSettings: strict),

        // What a test of any module stands on, linking none of Pier's: waiting for a condition,
        // log lines, ports, a real SMTP server.
        .target(name: "PierTestBasics", path: "Tests/Basics", swiftSettings: strict),
        // Tests of the modules above the runtime: a database per suite, clients, servers playing
        // other parties.
        .target(
            name: "PierTestSupport",
            dependencies: [
                "PierTestBasics", "PierPostgres", "PierHTTP", "PierRuntime", models, "PierCrypto", "PierCBOR", "COpenSSL",
            ],
            path: "Tests/Support", swiftSettings: strict),
        // Services hosted for real (one, or the whole stack in the gateway): what service tests stand on.
        .target(
            name: "PierServiceTestSupport",
            dependencies: [
                "PierTestSupport", "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport", "PierAppAssociation",
                "PierHTML", "PierHTTP", "PierPostgres", "PierRuntime", "PierCrypto", "PierCBOR", "Gateway", "COpenSSL",
            ],
            path: "Tests/ServiceSupport", swiftSettings: strict),
        .executableTarget(
            name: "pier-kdf-bench", dependencies: ["PierCrypto", "PierRuntime"], path: "bench/KDF",
            swiftSettings: strict),
        .executableTarget(
            name: "pier-pq-bench", dependencies: ["CPostgres", "PierPostgres", "PierRuntime"], path: "bench/PQ",
            swiftSettings: strict),

        // A test target per module, linking only what it tests (and the support at its level).
        .testTarget(
            name: "RuntimeTests", dependencies: ["PierRuntime", "PierTestBasics"], path: "Tests/RuntimeTests",
            swiftSettings: strict),
        .testTarget(
            name: "JSONTests", dependencies: ["PierJSON", models, "PierRuntime"], path: "Tests/JSONTests",
            swiftSettings: strict),
        .testTarget(
            name: "CryptoTests", dependencies: ["PierCrypto", "PierQR", "PierCBOR"], path: "Tests/CryptoTests",
            swiftSettings: strict),
        .testTarget(
            name: "MailTests", dependencies: ["PierMail", "PierRuntime", "PierTestBasics"], path: "Tests/MailTests",
            swiftSettings: strict),
        .testTarget(
            name: "PostgresTests", dependencies: ["PierPostgres", "PierRuntime", "PierTestSupport"],
            path: "Tests/PostgresTests", swiftSettings: strict),
        .testTarget(
            name: "HTTPTests", dependencies: ["PierHTTP", "PierJSON", models, "PierRuntime", "PierTestSupport"],
            path: "Tests/HTTPTests",
            swiftSettings: strict),
        .testTarget(
            name: "ServiceTests",
            dependencies: [
                "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport", "PierAppAssociation", "PierHTML",
                "PierHTTP", "PierJSON", "PierPostgres", "PierCrypto", models, "PierRuntime",
                "PierTestSupport",
            ],
            path: "Tests/ServiceTests", swiftSettings: strict),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "Gateway", "FeedbackService", "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport",
                "PierAppAssociation", "PierHTML", "PierHTTP", models, "PierPostgres", "PierRuntime",
                "PierTestSupport", "PierServiceTestSupport", "PierDocument",
            ],
            path: "Tests/GatewayTests", swiftSettings: strict),
        .testTarget(
            name: "ConsoleTests",
            dependencies: [
                "ConsoleService", "Gateway", "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport",
                "PierAppAssociation", "PierHTML", "PierHTTP", models, "PierPostgres", "PierRuntime",
                "PierTestSupport", "PierServiceTestSupport",
            ],
            path: "Tests/ConsoleTests", swiftSettings: strict),
        .testTarget(
            name: "FeedbackTests",
            dependencies: [
                "FeedbackService", "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport", "PierAppAssociation",
                "PierHTML", "PierCrypto", "PierHTTP", "PierJSON", models, "PierPostgres",
                "PierRuntime", "PierTestSupport", "PierServiceTestSupport",
            ],
            path: "Tests/FeedbackTests", swiftSettings: strict),
        .testTarget(
            name: "SubscriptionsTests",
            dependencies: [
                "SubscriptionsService", "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport",
                "PierAppAssociation", "PierHTML", "PierCrypto", "PierHTTP", "PierJSON", models, "PierPostgres",
                "PierRuntime", "PierTestSupport", "PierServiceTestSupport", "COpenSSL",
            ],
            path: "Tests/SubscriptionsTests", resources: [.embedInCode("Fixtures")], swiftSettings: strict),
        .testTarget(
            name: "AuthTests",
            dependencies: [
                "AuthService", "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport", "PierAppAssociation",
                "PierHTML", "PierCrypto", "PierCBOR", "PierHTTP", models, "PierPostgres", "PierRuntime",
                "PierTestSupport", "PierServiceTestSupport",
            ],
            path: "Tests/AuthTests", swiftSettings: strict),
        .testTarget(
            name: "ClientTests",
            dependencies: [
                client, "Gateway", "PierHTTP", models, "PierPostgres", "PierRuntime", "PierCrypto",
                "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport", "PierAppAssociation", "PierHTML",
                "PierTestSupport", "PierServiceTestSupport",
            ],
            path: "Tests/ClientTests", swiftSettings: strict),
    ]
)
