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

/// The flows that go through a mailed single-use link (verifying the address, resetting the
/// password, changing the address): each step a unit of work that opens its transaction and
/// calls the repositories on its connection; the desk makes the tokens and mails.
struct MailedLinks: Sendable {
    let database: PostgresPool
    let lifetimes: Sessions.Lifetimes
    let desk: MailDesk

    enum Issued: Sendable {
        /// A mail with this link was queued.
        case queued(link: String)
        /// Nothing to send (no such account, or already verified); said to nobody.
        case nothing
        /// Enough such mails went out lately: try again after this many seconds.
        case throttled(retryAfter: Int)
    }

    /// A new verification mail for the current address of `user` (or of the account of
    /// `emailKey`), unless it is verified or three went out in the last 10 minutes.
    func resendVerification(of user: UUID?, emailKey: String?) async throws -> Issued {
        try await database.withTransaction { connection in
            let users = Users(connection)
            var found: User?
            if let user {
                found = try await users.lock(user)
            } else if let emailKey {
                found = try await users.lock(emailKey: emailKey)
            }
            guard let account = found, let email = account.email, !account.emailVerified else { return .nothing }
            guard try await EmailTokens(connection).recentVerifications(of: account.id) < 3 else {
                return .throttled(retryAfter: 600)
            }
            let made = desk.verification(email)
            try await EmailTokens(connection).issue(made, to: account.id)
            return .queued(link: made.link)
        }
    }

    /// Marks the address verified, when the token is a live `verify` token for the address the
    /// account still has. Returns the user, or nil.
    func verifyEmail(_ hash: PostgresBytes) async throws -> User? {
        try await database.withTransaction { connection in
            guard let token = try await EmailTokens(connection).consume(hash, .verify) else { return nil }
            return try await Users(connection).verify(token.user, email: token.email)
        }
    }

    /// Resets mailed to one address per hour at most.
    static let resetsPerAddressPerHour = 3

    /// Records that a reset was asked for `email`: one insert, the same whether or not an
    /// account has the address (what happens next is ``issueRequestedResets()``'s, after the
    /// answer).
    func requestReset(email: EmailAddress) async throws {
        try await ResetRequests(database).add(email)
    }

    /// Turns the reset requests into mails, each in one transaction: the request taken, counted
    /// against its address (three an hour), and when an account has the address and the count
    /// allows, a 30-minute token and its mail. Returns the links mailed.
    func issueRequestedResets() async throws -> [String] {
        var links: [String] = []
        while true {
            let outcome = try await database.withTransaction { connection -> (done: Bool, link: String?) in
                guard let key = try await ResetRequests(connection).take() else { return (true, nil) }
                let taken = try await MailThrottle.take("reset:" + key, windowSeconds: 3600, on: connection)
                guard !taken.exceeds(Self.resetsPerAddressPerHour),
                    let account = try await Users(connection).lock(emailKey: key), let email = account.email
                else { return (false, nil) }
                let made = desk.reset(email)
                try await EmailTokens(connection).issue(made, to: account.id)
                return (false, made.link)
            }
            if let link = outcome.link { links.append(link) }
            if outcome.done { return links }
        }
    }

    /// The account a live reset token is for (read only: the password is checked against its
    /// address before the token is spent).
    func resetTarget(_ hash: PostgresBytes) async throws -> User? {
        try await EmailTokens(database).resetTarget(hash)
    }

    /// Spends the reset token, which proves the reader holds the account's address: the new
    /// password, the address verified, every session ended, every other mailed link void (a
    /// pending change of address among them), identities linked while the address was unproven
    /// unlinked, a notice mailed. Nil when the token is no longer live or the account's address
    /// is no longer the one it was mailed to.
    func resetPassword(_ hash: PostgresBytes, to passwordHash: String) async throws -> User? {
        try await database.withTransaction { connection in
            let tokens = EmailTokens(connection)
            guard let token = try await tokens.consume(hash, .reset),
                let user = try await Users(connection).resetPassword(of: token.user, email: token.email, to: passwordHash)
            else { return nil }
            try await tokens.void(of: user.id, [.verify, .reset, .change, .cancelChange])
            try await Identities(connection).unlinkUnverified(of: user.id)
            try await Sessions(connection, lifetimes).end(of: user.id, reason: "password reset")
            try await Outbox(connection).enqueue(desk.mails.passwordChanged(to: token.email), kind: "password-changed")
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
        /// An anonymous account asked for a change of address (it keeps itself with an address and
        /// a password instead), or a permanent one asked to be kept.
        case anonymous(Bool)
        case invalid
    }

    /// Changes of address asked per account, and per new address, per hour.
    static let changesPerHour = 3

    /// Queues the confirmation to the new address (bound to the session that asks) and a notice
    /// to the current one whose link cancels the change, unless the address is taken (checked
    /// again at confirmation) or too many changes were asked lately for the account or for the
    /// new address. One change is pending at a time: a new one voids the one before.
    ///
    /// With `keeping`, the password of an anonymous account that asks to be kept: the change
    /// then makes it permanent with the address and that password when its link is followed.
    func requestEmailChange(
        of user: UUID, session: UUID?, to newEmail: EmailAddress, keeping passwordHash: String? = nil
    ) async throws -> EmailChange {
        try await database.withTransaction { connection in
            let users = Users(connection)
            guard let account = try await users.lock(user) else { return .invalid }
            guard account.isAnonymous == (passwordHash != nil) else { return .anonymous(account.isAnonymous) }
            let perAccount = try await MailThrottle.take("change:" + user.text(), windowSeconds: 3600, on: connection)
            if perAccount.exceeds(Self.changesPerHour) { return .throttled(retryAfter: perAccount.retryAfter) }
            if try await users.id(emailKey: newEmail.key).map({ $0 != user }) ?? false { return .taken }
            // The address counts only what is mailed to it, and anonymous accounts asking to be
            // kept count apart from permanent accounts changing their address: cheap anonymous
            // accounts cannot hold the address's owner off it.
            let kind = account.isAnonymous ? "keep-to:" : "change-to:"
            let perAddress = try await MailThrottle.take(kind + newEmail.key, windowSeconds: 3600, on: connection)
            if perAddress.exceeds(Self.changesPerHour) { return .throttled(retryAfter: perAddress.retryAfter) }
            let tokens = EmailTokens(connection)
            let confirmation =
                passwordHash.map { desk.keepAccount(to: newEmail.address, passwordHash: $0) }
                ?? desk.change(to: newEmail.address)
            try await tokens.void(of: user, [.change, .cancelChange])
            try await tokens.issue(confirmation, to: user, session: session)
            if let old = account.email {
                try await tokens.issue(desk.cancelChange(to: old, newEmail: newEmail.address), to: user, session: session)
            }
            return .queued(link: confirmation.link)
        }
    }

    /// Spends a change token, while the session that asked for it is live: the account takes the
    /// new address (verified by the link), every other mailed link dies (those sent to the old
    /// address among them), the old address is told. An anonymous account that asked to be kept
    /// also takes the password it gave and becomes permanent, and every session of it but the
    /// one that asked ends (whoever else held the anonymous account holds nothing of it now).
    func confirmEmailChange(_ hash: PostgresBytes) async throws -> EmailChange {
        do {
            return try await database.withTransaction { connection in
                let (tokens, users) = (EmailTokens(connection), Users(connection))
                guard let token = try await tokens.spend(hash, .change), let address = EmailAddress(token.email) else {
                    return .invalid
                }
                if let passwordHash = token.passwordHash {
                    guard let user = try await users.makePermanent(token.user, address: address, passwordHash: passwordHash)
                    else { return .invalid }
                    try await tokens.void(of: user.id, [.verify, .reset, .change, .cancelChange])
                    let sessions = Sessions(connection, lifetimes)
                    try await sessions.end(of: user.id, keeping: token.session, reason: "account made permanent")
                    if let session = token.session { try await sessions.markPermanent(session) }
                    return .changed(user)
                }
                guard let old = try await users.lock(token.user).map(\.email) else { return .invalid }
                let user = try await users.changeAddress(of: token.user, to: address)
                try await tokens.void(of: user.id, [.verify, .reset, .change, .cancelChange])
                if let old {
                    try await Outbox(connection).enqueue(
                        desk.mails.emailChanged(to: old, newEmail: address.address), kind: "email-changed")
                }
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
            let tokens = EmailTokens(connection)
            guard let link = try await tokens.consumeCancel(hash) else { return nil }
            try await tokens.void(of: link.user, [.change])
            if let session = link.session {
                try await Sessions(connection, lifetimes).end(
                    of: link.user, only: session, reason: "change of address cancelled")
            }
            return try await Users(connection).user(link.user)
        }
    }
}
