import Foundation
import PierTestBasics
import Synchronization
import Testing

@testable import PierRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// The thread that waits for sockets never leaves a task suspended for good, ends waits by
/// their deadlines, and runs the tasks that prefer it.
@Suite struct SocketWaiterTests {
    /// A socket closed while its wait is armed loses its epoll registration, so no event can
    /// come: the wait is resumed after the waiter's patience, and the caller looks again.
    @Test func aWaitWithoutAnEventEndsAfterThePatience() async throws {
        let waiter = SocketWaiter(patience: .milliseconds(200))
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[1]) }
        // Readable: resumed by the event.
        _ = write(pair[1], "x", 1)
        await waiter.wait(for: pair[0])
        var byte: UInt8 = 0
        #expect(read(pair[0], &byte, 1) == 1)
        // Nothing to read, then the socket closed under the wait: resumed all the same.
        final class Flag: Sendable { let raised = Atomic<Bool>(false) }
        let resumed = Flag()
        let socket = pair[0]
        let task = Task {
            await waiter.wait(for: socket)
            resumed.raised.store(true, ordering: .relaxed)
        }
        try await Task.sleep(for: .milliseconds(50))
        close(pair[0])
        #expect(await eventually { resumed.raised.load(ordering: .relaxed) })
        // (Awaited only once resumed: a failure must not hang the run.)
        if resumed.raised.load(ordering: .relaxed) { await task.value }
    }

    @Test func waitsEndByTheirDeadlines() async throws {
        let waiter = SocketWaiter()
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        // Quiet: false once the deadline passed, not before.
        let started = ContinuousClock.now
        #expect(await waiter.wait(for: pair[0], until: started.advanced(by: .milliseconds(150))) == false)
        #expect(ContinuousClock.now - started >= .milliseconds(150))
        // A shorter deadline than the thread's sleep wakes it; writable at once: true.
        #expect(await waiter.wait(for: pair[0], writable: true, until: .now.advanced(by: .seconds(10))))
        _ = write(pair[1], "x", 1)
        #expect(await waiter.wait(for: pair[0], until: .now.advanced(by: .seconds(10))))
    }

    /// Tasks that prefer the waiter's thread go on there after each wait, however many, from
    /// whatever thread they started on.
    @Test func tasksThatPreferTheWaiterRunOnIt() async throws {
        let waiter = SocketWaiter()
        let count = 64
        var sockets: [(Int32, Int32)] = []
        for _ in 0..<count {
            var pair: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
            sockets.append((pair[0], pair[1]))
        }
        defer { for (one, other) in sockets { close(one); close(other) } }
        final class Seen: Sendable {
            let thread = Mutex<UInt?>(nil)
            let onIt = Atomic<Int>(0)
        }
        let seen = Seen()
        await withTaskGroup(of: Void.self) { group in
            for (reader, _) in sockets {
                group.addTask(executorPreference: waiter) {
                    for _ in 0..<3 {
                        _ = await waiter.wait(for: reader, until: .now.advanced(by: .seconds(10)))
                        var byte: UInt8 = 0
                        _ = read(reader, &byte, 1)
                        let thread = UInt(pthread_self())
                        let same = seen.thread.withLock { first in
                            if first == nil { first = thread }
                            return first == thread
                        }
                        if same { seen.onIt.add(1, ordering: .relaxed) }
                    }
                }
            }
            for _ in 0..<3 {
                for (_, writer) in sockets { _ = write(writer, "x", 1) }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        #expect(seen.onIt.load(ordering: .relaxed) == count * 3)
    }
}
