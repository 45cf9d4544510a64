import PierPostgres
import Synchronization

/// Keeps readiness fresh in the background, so that `/readyz` answers at once from what was
/// last seen instead of making database round trips on the request pool (whose 5 s acquire
/// timeout is longer than a probe's: a busy but healthy replica would be ejected, and its load
/// would move to the others).
///
/// The checks run every `interval` while someone asks, each mounted service's on a connection
/// of its own (not one a request could be waiting for). After `idleAfter` without a probe the
/// loop stops and its connections close; the next probe starts it again and waits for its first
/// round. A result older than `staleAfter` counts as not ready: a check that hangs (a database
/// unreachable without a refusal) must not leave an old "ready" standing.
final class ReadinessMonitor: Sendable {
    private struct State {
        var checks: [String: Bool]?
        var checkedAt: ContinuousClock.Instant?
        var askedAt: ContinuousClock.Instant
        var running = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    let interval: Duration
    let staleAfter: Duration
    let idleAfter: Duration
    private let mounted: [ServiceHost.Mounted]
    private let extraChecks: @Sendable () async -> [String: Bool]
    private let state: Mutex<State>

    init(
        mounted: [ServiceHost.Mounted], extraChecks: @escaping @Sendable () async -> [String: Bool],
        interval: Duration = .seconds(1), staleAfter: Duration = .seconds(5), idleAfter: Duration = .seconds(60)
    ) {
        self.mounted = mounted
        self.extraChecks = extraChecks
        self.interval = interval
        self.staleAfter = staleAfter
        self.idleAfter = idleAfter
        state = Mutex(State(askedAt: .now))
    }

    /// The latest checks; the first call (or the first after an idle spell) waits for a round.
    func current() async -> [String: Bool] {
        let start = state.withLock { state -> Bool in
            state.askedAt = .now
            if state.running { return false }
            state.running = true
            return true
        }
        if start { Task { await self.run() } }
        if state.withLock({ $0.checks == nil }) {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Bool in
                    if state.checks != nil { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        }
        return state.withLock { state in
            guard let checks = state.checks, let at = state.checkedAt, ContinuousClock.now - at <= staleAfter else {
                return (state.checks ?? [:]).mapValues { _ in false }.merging(["readiness.fresh": false]) { $1 }
            }
            return checks
        }
    }

    private func run() async {
        // A pool of one per mounted service, for these checks only, while the loop runs.
        let pools = mounted.map { entry in
            var configuration = entry.database.configuration
            configuration.poolSize = 1
            // Its own patience, as long as a result stays fresh: the request pool's (which may be
            // short, to shed load) would fail a check that only waited for a connection to open
            // on a busy machine.
            configuration.acquireTimeout = staleAfter
            configuration.applicationName += "-readiness"
            return PostgresPool(configuration: configuration)
        }
        defer { pools.forEach { $0.close() } }
        while true {
            var checks = await extraChecks()
            for (entry, pool) in zip(mounted, pools) {
                let reachable = await pool.isReachable()
                var migrated = false
                if reachable {
                    let pending = try? await Migrator.pending(pool, schema: entry.schema, migrations: entry.migrations)
                    migrated = pending?.isEmpty ?? false
                }
                checks[entry.name + ".database"] = reachable
                checks[entry.name + ".migrations"] = migrated
                checks[entry.name + ".service"] = await entry.service.isReady()
            }
            let (waiters, idle) = state.withLock { state -> ([CheckedContinuation<Void, Never>], Bool) in
                state.checks = checks
                state.checkedAt = .now
                defer { state.waiters = [] }
                let idle = ContinuousClock.now - state.askedAt > idleAfter
                if idle {
                    // Forget the result: the next probe after a pause waits for a fresh one.
                    state.running = false
                    state.checks = nil
                }
                return (state.waiters, idle)
            }
            waiters.forEach { $0.resume() }
            if idle { return }
            try? await Task.sleep(for: interval)
        }
    }
}
