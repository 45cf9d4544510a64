import PierMail
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A row of a retry queue, read from the columns a claim returns.
protocol QueuedRow: PostgresRowDecodable {
    static var columns: StaticString { get }
}

/// The statements of the mail outbox (`auth.outbox`): a mail is queued in the transaction of
/// the change that causes it, claimed by the worker before it is sent, marked after.
struct Outbox: Sendable {
    /// A mail claimed for sending.
    struct Claimed: QueuedRow {
        static let columns: StaticString = "id, kind, recipient, message, attempts"
        let id: UUID
        let kind: String
        let recipient: String
        let message: [UInt8]
        let attempts: Int

        init(row: PostgresRow) throws {
            id = try row.decode("id")
            kind = try row.decode("kind")
            recipient = try row.decode("recipient")
            message = try row.decode("message", as: PostgresBytes.self).bytes
            attempts = try row.decode("attempts")
        }
    }

    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    /// Queues the mail `make` writes to an account's address; an account without one (anonymous,
    /// or kept by a passkey alone) gets none.
    func notify(_ address: String?, kind: String, _ make: (String) -> MailMessage) async throws {
        guard let address else { return }
        try await enqueue(make(address), kind: kind)
    }

    func enqueue(_ message: MailMessage, kind: String) async throws {
        let id = UUID.random()
        try await database.execute(
            """
            INSERT INTO auth.outbox (id, kind, recipient, message)
            VALUES (\(id), \(kind), \(MailMessage.address(in: message.to)),
                \(PostgresBytes(message.rendered(messageID: id.text(), date: Date()))))
            """)
    }

    /// The next mail that is due, its attempt counted and its next attempt pushed back before it
    /// is sent; nil when none is due.
    func claim(retrySeconds: Int) async throws -> Claimed? {
        try await Self.claimDue(
            Claimed.self, table: "auth.outbox", pending: "sent_at IS NULL AND failed_at IS NULL",
            retrySeconds: retrySeconds, on: database)
    }

    /// Claims the next due row of a retry queue (a table with `attempts` and `next_attempt_at`,
    /// its rows waiting while `pending` holds): its attempt counted and its next one pushed back
    /// (doubling from `retrySeconds`, an hour at most), committed before the attempt is made, so
    /// that two workers never make it at once and a crash retries it later.
    static func claimDue<Row: QueuedRow>(
        _ type: Row.Type, table: StaticString, pending: StaticString, retrySeconds: Int, on database: any PostgresExecutor
    ) async throws -> Row? {
        try await database.query(
            """
            UPDATE \(unsafeSQL: "\(table)") SET attempts = attempts + 1,
                next_attempt_at = now() + make_interval(secs => least(3600, \(retrySeconds) * power(2, attempts)))
            WHERE id = (
                SELECT id FROM \(unsafeSQL: "\(table)")
                WHERE \(unsafeSQL: "\(pending)") AND next_attempt_at <= now()
                ORDER BY next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED)
            RETURNING \(unsafeSQL: "\(Row.columns)")
            """
        ).first?.decode(Row.self)
    }

    func markSent(_ id: UUID) async throws {
        try await database.execute("UPDATE auth.outbox SET sent_at = now(), message = NULL, last_error = NULL WHERE id = \(id)")
    }

    /// Records a failed attempt; a final one gives the mail up (and drops its text).
    func markFailed(_ id: UUID, error: String, final: Bool) async throws {
        try await database.execute(
            """
            UPDATE auth.outbox SET last_error = \(error),
                failed_at = CASE WHEN \(final) THEN now() END, message = CASE WHEN \(final) THEN NULL ELSE message END
            WHERE id = \(id)
            """)
    }
}
