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
    /// One connection, from its start to its close: what the server keeps in libmicrohttpd's
    /// socket context, so that each request touches its own deadline and no shared lock.
    final class Tracked: Sendable {
        let fd: Int32
        let key: String
        let counted: Bool
        /// Since when (monotonic nanoseconds) a request head is awaited; 0 while a request is
        /// being answered.
        let waitingSince: Atomic<Int64>

        init(fd: Int32, key: String, counted: Bool) {
            self.fd = fd
            self.key = key
            self.counted = counted
            waitingSince = Atomic(ConnectionGuard.now())
        }

        /// A request's head has arrived whole: no deadline while it is answered.
        func headReceived() { waitingSince.store(0, ordering: .relaxed) }

        /// A response was sent: the next head is awaited from now.
        func answered() { waitingSince.store(ConnectionGuard.now(), ordering: .relaxed) }
    }

    private struct State {
        var connections: [ObjectIdentifier: Tracked] = [:]
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

    /// Monotonic nanoseconds (never 0).
    static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec) + 1
    }

    /// A connection began: its record, and whether it may stay (false when its client already
    /// holds its share: the caller cuts it).
    func started(fd: Int32, peer: String) -> (Tracked, allowed: Bool) {
        let exempt = capPerClient <= 0 || trusted.contains(peer)
        let key = TrustedProxies.limitKey(peer)
        return state.withLock { state in
            let over = !exempt && state.perClient[key, default: 0] >= capPerClient
            if over { state.refused += 1 }
            if !over && !exempt { state.perClient[key, default: 0] += 1 }
            let tracked = Tracked(fd: fd, key: key, counted: !over && !exempt)
            state.connections[ObjectIdentifier(tracked)] = tracked
            return (tracked, !over)
        }
    }

    /// The connection is closing: forget it (before its socket is closed).
    func closed(_ tracked: Tracked) {
        state.withLock { state in
            guard state.connections.removeValue(forKey: ObjectIdentifier(tracked)) != nil, tracked.counted else { return }
            let left = state.perClient[tracked.key, default: 1] - 1
            state.perClient[tracked.key] = left > 0 ? left : nil
        }
    }

    /// Cuts the connections whose head is overdue; returns how many.
    @discardableResult
    func sweep(now: Int64 = ConnectionGuard.now()) -> Int {
        let limit = Int64(headTimeout.components.seconds) * 1_000_000_000 + headTimeout.components.attoseconds / 1_000_000_000
        return state.withLock { state in
            var cut = 0
            for tracked in state.connections.values {
                let since = tracked.waitingSince.load(ordering: .relaxed)
                guard since != 0, now - since > limit else { continue }
                // A head that arrived meanwhile wins: only a deadline still unmet cuts.
                guard tracked.waitingSince.compareExchange(expected: since, desired: 0, ordering: .relaxed).exchanged
                else { continue }
                shutdown(tracked.fd, Int32(SHUT_RDWR))
                cut += 1
            }
            state.timedOut += cut
            return cut
        }
    }

    /// Connections open, connections refused over a client's cap, and heads timed out so far.
    var statistics: (open: Int, refused: Int, timedOut: Int) {
        state.withLock { ($0.connections.count, $0.refused, $0.timedOut) }
    }
}
