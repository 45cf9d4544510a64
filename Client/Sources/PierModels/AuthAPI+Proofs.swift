#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The auth service's endpoints of what proves who one is: the mailed links and their pages,
/// second factors, passkeys.
extension AuthAPI {
    // MARK: - Mailed links: a page for browsers (GET), the token spent by POST (JSON or the page's form)

    public static let verifyEmailPage = Endpoint<TokenQuery, NoBody, HTMLPage>(
        "GET", "/auth/email/verify", access: .public, operation: "verifyEmailPage",
        summary: "The page behind the mailed verification link (a form that posts the token)",
        answers: "A page with a form that confirms the address")

    /// A form post answers a page instead of the user.
    public static let verifyEmail = Endpoint<NoParameters, EmailTokenRequest, User>(
        "POST", "/auth/email/verify", access: .public, operation: "verifyEmail",
        summary: "Mark the address verified with the mailed token",
        description:
            "JSON from an app (which opens the mailed link as a universal link) answers the user; the form of the link's page answers a page.",
        answers: "The user, now verified (a page for a form)", problems: [.validationFailed, .invalidEmailToken],
        retryable: true)

    /// Signed in, the body is not needed; else it names the address.
    public static let resendVerification = Endpoint<NoParameters, EmailRequest?, NoContent>(
        "POST", "/auth/email/verify/resend", access: .anyone, operation: "resendVerification",
        summary: "Mail the verification link again",
        description:
            "For the signed-in caller, or for `{email}` without a token. 202 whether or not such an account exists or is already verified; at most three mails per 10 minutes (a signed-in caller beyond that gets 429).",
        status: 202, problems: [.validationFailed, .rateLimited],
        retryable: true)

    public static let forgotPassword = Endpoint<NoParameters, EmailRequest, NoContent>(
        "POST", "/auth/password/forgot", access: .public, operation: "forgotPassword",
        summary: "Mail a password-reset link",
        description:
            "Always 202, after one transaction whether or not an account has the address (the mail is sent later); throttled per client address (429) and per account (three mails an hour, silently).",
        status: 202, problems: [.validationFailed, .rateLimited], retryable: true)

    public static let resetPasswordPage = Endpoint<TokenQuery, NoBody, HTMLPage>(
        "GET", "/auth/password/reset", access: .public, operation: "resetPasswordPage",
        summary: "The page behind the mailed reset link (a form for the new password)", answers: "A page with a new-password form"
    )

    /// A form post answers a page (200) instead of 204.
    public static let resetPassword = Endpoint<NoParameters, ResetPasswordRequest, NoContent>(
        "POST", "/auth/password/reset", access: .public, operation: "resetPassword",
        summary: "Set a new password with the mailed token",
        description:
            "Applies the password rules; ends every session (their access tokens refused within a second); marks the address verified; mails a notice.",
        status: 204,
        answers: "Password changed", problems: [.validationFailed, .weakPassword, .invalidEmailToken, .rateLimited])

    public static let confirmEmailChangePage = Endpoint<TokenQuery, NoBody, HTMLPage>(
        "GET", "/auth/email/change/confirm", access: .public, operation: "confirmEmailChangePage",
        summary: "The page behind the mailed address-change link (a form that posts the token)",
        answers: "A page with a form that confirms the address")

    /// A form post answers a page instead of the user.
    public static let confirmEmailChange = Endpoint<NoParameters, EmailTokenRequest, User>(
        "POST", "/auth/email/change/confirm", access: .public, operation: "confirmEmailChange",
        summary: "Confirm a change of address with the token mailed to the new address",
        description:
            "JSON answers the user (its new address, verified); the link page's form answers a page. The old address gets a notice.",
        answers: "The user with the new address (a page for a form)",
        problems: [.validationFailed, .invalidEmailToken, .emailTaken], retryable: true)

    public static let cancelEmailChangePage = Endpoint<TokenQuery, NoBody, HTMLPage>(
        "GET", "/auth/email/change/cancel", access: .public, operation: "cancelEmailChangePage",
        summary: "The page behind the cancel link mailed to the old address (a form that posts the token)",
        answers: "A page with a form that cancels the change")

    /// A form post answers a page instead of the user.
    public static let cancelEmailChange = Endpoint<NoParameters, EmailTokenRequest, User>(
        "POST", "/auth/email/change/cancel", access: .public, operation: "cancelEmailChange",
        summary: "Cancel a change of address with the token mailed to the old address",
        description:
            "The pending change is void and the session that asked for it ends. JSON answers the user (the address unchanged); the link page's form answers a page.",
        answers: "The user, its address unchanged (a page for a form)", problems: [.validationFailed, .invalidEmailToken],
        retryable: true)

    // MARK: - Second factors

    public static let verifySecondFactor = Endpoint<NoParameters, MFAVerifyRequest, AuthSession>(
        "POST", "/auth/mfa/verify", access: .public, operation: "verifySecondFactor",
        summary: "Finish a sign-in that answered `mfa_required`, with a code or a passkey",
        description:
            "Password and identity sign-ins (`/auth/login`, `/auth/apple`, `/auth/oidc/{provider}`) of an account with a second factor answer 401 `mfa_required` with an `mfaToken`: send it here with a code from the authenticator app or a recovery code. Wrong codes back off per account like passwords; five end the token. Using a recovery code mails the owner. When the problem's `factors` names `passkey`, an assertion by one of the account's passkeys (over the options of `POST /auth/mfa/passkey-options`) finishes it instead; five refused passkeys end the token too.",
        answers: "Signed in: the session, whose access token carries `amr` (`pwd`, `otp`, `mfa`) and `acr` `aal2`",
        problems: [
            .validationFailed, .invalidMFAToken, .invalidCode, .invalidPasskey, .conflict, .accountDisabled, .rateLimited,
        ])

    public static let secondFactorPasskeyOptions = Endpoint<NoParameters, MFATokenRequest, PasskeyRequestOptions>(
        "POST", "/auth/mfa/passkey-options", access: .public, operation: "secondFactorPasskeyOptions",
        summary: "Options for a passkey to finish a sign-in that answered `mfa_required`",
        description:
            "A challenge (5 minutes, single use) bound to the account whose sign-in waits under the MFA token, and that account's passkeys. Counted against the client's login rate.",
        answers:
            "The request options for the authenticator (`navigator.credentials.get`, `ASAuthorizationPlatformPublicKeyCredentialProvider`)",
        problems: [.invalidMFAToken, .conflict, .rateLimited])

    public static let secondFactorStatus = Endpoint<NoParameters, NoBody, MFAStatus>(
        "GET", "/auth/mfa", access: .signedIn, operation: "getSecondFactors", summary: "The caller's second factors",
        answers: "The caller's second factors")

    public static let setUpAuthenticatorApp = Endpoint<NoParameters, ReauthenticationRequest?, TOTPEnrolment>(
        "POST", "/auth/mfa/totp", access: .signedIn, operation: "setUpAuthenticatorApp",
        summary: "Set up an authenticator app (TOTP, RFC 6238)",
        description:
            "A sensitive action: the password (or a code, when a factor exists), or a sign-in within 5 minutes. The secret is sealed at rest with PIER_AUTH_MFA_KEY_FILE's key.",
        status: 201,
        answers:
            "A new secret to confirm with `POST /auth/mfa/totp/confirm` (`Cache-Control: no-store`); until then sign-ins ask nothing more",
        problems: [.validationFailed, .emailUnverified, .enrolmentApprovalRequired, .conflict, .accountDeleted]
            + confirmation)

    public static let confirmAuthenticatorApp = Endpoint<NoParameters, MFACodeRequest, RecoveryCodes>(
        "POST", "/auth/mfa/totp/confirm", access: .signedIn, operation: "confirmAuthenticatorApp",
        summary: "Confirm the authenticator app with its first code",
        answers:
            "Two-step sign-in is on: the ten recovery codes, shown this once (`Cache-Control: no-store`). Every other session was ended; refresh for a token whose `amr` carries the code",
        problems: [.validationFailed, .invalidCode, .enrolmentApprovalRequired, .conflict, .accountDeleted, .rateLimited])

    public static let removeAuthenticatorApp = Endpoint<NoParameters, ReauthenticationRequest?, NoContent>(
        "DELETE", "/auth/mfa/totp", access: .signedIn, operation: "turnOffSecondFactor",
        summary: "Turn two-step sign-in off",
        description:
            "A sensitive action: a code now, or a sign-in with a code within 5 minutes (the password alone is not accepted).",
        status: 204,
        answers:
            "Two-step sign-in is off: the app and the recovery codes are removed, sign-ins waiting for a code ended, and the owner mailed",
        problems: [.validationFailed, .notFound, .accountDeleted] + confirmation, retryable: false)

    public static let replaceRecoveryCodes = Endpoint<NoParameters, ReauthenticationRequest?, RecoveryCodes>(
        "POST", "/auth/mfa/recovery-codes", access: .signedIn, operation: "replaceRecoveryCodes",
        summary: "New recovery codes", description: "A sensitive action: a code now, or a sign-in with a code within 5 minutes.",
        answers: "Ten new recovery codes; the old ones no longer work (`Cache-Control: no-store`)",
        problems: [.validationFailed, .notFound, .accountDeleted] + confirmation)

    public static let approvalPage = Endpoint<TokenQuery, NoBody, HTMLPage>(
        "GET", "/auth/mfa/approve", access: .public, operation: "approveEnrolmentPage",
        summary: "The page behind the approval link mailed to a team member (a form that posts the token)",
        answers: "A page with a form that approves the set-up")

    /// A form post answers a page (200) instead of 204.
    public static let approveEnrolment = Endpoint<NoParameters, EmailTokenRequest, NoContent>(
        "POST", "/auth/mfa/approve", access: .public, operation: "approveEnrolment",
        summary: "Approve a team member's first second factor with the mailed token",
        description:
            "A team account's first authenticator app or passkey waits for this (403 `enrolment_approval_required`): the session that asked may set one up in the next 30 minutes. The link works while that session lives and the account keeps the address it was mailed to. JSON answers 204; the link page's form answers a page.",
        status: 204,
        answers: "Approved (JSON)", problems: [.validationFailed, .invalidEmailToken])

    // MARK: - Passkeys

    public static let passkeyRegistrationOptions = Endpoint<NoParameters, ReauthenticationRequest?, PasskeyCreationOptions>(
        "POST", "/auth/passkeys/register/options", access: .signedIn, operation: "passkeyRegistrationOptions",
        summary: "Options to create a passkey",
        description:
            "A sensitive action (the password, or a code with two-step sign-in, or a sign-in within 5 minutes). The challenge is single use and lives 5 minutes.",
        answers:
            "The options for navigator.credentials.create / ASAuthorizationPlatformPublicKeyCredentialProvider (`Cache-Control: no-store`)",
        problems: [.validationFailed, .emailUnverified, .enrolmentApprovalRequired, .accountDeleted] + confirmation)

    public static let registerPasskey = Endpoint<NoParameters, PasskeyRegistration, Passkey>(
        "POST", "/auth/passkeys/register", access: .signedIn, operation: "registerPasskey", summary: "Register a passkey",
        status: 201, answers: "Added; the owner is mailed",
        problems: [.validationFailed, .invalidPasskey, .emailUnverified, .conflict, .accountDeleted])

    /// Without a body: a usernameless sign-in (any passkey of the site).
    public static let passkeyLoginOptions = Endpoint<NoParameters, PasskeyOptionsRequest?, PasskeyRequestOptions>(
        "POST", "/auth/passkeys/login/options", access: .public, operation: "passkeyLoginOptions",
        summary: "Options to sign in with a passkey (usernameless without a body)",
        answers:
            "A challenge; with an email, that account's passkeys (an unknown address gets one that matches nothing, the same each time)",
        problems: [.validationFailed, .rateLimited], retryable: true)

    public static let passkeyLogin = Endpoint<NoParameters, PasskeyAssertion, AuthSession>(
        "POST", "/auth/passkeys/login", access: .public, operation: "signInWithPasskey", summary: "Sign in with a passkey",
        answers: "Signed in: the session, as login (amr `swk` or `hwk`, with `mfa` when the authenticator verified the user)",
        problems: [.validationFailed, .invalidPasskey, .mfaRequired, .accountDisabled, .rateLimited])

    public static let passkeyList = Endpoint<NoParameters, NoBody, ItemList<Passkey>>(
        "GET", "/auth/passkeys", access: .signedIn, operation: "listPasskeys", summary: "The caller's passkeys",
        answers: "The caller's passkeys")

    /// Safe to send again: the same name twice leaves the same passkey.
    public static let renamePasskey = Endpoint<PathID, PasskeyRename, Passkey>(
        "PATCH", "/auth/passkeys/{id}", access: .signedIn, operation: "renamePasskey", summary: "Rename a passkey",
        answers: "Renamed", problems: [.validationFailed, .notFound], retryable: true)

    public static let removePasskey = Endpoint<PathID, ReauthenticationRequest?, NoContent>(
        "DELETE", "/auth/passkeys/{id}", access: .signedIn, operation: "removePasskey",
        summary: "Remove a passkey (a sensitive action)", status: 204,
        answers: "Removed; the owner is mailed", problems: [.validationFailed, .notFound, .accountDeleted] + confirmation,
        retryable: false)
}
