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

/// Anonymous accounts: made for an installation, permanent later in place (the same id).
///
/// What becoming permanent ends: every other session of the account (whoever else held the
/// anonymous account, a copied refresh token or another device, holds nothing of the permanent
/// one) and every pending mailed link (an address asked for before, with its password). An
/// address and password count only when the mailed link is followed (``MailedLinks``); an
/// identity or a passkey counts at once, proven by the provider's token or the authenticator.
extension Accounts {
    /// How many anonymous sign-ups an installation and a client address may make.
    struct AnonymousQuota: Sendable {
        let perInstallationPerDay: Int
        let perAddressPerHour: Int
    }

    enum AnonymousSignUp: Sendable {
        case created(User, session: UUID)
        /// The installation or the client address made as many as it may lately.
        case limited(retryAfter: Int)
    }

    /// An anonymous account and its first session, unless the installation made
    /// `perInstallationPerDay` in the last day or the client (its address, an IPv6 /64) `perAddressPerHour` in the last
    /// hour (counted under a lock of each, so concurrent sign-ups cannot pass the limit together).
    func signUpAnonymously(
        installation: String, client: String, device: Sessions.Device, refreshToken: String, quota: AnonymousQuota
    ) async throws -> AnonymousSignUp {
        try await database.withTransaction { connection in
            let signups = AnonymousSignups(connection)
            let recent = try await signups.lockAndCount(installation: installation, client: client)
            if recent.installation >= quota.perInstallationPerDay { return .limited(retryAfter: 3600) }
            if recent.address >= quota.perAddressPerHour { return .limited(retryAfter: 600) }
            try await signups.record(installation: installation, client: client)
            let user = try await Users(connection).insertAnonymous(UUID.random())
            let session = try await Sessions(connection, lifetimes).open(for: user.id, refreshToken: refreshToken, device: device)
            return .created(user, session: session)
        }
    }

    /// Makes `user` permanent when it is anonymous (with `address`, when a provider verified one
    /// and no account has it), ending every session but `keep` and every pending mailed link.
    /// False when it was not anonymous (nothing is done).
    static func makePermanent(
        _ user: UUID, address: EmailAddress? = nil, keeping keep: UUID?, lifetimes: Sessions.Lifetimes,
        on connection: PostgresConnection
    ) async throws -> Bool {
        guard try await Users(connection).makePermanent(user, address: address) else { return false }
        try await EmailTokens(connection).void(of: user, [.verify, .reset, .change, .cancelChange])
        let sessions = Sessions(connection, lifetimes)
        try await sessions.end(of: user, keeping: keep, reason: "account made permanent")
        if let keep { try await sessions.markPermanent(keep) }
        return true
    }

    /// Deletes the anonymous accounts no session used for `days` days (nor made since), a batch
    /// at a time, each with its `account.deleted` (their feedback stays, without the link).
    /// Returns how many went.
    func deleteUnusedAnonymous(olderThan days: Int, batch: Int = 100) async throws -> Int {
        var deleted = 0
        while true {
            let gone = try await database.withTransaction { connection -> [UUID] in
                let ids = try await Users(connection).deleteUnusedAnonymous(olderThan: days, batch: batch)
                for id in ids {
                    try await EventLog.append(AccountDeleted.type, payload: AccountDeleted(userId: id), on: connection)
                }
                return ids
            }
            deleted += gone.count
            if gone.count < batch { return deleted }
        }
    }
}

/// The hourly sweep of anonymous accounts: those no session used for the configured days go
/// (``Accounts/deleteUnusedAnonymous(olderThan:batch:)``), and sign-ups older than a day stop
/// counting against the limits.
enum AnonymousSweep {
    static func periodic(accounts: Accounts, days: Int, logger: Logger) -> Periodic {
        Periodic("anonymous accounts sweep", every: .seconds(3600)) {
            do {
                let deleted = try await accounts.deleteUnusedAnonymous(olderThan: days)
                try await AnonymousSignups(accounts.database).forgetOld()
                if deleted > 0 { logger.info("unused anonymous accounts deleted", [("count", .int(deleted))]) }
            } catch {
                logger.warning("anonymous accounts sweep will retry", [("error", .string("\(error)"))])
            }
        }
    }
}
