import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What keeps slow or greedy clients from shutting the doors, over libmicrohttpd's own limits:
///
/// - **A cap per client address** (``HTTPServer/Configuration/maxConnectionsPerClient``; IPv6
///   by /64). Trusted proxies (the gateway, a load balancer) are not capped: their connections
///   carry many clients.
/// - **A deadline for a complete request head** (``HTTPServer/Configuration/headTimeoutSeconds``),
///   counted from the connection's start or the end of its previous response and not reset by
///   each byte: a client trickling a header line every few seconds is cut when the deadline
///   passes, as is a keep-alive connection that sends nothing.
///
/// libmicrohttpd has neither, so the guard follows each connection from its notifications and
/// cuts a connection by shutting its socket down from a sweeper; the server's thread then sees
/// the socket end and closes it as usual. A connection is forgotten (under the same lock) before
/// libmicrohttpd closes its socket, so a socket number that was reused is never touched.
final class ConnectionGuard: Sendable {
    private struct Tracked {
        let fd: Int32
        let key: String
        let counted: Bool
        /// Since when a request head is awaited; nil while a request is being answered.
        var waitingSince: ContinuousClock.Instant?
    }

    private struct State {
        var connections: [UInt: Tracked] = [:]
        var perClient: [String: Int] = [:]
        var refused = 0
        var timedOut = 0
    }

    let capPerClient: Int
    let headTimeout: Duration
    let trusted: TrustedProxies
    private let state = Mutex(State())

    init(capPerClient: Int, headTimeout: Duration, trusted: TrustedProxies) {
        self.capPerClient = capPerClient
        self.headTimeout = headTimeout
        self.trusted = trusted
    }

    /// A connection began; false when its client already holds its share (the caller cuts it).
    func started(_ connection: UInt, fd: Int32, peer: String) -> Bool {
        let exempt = capPerClient <= 0 || trusted.contains(peer)
        let key = TrustedProxies.limitKey(peer)
        return state.withLock { state in
            let over = !exempt && state.perClient[key, default: 0] >= capPerClient
            if over { state.refused += 1 }
            if !over && !exempt { state.perClient[key, default: 0] += 1 }
            state.connections[connection] = Tracked(fd: fd, key: key, counted: !over && !exempt, waitingSince: .now)
            return !over
        }
    }

    /// A request's head has arrived whole: no deadline while it is answered.
    func headReceived(_ connection: UInt) {
        state.withLock { $0.connections[connection]?.waitingSince = nil }
    }

    /// A response was sent: the next head is awaited from now.
    func answered(_ connection: UInt) {
        state.withLock { $0.connections[connection]?.waitingSince = .now }
    }

    /// The connection is closing: forget it (before its socket is closed).
    func closed(_ connection: UInt) {
        state.withLock { state in
            guard let tracked = state.connections.removeValue(forKey: connection), tracked.counted else { return }
            let left = state.perClient[tracked.key, default: 1] - 1
            state.perClient[tracked.key] = left > 0 ? left : nil
        }
    }

    /// Cuts the connections whose head is overdue; returns how many.
    @discardableResult
    func sweep(now: ContinuousClock.Instant = .now) -> Int {
        state.withLock { state in
            let overdue = state.connections.filter { _, tracked in
                tracked.waitingSince.map { now - $0 > headTimeout } ?? false
            }
            for (connection, tracked) in overdue {
                shutdown(tracked.fd, Int32(SHUT_RDWR))
                state.connections[connection]?.waitingSince = nil
            }
            state.timedOut += overdue.count
            return overdue.count
        }
    }

    /// Connections open, connections refused over a client's cap, and heads timed out so far.
    var statistics: (open: Int, refused: Int, timedOut: Int) {
        state.withLock { ($0.connections.count, $0.refused, $0.timedOut) }
    }
}
