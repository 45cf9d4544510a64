import PierAudit
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

/// Creating, changing and deleting accounts: each a unit of work that opens its transaction and
/// calls the repositories, the outbox and the event log on its connection.
struct Accounts: Sendable {
    let database: PostgresPool
    let lifetimes: Sessions.Lifetimes
    let mails: Mails

    enum Registered: Sendable {
        case created(User, session: UUID)
        case emailTaken
    }

    /// Creates the account, its first session (whose first refresh token is `refreshToken`) and
    /// the mail that verifies its address, in one transaction.
    func register(
        _ id: UUID, email: EmailAddress, passwordHash: String, displayName: String?, refreshToken: String,
        device: Sessions.Device, verification: EmailToken
    ) async throws -> Registered {
        do {
            return try await database.withTransaction { connection in
                let user = try await Users(connection).insert(
                    id, email: email, passwordHash: passwordHash, displayName: displayName)
                let session = try await Sessions(connection, lifetimes).open(
                    for: id, refreshToken: refreshToken, device: device)
                try await EmailTokens(connection).issue(verification, to: id)
                return .created(user, session: session)
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            return .emailTaken
        }
    }

    /// Sets the new hash, ends every other session of `user` (all of them without `keep`), voids
    /// every pending reset link and change of address (whoever knew the old password may have
    /// asked for one), and mails a notice to `email`.
    func changePassword(of user: UUID, email: String, to hash: String, keeping keep: UUID?) async throws {
        try await database.withTransaction { connection in
            try await Outbox(connection).enqueue(mails.passwordChanged(to: email), kind: "password-changed")
            try await Users(connection).setPasswordHash(hash, of: user)
            try await EmailTokens(connection).void(of: user, [.reset, .change, .cancelChange])
            try await Sessions(connection, lifetimes).end(of: user, keeping: keep, reason: "password changed")
        }
    }

    /// Deletes the account and publishes `account.deleted` in the same transaction: the event
    /// exists exactly when the account is gone. False when there was no such account.
    /// Deletes `user` (the owner's own request); false when there is no such account. The last
    /// enabled admin cannot leave the team without an admin (``StaffActions/LastAdmin``).
    func delete(_ user: UUID) async throws -> Bool {
        try await database.withTransaction { connection in
            let users = Users(connection)
            if let account = try await users.lock(user), account.isEnabledAdmin,
                try await users.lockOtherAdmins(than: user) == 0
            {
                throw StaffActions.LastAdmin()
            }
            guard let email = try await users.delete(user) else { return false }
            if let email { try await Outbox(connection).enqueue(mails.accountDeleted(to: email), kind: "account-deleted") }
            try await EventLog.append(AccountDeleted.type, payload: AccountDeleted(userId: user), on: connection)
            return true
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
            let users = Users(connection)
            guard try await users.lock(user) != nil,
                let others = try await Identities(connection).others(of: user, besides: id)
            else { return .notFound }
            guard try await users.hasPassword(user) || others > 0 else { return .lastWayIn }
            try await Identities(connection).unlink(id, of: user)
            return .unlinked
        }
    }

    enum AdminAccount: Sendable {
        case created(UUID)
        /// An account had the address: made admin, every way into it someone else held ended.
        case promoted(UUID, sessionsEnded: Int)
        /// An account has the address and promoting it was not asked for.
        case exists(UUID, liveSessions: Int)
    }

    /// An admin account for `email` with this password: a new one; or the admin account that has
    /// the address (its password replaced); or, only when `promoteExisting`, the user account
    /// that has it. An existing account is taken over only once its sessions are ended, its
    /// identities unlinked and its mailed links void (whoever registered the address first
    /// must not keep a way into an admin account).
    func makeAdmin(email: EmailAddress, passwordHash: String, name: String? = nil, promoteExisting: Bool) async throws
        -> AdminAccount
    {
        try await database.withTransaction { connection in
            let users = Users(connection)
            guard let existing = try await users.lock(emailKey: email.key) else {
                let id = UUID.random()
                _ = try await users.insert(
                    id, email: email, passwordHash: passwordHash, displayName: name, role: "admin", verified: true)
                try await AuditLog.append(
                    .init(
                        .userCreatedAdmin, target: ("user", id.text()), subject: id, after: .object(["role": .string("admin")])
                    ),
                    by: .commandLine, schema: AuthService.schema, on: connection)
                return .created(id)
            }
            // An admin already (the command run again to replace the password) needs no flag.
            let wasAdmin = existing.role == .admin
            guard promoteExisting || wasAdmin else {
                return .exists(existing.id, liveSessions: try await Sessions(connection, lifetimes).liveCount(of: existing.id))
            }
            try await users.promote(existing.id, passwordHash: passwordHash)
            if let name { _ = try await users.updateProfile(of: existing.id, displayName: name, locale: nil) }
            try await Identities(connection).unlinkAll(of: existing.id)
            try await EmailTokens(connection).void(of: existing.id, [.verify, .reset, .change, .cancelChange])
            let ended = try await Sessions(connection, lifetimes).end(of: existing.id, reason: "made admin")
            try await AuditLog.append(
                .init(
                    wasAdmin ? .userAdminPasswordSet : .userRoleChanged, target: ("user", existing.id.text()),
                    subject: existing.id, before: .object(["role": .string(existing.role.rawValue)]),
                    after: .object(["role": .string("admin")])),
                by: .commandLine, schema: AuthService.schema, on: connection)
            return .promoted(existing.id, sessionsEnded: ended)
        }
    }
}
