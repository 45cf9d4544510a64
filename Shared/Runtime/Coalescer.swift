import Synchronization

/// Work that many tasks ask for at once, done in batches, with no timer and no task of its own.
///
/// A caller that finds one of the `lanes` free runs its own input at once, alone: under a light
/// load nothing waits and nothing changes. While every lane is busy, inputs queue; the caller
/// whose batch ends hands its lane to the oldest waiting caller, which runs up to `limit` queued
/// inputs as one batch (its own first) and answers the others. Under load, N concurrent inputs
/// cost about N / batch-size runs of `perform` (one transaction, one commit, a few round trips
/// instead of a few per input), and every caller still waits only for its own batch.
public final class Coalescer<Input: Sendable, Output: Sendable>: Sendable {
    /// Does a batch: one result per input, in the inputs' order.
    public typealias Perform = @Sendable ([Input]) async -> [Result<Output, any Error>]

    private enum Turn: Sendable {
        case done(Result<Output, any Error>)
        /// Run a batch: this caller's input, then these.
        case lead([Waiter])
    }

    private struct Waiter: Sendable {
        let input: Input
        let continuation: CheckedContinuation<Turn, Never>
    }

    private struct State: ~Copyable {
        var waiting: [Waiter] = []
        /// Index of the oldest waiter in `waiting` (taken ones before it are dropped in bulk).
        var head = 0
        var running = 0
    }

    /// Batches run at once, at most.
    public let lanes: Int
    /// Inputs in one batch, at most.
    public let limit: Int
    private let perform: Perform
    private let state = Mutex(State())

    public init(lanes: Int, limit: Int, perform: @escaping Perform) {
        self.lanes = max(1, lanes)
        self.limit = max(1, limit)
        self.perform = perform
    }

    /// Inputs waiting for a lane now.
    public var waiting: Int { state.withLock { $0.waiting.count - $0.head } }

    /// `input` done, alone or in a batch with others.
    public func run(_ input: Input) async throws -> Output {
        let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            let lead = state.withLock { state -> Bool in
                guard state.running < lanes else {
                    state.waiting.append(Waiter(input: input, continuation: continuation))
                    return false
                }
                state.running += 1
                return true
            }
            if lead { continuation.resume(returning: .lead([])) }
        }
        switch turn {
        case .done(let result):
            return try result.get()
        case .lead(let others):
            let results = await perform([input] + others.map(\.input))
            precondition(results.count == others.count + 1, "a batch answers each of its inputs")
            handOff()
            for (waiter, result) in zip(others, results.dropFirst()) { waiter.continuation.resume(returning: .done(result)) }
            return try results[0].get()
        }
    }

    /// Gives the lane to the oldest waiter with the batch it runs, or frees it.
    private func handOff() {
        let next = state.withLock { state -> (Waiter, [Waiter])? in
            let available = state.waiting.count - state.head
            guard available > 0 else {
                state.running -= 1
                return nil
            }
            let taken = state.waiting[state.head..<state.head + min(available, limit)]
            state.head += taken.count
            if state.head == state.waiting.count {
                state.waiting.removeAll(keepingCapacity: state.waiting.capacity <= 1024)
                state.head = 0
            } else if state.head >= 1024 {
                state.waiting.removeFirst(state.head)
                state.head = 0
            }
            return taken.first.map { ($0, Array(taken.dropFirst())) }
        }
        if let (leader, others) = next { leader.continuation.resume(returning: .lead(others)) }
    }
}
