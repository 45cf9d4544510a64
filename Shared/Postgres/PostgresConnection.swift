import CPostgres
import PierRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// One libpq connection, used by one task at a time (``PostgresPool/withConnection(_:)``).
///
/// Statements are asynchronous: the task sends them and reads their results itself (libpq in
/// non-blocking mode), and waits in between on ``SocketWaiter``'s thread, never blocking a
/// thread of Swift's pool. Only opening a connection blocks (libpq's `connect_timeout`), and
/// the pool does that on threads of its own.
///
/// `@unchecked Sendable`: the pool hands a connection to exactly one task at a time; a task
/// may move between threads, but never touches it from two at once.
public final class PostgresConnection: @unchecked Sendable {
    private var handle: OpaquePointer?
    private let configuration: PostgresConfiguration
    /// Where the statements, round trips and rows written are counted (the pool's).
    private let activity: PostgresActivity?
    /// True once a statement failed in a way that leaves the connection unusable.
    private(set) var isBroken = false
    /// Statements prepared on this connection, by SQL text: the server parses and plans each
    /// once (measured: planning is most of the cost of a small SELECT). Bounded, so that SQL
    /// built per request (filters) cannot grow it: beyond the bound, statements run unnamed.
    private var prepared: [String: String] = [:]
    private var preparedCount = 0
    static let maximumPrepared = 200

    /// Opens the connection; this blocks up to the configuration's connect timeout.
    init(configuration: PostgresConfiguration, activity: PostgresActivity? = nil) throws {
        self.configuration = configuration
        self.activity = activity
        try connect()
    }

    deinit { if let handle { PQfinish(handle) } }

    private func connect() throws {
        if let handle { PQfinish(handle) }
        handle = nil
        var options = "-c TimeZone=UTC -c DateStyle=ISO -c client_encoding=UTF8"
        if configuration.statementTimeoutMilliseconds > 0 {
            options += " -c statement_timeout=\(configuration.statementTimeoutMilliseconds)"
        }
        var keywords = ["dbname", "options", "application_name", "connect_timeout"]
        var values = [configuration.url, options, configuration.applicationName, String(configuration.connectTimeoutSeconds)]
        if let password = configuration.password {
            keywords.append("password")
            values.append(password)
        }
        let connection = withCStringArray(keywords) { keywords in
            withCStringArray(values) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let connection else { throw PostgresError(.connection, message: "out of memory") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = errorMessage(connection)
            PQfinish(connection)
            throw PostgresError(.connection, message: message)
        }
        // Notices ("relation already exists, skipping") would go to stderr; they are not errors.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        // Sends never block: a full socket buffer is waited for like a result.
        PQsetnonblocking(connection, 1)
        handle = connection
        isBroken = false
        prepared = [:]
    }

    /// False when the server closed the connection since it was last used (a restart): the
    /// pool then reconnects it (``reconnect()``) before lending it, so a request never meets a
    /// dead socket left from before. Does not block.
    var isUsable: Bool {
        guard let handle, !isBroken, PQstatus(handle) == CONNECTION_OK else { return false }
        // An idle pool connection (never LISTENing) has nothing to read: readable means the
        // server's termination message or EOF.
        return CPostgres_socket_readable(handle) == 0
    }

    /// Opens the connection again; blocks like ``init(configuration:)``.
    func reconnect() throws { try connect() }

    /// `LISTEN channel`, for the listener's own connection, on the listener's own thread.
    func listen(_ channel: String) throws {
        guard let handle else { throw PostgresError(.connection, message: "not connected") }
        PQsetnonblocking(handle, 0)
        let result = PQexec(handle, "LISTEN \"\(channel)\"")
        defer { PQclear(result) }
        try check(result, handle)
    }

    enum NotificationOutcome: Equatable {
        /// Notified, with each notification's payload.
        case notified([String])
        case timedOut, broken
    }

    /// Waits for a NOTIFY on a LISTENing connection (used by ``PostgresListener`` only).
    func awaitNotification(timeoutMilliseconds: Int32) -> NotificationOutcome {
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return .broken }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, timeoutMilliseconds)
        if ready < 0 { return errno == EINTR ? .timedOut : .broken }
        if ready == 0 { return .timedOut }
        guard PQconsumeInput(handle) == 1 else { return .broken }
        var payloads: [String] = []
        while let notification = PQnotifies(handle) {
            payloads.append(notification.pointee.extra.map { String(cString: $0) } ?? "")
            PQfreemem(notification)
        }
        if !payloads.isEmpty { return .notified(payloads) }
        return PQstatus(handle) == CONNECTION_OK ? .timedOut : .broken
    }

    /// Runs one statement and returns its rows: read in place from libpq's result, which the
    /// rows keep alive (nothing copied).
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        let result = try await checkedResult(query)
        let columnCount = Int(PQnfields(result))
        let columns = PostgresColumns((0..<columnCount).map { String(cString: PQfname(result, Int32($0))) })
        let cells = PostgresCells(result: result, columnCount: columnCount)
        return (0..<Int(PQntuples(result))).map { PostgresRow(columns: columns, cells: cells, row: $0) }
    }

    /// Runs one statement and returns how many rows it affected.
    @discardableResult
    public func execute(_ query: PostgresQuery) async throws -> Int {
        try await run(query) { result in Int(String(cString: PQcmdTuples(result))) ?? 0 }
    }

    /// Runs a script of several statements without parameters (migrations, a report's settings).
    public func executeScript(unsafeSQL sql: String) async throws {
        guard let handle else { throw PostgresError(.connection, message: "not connected") }
        let result = try await roundTrip(handle) { PQsendQuery($0, sql) }
        defer { PQclear(result) }
        try check(result, handle)
        activity?.statementRan(rowsWritten: 0)
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    @discardableResult
    public func withTransaction<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await execute("BEGIN")
        do {
            let value = try await body(self)
            try await execute("COMMIT")
            return value
        } catch {
            if !isBroken { _ = try? await execute("ROLLBACK") }
            throw error
        }
    }

    private func run<T>(_ query: PostgresQuery, _ read: (OpaquePointer) throws -> T) async throws -> T {
        let result = try await checkedResult(query)
        defer { PQclear(result) }
        return try read(result)
    }

    /// Runs `query` and returns its successful result, which the caller clears.
    private func checkedResult(_ query: PostgresQuery) async throws -> OpaquePointer {
        guard let handle else { throw PostgresError(.connection, message: "not connected") }
        let name = try await statement(for: query, on: handle)
        let result = try await roundTrip(handle) { handle in
            withOptionalCStringArray(query.binds) { values in
                if let name {
                    PQsendQueryPrepared(handle, name, Int32(query.binds.count), values, nil, nil, 0)
                } else {
                    PQsendQueryParams(handle, query.sql, Int32(query.binds.count), nil, values, nil, nil, 0)
                }
            }
        }
        do {
            try check(result, handle)
        } catch let error as PostgresError where error.sqlState == "0A000" && name != nil {
            // "cached plan must not change result type": a table changed under the statement.
            prepared[query.sql] = nil
            PQclear(result)
            throw error
        } catch {
            PQclear(result)
            throw error
        }
        activity?.statementRan(rowsWritten: Self.rowsWritten(result!))
        return result!
    }

    /// The rows an INSERT, UPDATE, DELETE or MERGE reports (its command tag); 0 for the others.
    private static func rowsWritten(_ result: OpaquePointer) -> Int {
        guard let tag = PQcmdStatus(result) else { return 0 }
        let command = String(cString: tag).prefix { $0 != " " }
        guard command == "INSERT" || command == "UPDATE" || command == "DELETE" || command == "MERGE" else { return 0 }
        return Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    /// The name of the prepared statement for this SQL, preparing it on first use; nil when it
    /// is to run unnamed (the cache is full, or preparing failed: running it unnamed then
    /// reports the error as any statement's).
    private func statement(for query: PostgresQuery, on handle: OpaquePointer) async throws -> String? {
        if let name = prepared[query.sql] { return name }
        guard prepared.count < Self.maximumPrepared else { return nil }
        let name = "pier_\(preparedCount)"
        preparedCount += 1
        let result = try await roundTrip(handle) { PQsendPrepare($0, name, query.sql, Int32(query.binds.count), nil) }
        defer { PQclear(result) }
        // A statement that cannot be prepared (a table missing) would fail the same way when
        // run: its own error is the one to report. Running it anyway inside a transaction would
        // report only "current transaction is aborted" (25P02), hiding the cause.
        try check(result, handle)
        guard let result, PQresultStatus(result) == PGRES_COMMAND_OK else { return nil }
        prepared[query.sql] = name
        return name
    }

    /// Sends one command with `send` (a `PQsend…` call), waits for its results without
    /// blocking a thread, and returns the first failed result, or else the last one (a script
    /// has one per statement); nil when there was none. The caller clears it.
    private func roundTrip(_ handle: OpaquePointer, _ send: (OpaquePointer) -> Int32) async throws -> OpaquePointer? {
        guard send(handle) == 1 else { throw lost(handle) }
        activity?.roundTripMade()
        let socket = PQsocket(handle)
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { break }
            guard flushed == 1 else { throw lost(handle) }
            await SocketWaiter.shared.wait(for: socket, writable: true)
        }
        var kept: OpaquePointer?
        while true {
            while PQisBusy(handle) == 1 {
                await SocketWaiter.shared.wait(for: socket)
                guard PQconsumeInput(handle) == 1 else {
                    PQclear(kept)
                    throw lost(handle)
                }
            }
            guard let result = PQgetResult(handle) else { break }
            if let previous = kept, Self.failed(previous) {
                PQclear(result)
            } else {
                PQclear(kept)
                kept = result
            }
        }
        return kept
    }

    private static func failed(_ result: OpaquePointer) -> Bool {
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY: false
        default: true
        }
    }

    /// The error of a send or a read that failed: the connection is broken when libpq says so.
    private func lost(_ handle: OpaquePointer) -> PostgresError {
        if PQstatus(handle) != CONNECTION_OK { isBroken = true }
        return PostgresError(.connection, message: errorMessage(handle))
    }

    private func check(_ result: OpaquePointer?, _ handle: OpaquePointer) throws {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        switch status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            if PQstatus(handle) != CONNECTION_OK {
                isBroken = true
                throw PostgresError(.connection, message: errorMessage(handle))
            }
            func field(_ code: UInt8) -> String? {
                guard let result, let value = PQresultErrorField(result, Int32(code)) else { return nil }
                return String(cString: value)
            }
            let message = field(UInt8(ascii: "M")) ?? errorMessage(handle)
            throw PostgresError(
                .server, sqlState: field(UInt8(ascii: "C")), message: message,
                constraint: field(UInt8(ascii: "n")))
        }
    }
}

private func errorMessage(_ connection: OpaquePointer) -> String {
    guard let message = PQerrorMessage(connection) else { return "unknown libpq error" }
    return String(cString: message).trimmingSuffix("\n")
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: Character) -> String {
        var text = self
        while text.last == suffix { text.removeLast() }
        return text
    }
}

/// Calls `body` with a NULL-terminated array of C strings that live for the call's duration.
private func withCStringArray<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
    withOptionalCStringArray(strings.map { Optional($0) }) { body($0!) }
}

private func withOptionalCStringArray<T>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T {
    let copies: [UnsafeMutablePointer<CChar>?] = strings.map { $0.map { strdup($0) } ?? nil }
    defer { for copy in copies { free(copy) } }
    let pointers = copies.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
}
