import Synchronization

/// The live streams a server holds, apart from its requests: a stream is open for minutes or
/// hours, so streams never take the slots that requests are answered in. At most `limit` in
/// all and `perClient` for one client address (IPv6 by /64, as ``TrustedProxies/limitKey(_:)``
/// groups them): many accounts opened from a few addresses cannot hold every stream either.
public final class StreamBudget: Sendable {
    public enum Refusal: Error, Sendable, Equatable {
        /// This client address holds `perClient` streams.
        case tooManyForClient
        /// The server holds `limit` streams.
        case tooMany
    }

    /// A stream held: given back when the last reference to it goes.
    public final class Lease: Sendable {
        private let owner: StreamBudget
        private let key: String

        fileprivate init(_ owner: StreamBudget, key: String) {
            self.owner = owner
            self.key = key
        }

        deinit { owner.giveBack(key) }
    }

    private struct State {
        var count = 0
        var perClient: [String: Int] = [:]
    }

    public let limit: Int
    public let perClient: Int
    private let state = Mutex(State())

    public init(limit: Int, perClient: Int) {
        self.limit = limit
        self.perClient = perClient
    }

    /// Streams held now, in all and by `client`.
    public var count: Int { state.withLock { $0.count } }
    public func count(of client: String) -> Int { state.withLock { $0.perClient[TrustedProxies.limitKey(client)] ?? 0 } }

    /// A lease for a stream of `client` (its address), or why not.
    public func take(for client: String) -> Result<Lease, Refusal> {
        let key = TrustedProxies.limitKey(client)
        let refusal = state.withLock { state -> Refusal? in
            if state.perClient[key, default: 0] >= perClient { return .tooManyForClient }
            if state.count >= limit { return .tooMany }
            state.perClient[key, default: 0] += 1
            state.count += 1
            return nil
        }
        if let refusal { return .failure(refusal) }
        return .success(Lease(self, key: key))
    }

    private func giveBack(_ key: String) {
        state.withLock { state in
            state.count -= 1
            let left = state.perClient[key, default: 1] - 1
            state.perClient[key] = left > 0 ? left : nil
        }
    }
}
