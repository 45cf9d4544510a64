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
/// `@unchecked Sendable`: `waiting` is only touched with `lock` held.
final class SocketWaiter: @unchecked Sendable {
    static let shared = SocketWaiter()

    private let epoll: Int32
    private let lock = ConditionLock()
    private var waiting: [Int32: CheckedContinuation<Void, Never>] = [:]

    private init() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epoll >= 0, "epoll_create1 failed: errno \(errno)")
        startDetachedThread { [self] in run() }
    }

    /// Returns when `socket` can be read (or written), has an error, or was closed by the peer.
    /// One waiter per socket at a time: a connection is used by one task at a time.
    func wait(for socket: Int32, writable: Bool = false) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.withLock { waiting[socket] = continuation }
            if CPostgres_epoll_arm(epoll, socket, writable ? 1 : 0) != 0 {
                // Cannot wait on it (closed under us): let the caller find out from libpq.
                lock.withLock { waiting.removeValue(forKey: socket) }?.resume()
            }
        }
    }

    private func run() {
        var ready = [Int32](repeating: 0, count: 64)
        while true {
            let count = CPostgres_epoll_wait(epoll, &ready, Int32(ready.count))
            guard count > 0 else { continue }  // EINTR
            let resumed = lock.withLock { (0..<Int(count)).compactMap { waiting.removeValue(forKey: ready[$0]) } }
            for continuation in resumed { continuation.resume() }
        }
    }
}
