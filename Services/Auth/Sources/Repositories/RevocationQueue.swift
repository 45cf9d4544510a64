import PierPostgres

/// The statements of the queue of Apple tokens to revoke (`auth.apple_revocations`, filled by a
/// trigger in the transaction that removed an identity).
struct RevocationQueue: Sendable {
    /// A token due for an attempt, claimed (its attempt counted, its next one pushed back).
    struct Due: QueuedRow {
        static let columns: StaticString = "id, subject, sealed_token, attempts"
        let id: Int64
        let subject: String
        let sealedToken: PostgresBytes
        /// Attempts so far, this one included.
        let attempts: Int

        init(row: PostgresRow) throws {
            id = try row.decode("id")
            subject = try row.decode("subject")
            sealedToken = try row.decode("sealed_token")
            attempts = try row.decode("attempts")
        }
    }

    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    /// The next token due, claimed; nil when none is.
    func claimDue(retrySeconds: Int) async throws -> Due? {
        try await Outbox.claimDue(
            Due.self, table: "auth.apple_revocations", pending: "revoked_at IS NULL AND failed_at IS NULL",
            retrySeconds: retrySeconds, on: database)
    }

    /// Revoked: the sealed token goes.
    func revoked(_ id: Int64) async throws {
        try await database.execute(
            "UPDATE auth.apple_revocations SET revoked_at = now(), sealed_token = NULL, last_error = NULL WHERE id = \(id)")
    }

    /// Not revoked, for `reason`; `final`ly (given up: the sealed token goes) or to retry.
    func failed(_ id: Int64, reason: String, final: Bool) async throws {
        try await database.execute(
            """
            UPDATE auth.apple_revocations SET last_error = \(reason),
                failed_at = CASE WHEN \(final) THEN now() END,
                sealed_token = CASE WHEN \(final) THEN NULL ELSE sealed_token END
            WHERE id = \(id)
            """)
    }
}
