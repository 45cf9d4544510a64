// swift-tools-version:6.0
// Remote config's side that apps link: its wire types and endpoints (shared with the plugin) and
// the client, on PierClient alone: like Pier's own Client package, no server module and no C
// library, so an iOS app adds it beside Pier's Client.
import PackageDescription

let package = Package(
    name: "RemoteConfigAPI",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        .library(name: "RemoteConfigAPI", targets: ["RemoteConfigAPI"]),
        .library(name: "RemoteConfigClient", targets: ["RemoteConfigClient"]),
    ],
    dependencies: [.package(name: "Client", path: "../../../Client")],
    targets: [
        .target(
            name: "RemoteConfigAPI", dependencies: [.product(name: "PierModels", package: "Client")],
            path: "Sources/RemoteConfigAPI", swiftSettings: [.swiftLanguageMode(.v6)]),
        .target(
            name: "RemoteConfigClient", dependencies: ["RemoteConfigAPI", .product(name: "PierClient", package: "Client")],
            path: "Sources/RemoteConfigClient", swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
)
