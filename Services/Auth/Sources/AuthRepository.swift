import PierCrypto
import PierMail
import PierModels
import PierPostgres
import PierRuntime
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

    static let userColumns = userColumns("auth.users")

    /// The columns ``user(_:)`` reads, of the users table named `table` (or its alias).
    static func userColumns(_ table: String) -> String {
        """
        \(table).id, \(table).email, \(table).display_name, \(table).role, \(table).created_at,
        \(table).email_verified_at IS NOT NULL AS email_verified, \(table).locale
        """
    }

    static func user(_ row: PostgresRow) throws -> User {
        User(
            id: try row.decode("id"), email: try row.decode("email"),
            displayName: try row.decode("display_name", as: String?.self),
            role: try row.decode("role"), createdAt: try row.decode("created_at"),
            emailVerified: try row.decode("email_verified"), locale: try row.decode("locale"))
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

    /// Creates the account, its first session (whose first refresh token is `refreshToken`) and
    /// the mail that verifies its address, in one transaction.
    func register(
        _ id: UUID, email: EmailAddress, passwordHash: String, displayName: String?, refreshToken: String,
        device: Device, verification: EmailToken
    ) async throws -> Registered {
        do {
            return try await database.withTransaction { connection in
                let rows = try await connection.query(
                    """
                    INSERT INTO auth.users (id, email, email_key, password_hash, display_name)
                    VALUES (\(id), \(email.address), \(email.key), \(passwordHash), \(displayName))
                    RETURNING \(unsafeSQL: Self.userColumns)
                    """)
                let session = try await openSession(for: id, refreshToken: refreshToken, device: device, on: connection)
                try await Self.issue(verification, to: id, on: connection)
                return .created(try Self.user(rows[0]), session: session)
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            return .emailTaken
        }
    }

    func setPasswordHash(_ hash: String, of user: UUID) async throws {
        try await database.execute("UPDATE auth.users SET password_hash = \(hash), updated_at = now() WHERE id = \(user)")
    }

    /// What a session remembers of the device that opened it, and when it signed in (the
    /// session's `authenticated_at`, and the `auth_time` of its first access token: one value).
    struct Device: Sendable {
        var name: String?
        var address: String
        /// Whole seconds, as `auth_time` has them: the database keeps exactly what the token says.
        var signedInAt = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
    }

    /// A new session for `user` whose first refresh token is `refreshToken`; when no session of
    /// the account came from this device name and address before, `notice` is mailed (a
    /// security mail) in the same transaction. True when it was.
    func openSession(
        for user: User, refreshToken: String, device: Device, notice: @Sendable (_ email: String) -> MailMessage
    ) async throws -> (session: UUID, noticed: Bool) {
        try await database.withTransaction { connection in
            try await openNoticedSession(for: user, refreshToken: refreshToken, device: device, notice: notice, on: connection)
        }
    }

    private func openNoticedSession(
        for user: User, refreshToken: String, device: Device, notice: @Sendable (_ email: String) -> MailMessage,
        on connection: PostgresConnection
    ) async throws -> (session: UUID, noticed: Bool) {
        let known = try await connection.query(
            """
            SELECT EXISTS (SELECT 1 FROM auth.sessions WHERE user_id = \(user.id)
                AND device_name IS NOT DISTINCT FROM \(device.name) AND client_address = \(device.address)) AS known
            """)[0]
        let session = try await openSession(for: user.id, refreshToken: refreshToken, device: device, on: connection)
        guard !(try known.decode("known", as: Bool.self)) else { return (session, false) }
        try await MailOutbox.enqueue(notice(user.email), kind: "new-sign-in", on: connection)
        return (session, true)
    }

    // MARK: - Identities (Sign in with Apple, OpenID Connect)

    enum IdentitySignIn: Sendable {
        case signedIn(User, session: UUID, created: Bool, noticed: Bool)
        /// No account is linked, and the provider did not verify the token's address: nothing is
        /// linked or created with an address nobody proved (whether an account has it is not said).
        case emailUnverified
        /// No account is linked and the token carries no address to make one with.
        case noEmail
    }

    /// Signs in with a verified identity: the account linked to it; else the account of its
    /// address, linked from now on; else a new account (no password) whose display name is
    /// `name` (Apple sends it on the first authorization only). Only an address the provider
    /// verified links or creates.
    ///
    /// An account whose address was never proven may have been registered by someone else
    /// before its owner came (pre-hijacking): linking the owner's identity to it first takes
    /// everything that other person could still use away — the password, every session, every
    /// mailed link and any other identity.
    func signIn(
        provider: String, claims: IdentityClaims, name: String?, refreshToken: String, device: Device,
        notice: @Sendable (_ email: String) -> MailMessage
    ) async throws -> IdentitySignIn {
        do {
            return try await linkOrCreate(
                provider: provider, claims: claims, name: name, refreshToken: refreshToken, device: device, notice: notice)
        } catch let error as PostgresError where error.isUniqueViolation {
            // The same identity or address was just linked or created by a concurrent sign-in:
            // the second pass finds it.
            return try await linkOrCreate(
                provider: provider, claims: claims, name: name, refreshToken: refreshToken, device: device, notice: notice)
        }
    }

    private func linkOrCreate(
        provider: String, claims: IdentityClaims, name: String?, refreshToken: String, device: Device,
        notice: @Sendable (_ email: String) -> MailMessage
    ) async throws -> IdentitySignIn {
        try await database.withTransaction { connection in
            var created = false
            var rows = try await connection.query(
                """
                UPDATE auth.identities SET last_used_at = now(), email = coalesce(\(claims.email), email)
                WHERE provider = \(provider) AND subject = \(claims.subject)
                RETURNING user_id
                """)
            var userID = try rows.first?.decode("user_id", as: UUID.self)
            if userID == nil {
                guard let email = claims.email.flatMap(EmailAddress.init) else { return .noEmail }
                guard claims.emailVerified else { return .emailUnverified }
                rows = try await connection.query(
                    """
                    SELECT id, email_verified_at IS NOT NULL AS verified FROM auth.users WHERE email_key = \(email.key)
                    FOR UPDATE
                    """)
                if let row = rows.first {
                    let id = try row.decode("id", as: UUID.self)
                    if !(try row.decode("verified", as: Bool.self)) {
                        try await claimUnproven(id, on: connection)
                    }
                    userID = id
                } else {
                    let id = UUID()
                    try await connection.execute(
                        """
                        INSERT INTO auth.users (id, email, email_key, password_hash, display_name, email_verified_at)
                        VALUES (\(id), \(email.address), \(email.key), NULL, \(name), now())
                        """)
                    userID = id
                    created = true
                }
                try await connection.execute(
                    """
                    INSERT INTO auth.identities (provider, subject, user_id, email, last_used_at)
                    VALUES (\(provider), \(claims.subject), \(userID), \(email.address), now())
                    """)
            }
            guard let userID,
                let user = try await connection.query(
                    "SELECT \(unsafeSQL: Self.userColumns) FROM auth.users WHERE id = \(userID)"
                ).first.map(Self.user)
            else { return .noEmail }
            let (session, noticed) = try await openNoticedSession(
                for: user, refreshToken: refreshToken, device: device, notice: notice, on: connection)
            return .signedIn(user, session: session, created: created, noticed: noticed)
        }
    }

    /// The owner of an address proved it through a provider, on an account whose address was never
    /// proven: whoever registered it first loses every way in — the password is dropped, every
    /// session ended, every mailed link void, every other identity unlinked — and the address is
    /// marked verified. The owner sets a password, if they want one, through "forgot password".
    private func claimUnproven(_ user: UUID, on connection: PostgresConnection) async throws {
        try await connection.execute(
            """
            UPDATE auth.users SET password_hash = NULL, email_verified_at = now(), updated_at = now() WHERE id = \(user)
            """)
        try await connection.execute("DELETE FROM auth.identities WHERE user_id = \(user)")
        try await Self.voidMailedTokens(of: user, [.verify, .reset, .change, .cancelChange], on: connection)
        try await endSessions(of: user, reason: "address claimed by its owner", on: connection)
    }

    /// Records a token (an ID token, a notification) as accepted until `until` (seconds since
    /// 1970): true the first time, false when it was already. Keys long expired are removed a
    /// few at a time by the same statement.
    func spend(_ key: PostgresBytes, until: Int) async throws -> Bool {
        try await !database.query(
            """
            WITH stale AS (
                DELETE FROM auth.used_tokens WHERE ctid IN (
                    SELECT ctid FROM auth.used_tokens WHERE expires_at < now() LIMIT 8)
            )
            INSERT INTO auth.used_tokens (key, expires_at) VALUES (\(key), to_timestamp(\(until)))
            ON CONFLICT (key) DO NOTHING
            RETURNING 1 AS spent
            """
        ).isEmpty
    }

    /// Applies one of Apple's server-to-server events to the account linked to `subject`:
    /// consent revoked or Apple account deleted → the link removed and every session ended (an
    /// account left with no way to sign in is deleted, the normal way); relay mail disabled or
    /// enabled → recorded. False when no account is linked to the subject.
    func appleEvent(_ type: String, subject: String, notice: @Sendable (_ email: String) -> MailMessage) async throws -> Bool {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                "SELECT user_id FROM auth.identities WHERE provider = 'apple' AND subject = \(subject) FOR UPDATE")
            guard let user = try rows.first?.decode("user_id", as: UUID.self) else { return false }
            switch type {
            case "email-disabled", "email-enabled":
                try await connection.execute(
                    """
                    UPDATE auth.identities SET email_disabled = \(type == "email-disabled")
                    WHERE provider = 'apple' AND subject = \(subject)
                    """)
            case "consent-revoked", "account-delete":
                try await connection.execute("DELETE FROM auth.identities WHERE provider = 'apple' AND subject = \(subject)")
                try await endSessions(of: user, reason: "apple " + type, on: connection)
                let stranded = try await connection.query(
                    """
                    SELECT u.email FROM auth.users u WHERE u.id = \(user) AND u.password_hash IS NULL
                        AND NOT EXISTS (SELECT 1 FROM auth.identities i WHERE i.user_id = u.id)
                    """)
                if type == "account-delete", let row = stranded.first {
                    try await connection.execute("DELETE FROM auth.users WHERE id = \(user)")
                    try await EventLog.append(AccountDeleted.type, payload: AccountDeleted(userId: user), on: connection)
                    try await MailOutbox.enqueue(notice(try row.decode("email")), kind: "account-deleted", on: connection)
                }
            default:
                return true
            }
            return true
        }
    }

    /// Opens a session with its first refresh token, in one statement (atomic on its own).
    private func openSession(
        for user: UUID, refreshToken: String, device: Device, on connection: PostgresConnection
    ) async throws -> UUID {
        let sessionID = UUID()
        try await connection.execute(
            """
            WITH session AS (
                INSERT INTO auth.sessions (id, user_id, expires_at, device_name, client_address, authenticated_at)
                VALUES (\(sessionID), \(user), now() + make_interval(days => \(refreshDays)), \(device.name), \(device.address),
                    \(device.signedInAt))
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
        case rotated(User, session: UUID, authenticatedAt: Date)
        /// A used token came back: the session is revoked.
        case reused(session: UUID)
        case invalid
    }

    /// Exchanges the refresh token of `hash` for the one of `successorHash`, under the rows'
    /// locks; a reuse outside the grace window revokes the whole session.
    func rotate(
        _ hash: PostgresBytes, successor successorHash: PostgresBytes, graceSeconds: Int, from address: String
    ) async throws -> Rotation {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                SELECT t.session_id, s.authenticated_at, t.used_at IS NULL AS unused, t.used_at > now() - make_interval(secs => \(graceSeconds)) AS in_grace,
                       t.expires_at > now() AND s.expires_at > now() AND s.revoked_at IS NULL AS live,
                       \(unsafeSQL: Self.userColumns("u"))
                FROM auth.refresh_tokens t
                JOIN auth.sessions s ON s.id = t.session_id
                JOIN auth.users u ON u.id = s.user_id
                WHERE t.token_hash = \(hash)
                FOR UPDATE OF t, s
                """)
            guard let row = rows.first, try row.decode("live", as: Bool.self) else { return .invalid }
            let sessionID = try row.decode("session_id", as: UUID.self)
            let authenticatedAt = try row.decode("authenticated_at", as: Date.self)
            let user = try Self.user(row)
            if try row.decode("unused", as: Bool.self) {
                try await connection.execute("UPDATE auth.refresh_tokens SET used_at = now() WHERE token_hash = \(hash)")
                try await connection.execute(
                    """
                    INSERT INTO auth.refresh_tokens (token_hash, session_id, expires_at)
                    VALUES (\(successorHash), \(sessionID), now() + make_interval(days => \(refreshDays)))
                    """)
                try await connection.execute(
                    """
                    UPDATE auth.sessions SET expires_at = now() + make_interval(days => \(refreshDays)), last_used_at = now(),
                        client_address = \(address)
                    WHERE id = \(sessionID)
                    """)
                return .rotated(user, session: sessionID, authenticatedAt: authenticatedAt)
            }
            // Used before. Within the grace window, and while its successor is still unused, it
            // is the same client retrying: answer with the same successor.
            if try row.decode("in_grace", as: Bool?.self) == true {
                let next = try await connection.query(
                    "SELECT 1 FROM auth.refresh_tokens WHERE token_hash = \(successorHash) AND used_at IS NULL")
                if !next.isEmpty { return .rotated(user, session: sessionID, authenticatedAt: authenticatedAt) }
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

    /// Sets the new hash, ends every other session of `user` (all of them without `keep`), voids
    /// every pending reset link and change of address (whoever knew the old password may have
    /// asked for one), and mails `notice`.
    func changePassword(of user: UUID, to hash: String, keeping keep: UUID?, notice: MailMessage) async throws {
        try await database.withTransaction { connection in
            try await MailOutbox.enqueue(notice, kind: "password-changed", on: connection)
            try await connection.execute("UPDATE auth.users SET password_hash = \(hash), updated_at = now() WHERE id = \(user)")
            try await Self.voidMailedTokens(of: user, [.reset, .change, .cancelChange], on: connection)
            try await endSessions(of: user, keeping: keep, reason: "password changed", on: connection)
        }
    }

    /// Deletes the account and publishes `account.deleted` in the same transaction: the event
    /// exists exactly when the account is gone. False when there was no such account.
    func delete(_ user: UUID, notice: @Sendable (_ email: String) -> MailMessage) async throws -> Bool {
        try await database.withTransaction { connection in
            guard let row = try await connection.query("DELETE FROM auth.users WHERE id = \(user) RETURNING email").first else {
                return false
            }
            try await MailOutbox.enqueue(notice(try row.decode("email")), kind: "account-deleted", on: connection)
            try await EventLog.append(AccountDeleted.type, payload: AccountDeleted(userId: user), on: connection)
            return true
        }
    }

    // MARK: - Administrators

    enum AdminAccount: Sendable {
        case created(UUID)
        /// An account had the address: made admin, every way into it someone else held ended.
        case promoted(UUID, sessionsEnded: Int)
        /// An account has the address and promoting it was not asked for.
        case exists(UUID, liveSessions: Int)
    }

    /// An admin account for `email` with this password: a new one; or the admin account that has
    /// the address (its password replaced); or, only when `promoteExisting`, the user account
    /// that has it. An existing account is taken over only its sessions are ended, its
    /// identities unlinked and its mailed links void (whoever registered the address first
    /// must not keep a way into an admin account).
    func makeAdmin(email: EmailAddress, passwordHash: String, promoteExisting: Bool) async throws -> AdminAccount {
        try await database.withTransaction { connection in
            let existing = try await connection.query(
                """
                SELECT u.id, u.role = 'admin' AS admin, (SELECT count(*) FROM auth.sessions s
                    WHERE s.user_id = u.id AND s.revoked_at IS NULL AND s.expires_at > now())::int AS sessions
                FROM auth.users u WHERE u.email_key = \(email.key) FOR UPDATE
                """
            ).first
            guard let existing else {
                let id = UUID()
                try await connection.execute(
                    """
                    INSERT INTO auth.users (id, email, email_key, password_hash, role, email_verified_at)
                    VALUES (\(id), \(email.address), \(email.key), \(passwordHash), 'admin', now())
                    """)
                return .created(id)
            }
            let id = try existing.decode("id", as: UUID.self)
            // An admin already (the command run again to replace the password) needs no flag.
            let admin = try existing.decode("admin", as: Bool.self)
            guard promoteExisting || admin else {
                return .exists(id, liveSessions: try existing.decode("sessions"))
            }
            try await connection.execute(
                """
                UPDATE auth.users SET role = 'admin', password_hash = \(passwordHash),
                    email_verified_at = coalesce(email_verified_at, now()), updated_at = now()
                WHERE id = \(id)
                """)
            try await connection.execute("DELETE FROM auth.identities WHERE user_id = \(id)")
            try await Self.voidMailedTokens(of: id, [.verify, .reset, .change, .cancelChange], on: connection)
            let ended = try await endSessions(of: id, reason: "made admin", on: connection)
            return .promoted(id, sessionsEnded: ended)
        }
    }

    // MARK: - Profile

    /// Sets what `change` holds (nil: unchanged; empty: cleared). The user, or nil when gone.
    func updateProfile(of user: UUID, displayName: String?, locale: String?) async throws -> User? {
        try await database.query(
            """
            UPDATE auth.users SET
                display_name = CASE WHEN \(displayName)::text IS NULL THEN display_name ELSE nullif(\(displayName), '') END,
                locale = CASE WHEN \(locale)::text IS NULL THEN locale ELSE nullif(\(locale), '') END,
                updated_at = now()
            WHERE id = \(user)
            RETURNING \(unsafeSQL: Self.userColumns)
            """
        ).first.map(Self.user)
    }

    /// Marks the session as just authenticated again (the password was given).
    func reauthenticated(_ session: UUID) async throws {
        try await database.execute("UPDATE auth.sessions SET authenticated_at = now() WHERE id = \(session)")
    }

    /// The identity providers `user` signs in with.
    func identities(of user: UUID) async throws -> [[String: JSONValue]] {
        try await database.query(
            "SELECT provider, email, created_at, last_used_at FROM auth.identities WHERE user_id = \(user) ORDER BY created_at"
        ).map { row in
            var identity: [String: JSONValue] = [
                "provider": .string(try row.decode("provider")),
                "linkedAt": .string(
                    CivilDate.iso8601(secondsSince1970: try row.decode("created_at", as: Date.self).timeIntervalSince1970)),
            ]
            if let email = try row.decode("email", as: String?.self) { identity["email"] = .string(email) }
            return identity
        }
    }

    /// `user`'s identities as the account screen lists them.
    func linkedIdentities(of user: UUID) async throws -> [LinkedIdentity] {
        try await database.query(
            """
            SELECT id, provider, email, created_at, last_used_at FROM auth.identities
            WHERE user_id = \(user) ORDER BY created_at, id
            """
        ).map { row in
            LinkedIdentity(
                id: try row.decode("id"), provider: try row.decode("provider"), email: try row.decode("email"),
                linkedAt: try row.decode("created_at"), lastUsedAt: try row.decode("last_used_at"))
        }
    }

    enum Unlinked: Sendable {
        case unlinked
        case notFound
        /// It is the account's only way in (no password, no other identity).
        case lastWayIn
    }

    /// Unlinks `user`'s identity `id`, unless the account would be left with no way to sign in.
    func unlinkIdentity(_ id: UUID, of user: UUID) async throws -> Unlinked {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                SELECT u.password_hash IS NOT NULL AS has_password,
                    (SELECT count(*) FROM auth.identities o WHERE o.user_id = u.id AND o.id <> \(id))::int AS others
                FROM auth.users u JOIN auth.identities i ON i.user_id = u.id AND i.id = \(id)
                WHERE u.id = \(user) FOR UPDATE OF u
                """)
            guard let row = rows.first else { return .notFound }
            guard try row.decode("has_password", as: Bool.self) || row.decode("others", as: Int.self) > 0 else {
                return .lastWayIn
            }
            try await connection.execute("DELETE FROM auth.identities WHERE id = \(id) AND user_id = \(user)")
            return .unlinked
        }
    }

    // MARK: - Sessions

    /// `user`'s live sessions, the most recently used first.
    func sessions(of user: UUID, current: UUID?) async throws -> [SessionInfo] {
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

    /// Ends `user`'s sessions: the one of `id`, or all of them (and then every pending reset or
    /// change of address with them: whoever is being signed out may have asked for one); their
    /// access tokens are refused everywhere within a second. Returns how many were live.
    func endSessions(of user: UUID, only id: UUID?, reason: String) async throws -> Int {
        try await database.withTransaction { connection in
            if id == nil { try await Self.voidMailedTokens(of: user, [.reset, .change, .cancelChange], on: connection) }
            return try await endSessions(of: user, only: id, reason: reason, on: connection)
        }
    }

    /// Ends `user`'s live sessions (all, or the one of `id`, or all but `keep`) on the caller's
    /// transaction, and publishes their revocation. Returns how many were live.
    @discardableResult
    func endSessions(
        of user: UUID, only id: UUID? = nil, keeping keep: UUID? = nil, reason: String, on connection: PostgresConnection
    ) async throws -> Int {
        let ended = try await connection.query(
            """
            UPDATE auth.sessions SET revoked_at = now(), revoked_reason = \(reason)
            WHERE user_id = \(user) AND revoked_at IS NULL AND (\(id)::uuid IS NULL OR id = \(id))
                AND id IS DISTINCT FROM \(keep)
            RETURNING id
            """)
        try await revoked(try ended.map { try $0.decode("id", as: UUID.self) }, of: user, on: connection)
        return ended.count
    }

    // MARK: - Mailed tokens

    /// A single-use token to mail: what is stored of it (its SHA-256) and the mail that carries it.
    struct EmailToken: Sendable {
        enum Purpose: String, Sendable {
            case verify, reset, change
            case cancelChange = "cancel-change"
        }
        var hash: PostgresBytes
        var purpose: Purpose
        /// The address it was sent to (and, for `verify`, the one it proves).
        var email: String
        var lifetimeSeconds: Int
        var mail: MailMessage
        var kind: String
        /// The link the mail carries (for the development log line); never stored.
        var link: String
    }

    /// Stores the token and queues its mail, on the caller's transaction. A change of address
    /// (and its cancel link) belongs to the session that asked for it.
    private static func issue(
        _ token: EmailToken, to user: UUID, session: UUID? = nil, on connection: PostgresConnection
    ) async throws {
        try await connection.execute(
            """
            INSERT INTO auth.email_tokens (token_hash, user_id, purpose, email, expires_at, session_id)
            VALUES (\(token.hash), \(user), \(token.purpose.rawValue), \(token.email),
                now() + make_interval(secs => \(token.lifetimeSeconds)), \(session))
            """)
        try await MailOutbox.enqueue(token.mail, kind: token.kind, on: connection)
    }

    /// Voids `user`'s live mailed tokens of these purposes, on the caller's transaction.
    static func voidMailedTokens(of user: UUID, _ purposes: [EmailToken.Purpose], on connection: PostgresConnection)
        async throws
    {
        try await connection.execute(
            """
            UPDATE auth.email_tokens SET used_at = now()
            WHERE user_id = \(user) AND used_at IS NULL AND purpose = ANY(string_to_array(\(purposes.map(\.rawValue).joined(separator: ",")), ','))
            """)
    }

    enum Issued: Sendable {
        /// A mail with this link was queued.
        case queued(link: String)
        /// Nothing to send (no such account, or already verified); said to nobody.
        case nothing
        /// Enough such mails went out lately: try again after this many seconds.
        case throttled(retryAfter: Int)
    }

    /// A new verification mail for `user`'s current address, unless it is verified or three went
    /// out in the last 10 minutes. `token` is made for the address the account has.
    func resendVerification(
        of user: UUID?, emailKey: String?, _ token: @Sendable (_ email: String) -> EmailToken
    ) async throws -> Issued {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                SELECT id, email, email_verified_at IS NOT NULL AS verified,
                    (SELECT count(*) FROM auth.email_tokens t WHERE t.user_id = u.id AND t.purpose = 'verify'
                        AND t.created_at > now() - interval '10 minutes')::int AS recent
                FROM auth.users u WHERE u.id = \(user) OR u.email_key = \(emailKey)
                FOR UPDATE
                """)
            guard let row = rows.first, !(try row.decode("verified", as: Bool.self)) else { return .nothing }
            guard try row.decode("recent", as: Int.self) < 3 else { return .throttled(retryAfter: 600) }
            let made = token(try row.decode("email"))
            try await Self.issue(made, to: try row.decode("id"), on: connection)
            return .queued(link: made.link)
        }
    }

    /// Marks the address verified, when the token is a live `verify` token for the address the
    /// account still has. Returns the user, or nil.
    func verifyEmail(_ hash: PostgresBytes) async throws -> User? {
        try await database.withTransaction { connection in
            guard let token = try await Self.consume(hash, .verify, on: connection) else { return nil }
            return try await connection.query(
                """
                UPDATE auth.users SET email_verified_at = coalesce(email_verified_at, now()), updated_at = now()
                WHERE id = \(token.user) AND email = \(token.email)
                RETURNING \(unsafeSQL: Self.userColumns)
                """
            ).first.map(Self.user)
        }
    }

    /// Resets mailed to one address per hour at most.
    static let resetsPerAddressPerHour = 3

    /// Records that a reset was asked for `email`: one insert, the same whether or not an
    /// account has the address (what happens next is ``issueRequestedResets(_:)``'s, after the
    /// answer).
    func requestReset(email: EmailAddress) async throws {
        try await database.execute("INSERT INTO auth.reset_requests (email_key) VALUES (\(email.key))")
    }

    /// Turns the reset requests into mails, each in one transaction: the request taken, counted
    /// against its address (three an hour), and when an account has the address and the count
    /// allows, a 30-minute token and its mail. Returns the links mailed.
    func issueRequestedResets(_ token: @Sendable (_ email: String) -> EmailToken) async throws -> [String] {
        var links: [String] = []
        while true {
            let outcome = try await database.withTransaction { connection -> (done: Bool, link: String?) in
                guard
                    let request = try await connection.query(
                        """
                        DELETE FROM auth.reset_requests WHERE id = (
                            SELECT id FROM auth.reset_requests ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
                        RETURNING email_key
                        """
                    ).first
                else { return (true, nil) }
                let key = try request.decode("email_key", as: String.self)
                let taken = try await MailThrottle.take("reset:" + key, windowSeconds: 3600, on: connection)
                guard !taken.exceeds(Self.resetsPerAddressPerHour),
                    let row = try await connection.query(
                        "SELECT id, email FROM auth.users WHERE email_key = \(key) FOR UPDATE"
                    ).first
                else { return (false, nil) }
                let made = token(try row.decode("email"))
                try await Self.issue(made, to: try row.decode("id"), on: connection)
                return (false, made.link)
            }
            if let link = outcome.link { links.append(link) }
            if outcome.done { return links }
        }
    }

    /// The account a live reset token is for, while the token was mailed to the address the
    /// account still has (read only: the password is checked against its address before the
    /// token is spent).
    func resetTarget(_ hash: PostgresBytes) async throws -> User? {
        try await database.query(
            """
            SELECT \(unsafeSQL: Self.userColumns("u")) FROM auth.email_tokens t JOIN auth.users u ON u.id = t.user_id
            WHERE t.token_hash = \(hash) AND t.purpose = 'reset' AND t.used_at IS NULL AND t.expires_at > now()
                AND t.email = u.email
            """
        ).first.map(Self.user)
    }

    /// Spends the reset token, which proves the reader holds the account's address: the new
    /// password, the address verified, every session ended, every other mailed link void (a
    /// pending change of address among them), identities linked while the address was unproven
    /// unlinked, a notice mailed. Nil when the token is no longer live or the account's address
    /// is no longer the one it was mailed to.
    func resetPassword(_ hash: PostgresBytes, to passwordHash: String, notice: @Sendable (_ email: String) -> MailMessage)
        async throws -> User?
    {
        try await database.withTransaction { connection in
            guard let token = try await Self.consume(hash, .reset, on: connection) else { return nil }
            let rows = try await connection.query(
                """
                UPDATE auth.users SET password_hash = \(passwordHash), updated_at = now(),
                    email_verified_at = coalesce(email_verified_at, now())
                WHERE id = \(token.user) AND email = \(token.email)
                RETURNING \(unsafeSQL: Self.userColumns)
                """)
            guard let row = rows.first else { return nil }
            let user = try Self.user(row)
            try await Self.voidMailedTokens(of: user.id, [.verify, .reset, .change, .cancelChange], on: connection)
            try await connection.execute("DELETE FROM auth.identities WHERE user_id = \(user.id) AND unverified_link")
            try await endSessions(of: user.id, reason: "password reset", on: connection)
            try await MailOutbox.enqueue(notice(user.email), kind: "password-changed", on: connection)
            return user
        }
    }

    enum EmailChange: Sendable {
        case queued(link: String)
        case changed(User)
        /// Another account has the address.
        case taken
        /// Too many changes asked for this account or this address lately.
        case throttled(retryAfter: Int)
        case invalid
    }

    /// Changes of address asked per account, and per new address, per hour.
    static let changesPerHour = 3

    /// Queues the confirmation to the new address (bound to the session that asks) and a notice
    /// to the current one whose link cancels the change, unless the address is taken (checked
    /// again at confirmation) or too many changes were asked lately for the account or for the
    /// new address. One change is pending at a time: a new one voids the one before.
    func requestEmailChange(
        of user: UUID, session: UUID?, to newEmail: EmailAddress, token: EmailToken,
        notice: @Sendable (_ oldEmail: String) -> EmailToken
    ) async throws -> EmailChange {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                SELECT u.email, EXISTS (SELECT 1 FROM auth.users o WHERE o.email_key = \(newEmail.key) AND o.id <> u.id) AS taken
                FROM auth.users u WHERE u.id = \(user) FOR UPDATE
                """)
            guard let row = rows.first else { return .invalid }
            let perAccount = try await MailThrottle.take("change:" + user.text(), windowSeconds: 3600, on: connection)
            let perAddress = try await MailThrottle.take("change-to:" + newEmail.key, windowSeconds: 3600, on: connection)
            for taken in [perAccount, perAddress] where taken.exceeds(Self.changesPerHour) {
                return .throttled(retryAfter: taken.retryAfter)
            }
            if try row.decode("taken", as: Bool.self) { return .taken }
            try await Self.voidMailedTokens(of: user, [.change, .cancelChange], on: connection)
            try await Self.issue(token, to: user, session: session, on: connection)
            try await Self.issue(notice(try row.decode("email")), to: user, session: session, on: connection)
            return .queued(link: token.link)
        }
    }

    /// Spends a change token, while the session that asked for it is live: the account takes the
    /// new address (verified by the link), every other mailed link dies (those sent to the old
    /// address among them), the old address is told.
    func confirmEmailChange(_ hash: PostgresBytes, notice: @Sendable (_ oldEmail: String, _ newEmail: String) -> MailMessage)
        async throws -> EmailChange
    {
        do {
            return try await database.withTransaction { connection in
                guard let token = try await Self.consume(hash, .change, on: connection),
                    let address = EmailAddress(token.email),
                    let old = try await connection.query("SELECT email FROM auth.users WHERE id = \(token.user) FOR UPDATE").first
                else { return .invalid }
                let rows = try await connection.query(
                    """
                    UPDATE auth.users SET email = \(address.address), email_key = \(address.key),
                        email_verified_at = now(), updated_at = now()
                    WHERE id = \(token.user)
                    RETURNING \(unsafeSQL: Self.userColumns)
                    """)
                let user = try Self.user(rows[0])
                try await Self.voidMailedTokens(of: user.id, [.verify, .reset, .change, .cancelChange], on: connection)
                try await MailOutbox.enqueue(
                    notice(try old.decode("email"), address.address), kind: "email-changed", on: connection)
                return .changed(user)
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            return .taken
        }
    }

    /// Spends a cancel link mailed to the old address: the pending change of address is void and
    /// the session that asked for it is ended. The user, or nil when the link is not live.
    func cancelEmailChange(_ hash: PostgresBytes) async throws -> User? {
        try await database.withTransaction { connection in
            guard
                let row = try await connection.query(
                    """
                    UPDATE auth.email_tokens SET used_at = now()
                    WHERE token_hash = \(hash) AND purpose = 'cancel-change' AND used_at IS NULL AND expires_at > now()
                    RETURNING user_id, session_id
                    """
                ).first
            else { return nil }
            let user = try row.decode("user_id", as: UUID.self)
            try await Self.voidMailedTokens(of: user, [.change], on: connection)
            if let session = try row.decode("session_id", as: UUID?.self) {
                try await endSessions(of: user, only: session, reason: "change of address cancelled", on: connection)
            }
            return try await connection.query("SELECT \(unsafeSQL: Self.userColumns) FROM auth.users WHERE id = \(user)")
                .first.map(Self.user)
        }
    }

    /// Marks a live token of `purpose` used; its user and address, or nil. A change of address
    /// is live only while the session that asked for it is.
    private static func consume(_ hash: PostgresBytes, _ purpose: EmailToken.Purpose, on connection: PostgresConnection)
        async throws -> (user: UUID, email: String)?
    {
        try await connection.query(
            """
            UPDATE auth.email_tokens t SET used_at = now()
            WHERE token_hash = \(hash) AND purpose = \(purpose.rawValue) AND used_at IS NULL AND expires_at > now()
                AND (purpose <> 'change' OR EXISTS (SELECT 1 FROM auth.sessions s
                    WHERE s.id = t.session_id AND s.revoked_at IS NULL AND s.expires_at > now()))
            RETURNING user_id, email
            """
        ).first.map { (try $0.decode("user_id"), try $0.decode("email")) }
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
