// swift-tools-version:6.0
// Remote config and feature flags: a plugin written as a team writes its own, in its own package,
// against Pier's public products only (docs/plugins.md). `RemoteConfig` is the plugin; it runs
// alone as `pier-remote-config`, or in `gateway-with-config` beside Pier's own plugins.
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "RemoteConfig",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "RemoteConfig", targets: ["RemoteConfig"]),
        .executable(name: "pier-remote-config", targets: ["pier-remote-config"]),
        .executable(name: "gateway-with-config", targets: ["gateway-with-config"]),
        .executable(name: "pier-config", targets: ["pier-config"]),
    ],
    dependencies: [
        // Pier's server package and its client package (the wire types), by path, as a checkout
        // of Pier beside the team's own would be found.
        .package(name: "Pier", path: "../.."),
        .package(name: "Client", path: "../../Client"),
        // Its wire types and client, the part apps link (a package of its own: no server module).
        .package(name: "RemoteConfigAPI", path: "API"),
    ],
    targets: [
        .target(
            name: "RemoteConfig",
            dependencies: [
                .product(name: "PierPlugin", package: "Pier"), .product(name: "PierModels", package: "Client"),
                .product(name: "RemoteConfigAPI", package: "RemoteConfigAPI"),
            ],
            path: "Sources/RemoteConfig", resources: [.embedInCode("Migrations")], swiftSettings: strict),
        .executableTarget(
            name: "pier-remote-config", dependencies: ["RemoteConfig"], path: "Sources/pier-remote-config",
            swiftSettings: strict),
        .executableTarget(
            name: "gateway-with-config", dependencies: ["RemoteConfig", .product(name: "Gateway", package: "Pier")],
            path: "Sources/gateway-with-config", swiftSettings: strict),
        // What an app does with the client: reads the flags, keeps the last config for a cold
        // start offline (driven by Tests/http_test.py against a live gateway).
        .executableTarget(
            name: "config-check", dependencies: [.product(name: "RemoteConfigClient", package: "RemoteConfigAPI")],
            path: "Sources/config-check", swiftSettings: strict),
        // Remote config from a terminal, beside `pier` (its session shared).
        .executableTarget(
            name: "pier-config",
            dependencies: [
                .product(name: "RemoteConfigClient", package: "RemoteConfigAPI"),
                .product(name: "RemoteConfigAPI", package: "RemoteConfigAPI"),
            ],
            path: "Sources/pier-config", swiftSettings: strict),
        .testTarget(
            name: "RemoteConfigTests",
            dependencies: [
                "RemoteConfig", .product(name: "PierModels", package: "Client"),
                .product(name: "RemoteConfigAPI", package: "RemoteConfigAPI"),
            ],
            path: "Tests/RemoteConfigTests", swiftSettings: strict),
    ]
)
