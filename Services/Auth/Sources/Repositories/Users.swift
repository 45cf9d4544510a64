import PierEvents
import PierIdentity
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The statements of the accounts (`auth.users`), on the pool for a read or a use case's
/// transaction for a change.
struct Users: Sendable {
    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    static let columns = columns("auth.users")

    /// The columns a ``User`` is read from, of the users table named `table` (or its alias).
    static func columns(_ table: String) -> String {
        """
        \(table).id, \(table).email, \(table).display_name, \(table).role, \(table).created_at,
        \(table).email_verified_at IS NOT NULL AS email_verified, \(table).locale, \(table).disabled_at,
        \(table).anonymous_at IS NOT NULL AND \(table).permanent_at IS NULL AS is_anonymous, \(table).anonymous_at,
        \(table).permanent_at
        """
    }

    func user(_ id: UUID) async throws -> User? {
        try await database.query("SELECT \(unsafeSQL: Self.columns) FROM auth.users WHERE id = \(id)").first?.decode(User.self)
    }

    /// Accounts whose id is `query`, whose address or display name starts with it (case
    /// aside), or with a word of the name or address starting with each typed word ("smith",
    /// "northwind"): the first `limit + 1` by address, of the first that many of each kind (each
    /// read in its index), so the caller knows whether more match.
    func search(_ query: String, limit: Int) async throws -> [User] {
        if let id = UUID(uuidString: query) { return try await user(id).map { [$0] } ?? [] }
        // `%`, `_` and `\` in what was typed are matched as themselves.
        var pattern = ""
        for character in query.lowercased() {
            if character == "%" || character == "_" || character == "\\" { pattern.append("\\") }
            pattern.append(character)
        }
        pattern.append("%")
        let count = limit + 1
        return try await database.query(
            """
            SELECT \(unsafeSQL: Self.columns("found")) FROM (
                (SELECT * FROM auth.users WHERE email_key COLLATE "C" LIKE \(pattern)
                 ORDER BY email_key COLLATE "C" LIMIT \(count))
                UNION
                (SELECT * FROM auth.users WHERE lower(display_name) COLLATE "C" LIKE \(pattern)
                 ORDER BY lower(display_name) COLLATE "C" LIMIT \(count))
                UNION
                (SELECT * FROM auth.users
                 WHERE to_tsvector('simple'::regconfig, coalesce(display_name, '') || ' ' || translate(email_key, '@.+_-', '     '))
                     @@ (to_tsquery('simple'::regconfig, \(PostgresTextSearch.prefixQuery(query) ?? ""))
                         || \(PostgresTextSearch.lexemes(PostgresTextSearch.words(query) ?? [])))
                 ORDER BY email_key COLLATE "C" LIMIT \(count))
            ) found
            ORDER BY found.email_key COLLATE "C" LIMIT \(count)
            """
        ).decode(User.self)
    }

    /// The team: support and admin accounts that are not disabled, by address.
    func team() async throws -> [User] {
        try await database.query(
            """
            SELECT \(unsafeSQL: Self.columns) FROM auth.users
            WHERE role <> 'user' AND disabled_at IS NULL ORDER BY email_key COLLATE "C" LIMIT 500
            """
        ).decode(User.self)
    }

    func emailKey(of user: UUID) async throws -> String? {
        try await database.query("SELECT email_key FROM auth.users WHERE id = \(user)").first?.decode("email_key")
    }

    /// A new account, and its `user.created` event (call it inside the creating transaction);
    /// an address another account has meets the unique key.
    func insert(
        _ id: UUID, email: EmailAddress, passwordHash: String?, displayName: String?, role: String = "user",
        verified: Bool = false
    ) async throws -> User {
        let rows = try await database.query(
            """
            INSERT INTO auth.users (id, email, email_key, password_hash, display_name, role, email_verified_at)
            VALUES (\(id), \(email.address), \(email.key), \(passwordHash), \(displayName), \(role),
                CASE WHEN \(verified) THEN now() END)
            RETURNING \(unsafeSQL: Self.columns)
            """)
        let user = try rows[0].decode(User.self)
        try await EventLog.append(
            UserCreated.type,
            payload: UserCreated(
                userId: user.id, email: user.email, emailVerified: user.emailVerified, displayName: user.displayName,
                role: user.role.rawValue, createdAt: user.createdAt),
            on: database)
        return user
    }

    func setPasswordHash(_ hash: String?, of user: UUID) async throws {
        try await database.execute("UPDATE auth.users SET password_hash = \(hash), updated_at = now() WHERE id = \(user)")
    }

    /// The id of the account of an address.
    func id(emailKey: String) async throws -> UUID? {
        try await database.query("SELECT id FROM auth.users WHERE email_key = \(emailKey)").first?.decode("id")
    }

    /// The account, its row locked until the transaction ends (`share`: against changes only, as
    /// a sign-in holds it while a disable waits to end the session it opens): the one locking
    /// read of an account, its flows checking what they need on the value it answers.
    func lock(_ user: UUID, share: Bool = false) async throws -> User? {
        try await database.query(
            "SELECT \(unsafeSQL: Self.columns) FROM auth.users WHERE id = \(user) \(unsafeSQL: share ? "FOR SHARE" : "FOR UPDATE")"
        ).first?.decode(User.self)
    }

    /// The account of an address, its row locked (``lock(_:share:)``).
    func lock(emailKey: String) async throws -> User? {
        try await database.query(
            "SELECT \(unsafeSQL: Self.columns) FROM auth.users WHERE email_key = \(emailKey) FOR UPDATE"
        ).first?.decode(User.self)
    }

    /// Whether the account has a password.
    func hasPassword(_ user: UUID) async throws -> Bool {
        try await !database.query("SELECT 1 FROM auth.users WHERE id = \(user) AND password_hash IS NOT NULL").isEmpty
    }

    /// Marks the address proven (now, or when it was first).
    func markVerified(_ user: UUID) async throws {
        try await database.execute(
            """
            UPDATE auth.users SET email_verified_at = coalesce(email_verified_at, now()), updated_at = now() WHERE id = \(user)
            """)
    }

    /// Marks the address proven while the account still has `email`; the user, or nil.
    func verify(_ user: UUID, email: String) async throws -> User? {
        try await database.query(
            """
            UPDATE auth.users SET email_verified_at = coalesce(email_verified_at, now()), updated_at = now()
            WHERE id = \(user) AND email = \(email)
            RETURNING \(unsafeSQL: Self.columns)
            """
        ).first?.decode(User.self)
    }

    /// Sets the password and proves the address, while the account still has `email`.
    func resetPassword(of user: UUID, email: String, to hash: String) async throws -> User? {
        try await database.query(
            """
            UPDATE auth.users SET password_hash = \(hash), updated_at = now(),
                email_verified_at = coalesce(email_verified_at, now())
            WHERE id = \(user) AND email = \(email)
            RETURNING \(unsafeSQL: Self.columns)
            """
        ).first?.decode(User.self)
    }

    /// Moves the account to `address`, proven by the link that was followed.
    func changeAddress(of user: UUID, to address: EmailAddress) async throws -> User {
        let rows = try await database.query(
            """
            UPDATE auth.users SET email = \(address.address), email_key = \(address.key),
                email_verified_at = now(), updated_at = now()
            WHERE id = \(user)
            RETURNING \(unsafeSQL: Self.columns)
            """)
        return try rows[0].decode(User.self)
    }

    /// Makes the account an admin with this password, its address counted as proven, enabled (the
    /// operator's way back in).
    func promote(_ user: UUID, passwordHash: String) async throws {
        try await database.execute(
            """
            UPDATE auth.users SET role = 'admin', password_hash = \(passwordHash),
                email_verified_at = coalesce(email_verified_at, now()), disabled_at = NULL, updated_at = now()
            WHERE id = \(user)
            """)
    }

    /// Drops the password and proves the address: its owner claimed it through a provider.
    func claim(_ user: UUID) async throws {
        try await database.execute(
            "UPDATE auth.users SET password_hash = NULL, email_verified_at = now(), updated_at = now() WHERE id = \(user)")
    }

    /// The address of an account left with no way in (no password, identity or passkey), if it is
    /// one (nil inside when it has no address).
    func strandedEmail(of user: UUID) async throws -> String?? {
        try await database.query(
            """
            SELECT u.email FROM auth.users u WHERE u.id = \(user) AND u.password_hash IS NULL
                AND NOT EXISTS (SELECT 1 FROM auth.identities i WHERE i.user_id = u.id)
                AND NOT EXISTS (SELECT 1 FROM auth.passkeys p WHERE p.user_id = u.id)
            """
        ).first.map { try $0.decode("email", as: String?.self) }
    }

    /// Names the account `name` unless it has a name.
    func nameIfUnnamed(_ user: UUID, _ name: String) async throws {
        try await database.execute(
            "UPDATE auth.users SET display_name = \(name), updated_at = now() WHERE id = \(user) AND display_name IS NULL")
    }

    /// Sets what is given (nil: unchanged; empty: cleared). The user, or nil when gone.
    func updateProfile(of user: UUID, displayName: String?, locale: String?) async throws -> User? {
        try await database.query(
            """
            UPDATE auth.users SET
                display_name = CASE WHEN \(displayName)::text IS NULL THEN display_name ELSE nullif(\(displayName), '') END,
                locale = CASE WHEN \(locale)::text IS NULL THEN locale ELSE nullif(\(locale), '') END,
                updated_at = now()
            WHERE id = \(user)
            RETURNING \(unsafeSQL: Self.columns)
            """
        ).first?.decode(User.self)
    }

    /// How many enabled admin accounts there are besides `user`, each of their rows locked (two admins
    /// demoting each other at once: the second waits and sees the first's change).
    func lockOtherAdmins(than user: UUID) async throws -> Int {
        try await database.query(
            "SELECT id FROM auth.users WHERE role = 'admin' AND disabled_at IS NULL AND id <> \(user) ORDER BY id FOR UPDATE"
        ).count
    }

    func setRole(_ role: AccountRole, of user: UUID) async throws {
        try await database.execute("UPDATE auth.users SET role = \(role.rawValue), updated_at = now() WHERE id = \(user)")
    }

    /// Disables the account (now) or enables it; the user as it is then.
    func setDisabled(_ disabled: Bool, of user: UUID) async throws -> User? {
        try await database.query(
            """
            UPDATE auth.users SET disabled_at = CASE WHEN \(disabled) THEN coalesce(disabled_at, now()) END,
                updated_at = now()
            WHERE id = \(user) RETURNING \(unsafeSQL: Self.columns)
            """
        ).first?.decode(User.self)
    }

    /// Deletes the account; its address (nil inside when it had none), or nil when there was no
    /// such account.
    func delete(_ user: UUID) async throws -> String?? {
        try await database.query("DELETE FROM auth.users WHERE id = \(user) RETURNING email").first.map {
            try $0.decode("email", as: String?.self)
        }
    }
}

/// A user, read from ``Users/columns(_:)``.
extension User: PostgresRowDecodable {
    public init(row: PostgresRow) throws {
        self.init(
            id: try row.decode("id"), email: try row.decode("email"),
            displayName: try row.decode("display_name", as: String?.self),
            role: AccountRole(wire: try row.decode("role")), createdAt: try row.decode("created_at"),
            emailVerified: try row.decode("email_verified"), locale: try row.decode("locale"),
            disabledAt: try row.decode("disabled_at"), isAnonymous: try row.decode("is_anonymous"),
            anonymousAt: try row.decode("anonymous_at"), permanentAt: try row.decode("permanent_at"))
    }
}
