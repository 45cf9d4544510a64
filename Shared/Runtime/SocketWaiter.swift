import CSystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One thread that waits, with epoll, until sockets can be read or written, and resumes the
/// task waiting on each: PostgreSQL's connections and the gateway's upstream connections.
///
/// The bytes are sent and read by the task itself (non-blocking sockets); only the wait in
/// between is handed to this thread. Measured against a dedicated thread per PostgreSQL
/// connection blocking in libpq (`bench/PQ`): more queries per second and about half the CPU
/// per query, the thread hand-overs being most of the difference.
///
/// Every wait has a deadline and ends by it at the latest: an event that can never come — the
/// socket closed while armed drops its epoll registration — costs that delay, never a task
/// suspended for good.
///
/// `@unchecked Sendable`: `waiting`, `nearest` and `sleepingUntil` are only touched with `lock`
/// held.
public final class SocketWaiter: @unchecked Sendable {
    public static let shared = SocketWaiter()

    private struct Wait {
        let continuation: CheckedContinuation<Bool, Never>
        let deadline: ContinuousClock.Instant
    }

    private let epoll: Int32
    /// An eventfd in the set: written when a wait's deadline comes before the thread's wake-up.
    private let wake: Int32
    private let patience: Duration
    private let lock = ConditionLock()
    private var waiting: [Int32: Wait] = [:]
    /// No deadline of `waiting` is earlier (one may be later: a wait that ended).
    private var nearest = ContinuousClock.Instant.now.advanced(by: .seconds(3600))
    /// When the thread wakes up at the latest if nothing happens.
    private var sleepingUntil = ContinuousClock.Instant.now
    /// Jobs of tasks that prefer this thread (``TaskExecutor``), enqueued from other threads.
    private var jobs: [UnownedJob] = []
    /// The same, enqueued by this thread itself (touched by it only).
    private var ownJobs: [UnownedJob] = []
    /// This thread, once it runs.
    private let thread = Atomic<UInt>(0)

    /// - Parameter patience: how long a wait without a deadline of its own lasts at most.
    public init(patience: Duration = .seconds(5)) {
        self.patience = patience
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epoll >= 0, "epoll_create1 failed: errno \(errno)")
        wake = CSystem_eventfd()
        precondition(wake >= 0 && CSystem_epoll_add_readable(epoll, wake) == 0, "eventfd failed: errno \(errno)")
        startDetachedThread { [self] in run() }
    }

    /// Returns when `socket` can be read (or written), has an error, or was closed by the peer
    /// — or after the patience, when the caller looks again. One waiter per socket at a time: a
    /// connection is used by one task at a time.
    public func wait(for socket: Int32, writable: Bool = false) async {
        _ = await wait(for: socket, writable: writable, until: .now.advanced(by: patience))
    }

    /// Returns true when `socket` can be read (or written), has an error, or was closed by the
    /// peer; false when `deadline` came first.
    public func wait(for socket: Int32, writable: Bool = false, until deadline: ContinuousClock.Instant) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let early = lock.withLock { () -> Bool in
                waiting[socket] = Wait(continuation: continuation, deadline: deadline)
                if deadline < nearest { nearest = deadline }
                return deadline < sleepingUntil
            }
            if early {
                var one: UInt64 = 1
                _ = Glibc.write(wake, &one, 8)
            }
            if CSystem_epoll_arm(epoll, socket, writable ? 1 : 0) != 0 {
                // Cannot wait on it (closed under us): let the caller find out.
                lock.withLock { waiting.removeValue(forKey: socket) }?.continuation.resume(returning: true)
            }
        }
    }

    private func run() {
        thread.store(UInt(pthread_self()), ordering: .releasing)
        var ready = [Int32](repeating: 0, count: 64)
        var timeout: Int32 = 1000
        while true {
            let count = CSystem_epoll_wait(epoll, &ready, Int32(ready.count), timeout)
            var woken = false
            let now = ContinuousClock.now
            var resumed: [(CheckedContinuation<Bool, Never>, Bool)] = []
            lock.withLock {
                for index in 0..<Int(max(0, count)) {
                    if ready[index] == wake {
                        woken = true
                    } else if let wait = waiting.removeValue(forKey: ready[index]) {
                        resumed.append((wait.continuation, true))
                    }
                }
                if now >= nearest {
                    // Overdue waits end; the nearest deadline is found again.
                    var next = now.advanced(by: .seconds(3600))
                    for (socket, wait) in waiting {
                        if wait.deadline <= now {
                            waiting.removeValue(forKey: socket)
                            resumed.append((wait.continuation, false))
                        } else if wait.deadline < next {
                            next = wait.deadline
                        }
                    }
                    nearest = next
                }
                // Milliseconds rounded up: never woken before a deadline, at most a second asleep.
                let until = min(nearest, now.advanced(by: .seconds(1)))
                let (seconds, attoseconds) = (until - now).components
                timeout = Int32(max(0, seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000))
                sleepingUntil = until
            }
            if woken {
                var value: UInt64 = 0
                _ = Glibc.read(wake, &value, 8)
            }
            for (continuation, ready) in resumed { continuation.resume(returning: ready) }
            let executor = asUnownedTaskExecutor()
            repeat {
                ownJobs += lock.withLock { () -> [UnownedJob] in
                    defer { jobs.removeAll(keepingCapacity: true) }
                    return jobs
                }
                let batch = ownJobs
                ownJobs.removeAll(keepingCapacity: true)
                for job in batch { job.runSynchronously(on: executor) }
            } while !ownJobs.isEmpty
        }
    }
}

/// Tasks may prefer this thread: what they do after a wait then runs here, with no hand-over
/// to another thread (short work only: every wait of the process is resumed by this thread).
extension SocketWaiter: TaskExecutor {
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if UInt(pthread_self()) == thread.load(ordering: .acquiring) {
            ownJobs.append(job)
            return
        }
        let first = lock.withLock { () -> Bool in
            jobs.append(job)
            return jobs.count == 1
        }
        if first {
            var one: UInt64 = 1
            _ = Glibc.write(wake, &one, 8)
        }
    }
}
