import PierCrypto
import PierModels
import PierPostgres
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The accounts, sessions and refresh tokens in `auth`, and the events their changes publish:
/// every statement of the auth controller, answered in domain terms (failed logins live in
/// ``LoginThrottle``).
struct AuthRepository: Sendable {
    let database: PostgresPool
    /// Refresh tokens and sessions live this long, renewed at each rotation.
    let refreshDays: Int
    /// How long an access token lives: revocations are published for that long.
    let accessTTL: Int

    static let userColumns = "id, email, display_name, role, created_at"

    static func user(_ row: PostgresRow) throws -> User {
        User(
            id: try row.decode("id"), email: try row.decode("email"),
            displayName: try row.decode("display_name", as: String?.self),
            role: try row.decode("role"), createdAt: try row.decode("created_at"))
    }

    func user(_ id: UUID) async throws -> User? {
        try await database.query("SELECT \(unsafeSQL: Self.userColumns) FROM auth.users WHERE id = \(id)").first.map(Self.user)
    }

    func emailKey(of user: UUID) async throws -> String? {
        try await database.query("SELECT email_key FROM auth.users WHERE id = \(user)").first?.decode("email_key")
    }

    enum Registered: Sendable {
        case created(User, session: UUID)
        case emailTaken
    }

    /// Creates the account and its first session (whose first refresh token is `refreshToken`).
    func register(
        _ id: UUID, email: EmailAddress, passwordHash: String, displayName: String?, refreshToken: String
    ) async throws -> Registered {
        do {
            return try await database.withTransaction { connection in
                let rows = try await connection.query(
                    """
                    INSERT INTO auth.users (id, email, email_key, password_hash, display_name)
                    VALUES (\(id), \(email.address), \(email.key), \(passwordHash), \(displayName))
                    RETURNING \(unsafeSQL: Self.userColumns)
                    """)
                return .created(
                    try Self.user(rows[0]), session: try await openSession(for: id, refreshToken: refreshToken, on: connection))
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            return .emailTaken
        }
    }

    func setPasswordHash(_ hash: String, of user: UUID) async throws {
        try await database.execute("UPDATE auth.users SET password_hash = \(hash), updated_at = now() WHERE id = \(user)")
    }

    /// A new session for `user` whose first refresh token is `refreshToken`.
    func openSession(for user: UUID, refreshToken: String) async throws -> UUID {
        try await database.withConnection { connection in
            try await openSession(for: user, refreshToken: refreshToken, on: connection)
        }
    }

    /// Opens a session with its first refresh token, in one statement (atomic on its own).
    private func openSession(for user: UUID, refreshToken: String, on connection: PostgresConnection) async throws -> UUID {
        let sessionID = UUID()
        try await connection.execute(
            """
            WITH session AS (
                INSERT INTO auth.sessions (id, user_id, expires_at)
                VALUES (\(sessionID), \(user), now() + make_interval(days => \(refreshDays)))
                RETURNING id, expires_at
            )
            INSERT INTO auth.refresh_tokens (token_hash, session_id, expires_at)
            SELECT \(PostgresBytes(TokenIssuer.hash(refreshToken))), id, expires_at FROM session
            """)
        return sessionID
    }

    enum Rotation: Sendable {
        /// The token was exchanged for its successor (or, within the grace window, is the same
        /// client retrying: the same successor again).
        case rotated(User, session: UUID)
        /// A used token came back: the session is revoked.
        case reused(session: UUID)
        case invalid
    }

    /// Exchanges the refresh token of `hash` for the one of `successorHash`, under the rows'
    /// locks; a reuse outside the grace window revokes the whole session.
    func rotate(_ hash: PostgresBytes, successor successorHash: PostgresBytes, graceSeconds: Int) async throws -> Rotation {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                SELECT t.session_id, t.used_at IS NULL AS unused, t.used_at > now() - make_interval(secs => \(graceSeconds)) AS in_grace,
                       t.expires_at > now() AND s.expires_at > now() AND s.revoked_at IS NULL AS live,
                       u.id, u.email, u.display_name, u.role, u.created_at
                FROM auth.refresh_tokens t
                JOIN auth.sessions s ON s.id = t.session_id
                JOIN auth.users u ON u.id = s.user_id
                WHERE t.token_hash = \(hash)
                FOR UPDATE OF t, s
                """)
            guard let row = rows.first, try row.decode("live", as: Bool.self) else { return .invalid }
            let sessionID = try row.decode("session_id", as: UUID.self)
            let user = try Self.user(row)
            if try row.decode("unused", as: Bool.self) {
                try await connection.execute("UPDATE auth.refresh_tokens SET used_at = now() WHERE token_hash = \(hash)")
                try await connection.execute(
                    """
                    INSERT INTO auth.refresh_tokens (token_hash, session_id, expires_at)
                    VALUES (\(successorHash), \(sessionID), now() + make_interval(days => \(refreshDays)))
                    """)
                try await connection.execute(
                    "UPDATE auth.sessions SET expires_at = now() + make_interval(days => \(refreshDays)) WHERE id = \(sessionID)")
                return .rotated(user, session: sessionID)
            }
            // Used before. Within the grace window, and while its successor is still unused, it
            // is the same client retrying: answer with the same successor.
            if try row.decode("in_grace", as: Bool?.self) == true {
                let next = try await connection.query(
                    "SELECT 1 FROM auth.refresh_tokens WHERE token_hash = \(successorHash) AND used_at IS NULL")
                if !next.isEmpty { return .rotated(user, session: sessionID) }
            }
            try await connection.execute(
                "UPDATE auth.sessions SET revoked_at = now(), revoked_reason = 'refresh token reuse' WHERE id = \(sessionID)")
            try await revoked([sessionID], of: user.id, on: connection)
            return .reused(session: sessionID)
        }
    }

    /// Ends `user`'s session `current` and the one of the refresh token of `hash`.
    /// Ends the session of the refresh token (of `user`'s sessions only, when the caller is known)
    /// and the caller's current one.
    func logout(_ user: UUID?, session current: UUID?, refreshTokenHash hash: PostgresBytes) async throws {
        try await database.withTransaction { connection in
            let ended = try await connection.query(
                """
                UPDATE auth.sessions s SET revoked_at = now(), revoked_reason = 'logout'
                WHERE (\(user)::uuid IS NULL OR s.user_id = \(user)) AND s.revoked_at IS NULL
                  AND (s.id = \(current) OR s.id IN (SELECT session_id FROM auth.refresh_tokens WHERE token_hash = \(hash)))
                RETURNING s.id, s.user_id
                """)
            for row in ended {
                try await revoked(
                    [try row.decode("id", as: UUID.self)], of: try row.decode("user_id", as: UUID.self), on: connection)
            }
        }
    }

    /// Sets the new hash and ends every other session of `user` (all of them without `keep`).
    func changePassword(of user: UUID, to hash: String, keeping keep: UUID?) async throws {
        try await database.withTransaction { connection in
            try await connection.execute("UPDATE auth.users SET password_hash = \(hash), updated_at = now() WHERE id = \(user)")
            let ended = try await connection.query(
                """
                UPDATE auth.sessions SET revoked_at = now(), revoked_reason = 'password changed'
                WHERE user_id = \(user) AND revoked_at IS NULL AND id IS DISTINCT FROM \(keep)
                RETURNING id
                """)
            try await revoked(try ended.map { try $0.decode("id", as: UUID.self) }, of: user, on: connection)
        }
    }

    /// Deletes the account and publishes `account.deleted` in the same transaction: the event
    /// exists exactly when the account is gone. False when there was no such account.
    func delete(_ user: UUID) async throws -> Bool {
        try await database.withTransaction { connection in
            guard !(try await connection.query("DELETE FROM auth.users WHERE id = \(user) RETURNING id")).isEmpty else {
                return false
            }
            try await EventLog.append(AccountDeleted.type, payload: AccountDeleted(userId: user), on: connection)
            return true
        }
    }

    /// Publishes, in the transaction that ended them, that these sessions' access tokens are
    /// revoked until the last of them would have expired.
    private func revoked(_ sessions: [UUID], of user: UUID, on connection: PostgresConnection) async throws {
        let until = Int(Date().timeIntervalSince1970) + accessTTL + 60
        for session in sessions {
            try await EventLog.append(
                SessionRevoked.type, payload: SessionRevoked(sessionId: session, userId: user, until: until), on: connection)
        }
    }
}
