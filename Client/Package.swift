// swift-tools-version:6.0
// PierClient: what an app links to talk to Pier, a package of its own so that an app's
// dependency resolution sees Foundation and nothing else (no server module, no C library).
// The server's package uses the same sources (its `PierModels` wire types come from here).
import PackageDescription

let package = Package(
    name: "PierClient",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        // `import PierClient` gives the client and every type of its API (it re-exports PierModels).
        .library(name: "PierClient", targets: ["PierClient"]),
        // The wire types alone: what Pier's server modules share with the client.
        .library(name: "PierModels", targets: ["PierModels"]),
    ],
    targets: [
        .target(name: "PierModels", swiftSettings: [.swiftLanguageMode(.v6)]),
        .target(name: "PierClient", dependencies: ["PierModels"], swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
)
