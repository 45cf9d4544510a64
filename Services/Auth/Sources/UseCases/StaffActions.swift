import PierAudit
import PierEvents
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What the team does to an account (roles, disabling, ending sessions, mails, deletion): each a
/// unit of work that changes the account and appends the audit entry in one transaction.
///
/// Whatever changes who may act on the account ends what someone else could still hold:
/// - a change of role ends every session (the role is in the access tokens: a session someone
///   else holds must not refresh into a team token, and a demoted account keeps none), voids
///   every pending reset and change of address (one asked from such a session would move the
///   account to another mailbox), and unlinks the identities linked while the address was
///   unproven; a team role needs a proven address;
/// - disabling ends every session and voids the pending links; sign-in and refresh are refused
///   until the account is enabled again.
///
/// A team member's account (support or admin) is acted on by admins only: support cannot end an
/// admin's sessions, disable them or remove their second factor (with the admin's password, that
/// last one would let support enrol their own authenticator and promote themselves). And the last
/// *enabled* admin cannot be disabled, demoted or deleted: a disabled admin enables nobody.
struct StaffActions: Sendable {
    let database: PostgresPool
    let lifetimes: Sessions.Lifetimes

    static let schema = AuthService.schema

    enum RoleChanged: Sendable, Equatable {
        case changed(User, sessionsEnded: Int)
        case unchanged(User)
        case missing
        /// A team role for an account whose address was never proven.
        case addressUnverified
        /// A team role for an anonymous account.
        case anonymous
        /// It is the last admin.
        case lastAdmin
    }

    func setRole(of user: UUID, to role: AccountRole, by actor: AuditActor) async throws -> RoleChanged {
        try await database.withTransaction { connection in
            let users = Users(connection)
            guard var account = try await users.lock(user) else { return .missing }
            guard account.role != role else { return .unchanged(account) }
            if role.isStaff && account.isAnonymous { return .anonymous }
            if role.isStaff && !account.emailVerified { return .addressUnverified }
            if account.isEnabledAdmin, try await users.lockOtherAdmins(than: user) == 0 {
                return .lastAdmin
            }
            try await users.setRole(role, of: user)
            if role.isStaff { try await Identities(connection).unlinkUnverified(of: user) }
            try await EmailTokens(connection).void(of: user, [.reset, .change, .cancelChange])
            let ended = try await Sessions(connection, lifetimes).end(of: user, reason: "role changed")
            try await AuditLog.append(
                .init(
                    .userRoleChanged, target: ("user", user.text()), subject: user,
                    before: .object(["role": .string(account.role.rawValue)]), after: .object(["role": .string(role.rawValue)])),
                by: actor, schema: Self.schema, on: connection)
            account.role = role
            return .changed(account, sessionsEnded: ended)
        }
    }

    enum Disabled: Sendable, Equatable {
        case done(User, sessionsEnded: Int)
        case missing
        /// Disabling one's own account, or the last admin: nobody would be left to enable it.
        case refused(String)
    }

    func setDisabled(_ user: UUID, _ disabled: Bool, by actor: AuditActor) async throws -> Disabled {
        try await database.withTransaction { connection in
            let users = Users(connection)
            guard let before = try await users.lock(user) else { return .missing }
            if disabled && actor.id == user { return .refused("An account cannot disable itself.") }
            try Self.mayAct(on: before, actor)
            if disabled {
                if before.isEnabledAdmin, try await users.lockOtherAdmins(than: user) == 0 {
                    return .refused("The last admin account cannot be disabled.")
                }
            }
            guard (before.disabledAt != nil) != disabled else { return .done(before, sessionsEnded: 0) }
            guard let after = try await users.setDisabled(disabled, of: user) else { return .missing }
            var ended = 0
            if disabled {
                try await EmailTokens(connection).void(of: user, [.reset, .change, .cancelChange])
                ended = try await Sessions(connection, lifetimes).end(of: user, reason: "disabled")
            }
            try await AuditLog.append(
                .init(
                    disabled ? .userDisabled : .userEnabled, target: ("user", user.text()), subject: user,
                    before: .object(["disabled": .bool(!disabled)]), after: .object(["disabled": .bool(disabled)])),
                by: actor, schema: Self.schema, on: connection)
            return .done(after, sessionsEnded: ended)
        }
    }

    /// Ends the account's session `id`, or all of them (and then its pending resets and changes
    /// of address); nil when there is no such account.
    func endSessions(of user: UUID, only id: UUID?, by actor: AuditActor) async throws -> Int? {
        try await database.withTransaction { connection in
            guard let account = try await Users(connection).lock(user) else { return nil }
            try Self.mayAct(on: account, actor)
            if id == nil { try await EmailTokens(connection).void(of: user, [.reset, .change, .cancelChange]) }
            let ended = try await Sessions(connection, lifetimes).end(of: user, only: id, reason: "ended by the team")
            // A session that was not live: nothing was done.
            if id != nil && ended == 0 { return 0 }
            try await AuditLog.append(
                .init(
                    .userSessionsEnded, target: ("user", user.text()), subject: user,
                    after: .object(["session": id.map { .string($0.text()) } ?? .string("all"), "ended": .number(Double(ended))])
                ),
                by: actor, schema: Self.schema, on: connection)
            return ended
        }
    }

    /// Removes the account's authenticator app and recovery codes (its owner lost both), with
    /// the audit entry and a mail to the owner; nil when there is no such account, false when
    /// it had no second factor.
    func removeSecondFactor(of user: UUID, by actor: AuditActor, mails: Mails) async throws -> Bool? {
        try await database.withTransaction { connection in
            guard let account = try await Users(connection).lock(user) else { return nil }
            try Self.mayAct(on: account, actor)
            guard try await SecondFactors(connection).removeAll(of: user) else { return false }
            try await AuditLog.append(
                .init(.userSecondFactorRemoved, target: ("user", user.text()), subject: user),
                by: actor, schema: Self.schema, on: connection)
            try await Outbox(connection).notify(account.email, kind: "mfa-disabled", mails.secondFactorDisabled)
            return true
        }
    }

    /// An admin approves the session of team member `user` that waits to set up its first
    /// second factor (it may, for the next 30 minutes; ``SecondFactorFlows/mayEnrol(_:session:)``).
    /// False when no such ask waits; nil when there is no such account.
    func approveSecondFactor(of user: UUID, session: UUID, by actor: AuditActor) async throws -> Bool? {
        try await database.withTransaction { connection in
            guard let account = try await Users(connection).lock(user) else { return nil }
            try Self.mayAct(on: account, actor)
            let approved = try await SecondFactors(connection).approve(
                of: user, session: session, by: actor.id, seconds: SecondFactorFlows.approvalSeconds)
            if approved {
                try await AuditLog.append(
                    .init(.userSecondFactorApproved, target: ("user", user.text()), subject: user),
                    by: actor, schema: Self.schema, on: connection)
            }
            return approved
        }
    }

    enum Mailed: Sendable, Equatable {
        case queued
        case missing
        /// A verification mail for an address that is verified already.
        case alreadyVerified
        /// The account has no address (anonymous, or kept by a passkey alone).
        case noAddress
        /// ``mailsPerHour`` were sent to the account by the team within the hour: the next in
        /// this many seconds.
        case tooMany(retryAfter: Int)
    }

    /// Mails the team may send one account in an hour: help, never a flood of its inbox.
    static let mailsPerHour = 5

    /// Queues a password-reset link (30 minutes) or a verification link to the account's address.
    /// Staff are not throttled like the public routes, but every mail is in the audit log, and
    /// an account gets at most ``mailsPerHour`` of them in an hour.
    func sendMail(_ kind: StaffMail, to user: UUID, by actor: AuditActor, desk: MailDesk) async throws -> Mailed {
        try await database.withTransaction { connection in
            guard let account = try await Users(connection).lock(user) else { return .missing }
            // Counted under the account's row lock: concurrent requests count exactly.
            let recent = try await StaffMails(connection).lastHour(to: user)
            if recent.count >= Self.mailsPerHour { return .tooMany(retryAfter: max(1, recent.secondsToFirstExpiry ?? 3600)) }
            guard let email = account.email else { return .noAddress }
            switch kind {
            case .verification:
                guard !account.emailVerified else { return .alreadyVerified }
                try await EmailTokens(connection).issue(desk.verification(email), to: user)
            case .passwordReset:
                try await EmailTokens(connection).issue(desk.reset(email), to: user)
            }
            try await AuditLog.append(
                .init(
                    .userMailSent, target: ("user", user.text()), subject: user,
                    after: .object(["mail": .string(kind.rawValue)])),
                by: actor, schema: Self.schema, on: connection)
            return .queued
        }
    }

    /// Deletes the account (its sessions, identities and links with it) and publishes
    /// `account.deleted`, with the audit entry, in one transaction. False when there was none.
    func delete(_ user: UUID, by actor: AuditActor, mails: Mails) async throws -> Bool {
        try await database.withTransaction { connection in
            let users = Users(connection)
            guard let before = try await users.lock(user) else { return false }
            try Self.mayAct(on: before, actor)
            if before.isEnabledAdmin, try await users.lockOtherAdmins(than: user) == 0 {
                throw LastAdmin()
            }
            _ = try await users.delete(user)
            try await Outbox(connection).notify(before.email, kind: "account-deleted", mails.accountDeleted)
            try await EventLog.append(AccountDeleted.type, payload: AccountDeleted(userId: user), on: connection)
            try await AuditLog.append(
                .init(
                    .userDeleted, target: ("user", user.text()), subject: user,
                    before: .object(["email": before.email.map(JSONValue.string) ?? .null, "role": .string(before.role.rawValue)])
                ),
                by: actor, schema: Self.schema, on: connection)
            return true
        }
    }

    /// Records that the team exported the account's data.
    func recordExport(of user: UUID, by actor: AuditActor) async throws {
        try await AuditLog.append(
            .init(.userExported, target: ("user", user.text()), subject: user), by: actor, schema: Self.schema, on: database)
    }

    struct LastAdmin: Error {}

    /// A team member's account acted on by someone who is not an admin.
    struct AdminsOnly: Error {}

    /// Throws ``AdminsOnly`` when `account` is a team member's and `actor` is not an admin (or
    /// the operator's command line).
    static func mayAct(on account: User, _ actor: AuditActor) throws(AdminsOnly) {
        guard account.role.isStaff else { return }
        guard actor.role == AccountRole.admin.rawValue || actor == .commandLine else { throw AdminsOnly() }
    }
}

extension User {
    /// An admin who can sign in: what "the last admin" counts.
    var isEnabledAdmin: Bool { role == .admin && disabledAt == nil }
}

/// The mails the team can send to an account.
enum StaffMail: String, Sendable {
    case passwordReset = "password-reset"
    case verification
}
