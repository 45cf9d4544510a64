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

/// The statements of anonymous accounts: made, asked about, made permanent.
extension Users {
    /// Deletes up to `batch` anonymous accounts that no session used for `days` days (nor made
    /// since), locking them (skipping those locked); their ids.
    func deleteUnusedAnonymous(olderThan days: Int, batch: Int) async throws -> [UUID] {
        try await database.query(
            """
            DELETE FROM auth.users WHERE id IN (
                SELECT u.id FROM auth.users u
                WHERE u.anonymous_at IS NOT NULL AND u.permanent_at IS NULL
                    AND u.anonymous_at < now() - make_interval(days => \(days))
                    AND NOT EXISTS (SELECT 1 FROM auth.sessions s WHERE s.user_id = u.id
                        AND coalesce(s.last_used_at, s.created_at) >= now() - make_interval(days => \(days)))
                ORDER BY u.anonymous_at LIMIT \(batch)
                FOR UPDATE SKIP LOCKED)
            RETURNING id
            """
        ).map { try $0.decode("id") }
    }

    /// Makes the anonymous account permanent with the address (proven by the link that was
    /// followed) and the password; nil when it is not anonymous any more.
    func makePermanent(_ user: UUID, address: EmailAddress, passwordHash: String) async throws -> User? {
        try await database.query(
            """
            UPDATE auth.users SET email = \(address.address), email_key = \(address.key), email_verified_at = now(),
                password_hash = \(passwordHash), permanent_at = now(), updated_at = now()
            WHERE id = \(user) AND anonymous_at IS NOT NULL AND permanent_at IS NULL
            RETURNING \(unsafeSQL: Self.columns)
            """
        ).first?.decode(User.self)
    }

    /// Makes the anonymous account permanent without an address (a passkey, an identity that
    /// shared none) or with one its identity provider verified; false when it was not anonymous.
    func makePermanent(_ user: UUID, address: EmailAddress?) async throws -> Bool {
        try await !database.query(
            """
            UPDATE auth.users SET email = coalesce(email, \(address?.address)), email_key = coalesce(email_key, \(address?.key)),
                email_verified_at = CASE WHEN \(address?.key)::text IS NOT NULL THEN now() ELSE email_verified_at END,
                permanent_at = now(), updated_at = now()
            WHERE id = \(user) AND anonymous_at IS NOT NULL AND permanent_at IS NULL
            RETURNING id
            """
        ).isEmpty
    }

    /// A new anonymous account (no address, no password) and its `user.created` event.
    func insertAnonymous(_ id: UUID) async throws -> User {
        let rows = try await database.query(
            """
            INSERT INTO auth.users (id, anonymous_at) VALUES (\(id), now())
            RETURNING \(unsafeSQL: Self.columns)
            """)
        let user = try rows[0].decode(User.self)
        try await EventLog.append(
            UserCreated.type,
            payload: UserCreated(
                userId: user.id, email: nil, emailVerified: false, displayName: nil, role: user.role.rawValue,
                createdAt: user.createdAt, isAnonymous: true),
            on: database)
        return user
    }

    /// Whether the account is anonymous (false when there is none).
    func isAnonymous(_ user: UUID) async throws -> Bool {
        try await database.query(
            "SELECT 1 FROM auth.users WHERE id = \(user) AND anonymous_at IS NOT NULL AND permanent_at IS NULL"
        ).first != nil
    }
}
