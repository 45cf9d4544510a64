// swift-tools-version:6.0
// Pier: the backend a mobile app docks at, and the one package apps and plugins add by its
// repository's address (README, "For app developers"). Every target names its folder explicitly, so
// the folder tree is the architecture: Client/ is what apps link (PierClient and the wire types,
// PierModels, which the server shares: Foundation only, so an app's build compiles those two
// modules and no server module or C library), Shared/ holds the libraries every service stands
// on, Services/ one plugin library plus one thin executable per service, Plugins/ remote config,
// a plugin written on the public plugin products alone.
import PackageDescription

/// Debian's C libraries, wrapped once; only the Shared modules import them.
func system(_ name: String, pkgConfig: String, apt: [String]) -> Target {
    .systemLibrary(
        name: name, path: "Shared/System/\(name)", pkgConfig: pkgConfig,
        providers: [.apt(apt)])
}

/// The wire types and the client: what apps link.
let models: Target.Dependency = "PierModels"
let client: Target.Dependency = "PierClient"

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

/// What a team's own package builds a plugin with (docs/plugins.md), the product `PierPlugin`:
/// hosting, HTTP, the database, callers and their roles, the audit and event logs, HTML for
/// console pages, the wire types and `Endpoint`, and the module `PierPlugin` that re-exports them
/// all (one import). Remote config and the leaderboard stand on these alone.
let pluginModules = [
    "PierService", "PierLive", "PierHTTP", "PierPostgres", "PierIdentity", "PierAudit", "PierEvents", "PierHTML", "PierJSON",
    "PierRuntime",
    "PierModels",
]
let pluginKit = pluginModules + ["PierPlugin"]

let package = Package(
    name: "Pier",
    // The client's platforms (`pier` is built on it). The services and the gateway run on Linux.
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        // What an app links: `import PierClient` gives the client and every type of its calls
        // (it re-exports PierModels); remote config's client beside it.
        .library(name: "PierClient", targets: ["PierClient"]),
        .library(name: "PierModels", targets: ["PierModels"]),
        .library(name: "RemoteConfigClient", targets: ["RemoteConfigClient"]),
        .library(name: "RemoteConfigAPI", targets: ["RemoteConfigAPI"]),
        .executable(name: "pier-auth", targets: ["pier-auth"]),
        .executable(name: "pier-feedback", targets: ["pier-feedback"]),
        .executable(name: "pier-subscriptions", targets: ["pier-subscriptions"]),
        .executable(name: "pier-console", targets: ["pier-console"]),
        .executable(name: "pier-gateway", targets: ["pier-gateway"]),
        .library(name: "FeedbackService", targets: ["FeedbackService"]),
        .library(name: "SubscriptionsService", targets: ["SubscriptionsService"]),
        .library(name: "AuthService", targets: ["AuthService"]),
        .library(name: "PierService", targets: ["PierService"]),
        // What a team's own package builds a plugin with (`pluginKit` above).
        .library(name: "PierPlugin", targets: pluginKit),
        // A gateway hosting Pier's plugins and a team's: `Gateway.main(plugins: Gateway.builtIn + […])`.
        .library(name: "Gateway", targets: ["Gateway"]),
        .executable(name: "pier", targets: ["pier"]),
        // Remote config: the plugin, run alone, and its command line (`pier config`).
        .library(name: "RemoteConfig", targets: ["RemoteConfig"]),
        .executable(name: "pier-remote-config", targets: ["pier-remote-config"]),
        .executable(name: "pier-config", targets: ["pier-config"]),
        // A plugin's tests: Pier's plugins and the team's hosted on a test database, called with
        // PierClient as users, staff and nobody (docs/plugins.md, "Testing a plugin").
        .library(name: "PierPluginTesting", targets: ["PierPluginTesting", "PierTestBasics"]),
    ],
    targets: [
        // What apps link: Foundation and nothing else.
        .target(name: "PierModels", path: "Client/Sources/PierModels", swiftSettings: strict),
        .target(name: "PierClient", dependencies: ["PierModels"], path: "Client/Sources/PierClient", swiftSettings: strict),

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
        // Live streams: each signed-in app's server-sent events, woken by the event log.
        .target(
            name: "PierLive",
            dependencies: ["PierEvents", "PierIdentity", "PierHTTP", "PierJSON", "PierPostgres", "PierCrypto", "PierRuntime"],
            path: "Shared/Live", swiftSettings: strict),
        // Hosting: the plugin contract, the host, the command line, configuration.
        .target(
            name: "PierService",
            dependencies: [
                "PierEvents", "PierIdentity", "PierHTTP", "PierHTML", "PierJSON", "PierPostgres", "PierCrypto", models,
                "PierRuntime", "PierLive",
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
                "PierRuntime", "PierLive",
            ],
            path: "Services/Auth",
            exclude: ["Main"], sources: ["Sources"],
            resources: [
                .embedInCode("Migrations"), .embedInCode("common-passwords.txt"),
                .embedInCode("Resources/AppleAppAttestationRootCA.pem"),
            ],
            swiftSettings: strict),
        .executableTarget(
            name: "pier-auth", dependencies: ["AuthService", "PierService"],
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
            name: "pier-feedback", dependencies: ["FeedbackService", "PierService"],
            path: "Services/Feedback/Main", swiftSettings: strict),

        .target(
            name: "SubscriptionsService",
            dependencies: [
                "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport", "PierAppAssociation", "PierHTML",
                "PierHTTP", "PierJSON", "PierPostgres", "PierCrypto", models, "PierRuntime", "PierLive",
            ],
            path: "Services/Subscriptions",
            exclude: ["Main"], sources: ["Sources"],
            resources: [.embedInCode("Migrations"), .embedInCode("Resources/AppleRootCA-G3.pem")],
            swiftSettings: strict),
        .executableTarget(
            name: "pier-subscriptions", dependencies: ["SubscriptionsService", "PierService"],
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
            name: "pier-console", dependencies: ["ConsoleService", "PierService"],
            path: "Services/Console/Main", swiftSettings: strict),

        .target(
            name: "Gateway",
            dependencies: [
                "AuthService", "FeedbackService", "SubscriptionsService", "ConsoleService", "PierService", "PierEvents",
                "PierIdentity", "PierAudit", "PierExport", "PierAppAssociation", "PierHTML", "PierHTTP",
                "PierPostgres", models, "PierRuntime", "PierDocument", "RemoteConfig",
            ],
            path: "Services/Gateway", exclude: ["Main"], sources: ["Sources"], swiftSettings: strict),
        .executableTarget(
            name: "pier-gateway", dependencies: ["Gateway"], path: "Services/Gateway/Main",
            swiftSettings: strict),

        // Remote config, a plugin as a team writes one: on the plugin kit and the wire types alone
        // (scripts/lint.sh holds its imports to them), its endpoints and client in modules an app
        // links beside PierClient.
        .target(
            name: "RemoteConfigAPI", dependencies: [models], path: "Plugins/RemoteConfig/Sources/RemoteConfigAPI",
            swiftSettings: strict),
        .target(
            name: "RemoteConfigClient", dependencies: ["RemoteConfigAPI", client],
            path: "Plugins/RemoteConfig/Sources/RemoteConfigClient", swiftSettings: strict),
        .target(
            name: "RemoteConfig", dependencies: pluginKit.map { .target(name: $0) } + ["RemoteConfigAPI"],
            path: "Plugins/RemoteConfig/Sources/RemoteConfig", resources: [.embedInCode("Migrations")],
            swiftSettings: strict),
        .executableTarget(
            name: "pier-remote-config", dependencies: ["RemoteConfig", "PierService"],
            path: "Plugins/RemoteConfig/Sources/pier-remote-config",
            swiftSettings: strict),
        // Remote config from a terminal, beside `pier` (`pier config`, its session shared).
        .executableTarget(
            name: "pier-config", dependencies: ["RemoteConfigClient", "RemoteConfigAPI", "PierClient"],
            path: "Plugins/RemoteConfig/Sources/pier-config", swiftSettings: strict),
        // What an app does with the client: reads the flags, keeps the last config for a cold
        // start offline (driven by Plugins/RemoteConfig/Tests/http_test.py against a live gateway).
        .executableTarget(
            name: "config-check", dependencies: ["RemoteConfigClient", "PierClient"],
            path: "Plugins/RemoteConfig/Sources/config-check",
            swiftSettings: strict),

        // One import for a plugin: the plugin kit's modules, re-exported.
        .target(
            name: "PierPlugin", dependencies: pluginModules.map { .target(name: $0) }, path: "Shared/Plugin",
            swiftSettings: strict),
        // The leaderboard, docs/plugins.md's larger example: a plugin on the kit alone (lint.sh
        // holds its imports to it), its endpoints in a module apps link.
        .target(
            name: "LeaderboardAPI", dependencies: [models], path: "Plugins/Leaderboard/Sources/LeaderboardAPI",
            swiftSettings: strict),
        .target(
            name: "Leaderboard", dependencies: pluginKit.map { .target(name: $0) } + ["LeaderboardAPI"],
            path: "Plugins/Leaderboard/Sources/Leaderboard", resources: [.embedInCode("Migrations")],
            swiftSettings: strict),
        // The plugin kit's testing part (the product PierPluginTesting).
        .target(
            name: "PierPluginTesting",
            dependencies: [
                "Gateway", "PierService", "PierPostgres", "PierEvents", "PierAudit", "PierHTTP", "PierJSON", "PierRuntime",
                models,
                client,
                "PierTestBasics",
            ],
            path: "Shared/PluginTesting", swiftSettings: strict),

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
            name: "RemoteConfigTests", dependencies: ["RemoteConfig", models, "RemoteConfigAPI"],
            path: "Plugins/RemoteConfig/Tests/RemoteConfigTests", swiftSettings: strict),
        .testTarget(
            name: "LeaderboardTests",
            dependencies: ["Leaderboard", "LeaderboardAPI", "PierPluginTesting", client, "PierService", "PierTestBasics"],
            path: "Plugins/Leaderboard/Tests/LeaderboardTests", swiftSettings: strict),
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
                "PierHTTP", "PierJSON", "PierPostgres", "PierCrypto", models, "PierRuntime", "PierLive",
                "PierTestSupport",
            ],
            path: "Tests/ServiceTests", swiftSettings: strict),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "Gateway", "FeedbackService", "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport",
                "PierAppAssociation", "PierHTML", "PierHTTP", models, "PierPostgres", "PierRuntime", "PierCrypto",
                "PierTestSupport", "PierServiceTestSupport", "PierDocument",
            ],
            path: "Tests/GatewayTests", swiftSettings: strict),
        .testTarget(
            name: "ConsoleTests",
            dependencies: [
                "ConsoleService", "Gateway", "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport",
                "PierAppAssociation", "PierHTML", "PierHTTP", models, "PierPostgres", "PierRuntime", "PierCrypto",
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
                "PierRuntime", "PierLive", "PierTestSupport", "PierServiceTestSupport", "COpenSSL",
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
                client, "Gateway", "AuthService", "PierHTTP", models, "PierPostgres", "PierRuntime", "PierCrypto",
                "PierService", "PierEvents", "PierIdentity", "PierAudit", "PierExport", "PierAppAssociation", "PierHTML",
                "PierTestSupport", "PierServiceTestSupport",
            ],
            path: "Tests/ClientTests", swiftSettings: strict),
    ]
)
