#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What an account may use now: the keys of its entitlements (`pro`), as the subscriptions
/// plugin decides them (App Store purchases, Google Play, the team's grants; the better status
/// wins). Offered in-process as ``Capability/entitlements`` to the plugins hosted beside it: a
/// plugin that targets by entitlements (remote config) asks it rather than reading another
/// plugin's schema.
public protocol EntitlementsReader: Sendable {
    func entitlements(of user: UUID) async throws -> Set<String>
}

extension Capability where Value == any EntitlementsReader {
    /// A user's current entitlements (the subscriptions plugin's).
    public static var entitlements: Capability { Capability("entitlements") }
}
