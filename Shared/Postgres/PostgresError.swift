/// A PostgreSQL failure. It keeps the SQLSTATE so handlers can map, say, a unique violation to
/// 409; the server's message is for logs only — the HTTP layer never sends it to a client.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, broadly.
    public enum Kind: Sendable, Equatable {
        /// The server could not be reached or the connection broke.
        case connection
        /// The server refused a statement; see ``PostgresError/sqlState``.
        case server
        /// No connection became free within the pool's acquire timeout.
        case poolTimeout
        /// A value in a row could not be decoded as the requested type.
        case decoding
        /// The pool was closed.
        case closed
    }

    public let kind: Kind
    /// The five-character SQLSTATE for server errors (`23505` unique violation, …).
    public let sqlState: String?
    /// The server's or libpq's message, for logs.
    public let message: String
    /// The constraint named by the server, when there is one (for unique violations).
    public let constraint: String?

    public init(_ kind: Kind, sqlState: String? = nil, message: String, constraint: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.constraint = constraint
    }

    /// SQLSTATE 23505.
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// SQLSTATE 57014 (statement_timeout, or a cancel).
    public var isQueryCanceled: Bool { sqlState == "57014" }
    /// A table, column, schema or function the statement names does not exist: the schema is
    /// not migrated (or is older than the code).
    public var isMissingSchemaObject: Bool { ["42P01", "42703", "3F000", "42883"].contains(sqlState ?? "") }
    /// True when retrying later may succeed: connection failures, pool timeouts, a server
    /// shutting down or not accepting connections yet (class 57P, 08).
    public var isTransient: Bool {
        switch kind {
        case .connection, .poolTimeout, .closed: return true
        case .server: return sqlState.map { $0.hasPrefix("08") || $0.hasPrefix("57P") } ?? false
        case .decoding: return false
        }
    }

    public var description: String {
        var text = "PostgreSQL \(kind)"
        if let sqlState { text += " [\(sqlState)]" }
        if let constraint { text += " (constraint \(constraint))" }
        return text + ": " + message
    }
}
