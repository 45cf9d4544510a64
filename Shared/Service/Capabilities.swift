import PierCrypto

/// A kind of thing one plugin offers the others hosted in the same process, named and typed:
/// `Capability<any VerificationKeyProvider>.tokenKeys` is what auth offers so that the others
/// verify tokens with its keys in-process rather than through its JWKS over HTTP.
public struct Capability<Value: Sendable>: Sendable {
    public let name: String

    public init(_ name: String) { self.name = name }
}

extension Capability where Value == any VerificationKeyProvider {
    /// The keys access tokens are verified with (auth's own).
    public static var tokenKeys: Capability { Capability("token-keys") }
}

/// What the plugins of one process offer each other, by ``Capability``. The host collects
/// every plugin's offers once all are built, then gives each the whole set.
public struct Capabilities: Sendable {
    private var offers: [String: [any Sendable]] = [:]

    public init() {}

    /// Adds `value` to what is offered as `capability`.
    public mutating func offer<Value>(_ capability: Capability<Value>, _ value: Value) {
        offers[capability.name, default: []].append(value)
    }

    /// Everything offered as `capability`, in the order the plugins are hosted.
    public func all<Value>(_ capability: Capability<Value>) -> [Value] {
        // Only `offer(_:_:)` stores under the capability's name, with its value type.
        (offers[capability.name] ?? []).compactMap { $0 as? Value }
    }

    /// The first offer of `capability`, if any.
    public func first<Value>(_ capability: Capability<Value>) -> Value? { all(capability).first }
}
