import CPostgres
import PierRuntime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// LISTENs on a channel with a connection and a thread of its own, and wakes waiters when a
/// notification arrives. A wake-up only: followers still poll, so a lost connection costs
/// latency, never events. Reconnects by itself. One listener serves every follower of a
/// process (the event consumers, the revocation list): whoever made it starts and stops it.
public final class PostgresListener: Sendable {
    private struct State {
        var generation = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Waits that ended before their waiter was registered: it resumes at once when it is.
        var released: Set<Int> = []
        var nextWaiter = 0
        var running = false
    }

    public let channel: String
    private let configuration: PostgresConfiguration
    private let state = Mutex(State())

    public init(configuration: PostgresConfiguration, channel: String) {
        self.configuration = configuration
        self.channel = channel
    }

    /// Starts the listening thread (once: later calls do nothing).
    public func start() {
        let started = state.withLock { state -> Bool in
            if state.running { return false }
            state.running = true
            return true
        }
        guard started else { return }
        startDetachedThread { self.loop() }
    }

    /// Stops listening (within a second) and wakes every waiter.
    public func stop() {
        state.withLock { $0.running = false }
        notifyAll()
    }

    /// Counts notifications (and stops): read it before looking for work, and pass it to
    /// ``wait(upTo:since:)``, so that a notification arriving in between is not missed.
    public var generation: Int { state.withLock { $0.generation } }

    /// Returns when a notification has arrived since `generation` was read (at once if one
    /// already has), after `timeout`, or when the task is cancelled.
    public func wait(upTo timeout: Duration, since generation: Int) async {
        let id = state.withLock { state -> Int in
            defer { state.nextWaiter &+= 1 }
            return state.nextWaiter
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let missed = self.state.withLock { state -> Bool in
                        if state.generation != generation || state.released.remove(id) != nil { return true }
                        state.waiters[id] = continuation
                        return false
                    }
                    if missed { continuation.resume() }
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
            }
            await group.next()
            group.cancelAll()
            // The sleep ended first (or the task was cancelled): release this waiter alone. A
            // cancelled task's sleep can end before the other child has even registered its
            // waiter: it is then marked released, and resumes as soon as it registers (else it
            // would wait for a notification that may never come, and hold its task for good).
            let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                state.released.insert(id)
                return nil
            }
            waiter?.resume()
            await group.waitForAll()
            self.state.withLock { _ = $0.released.remove(id) }
        }
    }

    /// Runs `body` now, then whenever the channel is notified and at least every `interval`,
    /// until the task is cancelled.
    public func follow(every interval: Duration, _ body: () async -> Void) async {
        while !Task.isCancelled {
            let seen = generation
            await body()
            await wait(upTo: interval, since: seen)
        }
    }

    private func notifyAll() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state.waiters = [:] }
            state.generation &+= 1
            return Array(state.waiters.values)
        }
        waiters.forEach { $0.resume() }
    }

    private var running: Bool { state.withLock { $0.running } }

    private func loop() {
        while running {
            guard let connection = try? PostgresConnection(configuration: configuration),
                (try? connection.listen(channel)) != nil
            else {
                sleep(1)
                continue
            }
            while running {
                let outcome = connection.awaitNotification(timeoutMilliseconds: 1000)
                if outcome == .notified { notifyAll() }
                if outcome == .broken { break }
            }
        }
    }
}
