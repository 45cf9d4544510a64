import CSystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One thread that notices, with epoll, when the peer of a watched socket goes away, and calls
/// what was registered for it: how a server learns at once that the client of an idle stream
/// left, instead of at its next write (a heartbeat, seconds later), while the stream holds a
/// slot of its budget.
///
/// Only the hang-up is watched (`EPOLLRDHUP`, with the hang-ups and errors epoll always
/// reports), never readability: bytes the client sends do not wake this thread. Each watch fires
/// once. The owner ends a watch before its socket is closed; a closed socket also leaves the
/// epoll set by itself, and a watch ended is never called.
public final class HangupWatcher: Sendable {
    public static let shared = HangupWatcher()

    /// A watch in progress, to end with ``end(_:)``.
    public struct Watch: Sendable {
        fileprivate let socket: Int32
        fileprivate let number: UInt64
    }

    private struct State {
        var watches: [Int32: (number: UInt64, gone: @Sendable () -> Void)] = [:]
        var last: UInt64 = 0
    }

    private let epoll: Int32
    private let state = Mutex(State())

    public init() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epoll >= 0, "epoll_create1 failed: errno \(errno)")
        startDetachedThread { [self] in run() }
    }

    /// Calls `gone` (on this watcher's thread: short work only) when `socket`'s peer goes away;
    /// nil when the socket cannot be watched (closed already).
    public func watch(_ socket: Int32, gone: @escaping @Sendable () -> Void) -> Watch? {
        let watch = state.withLock { state -> Watch in
            state.last += 1
            state.watches[socket] = (state.last, gone)
            return Watch(socket: socket, number: state.last)
        }
        guard CSystem_epoll_watch_hangup(epoll, socket) == 0 else {
            end(watch)
            return nil
        }
        return watch
    }

    /// Ends a watch (before its socket is closed): `gone` is not called after this returns, unless
    /// it was already under way.
    public func end(_ watch: Watch) {
        let ended = state.withLock { state -> Bool in
            guard state.watches[watch.socket]?.number == watch.number else { return false }
            state.watches[watch.socket] = nil
            return true
        }
        if ended { _ = CSystem_epoll_remove(epoll, watch.socket) }
    }

    private func run() {
        var ready = [Int32](repeating: 0, count: 64)
        while true {
            let count = CSystem_epoll_wait(epoll, &ready, Int32(ready.count), -1)
            guard count > 0 else { continue }
            let gone = state.withLock { state in
                (0..<Int(count)).compactMap { state.watches.removeValue(forKey: ready[$0])?.gone }
            }
            for call in gone { call() }
        }
    }
}
