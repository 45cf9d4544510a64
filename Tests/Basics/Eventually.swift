import Foundation
import Synchronization

/// Waits for an effect that happens asynchronously (a consumer applying an event, a health
/// check ejecting an upstream, a server noticing a client left) by checking the condition
/// itself, never by sleeping a fixed time that a slower machine may not honour.
///
/// The bound is generous on purpose: it only decides how long a failing test takes to fail,
/// never whether a passing one passes.
///
/// - Parameters:
///   - timeout: how long to keep checking (default 30 seconds).
///   - interval: pause between checks.
///   - condition: true once the effect is visible.
/// - Returns: whether the condition became true in time; tests `#expect` it.
@discardableResult
public func eventually(
    timeout: Duration = .seconds(30), interval: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}

/// A value shared between test tasks.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    public init(_ value: Value) { mutex = Mutex(value) }
    public func withLock<T: Sendable>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }
}

/// Runs `body` `count` times at once and returns what each returned (in no particular order):
/// the concurrent requests that races are made of.
public func concurrently<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) async throws -> T) async throws -> [T] {
    try await withThrowingTaskGroup(of: T.self) { group in
        for index in 0..<count { group.addTask { try await body(index) } }
        return try await group.reduce(into: [T]()) { $0.append($1) }
    }
}

/// Runs blocking work (a child process started and waited for, a pipe read until it says
/// ready) on a thread of its own. Tests run on the cooperative pool, one thread per core: two
/// such waits there at once stall every test of the run, the servers under test included,
/// for as long as the slowest child takes on a busy machine.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}
