import PierEvents
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The statements of sessions and their refresh tokens. Ending a session publishes its
/// revocation to the event log in the same transaction, so that every service refuses its
/// access tokens from then on.
struct Sessions: Sendable {
    /// What a session remembers of the device that opened it, and when it signed in (the
    /// session's `authenticated_at`, and the `auth_time` of its first access token: one value).
    struct Device: Sendable {
        var name: String?
        var address: String
        /// Whole seconds, as `auth_time` has them: the database keeps exactly what the token says.
        var signedInAt = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        /// How the sign-in was proven, as RFC 8176 names it (`pwd`; `otp` and `mfa` with a code).
        var amr: [String] = []
    }

    /// What the session lifetimes are.
    struct Lifetimes: Sendable {
        /// Refresh tokens and sessions live this long, renewed at each rotation.
        let refreshDays: Int
        /// How long an access token lives: revocations are published for that long.
        let accessTTL: Int
    }

    let database: any PostgresExecutor
    let lifetimes: Lifetimes

    init(_ database: any PostgresExecutor, _ lifetimes: Lifetimes) {
        self.database = database
        self.lifetimes = lifetimes
    }

    /// Whether a session of `user` came from this device name and address before.
    func isKnown(_ device: Device, of user: UUID) async throws -> Bool {
        try await database.query(
            """
            SELECT EXISTS (SELECT 1 FROM auth.sessions WHERE user_id = \(user)
                AND device_name IS NOT DISTINCT FROM \(device.name) AND client_address = \(device.address)) AS known
            """)[0].decode("known")
    }

    /// Opens a session with its first refresh token, in one statement (atomic on its own).
    func open(for user: UUID, refreshToken: String, device: Device) async throws -> UUID {
        let sessionID = UUID.random()
        try await database.execute(
            """
            WITH session AS (
                INSERT INTO auth.sessions (id, user_id, expires_at, device_name, client_address, authenticated_at, last_used_at, amr)
                VALUES (\(sessionID), \(user), now() + make_interval(days => \(lifetimes.refreshDays)), \(device.name),
                    \(device.address), \(device.signedInAt), now(), \(PostgresTextArray(device.amr))::text[])
                RETURNING id, expires_at
            )
            INSERT INTO auth.refresh_tokens (token_hash, session_id, expires_at)
            SELECT \(PostgresBytes(TokenIssuer.hash(refreshToken))), id, expires_at FROM session
            """)
        return sessionID
    }

    /// A refresh token as presented, with its session and user, the rows locked.
    struct PresentedToken: Sendable {
        let session: UUID
        let authenticatedAt: Date
        /// How the session's sign-in (or its last re-authentication) was proven.
        let amr: [String]
        let user: User
        let unused: Bool
        /// Used within the grace window (nil when unused).
        let inGrace: Bool?
        let live: Bool
    }

    func lock(refreshToken hash: PostgresBytes, graceSeconds: Int) async throws -> PresentedToken? {
        try await database.query(
            """
            SELECT t.session_id, s.authenticated_at, s.amr, t.used_at IS NULL AS unused,
                   t.used_at > now() - make_interval(secs => \(graceSeconds)) AS in_grace,
                   t.expires_at > now() AND s.expires_at > now() AND s.revoked_at IS NULL AS live,
                   \(unsafeSQL: Users.columns("u"))
            FROM auth.refresh_tokens t
            JOIN auth.sessions s ON s.id = t.session_id
            JOIN auth.users u ON u.id = s.user_id
            WHERE t.token_hash = \(hash)
            FOR UPDATE OF t, s
            """
        ).first.map { row in
            PresentedToken(
                session: try row.decode("session_id"), authenticatedAt: try row.decode("authenticated_at"),
                amr: try row.decode("amr", as: PostgresTextArray.self).values, user: try row.decode(User.self),
                unused: try row.decode("unused"), inGrace: try row.decode("in_grace"),
                live: try row.decode("live"))
        }
    }

    /// Marks the token of `hash` used, gives its session the successor and renews it.
    func rotate(_ hash: PostgresBytes, to successor: PostgresBytes, session: UUID, from address: String) async throws {
        try await database.execute("UPDATE auth.refresh_tokens SET used_at = now() WHERE token_hash = \(hash)")
        try await database.execute(
            """
            INSERT INTO auth.refresh_tokens (token_hash, session_id, expires_at)
            VALUES (\(successor), \(session), now() + make_interval(days => \(lifetimes.refreshDays)))
            """)
        try await database.execute(
            """
            UPDATE auth.sessions SET expires_at = now() + make_interval(days => \(lifetimes.refreshDays)), last_used_at = now(),
                client_address = \(address)
            WHERE id = \(session)
            """)
    }

    func isUnused(refreshToken hash: PostgresBytes) async throws -> Bool {
        !(try await database.query("SELECT 1 FROM auth.refresh_tokens WHERE token_hash = \(hash) AND used_at IS NULL"))
            .isEmpty
    }

    /// Ends the session of the refresh token of `hash` (of `user`'s sessions only, when the caller
    /// is known) and the session `current`.
    func logout(_ user: UUID?, session current: UUID?, refreshTokenHash hash: PostgresBytes) async throws {
        let ended = try await database.query(
            """
            UPDATE auth.sessions s SET revoked_at = now(), revoked_reason = 'logout'
            WHERE (\(user)::uuid IS NULL OR s.user_id = \(user)) AND s.revoked_at IS NULL
              AND (s.id = \(current) OR s.id IN (SELECT session_id FROM auth.refresh_tokens WHERE token_hash = \(hash)))
            RETURNING s.id, s.user_id
            """)
        for row in ended {
            try await published([try row.decode("id", as: UUID.self)], of: try row.decode("user_id", as: UUID.self))
        }
    }

    /// Ends `user`'s live sessions (all, or the one of `id`, or all but `keep`) and publishes
    /// their revocation. Returns how many were live.
    @discardableResult
    func end(of user: UUID, only id: UUID? = nil, keeping keep: UUID? = nil, reason: String) async throws -> Int {
        let ended = try await database.query(
            """
            UPDATE auth.sessions SET revoked_at = now(), revoked_reason = \(reason)
            WHERE user_id = \(user) AND revoked_at IS NULL AND (\(id)::uuid IS NULL OR id = \(id))
                AND id IS DISTINCT FROM \(keep)
            RETURNING id
            """)
        // Ending every session ends the sign-ins half done too (a password passed, a code awaited).
        if id == nil { try await SecondFactors(database).endChallenges(of: user) }
        try await published(try ended.map { try $0.decode("id", as: UUID.self) }, of: user)
        return ended.count
    }

    /// Takes `anon` out of the session's `amr`: its account became permanent, and the tokens
    /// refreshed from now on no longer mark it anonymous to the other services.
    /// How many of the account's sessions are live.
    func liveCount(of user: UUID) async throws -> Int {
        try await database.query(
            "SELECT count(*)::int AS n FROM auth.sessions WHERE user_id = \(user) AND revoked_at IS NULL AND expires_at > now()"
        )[0].decode("n")
    }

    /// Whether `session` is `user`'s, not ended, not expired.
    func isLive(_ session: UUID, of user: UUID) async throws -> Bool {
        try await !database.query(
            """
            SELECT 1 FROM auth.sessions
            WHERE id = \(session) AND user_id = \(user) AND revoked_at IS NULL AND expires_at > now()
            """
        ).isEmpty
    }

    func markPermanent(_ session: UUID) async throws {
        try await database.execute("UPDATE auth.sessions SET amr = array_remove(amr, 'anon') WHERE id = \(session)")
    }

    /// `user`'s live sessions, the most recently used first.
    func list(of user: UUID, current: UUID?) async throws -> [SessionInfo] {
        try await database.query(
            """
            SELECT id, created_at, last_used_at, client_address, device_name FROM auth.sessions
            WHERE user_id = \(user) AND revoked_at IS NULL AND expires_at > now()
            ORDER BY coalesce(last_used_at, created_at) DESC, id
            """
        ).map { row in
            let id = try row.decode("id", as: UUID.self)
            return SessionInfo(
                id: id, createdAt: try row.decode("created_at"), lastUsedAt: try row.decode("last_used_at"),
                clientAddress: try row.decode("client_address"), deviceName: try row.decode("device_name"),
                current: id == current)
        }
    }

    /// Marks the session as just authenticated again (the password, or a code, was given), adding
    /// what proved it to the session's `amr`; returns when, and the session's `amr` now (nil
    /// when the session is not live).
    @discardableResult
    func reauthenticated(_ session: UUID, adding amr: [String] = []) async throws -> Reauthenticated? {
        try await database.query(
            """
            UPDATE auth.sessions SET authenticated_at = date_trunc('second', now()),
                amr = ARRAY(SELECT DISTINCT unnest(amr || \(PostgresTextArray(amr))::text[]) ORDER BY 1)
            WHERE id = \(session) AND revoked_at IS NULL
            RETURNING authenticated_at, amr
            """
        ).first?.decode(Reauthenticated.self)
    }

    /// A session's `auth_time` and `amr` after it was proven again.
    struct Reauthenticated: PostgresRowDecodable, Sendable {
        var at: Date
        var amr: [String]

        init(row: PostgresRow) throws {
            (at, amr) = (try row.decode("authenticated_at"), try row.decode("amr", as: PostgresTextArray.self).values)
        }
    }

    /// Publishes that these sessions' access tokens are revoked until the last of them would
    /// have expired.
    private func published(_ sessions: [UUID], of user: UUID) async throws {
        let until = Int(Date().timeIntervalSince1970) + lifetimes.accessTTL + 60
        for session in sessions {
            try await EventLog.append(
                SessionRevoked.type, payload: SessionRevoked(sessionId: session, userId: user, until: until), on: database)
        }
    }
}
