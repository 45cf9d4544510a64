import PierPostgres
import PierRuntime
import Synchronization

/// Keeps readiness fresh in the background, so that `/readyz` answers at once from what was
/// last seen instead of making database round trips on the request pool (whose 5 s acquire
/// timeout is longer than a probe's: a busy but healthy replica would be ejected, and its load
/// would move to the others). A part of the host's group: it runs until the host stops.
///
/// The checks run every `interval` while someone asks, each mounted service's on a connection
/// of its own (not one a request could be waiting for). After `idleAfter` without a probe the
/// checks pause and their connections close; the next probe resumes them and waits for their
/// first round. A result older than `staleAfter` counts as not ready: a check that hangs (a
/// database unreachable without a refusal) must not leave an old "ready" standing.
final class ReadinessMonitor: LifecycleService {
    private struct State {
        var checks: [String: Bool]?
        var checkedAt: ContinuousClock.Instant?
        var askedAt: ContinuousClock.Instant?
        /// When the checks last paused (or nil before they first ran).
        var pausedAt: ContinuousClock.Instant?
        /// The paused loop, waiting for a probe.
        var parked: CheckedContinuation<Void, Never>?
        /// Probes waiting for the first round after a pause.
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// The host stopped: probes are answered at once, as not ready.
        var stopped = false
    }

    let lifecycleName = "readiness"
    let interval: Duration
    let staleAfter: Duration
    let idleAfter: Duration
    private let mounted: [ServiceHost.Mounted]
    private let extraChecks: @Sendable () async -> [String: Bool]
    private let state = Mutex(State())

    init(
        mounted: [ServiceHost.Mounted], extraChecks: @escaping @Sendable () async -> [String: Bool],
        interval: Duration = .seconds(1), staleAfter: Duration = .seconds(5), idleAfter: Duration = .seconds(60)
    ) {
        self.mounted = mounted
        self.extraChecks = extraChecks
        self.interval = interval
        self.staleAfter = staleAfter
        self.idleAfter = idleAfter
    }

    /// The latest checks; the first probe (or the first after a pause) waits for a round.
    func current() async -> [String: Bool] {
        let parked = state.withLock { state in
            state.askedAt = .now
            defer { state.parked = nil }
            return state.parked
        }
        parked?.resume()
        await withCheckedContinuation { continuation in
            let answered = state.withLock { state -> Bool in
                if state.checks != nil || state.stopped { return true }
                state.waiters.append(continuation)
                return false
            }
            if answered { continuation.resume() }
        }
        return state.withLock { state in
            guard !state.stopped, let checks = state.checks, let at = state.checkedAt, ContinuousClock.now - at <= staleAfter
            else {
                return (state.checks ?? [:]).mapValues { _ in false }.merging(["readiness.fresh": false]) { $1 }
            }
            return checks
        }
    }

    /// Checks while probes come, pauses while none do, until cancelled.
    func run() async {
        while !Task.isCancelled {
            await untilProbed()
            guard !Task.isCancelled else { break }
            await checkWhileProbed()
        }
        let waiters = state.withLock { state in
            state.stopped = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }

    /// Returns once a probe came since the last pause (at once if one did), or when cancelled.
    private func untilProbed() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let go = state.withLock { state -> Bool in
                    let probed = state.askedAt.map { asked in state.pausedAt.map { asked > $0 } ?? true } ?? false
                    if probed || Task.isCancelled { return true }
                    state.parked = continuation
                    return false
                }
                if go { continuation.resume() }
            }
        } onCancel: {
            state.withLock { state in
                defer { state.parked = nil }
                return state.parked
            }?.resume()
        }
    }

    /// Rounds every `interval` until `idleAfter` passes without a probe, or until cancelled.
    private func checkWhileProbed() async {
        // A pool of one per mounted service, for these checks only, while they run.
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
        while !Task.isCancelled {
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
                let idle = state.askedAt.map { ContinuousClock.now - $0 > idleAfter } ?? true
                if idle {
                    // Forget the result: the next probe after a pause waits for a fresh one.
                    state.pausedAt = .now
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
