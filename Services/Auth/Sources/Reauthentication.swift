import PierHTTP
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The check before a sensitive action (deleting the account, changing the address): the
/// current password now, or a sign-in within the last 5 minutes (the token's `auth_time`).
/// Otherwise 401 `reauthentication_required`, with the step-up challenge of RFC 9470.
struct Reauthentication: Sendable {
    let useCases: AuthUseCases
    let passwords: PasswordChecks

    func require(_ principal: Principal, password: String?, request: Request) async throws {
        if let password {
            guard let emailKey = try await useCases.users.emailKey(of: principal.userID) else {
                throw HTTPError.unauthorized("The account no longer exists.", code: .accountDeleted)
            }
            // The same guards as login: a stolen access token is no way to guess passwords faster.
            let outcome = try await passwords.hashing(request.clientKey) {
                try await passwords.check(password, field: "password", emailKey: emailKey, client: request.clientKey)
            }
            switch outcome {
            case .wait(let seconds):
                throw HTTPError.tooManyRequests(retryAfter: seconds, "Too many failed attempts; try again in \(seconds) s.")
            case .wrong:
                throw Self.refusal("The password is not correct.")
            case .right:
                if let session = principal.sessionID { try await useCases.sessions.reauthenticated(session) }
                return
            }
        }
        try principal.requireRecentSignIn()
    }

    static func refusal(_ detail: String) -> HTTPError { .reauthenticationRequired(detail) }
}
