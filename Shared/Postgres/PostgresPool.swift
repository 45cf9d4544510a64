import PierRuntime
import Synchronization

/// A pool of libpq connections.
///
/// A task borrows a connection and runs its statements on it asynchronously (see
/// ``PostgresConnection``): no thread blocks while PostgreSQL works. Opening a connection is
/// libpq's one blocking call; it runs on a few threads of the pool's own. When every
/// connection is busy, callers wait in line up to `acquireTimeout`, then fail with a
/// `.poolTimeout` error (→ 503).
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
    /// What the pool's connections asked of the database so far.
    public let activity = PostgresActivity()
    private let state = Mutex(State())
    /// Where connections are opened (libpq's connect blocks up to its timeout).
    private let connector: BlockingPool

    public init(configuration: PostgresConfiguration) {
        precondition(configuration.poolSize > 0, "a pool needs at least one connection")
        self.configuration = configuration
        self.connector = BlockingPool(name: "postgres-connect", threads: min(configuration.poolSize, 4))
    }

    /// In use, idle and waiting right now.
    public var statistics: Statistics {
        state.withLock { state in
            Statistics(inUse: state.open - state.idle.count, idle: state.idle.count, waiting: state.waiters.count)
        }
    }

    /// Borrows a connection and runs `body` with it.
    @discardableResult
    public func withConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let lent = try await acquire()
        let connection: PostgresConnection
        do {
            connection = try await ready(lent)
        } catch {
            release(nil)
            throw error
        }
        do {
            let value = try await body(connection)
            release(connection)
            return value
        } catch {
            release(connection)
            throw error
        }
    }

    /// A lent connection made ready: reconnected when the server closed it, opened when the
    /// slot has none (nil).
    private func ready(_ lent: PostgresConnection?) async throws -> PostgresConnection {
        if let lent, lent.isUsable { return lent }
        let (configuration, activity) = (configuration, activity)
        return try await connector.run {
            if let lent {
                try lent.reconnect()
                return lent
            }
            return try PostgresConnection(configuration: configuration, activity: activity)
        }
    }

    /// Runs `body` in a transaction on a borrowed connection: committed when it returns, rolled
    /// back when it throws.
    @discardableResult
    public func withTransaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await withConnection { connection in try await connection.withTransaction(body) }
    }

    /// Runs `body` on one snapshot, set up for reports: a read-only repeatable-read transaction
    /// whose queries are planned for the values given on every call (a connection that first
    /// reported on little data would otherwise keep the generic plan it chose then: measured
    /// 35 ms a report with it, 13 ms without), never compiled (JIT) and run by this backend alone.
    /// A report reads few rows by design, but the planner overestimates the joins over a year of
    /// days: compiling cost more than running (68 ms of 155 at a million items), and starting two
    /// parallel workers 20 to 40 ms of each 1 to 5 ms query (the console's dashboard: 90 ms → 19).
    @discardableResult
    public func withReport<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await withTransaction { connection in
            try await connection.executeScript(
                unsafeSQL: """
                    SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;
                    SET LOCAL plan_cache_mode = force_custom_plan;
                    SET LOCAL jit = off;
                    SET LOCAL max_parallel_workers_per_gather = 0
                    """)
            return try await body(connection)
        }
    }

    /// Runs one statement and returns its rows.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await withConnection { try await $0.query(query) }
    }

    /// Runs one statement and returns how many rows it affected.
    @discardableResult
    public func execute(_ query: PostgresQuery) async throws -> Int {
        try await withConnection { try await $0.execute(query) }
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
        connector.shutdown()
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
