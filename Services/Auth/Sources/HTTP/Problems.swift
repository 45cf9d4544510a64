import PierHTTP
import PierModels

/// The answers of the auth service's outcomes that every controller shares, mapped to HTTP
/// once, here.
extension HTTPError {
    /// 401 `mfa_required`: the first factor was right; the problem's `mfaToken` and a code (or a
    /// passkey, when `factors` names it) complete the sign-in (`POST /auth/mfa/verify`).
    static func mfaRequired(_ challenge: SignIns.SecondFactorChallenge) -> HTTPError {
        let detail =
            challenge.factors.contains("passkey")
            ? "Use your passkey, a code from your authenticator app or a recovery code to finish signing in."
            : "Enter a code from your authenticator app, or a recovery code, to finish signing in."
        var error = HTTPError(
            401, code: .mfaRequired, detail: detail,
            headers: ["WWW-Authenticate": "Bearer error=\"insufficient_user_authentication\", error_description=\"\(detail)\""])
        error.problem.mfaToken = challenge.mfaToken
        error.problem.factors = challenge.factors
        return error
    }
}

/// A disabled account's sign-in or refresh, wherever a use case refuses it: 403 `account_disabled`.
extension AccountDisabled: HTTPResponseError {
    var status: Int { 403 }
    var problem: Problem {
        HTTPError(403, code: .accountDisabled, detail: "This account is disabled; contact the app's support.").problem
    }
    var headers: HTTPHeaders { [:] }
}
