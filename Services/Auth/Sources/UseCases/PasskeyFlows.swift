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
/// none; an account with an authenticator app is asked its code unless the passkey verified the
/// user, which makes it two factors already); a counter that goes backwards suspends the passkey.
struct PasskeyFlows: Sendable {
    let database: PostgresPool
    let mails: Mails
    let signIns: SignIns
    let rp: WebAuthn.RelyingParty

    /// How long a challenge lives (the options' `timeout`).
    static let challengeSeconds = 300

    /// A fresh challenge for `purpose` (a registration's belongs to `user`), kept hashed.
    func challenge(_ purpose: String, of user: UUID?) async throws -> [UInt8] {
        let challenge = SecureRandom.bytes(32)
        try await PasskeyCredentials(database).issue(challenge, purpose: purpose, user: user, seconds: Self.challengeSeconds)
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
        _ user: User, challenge: [UInt8], name: String, transports: [String],
        check: () throws(WebAuthn.Failure) -> WebAuthn.NewCredential
    ) async throws -> Registration {
        do {
            return try await database.withTransaction { connection in
                let credentials = PasskeyCredentials(connection)
                guard try await credentials.spend(challenge, purpose: "register", user: user.id) else { return .staleChallenge }
                let credential: WebAuthn.NewCredential
                do throws(WebAuthn.Failure) { credential = try check() } catch { return .refused(error) }
                let passkey = try await credentials.insert(credential, of: user.id, name: name, transports: transports)
                try await Outbox(connection).enqueue(mails.passkeyAdded(to: user.email, name: name), kind: "passkey-added")
                return .added(passkey)
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            return .alreadyRegistered
        }
    }

    enum SignIn: Sendable {
        case opening(User, SignIns.Opening, device: Sessions.Device)
        case refused(WebAuthn.Failure)
        case staleChallenge
        case unknownCredential
        case suspended
        case counterWentBack
    }

    /// Checks an assertion by the passkey of `credentialID` and opens a session (or the code
    /// challenge) for its account.
    func signIn(
        credentialID: [UInt8], userHandle: [UInt8]?, challenge: [UInt8], refreshToken: String, device: Sessions.Device,
        check: ([UInt8]) throws(WebAuthn.Failure) -> WebAuthn.AuthenticatorData
    ) async throws -> SignIn {
        try await database.withTransaction { connection in
            let credentials = PasskeyCredentials(connection)
            guard try await credentials.spend(challenge, purpose: "login", user: nil) else { return .staleChallenge }
            guard let stored = try await credentials.lock(credential: credentialID) else { return .unknownCredential }
            if let userHandle, userHandle != stored.user.bytes { return .unknownCredential }
            guard !stored.suspended else { return .suspended }
            let data: WebAuthn.AuthenticatorData
            do throws(WebAuthn.Failure) { data = try check(stored.publicKey) } catch { return .refused(error) }
            // §6.1.1: a counter that does not grow (when either is not zero) may be a clone.
            let count = Int(data.signCount)
            if (count != 0 || stored.signCount != 0) && count <= stored.signCount {
                try await credentials.suspend(stored.id)
                return .counterWentBack
            }
            try await credentials.used(stored.id, signCount: count, backedUp: data.has(WebAuthn.AuthenticatorData.backedUp))
            guard let user = try await Users(connection).user(stored.user) else { return .unknownCredential }
            var device = device
            // RFC 8176: a key synced between devices is software-held (`swk`), else hardware (`hwk`);
            // the user verified by the authenticator (biometrics, PIN) makes it two factors.
            device.amr = [data.has(WebAuthn.AuthenticatorData.backupEligible) ? "swk" : "hwk"]
            if data.has(WebAuthn.AuthenticatorData.userVerified) { device.amr += ["mfa"] }
            let opening = try await signIns.open(for: user, refreshToken: refreshToken, device: device, on: connection)
            return .opening(user, opening, device: device)
        }
    }

    func list(of user: UUID) async throws -> [Passkey] { try await PasskeyCredentials(database).list(of: user) }

    func rename(_ id: UUID, of user: UUID, to name: String) async throws -> Passkey? {
        try await PasskeyCredentials(database).rename(id, of: user, to: name)
    }

    /// Removes one of the account's passkeys and mails its owner.
    func remove(_ id: UUID, of user: User) async throws -> Bool {
        try await database.withTransaction { connection in
            let credentials = PasskeyCredentials(connection)
            guard let passkey = try await credentials.list(of: user.id).first(where: { $0.id == id }),
                try await credentials.delete(id, of: user.id)
            else { return false }
            try await Outbox(connection).enqueue(
                mails.passkeyRemoved(to: user.email, name: passkey.name), kind: "passkey-removed")
            return true
        }
    }
}

extension UUID {
    /// The 16 bytes, as a WebAuthn user handle.
    var bytes: [UInt8] { withUnsafeBytes(of: uuid) { Array($0) } }
}
