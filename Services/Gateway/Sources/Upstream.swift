import PierHTTP
import PierRuntime
import Synchronization

/// One upstream server of a route, its health as the gateway sees it, and its counters.
///
/// Passive health: `ejectAfter` consecutive failures (no response head) take it out for
/// `ejectSeconds`. Active health: its `/readyz` is checked every interval; two failing checks in
/// a row take it out (one slow answer on a busy machine does not eject a healthy upstream, and
/// a dead one is refused at connect anyway), a passing one brings it back at once (a restarted
/// service is used again within an interval).
final class Upstream: Sendable {
    struct State {
        var consecutiveFailures = 0
        var ejectedUntil = 0.0
        var checkPassed = true
        var failedChecks = 0
        var inFlight = 0
        var requests = 0
        var failures = 0
        var retries = 0
        var latency = [Int](repeating: 0, count: Upstream.buckets.count)
        var latencySum = 0.0
        /// Exchanges that ended (each one measured).
        var ended: Int { requests - inFlight }
    }

    static let buckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    let base: String
    let route: String
    /// Its kept-alive connections.
    let endpoint: UpstreamEndpoint
    private let state = Mutex(State())

    init(base: String, route: String) {
        self.base = base
        self.route = route
        endpoint = UpstreamEndpoint(base: base)
    }

    var snapshot: State { state.withLock { $0 } }

    func isAvailable(at now: Double) -> Bool {
        state.withLock { $0.checkPassed && $0.ejectedUntil <= now }
    }

    var inFlight: Int { state.withLock { $0.inFlight } }

    func begin(retry: Bool) {
        state.withLock { state in
            state.inFlight += 1
            state.requests += 1
            if retry { state.retries += 1 }
        }
    }

    /// The exchange got a response head (success) or not (failure), after `seconds`.
    func end(success: Bool, seconds: Double, ejectAfter: Int, ejectSeconds: Int) {
        state.withLock { state in
            state.inFlight -= 1
            if let index = Upstream.buckets.firstIndex(where: { seconds <= $0 }) { state.latency[index] += 1 }
            state.latencySum += seconds
            if success {
                state.consecutiveFailures = 0
                return
            }
            state.failures += 1
            state.consecutiveFailures += 1
            if state.consecutiveFailures >= ejectAfter {
                state.ejectedUntil = MonotonicClock.seconds() + Double(ejectSeconds)
            }
        }
    }

    /// Active checks failed in a row before an upstream is taken out.
    static let failedChecksToEject = 2

    /// Records the result of an active check of `/readyz`; returns whether the upstream passes
    /// its checks now.
    @discardableResult
    func checked(passed: Bool) -> Bool {
        state.withLock { state in
            if passed {
                state.failedChecks = 0
                state.checkPassed = true
                state.ejectedUntil = 0
                state.consecutiveFailures = 0
            } else {
                state.failedChecks += 1
                if state.failedChecks >= Self.failedChecksToEject { state.checkPassed = false }
            }
            return state.checkPassed
        }
    }
}

/// Chooses among a route's healthy upstreams.
final class Balancer: Sendable {
    let upstreams: [Upstream]
    let balance: ProxySettings.Balance
    private let next = Atomic<Int>(0)

    init(upstreams: [Upstream], balance: ProxySettings.Balance) {
        self.upstreams = upstreams
        self.balance = balance
    }

    /// A healthy upstream not in `excluded`, or nil when there is none. When none of the
    /// route's upstreams is healthy, any not in `excluded` (panic routing): the checks are a
    /// preference, not a gate, so checks that fail while the service answers (its name briefly
    /// unresolvable, a slow machine) cost nothing, and a dead upstream is still refused at
    /// connect, a 503 at once.
    func choose(excluding excluded: Set<String>) -> Upstream? {
        let now = MonotonicClock.seconds()
        var candidates = upstreams.filter { !excluded.contains($0.base) && $0.isAvailable(at: now) }
        if candidates.isEmpty && !upstreams.contains(where: { $0.isAvailable(at: now) }) {
            candidates = upstreams.filter { !excluded.contains($0.base) }
        }
        guard !candidates.isEmpty else { return nil }
        let start = Int(UInt(bitPattern: next.wrappingAdd(1, ordering: .relaxed).newValue) % UInt(candidates.count))
        switch balance {
        case .roundRobin:
            return candidates[start % candidates.count]
        case .leastBusy:
            // Ties go round-robin, so equal upstreams share the load.
            let rotated = (0..<candidates.count).map { candidates[($0 + start) % candidates.count] }
            return rotated.min { $0.inFlight < $1.inFlight }
        }
    }

    func hasAvailable() -> Bool {
        let now = MonotonicClock.seconds()
        return upstreams.contains { $0.isAvailable(at: now) }
    }
}
