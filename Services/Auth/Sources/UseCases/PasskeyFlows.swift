import PierCrypto
import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Passkeys' ceremonies, each step a unit of work: options with a fresh challenge, then the
/// credential or the assertion checked (``WebAuthn``) while the challenge is spent in the same
/// transaction, refused or not (a challenge is tried once).
///
/// What each ends or opens: a passkey added or removed is mailed to the owner; a sign-in with a
/// passkey opens a session like a password would, through ``SignIns`` (a disabled account gets
/// none; an account with an authenticator app is asked its second factor unless the passkey
/// verified the user, which makes it two factors already); a counter that goes backwards
/// suspends the passkey. A passkey also completes a sign-in waiting for its second factor
/// (``SecondFactorFlows``) and re-authenticates a session before a sensitive action.
struct PasskeyFlows: Sendable {
    let database: PostgresPool
    let lifetimes: Sessions.Lifetimes
    let mails: Mails
    let signIns: SignIns
    let rp: WebAuthn.RelyingParty

    /// How long a challenge lives (the options' `timeout`).
    static let challengeSeconds = 300

    /// What a challenge is handed out for: each ceremony spends only its own.
    enum Purpose: String, Sendable {
        case register
        /// A first factor, by any account's passkey.
        case login
        /// The second step of a sign-in, by a passkey of its account.
        case secondFactor = "second-factor"
        /// Before a sensitive action, by a passkey of the signed-in account.
        case reauthenticate
    }

    /// A fresh challenge for `purpose` (all but a first sign-in's belong to `user`), kept hashed.
    func challenge(_ purpose: Purpose, of user: UUID?) async throws -> [UInt8] {
        try await Self.challenge(purpose, of: user, on: database)
    }

    static func challenge(_ purpose: Purpose, of user: UUID?, on database: any PostgresExecutor) async throws -> [UInt8] {
        let challenge = SecureRandom.bytes(32)
        try await PasskeyCredentials(database).issue(
            challenge, purpose: purpose.rawValue, user: user, seconds: Self.challengeSeconds)
        return challenge
    }

    func existing(of user: UUID) async throws -> [[UInt8]] { try await PasskeyCredentials(database).credentialIDs(of: user) }

    enum Registration: Sendable {
        case added(Passkey)
        case refused(WebAuthn.Failure)
        case staleChallenge
        case alreadyRegistered
    }

    /// Checks and keeps a new passkey of `user`, spending the challenge its client data carries.
    func register(
        _ user: User, session: UUID?, challenge: [UInt8], name: String, transports: [String],
        check: () throws(WebAuthn.Failure) -> WebAuthn.NewCredential
    ) async throws -> Registration {
        do {
            return try await database.withTransaction { connection in
                let credentials = PasskeyCredentials(connection)
                guard try await credentials.spend(challenge, purpose: Purpose.register.rawValue, user: user.id) else {
                    return .staleChallenge
                }
                let credential: WebAuthn.NewCredential
                do throws(WebAuthn.Failure) { credential = try check() } catch { return .refused(error) }
                let passkey = try await credentials.insert(credential, of: user.id, name: name, transports: transports)
                if let email = user.email {
                    try await Outbox(connection).enqueue(mails.passkeyAdded(to: email, name: name), kind: "passkey-added")
                }
                // An anonymous account's first passkey keeps it (``Accounts/makePermanent``).
                if user.isAnonymous {
                    _ = try await Accounts.makePermanent(user.id, keeping: session, lifetimes: lifetimes, on: connection)
                }
                return .added(passkey)
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            return .alreadyRegistered
        }
    }

    enum SignIn: Sendable {
        case opening(User, SignIns.Opening, device: Sessions.Device)
        case failed(PasskeyProof.Failure)
    }

    /// Checks an assertion by any passkey and opens a session (or the second-factor challenge)
    /// for its account.
    func signIn(_ proof: PasskeyProof, refreshToken: String, device: Sessions.Device) async throws -> SignIn {
        try await database.withTransaction { connection in
            switch try await proof.verify(.login, of: nil, on: connection) {
            case .failed(let failure): return .failed(failure)
            case .verified(let id, let amr):
                guard let user = try await Users(connection).user(id) else { return .failed(.unknownCredential) }
                var device = device
                device.amr = amr
                let opening = try await signIns.open(for: user, refreshToken: refreshToken, device: device, on: connection)
                return .opening(user, opening, device: device)
            }
        }
    }

    enum Reauthentication: Sendable {
        /// The session's new `auth_time` and `amr` (nil without a live session).
        case proven(Sessions.Reauthenticated?)
        case failed(PasskeyProof.Failure)
    }

    /// Re-authentication with a passkey of `user`: the session counts as just signed in, with
    /// the passkey's `amr` (and `mfa` on an account with two-step sign-in: the passkey is a
    /// factor of its own, like a code).
    func reauthenticate(_ user: UUID, session: UUID?, proof: PasskeyProof) async throws -> Reauthentication {
        try await database.withTransaction { connection in
            switch try await proof.verify(.reauthenticate, of: user, on: connection) {
            case .failed(let failure): return .failed(failure)
            case .verified(_, let amr):
                guard let session else { return .proven(nil) }
                let adding = try await SecondFactors(connection).isEnrolled(user) ? amr + ["mfa"] : amr
                return .proven(try await Sessions(connection, lifetimes).reauthenticated(session, adding: adding))
            }
        }
    }

    func list(of user: UUID) async throws -> [Passkey] { try await PasskeyCredentials(database).list(of: user) }

    func rename(_ id: UUID, of user: UUID, to name: String) async throws -> Passkey? {
        try await PasskeyCredentials(database).rename(id, of: user, to: name)
    }

    /// Removes one of the account's passkeys and mails its owner.
    func remove(_ id: UUID, of user: User) async throws -> Bool {
        try await database.withTransaction { connection in
            guard let name = try await PasskeyCredentials(connection).delete(id, of: user.id) else { return false }
            if let email = user.email {
                try await Outbox(connection).enqueue(mails.passkeyRemoved(to: email, name: name), kind: "passkey-removed")
            }
            return true
        }
    }
}

/// An assertion as it came (its members decoded, its client data's type, origin and challenge
/// read), to be checked against the stored passkey in a unit of work.
struct PasskeyProof: Sendable {
    let credentialID: [UInt8]
    let userHandle: [UInt8]?
    let clientData: [UInt8]
    let authenticatorData: [UInt8]
    let signature: [UInt8]
    let challenge: [UInt8]
    let rp: WebAuthn.RelyingParty

    enum Failure: Sendable {
        case refused(WebAuthn.Failure)
        case staleChallenge
        case unknownCredential
        case suspended
        case counterWentBack
    }

    enum Outcome: Sendable {
        /// A passkey of account `user` signed; `amr` says how (RFC 8176).
        case verified(user: UUID, amr: [String])
        case failed(Failure)
    }

    /// Spends the challenge handed out for `purpose` (to `user`, when given), then checks the
    /// signature by a stored passkey (of `user`, when given), its flags and its counter. Failures
    /// are answered, not thrown, so that what they change (the challenge spent, a passkey
    /// suspended) is kept.
    func verify(_ purpose: PasskeyFlows.Purpose, of user: UUID?, on connection: PostgresConnection) async throws
        -> Outcome
    {
        let credentials = PasskeyCredentials(connection)
        guard try await credentials.spend(challenge, purpose: purpose.rawValue, user: user) else {
            return .failed(.staleChallenge)
        }
        guard let stored = try await credentials.lock(credential: credentialID), user == nil || stored.user == user,
            userHandle == nil || userHandle == stored.user.bytes
        else { return .failed(.unknownCredential) }
        guard !stored.suspended else { return .failed(.suspended) }
        let data: WebAuthn.AuthenticatorData
        do throws(WebAuthn.Failure) {
            data = try WebAuthn.assertion(
                authenticatorData: authenticatorData, clientDataJSON: clientData, signature: signature,
                publicKey: stored.publicKey, rp: rp)
        } catch { return .failed(.refused(error)) }
        // §6.1.1: a counter that does not grow (when either is not zero) may be a clone.
        let count = Int(data.signCount)
        if (count != 0 || stored.signCount != 0) && count <= stored.signCount {
            try await credentials.suspend(stored.id)
            return .failed(.counterWentBack)
        }
        try await credentials.used(stored.id, signCount: count, backedUp: data.has(WebAuthn.AuthenticatorData.backedUp))
        // RFC 8176: a key synced between devices is software-held (`swk`), else hardware (`hwk`);
        // the user verified by the authenticator (biometrics, PIN) makes it two factors.
        var amr = [data.has(WebAuthn.AuthenticatorData.backupEligible) ? "swk" : "hwk"]
        if data.has(WebAuthn.AuthenticatorData.userVerified) { amr += ["mfa"] }
        return .verified(user: stored.user, amr: amr)
    }
}

extension UUID {
    /// The 16 bytes, as a WebAuthn user handle.
    var bytes: [UInt8] { withUnsafeBytes(of: uuid) { Array($0) } }
}
