import PierEvents
import PierHTTP
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

/// Opening, rotating and ending sessions: each a unit of work that opens its transaction and
/// calls the repositories (and the outbox, through them) on its connection.
struct SignIns: Sendable {
    let database: PostgresPool
    let lifetimes: Sessions.Lifetimes
    let mails: Mails

    /// What a first factor that was right leads to.
    enum Opening: Sendable {
        /// A session, and whether a notice of it was mailed.
        case opened(session: UUID, noticed: Bool)
        /// The account has a second factor: the sign-in waits for a code or a passkey, sent with
        /// the MFA token to `POST /auth/mfa/verify` within ``SignIns/challengeSeconds``.
        case challenged(SecondFactorChallenge)
    }

    /// A sign-in waiting for its second factor: the MFA token, and what may complete it
    /// (`totp`, `recovery_code`, and `passkey` when the account has one and the first factor
    /// was not a passkey already).
    struct SecondFactorChallenge: Sendable {
        let mfaToken: String
        let factors: [String]
    }

    /// How long an MFA token waits for its code.
    static let challengeSeconds = 300

    /// A new session for `user` whose first refresh token is `refreshToken`; when no session of
    /// the account came from this device name and address before, a notice is mailed in the same
    /// transaction (a security mail). A disabled account gets none (403 `account_disabled`),
    /// whichever way it signs in. An account with a second factor gets none either until its
    /// code is given: unless `device.amr` says a second factor was used, the answer is a challenge.
    func open(for user: User, refreshToken: String, device: Sessions.Device) async throws -> Opening {
        try await database.withTransaction { connection in
            try await open(for: user, refreshToken: refreshToken, device: device, on: connection)
        }
    }

    func open(
        for user: User, refreshToken: String, device: Sessions.Device, on connection: PostgresConnection
    ) async throws -> Opening {
        guard let account = try await Users(connection).lock(user.id, share: true), account.disabledAt == nil else {
            throw AccountDisabled()
        }
        let factors = SecondFactors(connection)
        if !device.amr.contains("mfa"), try await factors.isEnrolled(user.id) {
            let token = TokenIssuer.randomToken()
            try await factors.openChallenge(
                TokenIssuer.hash(token), of: user.id, device: device, seconds: Self.challengeSeconds)
            let passkey = try await Self.passkeyMayComplete(user.id, firstFactor: device.amr, on: connection)
            return .challenged(.init(mfaToken: token, factors: ["totp", "recovery_code"] + (passkey ? ["passkey"] : [])))
        }
        let sessions = Sessions(connection, lifetimes)
        let known = try await sessions.isKnown(device, of: user.id)
        let session = try await sessions.open(for: user.id, refreshToken: refreshToken, device: device)
        guard !known, let email = user.email else { return .opened(session: session, noticed: false) }
        try await Outbox(connection).enqueue(
            mails.newSignIn(to: email, device: device.name, address: device.address), kind: "new-sign-in")
        return .opened(session: session, noticed: true)
    }

    /// Whether a passkey may be the second factor of a sign-in whose first was `firstFactor`:
    /// the account has one, and the first factor was not a passkey.
    static func passkeyMayComplete(_ user: UUID, firstFactor: [String], on connection: PostgresConnection) async throws
        -> Bool
    {
        guard !firstFactor.contains("swk"), !firstFactor.contains("hwk") else { return false }
        return try await PasskeyCredentials(connection).hasUsable(of: user)
    }

    // MARK: - Identities (Sign in with Apple, OpenID Connect)

    enum IdentitySignIn: Sendable {
        case signedIn(User, session: UUID, created: Bool, noticed: Bool)
        /// The account has a second factor: the sign-in waits for it.
        case challenged(SecondFactorChallenge)
        /// No account is linked, and the provider did not verify the token's address: nothing is
        /// linked or created with an address nobody proved (whether an account has it is not said).
        case emailUnverified
        /// No account is linked and the token carries no address to make one with.
        case noEmail
        /// An anonymous account asked to be kept with an identity another account has, or with
        /// the address (verified by the provider) of another account.
        case identityTaken
    }

    /// Links the identity to the anonymous account `user` whose bearer token came with it,
    /// making it permanent (with the token's address when the provider verified it): every
    /// session of it ends, the new one is answered. Nothing changes when the identity, or its
    /// address, is another account's (`identityTaken`), or the account is permanent already
    /// (then it is a plain sign-in).
    func keepAnonymous(
        _ user: UUID, provider: String, claims: IdentityClaims, name: String?, refreshToken: String,
        device: Sessions.Device
    ) async throws -> IdentitySignIn {
        do {
            let kept = try await database.withTransaction { connection -> IdentitySignIn? in
                let address = claims.emailVerified ? claims.email.flatMap(EmailAddress.init) : nil
                guard
                    try await Accounts.makePermanent(user, address: address, keeping: nil, lifetimes: lifetimes, on: connection)
                else { return nil }
                try await Identities(connection).link(
                    provider: provider, subject: claims.subject, to: user, email: claims.email)
                if let name { try await Users(connection).nameIfUnnamed(user, name) }
                guard let account = try await Users(connection).user(user) else { return .noEmail }
                switch try await open(for: account, refreshToken: refreshToken, device: device, on: connection) {
                case .opened(let session, let noticed):
                    return .signedIn(account, session: session, created: false, noticed: noticed)
                case .challenged(let challenge): return .challenged(challenge)
                }
            }
            if let kept { return kept }
        } catch let error as PostgresError where error.isUniqueViolation {
            return .identityTaken
        }
        return try await signIn(provider: provider, claims: claims, name: name, refreshToken: refreshToken, device: device)
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
        provider: String, claims: IdentityClaims, name: String?, refreshToken: String, device: Sessions.Device
    ) async throws -> IdentitySignIn {
        do {
            return try await linkOrCreate(
                provider: provider, claims: claims, name: name, refreshToken: refreshToken, device: device)
        } catch let error as PostgresError where error.isUniqueViolation {
            // The same identity or address was just linked or created by a concurrent sign-in:
            // the second pass finds it.
            return try await linkOrCreate(
                provider: provider, claims: claims, name: name, refreshToken: refreshToken, device: device)
        }
    }

    private func linkOrCreate(
        provider: String, claims: IdentityClaims, name: String?, refreshToken: String, device: Sessions.Device
    ) async throws -> IdentitySignIn {
        try await database.withTransaction { connection in
            let (users, identities) = (Users(connection), Identities(connection))
            var created = false
            var userID = try await identities.touch(provider: provider, subject: claims.subject, email: claims.email)
            if userID == nil {
                guard let email = claims.email.flatMap(EmailAddress.init) else { return .noEmail }
                guard claims.emailVerified else { return .emailUnverified }
                if let account = try await users.lock(emailKey: email.key) {
                    if !account.emailVerified { try await claimUnproven(account.id, on: connection) }
                    userID = account.id
                } else {
                    let id = UUID.random()
                    _ = try await users.insert(id, email: email, passwordHash: nil, displayName: name, verified: true)
                    userID = id
                    created = true
                }
                try await identities.link(provider: provider, subject: claims.subject, to: userID!, email: email.address)
            }
            guard let userID, let user = try await users.user(userID) else { return .noEmail }
            switch try await open(for: user, refreshToken: refreshToken, device: device, on: connection) {
            case .opened(let session, let noticed): return .signedIn(user, session: session, created: created, noticed: noticed)
            case .challenged(let challenge): return .challenged(challenge)
            }
        }
    }

    /// The owner of an address proved it through a provider, on an account whose address was never
    /// proven: whoever registered it first loses every way in — the password is dropped, every
    /// session ended, every mailed link void, every other identity, second factor and passkey removed — and the address is
    /// marked verified. The owner sets a password, if they want one, through "forgot password".
    private func claimUnproven(_ user: UUID, on connection: PostgresConnection) async throws {
        try await Users(connection).claim(user)
        try await Identities(connection).unlinkAll(of: user)
        // A second factor enrolled by whoever registered first would lock the owner out; a
        // passkey of theirs would let them in.
        try await SecondFactors(connection).removeAll(of: user)
        try await PasskeyCredentials(connection).deleteAll(of: user)
        try await EmailTokens(connection).void(of: user, [.verify, .reset, .change, .cancelChange])
        try await Sessions(connection, lifetimes).end(of: user, reason: "address claimed by its owner")
    }

    /// Applies one of Apple's server-to-server events to the account linked to `subject`:
    /// consent revoked or Apple account deleted → the link removed and every session ended (an
    /// account left with no way to sign in is deleted, the normal way); relay mail disabled or
    /// enabled → recorded. False when no account is linked to the subject.
    func appleEvent(_ type: String, subject: String) async throws -> Bool {
        try await database.withTransaction { connection in
            let identities = Identities(connection)
            guard let user = try await identities.lockApple(subject: subject) else { return false }
            switch type {
            case "email-disabled", "email-enabled":
                try await identities.setAppleEmailDisabled(type == "email-disabled", subject: subject)
            case "consent-revoked", "account-delete":
                try await identities.unlinkApple(subject: subject)
                try await Sessions(connection, lifetimes).end(of: user, reason: "apple " + type)
                let users = Users(connection)
                if type == "account-delete", let email = try await users.strandedEmail(of: user) {
                    _ = try await users.delete(user)
                    try await EventLog.append(AccountDeleted.type, payload: AccountDeleted(userId: user), on: connection)
                    if let email {
                        try await Outbox(connection).enqueue(mails.accountDeleted(to: email), kind: "account-deleted")
                    }
                }
            default:
                return true
            }
            return true
        }
    }

    // MARK: - Refresh and sign-out

    enum Rotation: Sendable {
        /// The token was exchanged for its successor (or, within the grace window, is the same
        /// client retrying: the same successor again).
        case rotated(User, session: UUID, authenticatedAt: Date, amr: [String])
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
            let sessions = Sessions(connection, lifetimes)
            guard let token = try await sessions.lock(refreshToken: hash, graceSeconds: graceSeconds), token.live else {
                return .invalid
            }
            if token.unused {
                try await sessions.rotate(hash, to: successorHash, session: token.session, from: address)
                return .rotated(token.user, session: token.session, authenticatedAt: token.authenticatedAt, amr: token.amr)
            }
            // Used before. Within the grace window, and while its successor is still unused, it
            // is the same client retrying: answer with the same successor.
            if token.inGrace == true, try await sessions.isUnused(refreshToken: successorHash) {
                return .rotated(token.user, session: token.session, authenticatedAt: token.authenticatedAt, amr: token.amr)
            }
            try await sessions.end(of: token.user.id, only: token.session, reason: "refresh token reuse")
            return .reused(session: token.session)
        }
    }

    /// Ends the session of the refresh token (of `user`'s sessions only, when the caller is known)
    /// and the caller's current one.
    func logout(_ user: UUID?, session current: UUID?, refreshTokenHash hash: PostgresBytes) async throws {
        try await database.withTransaction { connection in
            try await Sessions(connection, lifetimes).logout(user, session: current, refreshTokenHash: hash)
        }
    }

    /// Ends `user`'s sessions: the one of `id`, or all of them (and then every pending reset or
    /// change of address with them: whoever is being signed out may have asked for one); their
    /// access tokens are refused everywhere within a second. Returns how many were live.
    func endSessions(of user: UUID, only id: UUID?, reason: String) async throws -> Int {
        try await database.withTransaction { connection in
            if id == nil { try await EmailTokens(connection).void(of: user, [.reset, .change, .cancelChange]) }
            return try await Sessions(connection, lifetimes).end(of: user, only: id, reason: reason)
        }
    }
}

/// A sign-in (or a refresh) of an account the team disabled: no session is opened.
struct AccountDisabled: Error {}
