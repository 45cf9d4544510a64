import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A fixed set of dedicated OS threads for blocking C calls (libpq, Argon2), awaited from async
/// code through a continuation, so the cooperative pool never blocks.
///
/// The pool bounds concurrency (at most `threads` jobs run at once) and, optionally, the queue:
/// beyond `queueLimit` waiting jobs, `run` fails at once with ``BlockingPool/Overloaded``.
public final class BlockingPool: Sendable {
    /// Thrown by ``run(_:)`` when the queue is full: the caller should answer 503.
    public struct Overloaded: Error, CustomStringConvertible {
        public let pool: String
        public var description: String { "the \(pool) pool is overloaded" }
        public init(pool: String) { self.pool = pool }
    }

    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var head = 0
        var queued: Int { jobs.count - head }
        var stopping = false

        mutating func pop() -> (@Sendable () -> Void)? {
            guard head < jobs.count else { return nil }
            let job = jobs[head]
            head += 1
            if head > 64 && head * 2 > jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            return job
        }
    }

    /// The name used in errors and thread names.
    public let name: String
    /// How many threads run jobs.
    public let threads: Int
    /// How many jobs may wait for a thread before `run` refuses more.
    public let queueLimit: Int
    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)

    /// Starts `threads` dedicated threads.
    public init(name: String, threads: Int, queueLimit: Int = Int.max) {
        precondition(threads > 0, "a blocking pool needs at least one thread")
        self.name = name
        self.threads = threads
        self.queueLimit = queueLimit
        for _ in 0..<threads {
            let worker = Worker(pool: self)
            startDetachedThread { worker.loop() }
        }
    }

    /// Jobs waiting for a thread right now.
    public var waiting: Int { state.withLock { $0.queued } }

    /// Runs `body` on one of the pool's threads and returns its result.
    /// - Throws: ``Overloaded`` when the queue is full, or whatever `body` throws.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
            if !submit({ continuation.resume(with: Result { try body() }) }) {
                continuation.resume(throwing: Overloaded(pool: name))
            }
        }
    }

    /// Queues `job` for one of the pool's threads without waiting for it; false when the queue
    /// is full or the pool is stopping (the job will not run).
    public func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        let admitted = state.withLock { state -> Bool in
            guard !state.stopping, state.queued < queueLimit else { return false }
            state.jobs.append(job)
            return true
        }
        if admitted { available.signal() }
        return admitted
    }

    /// Lets the threads finish the queued jobs and exit.
    public func shutdown() {
        state.withLock { $0.stopping = true }
        for _ in 0..<threads { available.signal() }
    }

    fileprivate func nextJob() -> (@Sendable () -> Void)? {
        while true {
            available.wait()
            let (job, stop) = state.withLock { state in (state.pop(), state.stopping) }
            if let job { return job }
            if stop { return nil }
        }
    }
}

/// What a pool thread runs: the pool's loop. A class so it can cross into the C thread entry.
private final class Worker: Sendable {
    let pool: BlockingPool
    init(pool: BlockingPool) { self.pool = pool }
    func loop() {
        while let job = pool.nextJob() { job() }
    }
}
