#if canImport(Glibc)
    import Glibc
#endif

/// A fixed set of dedicated OS threads for blocking C calls (libpq, Argon2), awaited from async
/// code through a continuation, so the cooperative pool never blocks.
///
/// The pool bounds concurrency (at most `threads` jobs run at once) and, optionally, the queue:
/// beyond `queueLimit` waiting jobs, `run` fails at once with ``BlockingPool/Overloaded``.
///
/// The queue is guarded by a plain pthread mutex with a condition variable, not by
/// `Synchronization.Mutex`: measured, with a database pool of 32 threads on 2 cores, Mutex's
/// spinning slow path took a fifth of a service's CPU time.
///
/// `@unchecked Sendable`: `state` is only touched with `lock` held.
public final class BlockingPool: @unchecked Sendable {
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
    private var state = State()
    private let lock = ConditionLock()

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
    public var waiting: Int { lock.withLock { state.queued } }

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
        lock.withLock {
            guard !state.stopping, state.queued < queueLimit else { return false }
            state.jobs.append(job)
            lock.signal()
            return true
        }
    }

    /// Lets the threads finish the queued jobs and exit.
    public func shutdown() {
        lock.withLock {
            state.stopping = true
            lock.broadcast()
        }
    }

    /// The next job, waiting for one; nil once the pool is stopping and the queue is empty.
    fileprivate func nextJob() -> (@Sendable () -> Void)? {
        lock.withLock {
            while true {
                if let job = state.pop() { return job }
                if state.stopping { return nil }
                lock.wait()
            }
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
