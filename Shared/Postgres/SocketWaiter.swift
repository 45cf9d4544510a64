import CPostgres
import PierRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// One thread that waits, with epoll, until PostgreSQL sockets can be read or written, and
/// resumes the task waiting on each.
///
/// Statements are sent and their results read by the task that runs them (libpq in
/// non-blocking mode); only the wait in between is handed to this thread. Measured against a
/// dedicated thread per connection blocking in libpq (`bench/PQ`): more queries per second
/// and about half the CPU per query, the thread hand-overs being most of the difference.
///
/// A wait is also resumed after `patience` even without an event, and its caller (which loops
/// until libpq has what it needs) simply waits again: an event that can never come — the
/// socket closed while armed drops its epoll registration — costs that delay, never a task
/// suspended for good.
///
/// `@unchecked Sendable`: `waiting` is only touched with `lock` held.
final class SocketWaiter: @unchecked Sendable {
    static let shared = SocketWaiter()

    private let epoll: Int32
    private let patience: Duration
    private let lock = ConditionLock()
    private var waiting: [Int32: (continuation: CheckedContinuation<Void, Never>, since: ContinuousClock.Instant)] = [:]

    init(patience: Duration = .seconds(5)) {
        self.patience = patience
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epoll >= 0, "epoll_create1 failed: errno \(errno)")
        startDetachedThread { [self] in run() }
    }

    /// Returns when `socket` can be read (or written), has an error, or was closed by the peer
    /// — or after `patience`, when the caller looks again. One waiter per socket at a time: a
    /// connection is used by one task at a time.
    func wait(for socket: Int32, writable: Bool = false) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.withLock { waiting[socket] = (continuation, .now) }
            if CPostgres_epoll_arm(epoll, socket, writable ? 1 : 0) != 0 {
                // Cannot wait on it (closed under us): let the caller find out from libpq.
                lock.withLock { waiting.removeValue(forKey: socket) }?.continuation.resume()
            }
        }
    }

    private func run() {
        var ready = [Int32](repeating: 0, count: 64)
        // Overdue waits are looked for at most this often: the sweep stays off the busy path.
        let sweepMilliseconds = Int32(max(1, (min(patience, .seconds(1)) / .milliseconds(1)).rounded()))
        var swept = ContinuousClock.now
        while true {
            let count = CPostgres_epoll_wait(epoll, &ready, Int32(ready.count), sweepMilliseconds)
            let now = ContinuousClock.now
            let sweep = now - swept >= .milliseconds(Int(sweepMilliseconds))
            if sweep { swept = now }
            let resumed = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
                var resumed = (0..<Int(max(0, count))).compactMap { waiting.removeValue(forKey: ready[$0])?.continuation }
                if sweep {
                    for (socket, wait) in waiting where now - wait.since >= patience {
                        waiting.removeValue(forKey: socket)
                        resumed.append(wait.continuation)
                    }
                }
                return resumed
            }
            for continuation in resumed { continuation.resume() }
        }
    }
}
