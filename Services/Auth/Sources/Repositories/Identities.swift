import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The statements of the identity-provider accounts linked to Pier accounts
/// (`auth.identities`): Sign in with Apple, OpenID Connect.
struct Identities: Sendable {
    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    /// Notes a sign-in with the identity (and the address it now carries); the account it is
    /// linked to, or nil when it is linked to none.
    func touch(provider: String, subject: String, email: String?) async throws -> UUID? {
        try await database.query(
            """
            UPDATE auth.identities SET last_used_at = now(), email = coalesce(\(email), email)
            WHERE provider = \(provider) AND subject = \(subject)
            RETURNING user_id
            """
        ).first?.decode("user_id")
    }

    func link(provider: String, subject: String, to user: UUID, email: String?) async throws {
        try await database.execute(
            """
            INSERT INTO auth.identities (provider, subject, user_id, email, last_used_at)
            VALUES (\(provider), \(subject), \(user), \(email), now())
            """)
    }

    /// Unlinks every identity of the account.
    func unlinkAll(of user: UUID) async throws {
        try await database.execute("DELETE FROM auth.identities WHERE user_id = \(user)")
    }

    /// Unlinks the identities linked while the account's address was unproven.
    func unlinkUnverified(of user: UUID) async throws {
        try await database.execute("DELETE FROM auth.identities WHERE user_id = \(user) AND unverified_link")
    }

    /// How many identities the account has besides `id`; nil when `id` is not one of its own.
    func others(of user: UUID, besides id: UUID) async throws -> Int? {
        let rows = try await database.query(
            "SELECT id FROM auth.identities WHERE user_id = \(user)")
        let ids: [UUID] = try rows.map { try $0.decode("id") }
        return ids.contains(id) ? ids.count - 1 : nil
    }

    func unlink(_ id: UUID, of user: UUID) async throws {
        try await database.execute("DELETE FROM auth.identities WHERE id = \(id) AND user_id = \(user)")
    }

    /// The account linked to an Apple subject, the identity's row locked.
    func lockApple(subject: String) async throws -> UUID? {
        try await database.query(
            "SELECT user_id FROM auth.identities WHERE provider = 'apple' AND subject = \(subject) FOR UPDATE"
        ).first?.decode("user_id")
    }

    func setAppleEmailDisabled(_ disabled: Bool, subject: String) async throws {
        try await database.execute(
            "UPDATE auth.identities SET email_disabled = \(disabled) WHERE provider = 'apple' AND subject = \(subject)")
    }

    /// Keeps Apple's refresh token (sealed) of the identity; one it replaces is queued for
    /// revocation by the table's trigger.
    func keepAppleRefreshToken(_ sealed: [UInt8], subject: String) async throws {
        try await database.execute(
            """
            UPDATE auth.identities SET apple_refresh_token = \(PostgresBytes(sealed))
            WHERE provider = 'apple' AND subject = \(subject)
            """)
    }

    func unlinkApple(subject: String) async throws {
        try await database.execute("DELETE FROM auth.identities WHERE provider = 'apple' AND subject = \(subject)")
    }

    /// The identity providers `user` signs in with, as the export shows them.
    func exported(of user: UUID) async throws -> [[String: JSONValue]] {
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
    func linked(of user: UUID) async throws -> [LinkedIdentity] {
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
}

/// Tokens accepted once (`auth.used_tokens`): ID tokens, Apple's notifications.
struct UsedTokens: Sendable {
    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    /// Records a token as accepted until `until` (seconds since 1970): true the first time, false
    /// when it was already. Keys long expired are removed a few at a time by the same statement.
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
}
