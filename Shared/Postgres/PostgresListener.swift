import CPostgres
import PierRuntime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// LISTENs on a channel with a connection and a thread of its own, and wakes waiters when a
/// notification arrives: every waiter, or those waiting for the notification's payload (an
/// event's type: a follower of some types is not woken by the others). A wake-up only:
/// followers still poll, so a lost connection costs latency, never events. Reconnects by
/// itself. One listener serves every follower of a process (the event consumers, the
/// revocation list): whoever made it starts and stops it.
public final class PostgresListener: Sendable {
    private struct State {
        var generation = 0
        /// Notifications by payload, counted like `generation`.
        var payloads: [String: Int] = [:]
        /// Each waiter, the payloads that wake it (nil: any), and whether it is a follower's.
        var waiters: [Int: (payloads: Set<String>?, follower: Bool, continuation: CheckedContinuation<Void, Never>)] = [:]
        /// Followers woken by a notification whose work has not ended yet, and their waits.
        var atWork = 0
        var woken: Set<Int> = []
        /// Followers running (``follow(every:wakingOn:_:)``).
        var followers = 0
        /// Announcers with a notification still to send (``announcing(_:)``).
        var announcing = 0
        /// Waits that ended before their waiter was registered: it resumes at once when it is.
        var released: Set<Int> = []
        var nextWaiter = 0
        var running = false
        /// Stops: counted in every generation (a stop wakes everyone).
        var stops = 0

        /// Notifications with one of `payloads`, plus the stops; every notification when nil.
        func generation(of payloads: Set<String>?) -> Int {
            guard let payloads else { return generation }
            return payloads.reduce(stops) { $0 &+ (self.payloads[$1] ?? 0) }
        }
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
        notify(nil)
    }

    /// Counts notifications (and stops): read it before looking for work, and pass it to
    /// ``wait(upTo:since:)``, so that a notification arriving in between is not missed.
    public var generation: Int { state.withLock { $0.generation } }

    /// Counts the notifications with one of `payloads` (nil: every one, and stops): what
    /// ``wait(upTo:since:for:)`` compares.
    public func generation(of payloads: Set<String>?) -> Int {
        state.withLock { state in state.generation(of: payloads) }
    }

    /// Returns when a notification has arrived since `generation` was read (at once if one
    /// already has), after `timeout`, or when the task is cancelled.
    public func wait(upTo timeout: Duration, since generation: Int) async {
        await wait(upTo: timeout, since: generation, for: nil)
    }

    /// Returns when a notification with one of `payloads` (nil: any) has arrived since
    /// ``generation(of:)`` was read (at once if one already has), after `timeout`, when the
    /// listener stops, or when the task is cancelled.
    public func wait(upTo timeout: Duration, since generation: Int, for payloads: Set<String>?) async {
        _ = await wait(upTo: timeout, since: generation, for: payloads, follower: false)
    }

    /// Followers a notification woke that have not finished the work it started: zero once
    /// everything a notification set off is done (tests wait for it; nothing else does).
    public var followersAtWork: Int { state.withLock { $0.atWork } }

    /// Whether every follower waits for a notification (none is at work, by one or by its poll)
    /// and no notification announced in this process is still to be sent: what tests wait for
    /// before they count what a notification sets off.
    public var followersIdle: Bool {
        state.withLock { state in
            state.announcing == 0 && state.waiters.values.count(where: \.follower) == state.followers
        }
    }

    /// Counts an announcer of this process that starts (`1`) or stops (`-1`) sending
    /// notifications it gathered: while one sends, the followers are not idle.
    public func announcing(_ change: Int) {
        state.withLock { $0.announcing += change }
    }

    /// What the followers' work set off by notifications asked of the database (not that of
    /// their first run, nor of their polls): what an event costs the process, beside the
    /// request that appended it.
    public let notifiedWork = PostgresActivity()

    /// ``wait(upTo:since:for:)``; for a follower, true when a notification woke it and counted
    /// it in ``followersAtWork`` (it then says when its work is done).
    private func wait(upTo timeout: Duration, since generation: Int, for payloads: Set<String>?, follower: Bool) async
        -> Bool
    {
        let id = state.withLock { state -> Int in
            defer { state.nextWaiter &+= 1 }
            return state.nextWaiter
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let missed = self.state.withLock { state -> Bool in
                        if state.generation(of: payloads) != generation || state.released.remove(id) != nil { return true }
                        state.waiters[id] = (payloads, follower, continuation)
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
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter.continuation }
                state.released.insert(id)
                return nil
            }
            waiter?.resume()
            await group.waitForAll()
        }
        return state.withLock { state in
            state.released.remove(id)
            return state.woken.remove(id) != nil
        }
    }

    /// Runs `body` now, then whenever the channel is notified with one of `payloads` (nil:
    /// any) and at least every `interval`, until the task is cancelled. Notifications that
    /// arrive while `body` runs make one more run, however many they are.
    public func follow(every interval: Duration, wakingOn payloads: Set<String>? = nil, _ body: () async -> Void) async {
        state.withLock { $0.followers += 1 }
        defer { state.withLock { $0.followers -= 1 } }
        var woken = false
        while !Task.isCancelled {
            let seen = generation(of: payloads)
            if woken {
                await PostgresActivity.$ledger.withValue(notifiedWork) { await body() }
            } else {
                await body()
            }
            if woken { state.withLock { $0.atWork -= 1 } }
            woken = await wait(upTo: interval, since: seen, for: payloads, follower: true)
        }
        if woken { state.withLock { $0.atWork -= 1 } }
    }

    /// Wakes the waiters for these payloads (every waiter when nil: the listener stops).
    private func notify(_ payloads: [String]?) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.generation &+= 1
            if payloads == nil { state.stops &+= 1 }
            for payload in payloads ?? [] { state.payloads[payload, default: 0] &+= 1 }
            let woken = state.waiters.filter { _, waiter in
                guard let payloads, let wanted = waiter.payloads else { return true }
                return payloads.contains(where: wanted.contains)
            }
            for (id, waiter) in woken {
                state.waiters[id] = nil
                if waiter.follower {
                    state.atWork += 1
                    state.woken.insert(id)
                }
            }
            return woken.values.map(\.continuation)
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
                if case .notified(let payloads) = outcome { notify(payloads) }
                if outcome == .broken { break }
            }
        }
    }
}
