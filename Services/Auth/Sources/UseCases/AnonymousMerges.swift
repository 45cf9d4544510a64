import PierAudit
import PierEvents
import PierIdentity
import PierModels
import PierPostgres

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Merging an anonymous account into the account that already has the address or identity it
/// asked to keep (`identity_taken`). Both sides prove themselves: the anonymous session asks for a
/// merge token, and a sign-in of the other account made after it spends the token. Then, in one
/// transaction, the anonymous account is deleted (its sessions and links with it), `auth.merges`
/// says where it went, `account.merged` tells the services to move what they keep of it
/// (feedback and its replies, App Store ownership, grants) and the audit log records it.
///
/// What ends a merge token: its first use, ten minutes, a newer token of the same session, the
/// anonymous session ending (a sign-out, everywhere or not), the account becoming permanent
/// meanwhile or being deleted. What the merge needs of the other side: a permanent, enabled
/// account whose session is live and proved who they are (a password with its second factor,
/// an identity, a passkey) after the token was made.
extension Accounts {
    static let mergeTokenLifetime = 600

    enum MergeStart: Sendable {
        case started(token: String, expiresAt: Date)
        /// The account is not anonymous (or the token names no session).
        case notAnonymous
    }

    /// A merge token for the anonymous `user`'s `session` (a newer one replaces the older).
    func startMerge(of user: UUID, session: UUID) async throws -> MergeStart {
        try await database.withTransaction { connection in
            guard try await Users(connection).isAnonymous(user) else { return .notAnonymous }
            let token = TokenIssuer.randomToken()
            guard
                let expiresAt = try await MergeTokens(connection).replace(
                    TokenIssuer.hash(token), user: user, session: session, lifetime: Self.mergeTokenLifetime)
            else { return .notAnonymous }
            return .started(token: token, expiresAt: expiresAt)
        }
    }

    enum Merge: Sendable, Equatable {
        case merged(anonymous: UUID)
        /// No such token, or it expired, was used, or its session or account ended or was kept.
        case invalidToken
        /// The caller's sign-in is older than the token: sign in to the account again.
        case signInFirst
        /// The caller is the anonymous account itself, or another anonymous one.
        case intoAnonymous
        /// The caller's session ended, or its account was disabled.
        case callerEnded
    }

    /// Spends `token` merging its anonymous account into the caller's (`into`, signed in to
    /// session `session` at `authenticatedAt`, seconds since 1970).
    func merge(token: String, into: UUID, session: UUID?, authenticatedAt: Int?, by actor: AuditActor) async throws
        -> Merge
    {
        try await database.withTransaction { connection in
            let tokens = MergeTokens(connection)
            guard let found = try await tokens.lock(TokenIssuer.hash(token)), found.usable, let anonymousAt = found.anonymousAt
            else { return .invalidToken }
            let anonymous = found.user
            guard anonymous != into, !(try await Users(connection).isAnonymous(into)) else { return .intoAnonymous }
            guard let authenticatedAt, Double(authenticatedAt) >= found.createdAt.rounded(.down) else { return .signInFirst }
            guard let session, let account = try await Users(connection).lock(into, share: true), account.disabledAt == nil,
                try await Sessions(connection, lifetimes).isLive(session, of: into)
            else { return .callerEnded }
            try await tokens.recordMerge(of: anonymous, into: into, anonymousAt: anonymousAt)
            _ = try await Users(connection).delete(anonymous)
            try await EventLog.append(
                AccountMerged.type, payload: AccountMerged(userId: anonymous, intoUserId: into), on: connection)
            try await AuditLog.append(
                .init(
                    .userMerged, target: ("user", into.text()), subject: into,
                    before: .object(["anonymousUserId": .string(anonymous.text())]),
                    after: .object(["userId": .string(into.text())])),
                by: actor, schema: StaffActions.schema, on: connection)
            return .merged(anonymous: anonymous)
        }
    }
}
