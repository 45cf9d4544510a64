import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension SignIns {
    /// What a sign-in with an address and a password comes to.
    enum PasswordOutcome: Sendable {
        /// A session, and whether a notice of it was mailed.
        case signedIn(User, session: UUID, noticed: Bool)
        /// The password was right; the account has a second factor, which the sign-in waits for.
        case needsSecondFactor(User, SecondFactorChallenge)
        /// No account has this address and password (the same answer, in the same time, for
        /// an unknown address).
        case wrongPassword
        /// The account or the address backs off after failures: nothing was checked.
        case wait(seconds: Int)
        /// The password was right, and the server requires a verified address first.
        case emailUnverified
    }

    /// A sign-in with the address of `emailKey` (``EmailAddress/key(_:)``) and `password`, every rule in order: the client's share of the
    /// hashing threads, the failed-attempt guards (against `deviceKey`, the throttle key of a
    /// device that signed in to this account before, else against the account), the password,
    /// the verified-address rule, a new hash when the hashing parameters moved, then the
    /// session (or the second factor it waits for) opened with `refreshToken`.
    func withPassword(
        emailKey: String, password: String, client: String, deviceKey: String?, device: Sessions.Device,
        refreshToken: String, checks: PasswordChecks, requireVerifiedEmail: Bool
    ) async throws -> PasswordOutcome {
        try await checks.hashing(client) { () async throws -> PasswordOutcome in
            switch try await checks.check(password, field: "password", emailKey: emailKey, device: deviceKey) {
            case .wait(let seconds):
                return .wait(seconds: seconds)
            case .wrong:
                return .wrongPassword
            case .right(let user, let hash):
                if requireVerifiedEmail && !user.emailVerified { return .emailUnverified }
                if checks.hasher.needsRehash(hash) {
                    try await Users(database).setPasswordHash(try await checks.hasher.hash(password), of: user.id)
                }
                switch try await open(for: user, refreshToken: refreshToken, device: device) {
                case .opened(let session, let noticed): return .signedIn(user, session: session, noticed: noticed)
                case .challenged(let challenge): return .needsSecondFactor(user, challenge)
                }
            }
        }
    }
}
