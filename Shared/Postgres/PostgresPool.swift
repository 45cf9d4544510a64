import PierRuntime
import Synchronization

/// A pool of libpq connections, each used from a dedicated thread.
///
/// Async code borrows a connection and hands a synchronous closure to one of the pool's own
/// threads: blocking libpq calls never run on Swift's cooperative pool, and a whole
/// transaction costs one hop, not one per statement. When every connection is busy, callers
/// wait in line up to `acquireTimeout`, then fail with a `.poolTimeout` error (→ 503).
///
/// Connections are opened lazily, checked when lent (a connection closed by a server restart is
/// replaced before use), and replaced after a statement breaks them: the pool recovers by
/// itself when the server comes back.
public final class PostgresPool: Sendable {
    /// Counts for `/metrics` and tests.
    public struct Statistics: Sendable, Equatable {
        public var inUse: Int
        public var idle: Int
        public var waiting: Int
    }

    private typealias Waiter = CheckedContinuation<PostgresConnection?, Error>

    private struct State {
        var idle: [PostgresConnection] = []
        /// Connections lent or being opened, plus idle ones: never above the pool size.
        var open = 0
        var waiters: [(id: Int, continuation: Waiter)] = []
        var nextWaiter = 0
        var closed = false
    }

    public let configuration: PostgresConfiguration
    private let state = Mutex(State())
    private let threads: BlockingPool

    public init(configuration: PostgresConfiguration) {
        precondition(configuration.poolSize > 0, "a pool needs at least one connection")
        self.configuration = configuration
        self.threads = BlockingPool(name: "postgres", threads: configuration.poolSize)
    }

    /// In use, idle and waiting right now.
    public var statistics: Statistics {
        state.withLock { state in
            Statistics(inUse: state.open - state.idle.count, idle: state.idle.count, waiting: state.waiters.count)
        }
    }

    /// Borrows a connection and runs `body` with it on a pool thread.
    @discardableResult
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        let lent = try await acquire()
        let configuration = configuration
        let outcome: Outcome<T>
        do {
            outcome = try await threads.run {
                // nil means: a slot is ours, open a fresh connection in it.
                let connection: PostgresConnection
                do {
                    if let lent {
                        try lent.prepareForUse()
                        connection = lent
                    } else {
                        connection = try PostgresConnection(configuration: configuration)
                    }
                } catch {
                    return .failure(error, nil)
                }
                do {
                    return .success(try body(connection), connection)
                } catch {
                    return .failure(error, connection)
                }
            }
        } catch {
            release(lent)
            throw error
        }
        switch outcome {
        case .success(let value, let connection):
            release(connection)
            return value
        case .failure(let error, let connection):
            release(connection)
            throw error
        }
    }

    /// Runs `body` in a transaction on a borrowed connection: committed when it returns, rolled
    /// back when it throws.
    @discardableResult
    public func withTransaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await withConnection { connection in try connection.withTransaction(body) }
    }

    /// Runs one statement and returns its rows.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await withConnection { try $0.query(query) }
    }

    /// Runs one statement and returns how many rows it affected.
    @discardableResult
    public func execute(_ query: PostgresQuery) async throws -> Int {
        try await withConnection { try $0.execute(query) }
    }

    /// True when a connection can run `SELECT 1` now.
    public func isReachable() async -> Bool {
        (try? await query("SELECT 1").count) == 1
    }

    /// Fails every waiter, closes idle connections, and refuses new work.
    public func close() {
        let (waiters, idle) = state.withLock { state -> ([Waiter], [PostgresConnection]) in
            state.closed = true
            let waiters = state.waiters.map(\.continuation)
            let idle = state.idle
            state.waiters = []
            state.idle = []
            state.open -= idle.count
            return (waiters, idle)
        }
        for waiter in waiters { waiter.resume(throwing: PostgresError(.closed, message: "the pool is closed")) }
        _ = idle  // Released here: PQfinish runs in deinit.
        threads.shutdown()
    }

    // MARK: - Lending

    private enum Acquired {
        case connection(PostgresConnection)
        case newSlot
        case wait(Int)
        case closed
    }

    private func acquire() async throws -> PostgresConnection? {
        try await withCheckedThrowingContinuation { (continuation: Waiter) in
            let acquired = state.withLock { state -> Acquired in
                if state.closed { return .closed }
                if let connection = state.idle.popLast() { return .connection(connection) }
                if state.open < configuration.poolSize {
                    state.open += 1
                    return .newSlot
                }
                state.nextWaiter += 1
                state.waiters.append((state.nextWaiter, continuation))
                return .wait(state.nextWaiter)
            }
            switch acquired {
            case .connection(let connection): continuation.resume(returning: connection)
            case .newSlot: continuation.resume(returning: nil)
            case .closed: continuation.resume(throwing: PostgresError(.closed, message: "the pool is closed"))
            case .wait(let id):
                let timeout = configuration.acquireTimeout
                Task { [weak self] in
                    try? await Task.sleep(for: timeout)
                    self?.expire(waiter: id)
                }
            }
        }
    }

    private func expire(waiter id: Int) {
        let expired = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index).continuation
        }
        expired?.resume(
            throwing: PostgresError(
                .poolTimeout, message: "no database connection became free within \(configuration.acquireTimeout)"))
    }

    /// Returns a connection (or, with nil, a slot whose connection broke or never opened) to
    /// the pool, handing it straight to the first waiter when there is one.
    private func release(_ connection: PostgresConnection?) {
        let usable = connection.flatMap { $0.isBroken ? nil : $0 }
        let waiter = state.withLock { state -> Waiter? in
            if state.closed {
                state.open -= 1
                return nil
            }
            if !state.waiters.isEmpty { return state.waiters.removeFirst().continuation }
            if let usable { state.idle.append(usable) } else { state.open -= 1 }
            return nil
        }
        // The waiter inherits the slot: the connection, or nil to open a new one.
        waiter?.resume(returning: usable)
    }
}

/// What a job on a lent connection produced, with the connection to give back (nil when it
/// could not be opened).
private enum Outcome<T: Sendable>: Sendable {
    case success(T, PostgresConnection)
    case failure(Error, PostgresConnection?)
}
