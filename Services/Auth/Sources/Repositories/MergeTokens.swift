import PierPostgres

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Merge tokens (`auth.merge_tokens`, by hash) and the record of merges done (`auth.merges`):
/// the statements of ``Accounts/merge(token:into:session:authenticatedAt:by:)``.
struct MergeTokens: Sendable {
    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    /// A token for the anonymous `user`'s `session`, replacing the session's older one, valid
    /// `lifetime` seconds; its expiry, or nil when the session is not the user's or not live.
    func replace(_ hash: [UInt8], user: UUID, session: UUID, lifetime: Int) async throws -> Date? {
        try await database.execute("DELETE FROM auth.merge_tokens WHERE session_id = \(session)")
        return try await database.query(
            """
            INSERT INTO auth.merge_tokens (token_hash, user_id, session_id, expires_at)
            SELECT \(PostgresBytes(hash)), \(user), id, now() + make_interval(secs => \(lifetime))
            FROM auth.sessions
            WHERE id = \(session) AND user_id = \(user) AND revoked_at IS NULL AND expires_at > now()
            RETURNING expires_at
            """
        ).first?.decode("expires_at")
    }

    /// A token as a merge finds it, locked with its account.
    struct Locked: PostgresRowDecodable, Sendable {
        /// The anonymous account.
        var user: UUID
        /// When the token was made (seconds since 1970) and when the account was made.
        var createdAt: Double
        var anonymousAt: Date?
        /// Unexpired, its session live, its account still anonymous.
        var usable: Bool

        init(row: PostgresRow) throws {
            user = try row.decode("user_id")
            createdAt = try row.decode("created_at")
            anonymousAt = try row.decode("anonymous_at")
            usable = try row.decode("usable")
        }
    }

    /// The token of `hash`, locked with its account (`FOR UPDATE`).
    func lock(_ hash: [UInt8]) async throws -> Locked? {
        try await database.query(
            """
            SELECT t.user_id, extract(epoch FROM t.created_at)::float8 AS created_at, u.anonymous_at,
                t.expires_at > now() AND s.revoked_at IS NULL AND s.expires_at > now()
                    AND u.permanent_at IS NULL AND u.anonymous_at IS NOT NULL AS usable
            FROM auth.merge_tokens t
            JOIN auth.sessions s ON s.id = t.session_id JOIN auth.users u ON u.id = t.user_id
            WHERE t.token_hash = \(PostgresBytes(hash))
            FOR UPDATE OF t, u
            """
        ).first?.decode(Locked.self)
    }

    /// Records that `anonymous` (made at `anonymousAt`) went into `into`.
    func recordMerge(of anonymous: UUID, into: UUID, anonymousAt: Date) async throws {
        try await database.execute(
            """
            INSERT INTO auth.merges (anonymous_id, into_id, anonymous_at)
            VALUES (\(anonymous), \(into), \(anonymousAt))
            """)
    }
}
