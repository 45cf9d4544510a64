import PierHTTP
import PierIdentity
import PierModels
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The check before a sensitive action (deleting the account, changing the address, second
/// factors): the current password now, a passkey of the account now (an assertion over the
/// challenge of `POST /auth/reauthenticate/passkey-options`), or a sign-in within the last 5
/// minutes (the token's `auth_time`). An account with a second factor needs it instead: a code
/// or a passkey now, or a recent sign-in that used one (`mfa` in the token's `amr`); its password
/// alone is not enough. Otherwise 401 `reauthentication_required`, with the step-up challenge of
/// RFC 9470 (a passkey refused: 401 `invalid_passkey`, naming the member).
struct Reauthentication: Sendable {
    let useCases: AuthUseCases
    let passwords: PasswordChecks

    /// What the session's `auth_time` and `amr` are after a password or code was given.
    typealias Proven = Sessions.Reauthenticated

    /// Checks the caller; returns the session's new `auth_time` and `amr` when a password, code or
    /// passkey proved it now (nil when a recent sign-in did).
    @discardableResult
    func require(_ principal: Principal, _ body: ReauthenticationRequest?, request: Request) async throws -> Proven? {
        // An anonymous account has nothing to give again: its session is all that proves it.
        if principal.isAnonymous, try await useCases.users.isAnonymous(principal.userID) { return nil }
        let (password, code) = (body?.password, body?.code)
        if let passkey = body?.passkey {
            let proof = try PasskeyController.proof(passkey, rp: useCases.passkeys.rp, prefix: "passkey.")
            switch try await useCases.passkeys.reauthenticate(principal.userID, session: principal.sessionID, proof: proof) {
            case .proven(let proven): return proven
            case .failed(let failure): throw PasskeyController.refusal(failure, prefix: "passkey.")
            }
        }
        if try await SecondFactors(useCases.database).isEnrolled(principal.userID) {
            if let code {
                guard let user = try await useCases.users.user(principal.userID) else { throw Self.deleted }
                switch try await useCases.secondFactors.reauthenticate(user, session: principal.sessionID, code: code) {
                case .wait(let seconds):
                    throw HTTPError.tooManyRequests(retryAfter: seconds, "Too many wrong codes; try again in \(seconds) s.")
                case .wrong: throw Self.refusal("The code is not correct, or was used already.")
                case .right(let proven): return proven
                }
            }
            guard principal.usedSecondFactor else {
                throw Self.refusal("Confirm with a passkey, a code from your authenticator app or a recovery code.")
            }
            try principal.requireRecentSignIn("Confirm with a passkey, a code from your authenticator app or a recovery code.")
            return nil
        }
        if let password {
            guard let emailKey = try await useCases.users.emailKey(of: principal.userID) else { throw Self.deleted }
            // The same guards as login: a stolen access token is no way to guess passwords faster.
            let outcome = try await passwords.hashing(request.clientKey) {
                try await passwords.check(password, field: "password", emailKey: emailKey)
            }
            switch outcome {
            case .wait(let seconds):
                throw HTTPError.tooManyRequests(retryAfter: seconds, "Too many failed attempts; try again in \(seconds) s.")
            case .wrong:
                throw Self.refusal("The password is not correct.")
            case .right:
                guard let session = principal.sessionID else { return nil }
                return try await useCases.sessions.reauthenticated(session)
            }
        }
        try principal.requireRecentSignIn()
        return nil
    }

    static let deleted = HTTPError.unauthorized("The account no longer exists.", code: .accountDeleted)

    static func refusal(_ detail: String) -> HTTPError { .reauthenticationRequired(detail) }
}
