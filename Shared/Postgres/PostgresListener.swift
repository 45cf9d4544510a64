import CPostgres
import PierRuntime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// LISTENs on a channel with a connection and a thread of its own, and wakes waiters when a
/// notification arrives. A wake-up only: consumers still poll, so a lost connection costs
/// latency, never events. Reconnects by itself.
public final class PostgresListener: Sendable {
    public let channel: String
    private let configuration: PostgresConfiguration
    private let state = Mutex<(generation: Int, waiters: [CheckedContinuation<Void, Never>], running: Bool)>((0, [], false))

    public init(configuration: PostgresConfiguration, channel: String) {
        self.configuration = configuration
        self.channel = channel
    }

    /// Starts the listening thread.
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
    /// already has), or after `timeout`.
    public func wait(upTo timeout: Duration, since generation: Int) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let missed = self.state.withLock { state -> Bool in
                        if state.generation != generation { return true }
                        state.waiters.append(continuation)
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
            // Release the other child: wake our continuation if the sleep finished first.
            self.notifyAll()
            await group.waitForAll()
        }
    }

    private func notifyAll() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state.waiters = [] }
            state.generation &+= 1
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }

    private var running: Bool { state.withLock { $0.running } }

    private func loop() {
        while running {
            guard let connection = try? PostgresConnection(configuration: configuration),
                (try? connection.execute(PostgresQuery(unsafeSQL: "LISTEN \"\(channel)\""))) != nil
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
