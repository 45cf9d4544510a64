import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierQR
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A second factor's flows, each a unit of work: enrolling an authenticator app (TOTP, RFC 6238)
/// and confirming it with a first code, completing a sign-in that a first factor left waiting
/// (the MFA token), re-authenticating with a code, new recovery codes, and removal.
///
/// What each ends: confirming signs out every other session (one that got in on a password
/// alone would outlive the rule the owner just set); removal ends the sign-ins waiting for a
/// code; a reset or change of password, or "sign out everywhere", ends those too (``Sessions``).
/// Wrong codes back off per account like passwords (``LoginThrottle``), under a key a right
/// password does not reset, and five end an MFA token.
struct SecondFactorFlows: Sendable {
    let database: PostgresPool
    let lifetimes: Sessions.Lifetimes
    let desk: MailDesk
    let signIns: SignIns
    /// Seals the authenticator apps' secrets (`PIER_AUTH_MFA_KEY_FILE`).
    let box: SecretBox
    let throttle: LoginThrottle
    /// The issuer authenticator apps show beside the code (`PIER_APP_NAME`).
    let issuer: String

    var mails: Mails { desk.mails }

    /// Wrong codes that end an MFA token.
    static let challengeFailureLimit = 5
    /// What a code adds to the session's `amr`.
    static let codeAMR = ["otp", "mfa"]

    /// What proved the second factor.
    enum Proof: Sendable, Equatable {
        case totp
        /// A recovery code, spent; this many are left.
        case recoveryCode(left: Int)
    }

    // MARK: - Enrolment

    enum Offer: Sendable {
        case offered(TOTPEnrolment)
        case alreadyEnabled
    }

    /// A new authenticator-app secret for `user`, replacing one offered and never confirmed.
    /// Nothing changes at sign-in until ``confirm(_:code:session:)``.
    func offer(to user: User) async throws -> Offer {
        let totp = TOTP.generate()
        let sealed = try box.seal(totp.secret, context: Self.context(user.id))
        return try await database.withTransaction { connection in
            let factors = SecondFactors(connection)
            if let factor = try await factors.lockTOTP(of: user.id), factor.confirmed { return .alreadyEnabled }
            try await factors.offer(sealed, to: user.id)
            let uri = totp.uri(issuer: issuer, account: user.handle)
            return .offered(TOTPEnrolment(secret: Base32.encode(totp.secret), uri: uri, qrCode: QRCode(uri)?.svg ?? ""))
        }
    }

    enum Confirmation: Sendable {
        case confirmed(recoveryCodes: [String])
        case nothingOffered
        case alreadyEnabled
        case wrongCode
        case wait(Int)
    }

    /// Confirms the secret offered with a first code from the app: from now on sign-ins ask for a
    /// code. Every other session is ended, the caller's gains `otp` and `mfa`, ten recovery
    /// codes are made, and a notice is mailed.
    func confirm(_ user: User, code: String, session: UUID?) async throws -> Confirmation {
        try await database.withTransaction { connection in
            let factors = SecondFactors(connection)
            guard let factor = try await factors.lockTOTP(of: user.id) else { return .nothingOffered }
            guard !factor.confirmed else { return .alreadyEnabled }
            if let wait = try await throttle.codeWait(of: user.id, on: connection) { return .wait(wait) }
            let secret = try box.open(factor.sealedSecret, context: Self.context(user.id))
            guard let step = TOTP(secret: secret).matchingStep(Self.digits(code), at: Self.now(), after: nil) else {
                try await throttle.recordCodeFailure(of: user.id, on: connection)
                return .wrongCode
            }
            try await throttle.resetCodes(of: user.id, on: connection)
            try await factors.accepted(step: step, of: user.id)
            let codes = try await newRecoveryCodes(for: user.id, on: connection)
            let sessions = Sessions(connection, lifetimes)
            try await sessions.end(of: user.id, keeping: session, reason: "second factor enabled")
            if let session { try await sessions.reauthenticated(session, adding: Self.codeAMR) }
            try await Outbox(connection).notify(user.email, kind: "mfa-enabled", mails.secondFactorEnabled)
            return .confirmed(recoveryCodes: codes)
        }
    }

    // MARK: - A team member's first second factor

    /// How long an ask waits for its approval, and how long an approval lasts.
    static let approvalSeconds = 30 * 60
    /// A session's ask mails its link again after this long without approval.
    static let approvalMailInterval = 10 * 60
    /// Approval mails per account per hour.
    static let approvalMailsPerHour = 5

    enum Gate: Sendable, Equatable {
        case open
        /// A team member's first second factor waits for approval; the link just mailed, or nil
        /// when one went out lately (or enough did this hour).
        case awaitingApproval(link: String?)
    }

    /// Whether `user`, in `session`, may set up a second factor now. A team member (support,
    /// admin) whose session no second factor proved is setting up their first: with the password
    /// alone, whoever holds it would own the account from then on. The session's ask is kept
    /// and a link mailed to the account's address; once it (or an admin) approves, the session
    /// may go on for 30 minutes. Anyone else, and a session a second factor proved, may at once.
    func mayEnrol(_ user: User, session: UUID?) async throws -> Gate {
        guard user.role.isStaff else { return .open }
        guard let session else { return .awaitingApproval(link: nil) }
        return try await database.withTransaction { connection in
            let factors = SecondFactors(connection)
            guard let asking = try await factors.askingSession(session, of: user.id) else {
                return .awaitingApproval(link: nil)
            }
            if asking.secondFactor { return .open }
            switch try await factors.lockApproval(of: session) {
            case .approved: return .open
            case .asked(let ago) where ago < Self.approvalMailInterval: return .awaitingApproval(link: nil)
            case .none, .asked: break
            }
            try await factors.ask(session, of: user.id, seconds: Self.approvalSeconds)
            let taken = try await MailThrottle.take("approve:" + user.id.text(), windowSeconds: 3600, on: connection)
            guard !taken.exceeds(Self.approvalMailsPerHour) else { return .awaitingApproval(link: nil) }
            // A team account has a proven address (roles need one).
            guard let email = user.email else { return .awaitingApproval(link: nil) }
            let made = desk.enrolmentApproval(email, device: asking.device, address: asking.address)
            try await EmailTokens(connection).issue(made, to: user.id, session: session)
            return .awaitingApproval(link: made.link)
        }
    }

    /// Spends a mailed approval link: the session that asked may set up its first second factor
    /// for the next 30 minutes. The account, or nil when the link is not live (used, expired, its
    /// session ended, the account's address changed since).
    func approve(link hash: PostgresBytes) async throws -> UUID? {
        try await database.withTransaction { connection in
            guard let token = try await EmailTokens(connection).consumeApproval(hash), let session = token.session,
                try await SecondFactors(connection).approve(
                    of: token.user, session: session, by: nil, seconds: Self.approvalSeconds)
            else { return nil }
            return token.user
        }
    }

    /// New recovery codes in place of the old ones; nil without a confirmed second factor.
    func replaceRecoveryCodes(of user: UUID) async throws -> [String]? {
        try await database.withTransaction { connection in
            guard try await SecondFactors(connection).isEnrolled(user) else { return nil }
            return try await newRecoveryCodes(for: user, on: connection)
        }
    }

    /// Removes the app, the recovery codes and the sign-ins waiting for a code, and mails a
    /// notice. False when there was no confirmed second factor (an offer is dropped all the same).
    func remove(_ user: User) async throws -> Bool {
        try await database.withTransaction { connection in
            guard try await SecondFactors(connection).removeAll(of: user.id) else { return false }
            try await Outbox(connection).notify(user.email, kind: "mfa-disabled", mails.secondFactorDisabled)
            return true
        }
    }

    // MARK: - Sign-in and re-authentication

    /// What completes a sign-in waiting for its second factor.
    enum SecondStep: Sendable {
        /// A code from the authenticator app or a recovery code.
        case code(String)
        case passkey(PasskeyProof)
    }

    enum Completion: Sendable {
        case signedIn(User, session: UUID, device: Sessions.Device, noticed: Bool)
        /// Unknown, expired, used, or ended by wrong codes.
        case invalidToken
        case wrongCode
        case wait(Int)
        case passkeyFailed(PasskeyProof.Failure)
        /// The account has no passkey, or its first factor was one.
        case passkeyNotOffered
    }

    /// Completes the sign-in waiting under `mfaToken`: a session whose `amr` is the first
    /// factor's and the second's (`otp` or the passkey's), with `mfa`. A wrong code counts
    /// against the token and the account; a passkey refused, against the token.
    func complete(mfaToken: String, with step: SecondStep, refreshToken: String, address: String) async throws
        -> Completion
    {
        let hash = TokenIssuer.hash(mfaToken)
        return try await database.withTransaction { connection in
            let factors = SecondFactors(connection)
            guard let challenge = try await factors.lockChallenge(hash), challenge.live else { return .invalidToken }
            var proof: Proof?
            let added: [String]
            switch step {
            case .code(let code):
                if let wait = try await throttle.codeWait(of: challenge.user, on: connection) { return .wait(wait) }
                guard let checked = try await check(code, of: challenge.user, on: connection) else {
                    try await factors.challengeFailed(hash, limit: Self.challengeFailureLimit)
                    try await throttle.recordCodeFailure(of: challenge.user, on: connection)
                    return .wrongCode
                }
                try await throttle.resetCodes(of: challenge.user, on: connection)
                (proof, added) = (checked, Self.codeAMR)
            case .passkey(let assertion):
                guard try await SignIns.passkeyMayComplete(challenge.user, firstFactor: challenge.amr, on: connection) else {
                    return .passkeyNotOffered
                }
                switch try await assertion.verify(.secondFactor, of: challenge.user, on: connection) {
                case .failed(let failure):
                    try await factors.challengeFailed(hash, limit: Self.challengeFailureLimit)
                    return .passkeyFailed(failure)
                case .verified(_, let amr): added = amr + ["mfa"]
                }
            }
            try await factors.endChallenge(hash)
            guard let user = try await Users(connection).user(challenge.user) else { return .invalidToken }
            let device = Sessions.Device(
                name: challenge.deviceName, address: address, amr: Array(Set(challenge.amr + added)).sorted())
            if case .recoveryCode(let left) = proof {
                try await Outbox(connection).notify(user.email, kind: "recovery-code-used") {
                    mails.recoveryCodeUsed(to: $0, left: left)
                }
            }
            switch try await signIns.open(for: user, refreshToken: refreshToken, device: device, on: connection) {
            case .opened(let session, let noticed): return .signedIn(user, session: session, device: device, noticed: noticed)
            case .challenged: return .invalidToken
            }
        }
    }

    enum PasskeyOffer: Sendable {
        /// The challenge and the account's passkeys, for the request options.
        case offered(challenge: [UInt8], credentials: [[UInt8]])
        case invalidToken
        case passkeyNotOffered
    }

    /// A challenge for a passkey of the account whose sign-in waits under `mfaToken`.
    func passkeyChallenge(mfaToken: String) async throws -> PasskeyOffer {
        try await database.withTransaction { connection in
            guard let challenge = try await SecondFactors(connection).lockChallenge(TokenIssuer.hash(mfaToken)),
                challenge.live
            else { return .invalidToken }
            guard try await SignIns.passkeyMayComplete(challenge.user, firstFactor: challenge.amr, on: connection) else {
                return .passkeyNotOffered
            }
            return .offered(
                challenge: try await PasskeyFlows.challenge(.secondFactor, of: challenge.user, on: connection),
                credentials: try await PasskeyCredentials(connection).credentialIDs(of: challenge.user, usable: true))
        }
    }

    enum CodeCheck: Sendable {
        /// Right: the session's new `auth_time` and `amr` (nil without a live session).
        case right(Sessions.Reauthenticated?)
        case wrong
        case wait(Int)
    }

    /// Re-authentication with a code: the session counts as just signed in, with a second factor.
    func reauthenticate(_ user: User, session: UUID?, code: String) async throws -> CodeCheck {
        try await database.withTransaction { connection in
            if let wait = try await throttle.codeWait(of: user.id, on: connection) { return .wait(wait) }
            guard let proof = try await check(code, of: user.id, on: connection) else {
                try await throttle.recordCodeFailure(of: user.id, on: connection)
                return .wrong
            }
            try await throttle.resetCodes(of: user.id, on: connection)
            if case .recoveryCode(let left) = proof {
                try await Outbox(connection).notify(user.email, kind: "recovery-code-used") {
                    mails.recoveryCodeUsed(to: $0, left: left)
                }
            }
            guard let session else { return .right(nil) }
            return .right(try await Sessions(connection, lifetimes).reauthenticated(session, adding: Self.codeAMR))
        }
    }

    /// Checks `code` against the account's confirmed app (six digits: a step not used before,
    /// then recorded as used) or its unused recovery codes (spent); nil when it is neither.
    private func check(_ code: String, of user: UUID, on connection: PostgresConnection) async throws -> Proof? {
        let factors = SecondFactors(connection)
        let digits = Self.digits(code)
        if digits.utf8.count == TOTP.digits {
            guard let factor = try await factors.lockTOTP(of: user), factor.confirmed else { return nil }
            let secret = try box.open(factor.sealedSecret, context: Self.context(user))
            guard let step = TOTP(secret: secret).matchingStep(digits, at: Self.now(), after: factor.lastStep) else {
                return nil
            }
            try await factors.accepted(step: step, of: user)
            return .totp
        }
        guard let normalized = Self.recoveryCode(code),
            try await factors.spendRecoveryCode(of: user, hash: Self.recoveryHash(normalized, of: user))
        else { return nil }
        return .recoveryCode(left: try await factors.status(of: user).recoveryCodesLeft)
    }

    // MARK: - Recovery codes

    /// Ten new codes, stored hashed in place of the old ones.
    private func newRecoveryCodes(for user: UUID, on connection: PostgresConnection) async throws -> [String] {
        let codes = (0..<10).map { _ in Self.newRecoveryCode() }
        try await SecondFactors(connection).replaceRecoveryCodes(
            of: user, with: codes.map { Self.recoveryHash(Self.recoveryCode($0)!, of: user) })
        return codes
    }

    /// 60 random bits as 12 Base32 letters and digits, shown `xxxx-xxxx-xxxx`.
    static func newRecoveryCode() -> String {
        let letters = Array(Base32.encode(SecureRandom.bytes(8)).lowercased().prefix(12))
        return String(letters[0..<4]) + "-" + String(letters[4..<8]) + "-" + String(letters[8..<12])
    }

    /// A recovery code as typed, without dashes, spaces and case; nil when it cannot be one.
    static func recoveryCode(_ typed: String) -> String? {
        let kept = typed.lowercased().filter { $0 != "-" && $0 != " " }
        guard kept.count == 12, kept.allSatisfy({ ("a"..."z").contains($0) || ("2"..."7").contains($0) }) else {
            return nil
        }
        return kept
    }

    /// What is stored of a recovery code: bound to its account, so one table of hashes serves
    /// no other.
    static func recoveryHash(_ normalized: String, of user: UUID) -> [UInt8] {
        SHA256.hash("pier recovery code\u{0}" + user.text() + "\u{0}" + normalized)
    }

    // MARK: - Helpers

    /// A TOTP code as typed, spaces dropped (`123 456`).
    static func digits(_ code: String) -> String { code.filter { $0 != " " } }

    /// What a sealed secret is bound to: its account.
    static func context(_ user: UUID) -> [UInt8] { Array(("totp\u{0}" + user.text()).utf8) }

    static func now() -> Int { Int(Date().timeIntervalSince1970) }
}
