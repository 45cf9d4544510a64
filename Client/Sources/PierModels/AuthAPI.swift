import Foundation

/// The auth service's endpoints: accounts, sign-ins (password, second factor, passkeys,
/// Apple and OpenID Connect), sessions, the mailed links and their pages, the key set, and
/// the team's (finding and helping an account, roles, webhooks).
///
/// An endpoint whose body may be left out (`ReauthenticationRequest?`) confirms a sensitive
/// action: a sign-in within the last 5 minutes stands in for it.
public enum AuthAPI {
    /// Every one, as the API document lists them.
    public static let all: [EndpointDefinition] =
        signIn + account + mailedLinks + secondFactors + passkeys + team + webhooks

    static let signIn: [EndpointDefinition] = [
        register.definition, login.definition, refresh.definition, logout.definition, logoutAll.definition,
        apple.definition, oidc.definition, appleNotifications.definition, keys.definition,
    ]
    static let account: [EndpointDefinition] = [
        me.definition, events.definition, updateProfile.definition, deleteAccount.definition, changePassword.definition,
        reauthenticate.definition, reauthenticationPasskeyOptions.definition, changeEmail.definition,
        identities.definition, unlinkIdentity.definition, export.definition, sessions.definition, endSession.definition,
    ]
    static let mailedLinks: [EndpointDefinition] = [
        verifyEmailPage.definition, verifyEmail.definition, resendVerification.definition, forgotPassword.definition,
        resetPasswordPage.definition, resetPassword.definition, confirmEmailChangePage.definition,
        confirmEmailChange.definition, cancelEmailChangePage.definition, cancelEmailChange.definition,
    ]
    static let secondFactors: [EndpointDefinition] = [
        verifySecondFactor.definition, secondFactorPasskeyOptions.definition, secondFactorStatus.definition,
        setUpAuthenticatorApp.definition, confirmAuthenticatorApp.definition, removeAuthenticatorApp.definition,
        replaceRecoveryCodes.definition, approvalPage.definition, approveEnrolment.definition,
    ]
    static let passkeys: [EndpointDefinition] = [
        passkeyRegistrationOptions.definition, registerPasskey.definition, passkeyLoginOptions.definition,
        passkeyLogin.definition, passkeyList.definition, renamePasskey.definition, removePasskey.definition,
    ]
    static let team: [EndpointDefinition] = [
        users.definition, signUps.definition, user.definition, userSessions.definition, endUserSessions.definition,
        endUserSession.definition, userIdentities.definition, mailUser.definition, userSecondFactor.definition,
        userPasskeys.definition, removeUserSecondFactor.definition, approveUserEnrolment.definition,
        disableUser.definition, enableUser.definition, exportUser.definition, setRole.definition, deleteUser.definition,
    ]
    static let webhooks: [EndpointDefinition] = [
        webhookEndpoints.definition, webhookDeliveries.definition, webhookDelivery.definition, replayWebhook.definition,
    ]

    /// What a confirmation of a sensitive action can be refused with.
    static let confirmation: [ProblemCode] = [.reauthenticationRequired, .invalidCode, .invalidPasskey, .rateLimited]

    // MARK: - Signing in

    public static let register = Endpoint<NoParameters, RegisterRequest, AuthSession>(
        "POST", "/auth/register", access: .public, operation: "register", summary: "Create an account", status: 201,
        answers: "Registered", problems: [.validationFailed, .weakPassword, .emailTaken, .rateLimited])

    public static let login = Endpoint<NoParameters, LoginRequest, AuthSession>(
        "POST", "/auth/login", access: .public, operation: "login", summary: "Log in",
        answers: "Logged in",
        problems: [
            .validationFailed, .invalidCredentials, .mfaRequired, .emailUnverified, .accountDisabled, .rateLimited,
        ])

    /// Safe to send again: the same refresh token resent within the grace window (an app killed
    /// mid-refresh) answers the same successor.
    public static let refresh = Endpoint<NoParameters, RefreshRequest, AuthSession>(
        "POST", "/auth/refresh", access: .public, operation: "refresh", summary: "Rotate the refresh token",
        answers: "New pair", problems: [.invalidRefreshToken, .accountDisabled], retryable: true)

    /// Safe to send again: a refresh token ended already answers 204 too.
    public static let logout = Endpoint<NoParameters, RefreshRequest, NoContent>(
        "POST", "/auth/logout", access: .anyone, operation: "logout",
        summary: "End the session of a refresh token (the access token is optional)", status: 204, answers: "Logged out",
        retryable: true)

    public static let logoutAll = Endpoint<NoParameters, NoBody, NoContent>(
        "POST", "/auth/logout/all", access: .signedIn, operation: "logoutEverywhere",
        summary: "End every session of the caller, this one included", status: 204, answers: "Signed out everywhere",
        retryable: true)

    /// 201 when the account was created by this sign-in, 200 otherwise.
    public static let apple = Endpoint<NoParameters, IdentitySignInRequest, AuthSession>(
        "POST", "/auth/apple", access: .public, operation: "signInWithApple", summary: "Sign in with Apple",
        description:
            "Verifies the identity token as Apple documents it (RS256/ES256 against Apple's JWKS, `iss` https://appleid.apple.com, `aud` one of PIER_AUTH_APPLE_AUDIENCES, `exp`, `nonce` = SHA-256 of the raw nonce). Signs in the linked account; else links the account of the address when Apple verified it (private-relay addresses too); else creates an account without a password.",
        answers: "Signed in (201: an account was created for the identity)", also: [201],
        problems: [
            .validationFailed, .invalidIdentityToken, .mfaRequired, .emailUnverified, .accountDisabled, .notFound,
        ])

    /// 201 when the account was created by this sign-in, 200 otherwise.
    public static let oidc = Endpoint<ProviderName, IdentitySignInRequest, AuthSession>(
        "POST", "/auth/oidc/{provider}", access: .public, operation: "signInWithProvider",
        summary: "Sign in with an OpenID Connect provider",
        description:
            "The same verification for a provider of PIER_AUTH_OIDC_PROVIDERS, by name (its nonce plain or hashed as configured).",
        answers: "Signed in (201: an account was created for the identity)", also: [201],
        problems: [
            .validationFailed, .invalidIdentityToken, .mfaRequired, .emailUnverified, .accountDisabled, .notFound,
        ])

    /// Apple's server calls it: the signed payload is the credential.
    public static let appleNotifications = Endpoint<NoParameters, AppleNotificationRequest, NoContent>(
        "POST", "/auth/apple/notifications", access: .public, operation: "receiveAppleAccountNotification",
        summary: "Apple's server-to-server notifications for Sign in with Apple",
        description:
            "`email-disabled`/`email-enabled` are recorded; `consent-revoked` and `account-delete` unlink the Apple identity and end every session (an account left with no password and no identity is deleted, publishing `account.deleted`). 200 also when no account is linked to the subject.",
        answers: "Applied", problems: [.validationFailed, .invalidIdentityToken, .notFound], retryable: true)

    public static let keys = Endpoint<NoParameters, NoBody, JWKSetAnswer>(
        "GET", "/auth/.well-known/jwks.json", access: .public, operation: "getAuthKeys", summary: "Public keys",
        answers: "JWK set")

    // MARK: - The account

    public static let me = Endpoint<NoParameters, NoBody, User>(
        "GET", "/auth/me", access: .signedIn, operation: "getMe", summary: "The signed-in user",
        answers: "The user", problems: [.accountDeleted])

    public static let events = Endpoint<EventStreamRequest, NoBody, EventStreamAnswer>(
        "GET", "/auth/me/events", access: .signedIn, operation: "streamMe",
        summary: "The caller's account, live (server-sent events)",
        description:
            "`event: user` with the account as `GET /auth/me` gives it, then again whenever it changes (name, address, verification, role, language, disabled), within about a second, whoever changed it; `: heartbeat` every `PIER_LIVE_HEARTBEAT_S`; `Last-Event-ID` resumes (the account is sent again only if it changed). The stream ends when its access token expires, its session ends (sign-out, password change elsewhere, disabled) or the account is deleted.",
        answers: "The stream of account messages", headers: ["Cache-Control"], problems: [.tooManyStreams])

    /// Safe to send again: the same change twice leaves the same profile.
    public static let updateProfile = Endpoint<NoParameters, ProfileChange, User>(
        "PATCH", "/auth/me", access: .signedIn, operation: "updateMe", summary: "Change the display name or locale",
        answers: "The user", problems: [.validationFailed, .accountDeleted], retryable: true)

    public static let deleteAccount = Endpoint<NoParameters, ReauthenticationRequest?, NoContent>(
        "DELETE", "/auth/me", access: .signedIn, operation: "deleteMe", summary: "Delete the account",
        description:
            "Needs the current password in the optional body, unless the user signed in within the last 5 minutes. Records `account.deleted` for the other services and mails a notice.",
        status: 204,
        problems: [.validationFailed, .accountDeleted] + confirmation, retryable: false)

    public static let changePassword = Endpoint<NoParameters, PasswordChangeRequest, NoContent>(
        "POST", "/auth/password", access: .signedIn, operation: "changePassword",
        summary: "Change the password; other sessions end", status: 204,
        answers: "Changed", problems: [.validationFailed, .weakPassword, .accountDeleted, .rateLimited])

    public static let reauthenticate = Endpoint<NoParameters, ReauthenticationRequest, StepUpToken>(
        "POST", "/auth/reauthenticate", access: .signedIn, operation: "reauthenticate",
        summary:
            "Give the password, a code or a passkey again: a fresh access token of the same session whose auth_time is now (step-up)",
        description:
            "For the actions that ask for a recent sign-in (401 reauthentication_required): changing a role, deleting an account, repricing a plan. The login's guards (rate limits, lockout) apply.",
        answers: "The new access token", problems: [.validationFailed, .sessionRevoked, .accountDeleted] + confirmation)

    public static let reauthenticationPasskeyOptions = Endpoint<NoParameters, NoBody, PasskeyRequestOptions>(
        "POST", "/auth/reauthenticate/passkey-options", access: .signedIn, operation: "reauthenticationPasskeyOptions",
        summary: "Options to confirm a sensitive action with one of the caller's passkeys",
        description:
            "A challenge (5 minutes, single use) bound to the caller's account, and its passkeys. The assertion goes in the `passkey` member of `POST /auth/reauthenticate` or of the sensitive action's own body.",
        answers: "The request options for the authenticator", problems: [.conflict, .accountDeleted])

    public static let changeEmail = Endpoint<NoParameters, EmailChangeRequest, NoContent>(
        "POST", "/auth/email/change", access: .signedIn, operation: "changeEmail", summary: "Ask to use another address",
        description:
            "Mails a confirmation link (24 h) to the new address and a notice to the current one; the address changes only when the link is followed (`POST /auth/email/change/confirm`).",
        status: 202,
        answers: "Confirmation mailed",
        problems: [.validationFailed, .emailTaken, .mfaEnrolmentRequired, .accountDeleted] + confirmation)

    public static let identities = Endpoint<NoParameters, NoBody, ItemList<LinkedIdentity>>(
        "GET", "/auth/identities", access: .signedIn, operation: "listIdentities",
        summary: "The identity providers the caller signs in with", answers: "The caller's linked identities")

    public static let unlinkIdentity = Endpoint<PathID, ReauthenticationRequest?, NoContent>(
        "DELETE", "/auth/identities/{id}", access: .signedIn, operation: "unlinkIdentity",
        summary: "Unlink one of the caller's identities",
        description:
            "Needs the password (body {password}) or a sign-in within 5 minutes (401 reauthentication_required otherwise); never the account's last way to sign in (409 last_sign_in_method).",
        status: 204,
        answers: "Unlinked", problems: [.validationFailed, .notFound, .lastSignInMethod] + confirmation, retryable: false)

    public static let export = Endpoint<NoParameters, NoBody, DataExport>(
        "GET", "/auth/me/export", access: .signedIn, operation: "exportMe",
        summary: "Download my data: everything every service holds about the caller",
        description:
            "One JSON document; each service answers for its own part (in-process in the gateway, else over HTTP at PIER_AUTH_EXPORT_URLS with the caller's token). A part that cannot be had makes it a 503: never a partial export.",
        answers: "The export (Content-Disposition: attachment)", problems: [.accountDeleted, .unavailable])

    public static let sessions = Endpoint<NoParameters, NoBody, ItemList<SessionInfo>>(
        "GET", "/auth/sessions", access: .signedIn, operation: "listSessions",
        summary: "The caller's live sessions, most recently used first", answers: "Sessions")

    public static let endSession = Endpoint<PathID, NoBody, NoContent>(
        "DELETE", "/auth/sessions/{id}", access: .signedIn, operation: "endSession",
        summary: "End one of the caller's sessions at once, everywhere", status: 204, answers: "Ended", problems: [.notFound])

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

    // MARK: - The team's: finding and helping an account

    public static let users = Endpoint<UserSearch, NoBody, UserList>(
        "GET", "/auth/users", access: .staff, operation: "searchUsers",
        summary:
            "Accounts found by an address or its start, a display name's start (case aside), or an id (staff)",
        description:
            "What was typed is matched as text (`%` and `_` are not wildcards). By address, `limit` at most; `more` says a longer query would narrow them down.",
        answers: "The accounts found", problems: [.validationFailed])

    public static let signUps = Endpoint<DaysQuery, NoBody, SignUpStats>(
        "GET", "/auth/users/stats", access: .staff, operation: "getSignUps", summary: "Sign-ups per day (staff)",
        description: "Accounts created each UTC day of the last `days` (today included), and the number of accounts.",
        answers: "The days, oldest first", problems: [.validationFailed])

    public static let user = Endpoint<PathID, NoBody, User>(
        "GET", "/auth/users/{id}", access: .staff, operation: "getUser",
        summary: "One account, with its role and whether it is disabled (staff)", answers: "The account",
        problems: [.validationFailed, .notFound])

    public static let userSessions = Endpoint<PathID, NoBody, ItemList<SessionInfo>>(
        "GET", "/auth/users/{id}/sessions", access: .staff, operation: "listUserSessions",
        summary: "The account's live sessions (support or admin)", answers: "Its sessions, the most recently used first",
        problems: [.notFound])

    /// Its pending resets and changes of address end too.
    public static let endUserSessions = Endpoint<PathID, NoBody, SessionsEnded>(
        "DELETE", "/auth/users/{id}/sessions", access: .staff, operation: "endUserSessions",
        summary: "End every session of the account (support or admin)",
        description:
            "Its pending resets and changes of address are void too; its access tokens are refused everywhere within seconds.",
        answers: "How many were live", problems: [.notFound, .forbidden])

    public static let endUserSession = Endpoint<UserSessionID, NoBody, SessionsEnded>(
        "DELETE", "/auth/users/{id}/sessions/{session}", access: .staff, operation: "endUserSession",
        summary: "End one session of the account (support or admin)", answers: "Ended", problems: [.notFound, .forbidden])

    public static let userIdentities = Endpoint<PathID, NoBody, ItemList<LinkedIdentity>>(
        "GET", "/auth/users/{id}/identities", access: .staff, operation: "listUserIdentities",
        summary: "The providers the account signs in with (support or admin)", answers: "Its identities", problems: [.notFound])

    public static let mailUser = Endpoint<PathID, StaffMailRequest, NoContent>(
        "POST", "/auth/users/{id}/mail", access: .staff, operation: "mailUser",
        summary: "Mail the account a password-reset or verification link (support or admin)", status: 202,
        answers: "Queued", problems: [.validationFailed, .notFound, .conflict, .forbidden, .rateLimited])

    public static let userSecondFactor = Endpoint<PathID, NoBody, MFAStatus>(
        "GET", "/auth/users/{id}/mfa", access: .staff, operation: "getUserSecondFactor",
        summary: "Whether the account has two-step sign-in, and its recovery codes left (support or admin)",
        answers: "Its second factor (never the secret or the codes)", problems: [.notFound])

    public static let userPasskeys = Endpoint<PathID, NoBody, ItemList<Passkey>>(
        "GET", "/auth/users/{id}/passkeys", access: .staff, operation: "listUserPasskeys",
        summary: "The account's passkeys: names, when used, synced, suspended (support or admin)", answers: "Its passkeys",
        problems: [.notFound])

    public static let removeUserSecondFactor = Endpoint<PathID, ReauthenticationRequest?, NoContent>(
        "DELETE", "/auth/users/{id}/mfa", access: .staff, operation: "removeUserSecondFactor",
        summary: "Remove an account's lost second factor (staff)",
        description:
            "For a user who lost their authenticator app and recovery codes. A sensitive action for the staff member (their password, or a code with two-step sign-in, or a recent sign-in).",
        status: 204,
        answers: "Removed: the password signs in alone again; audited (`user.second_factor_removed`); the owner is mailed",
        problems: [.validationFailed, .notFound, .forbidden] + confirmation, retryable: false)

    public static let approveUserEnrolment = Endpoint<PathID, EnrolmentApproval, NoContent>(
        "POST", "/auth/users/{id}/mfa/approve", access: .admin, operation: "approveUserEnrolment",
        summary:
            "Approve a team member's session that waits to set up its first second factor: it may, in the next 30 minutes (admin; audited)",
        status: 204, answers: "Approved", problems: [.validationFailed, .notFound])

    /// Safe to send again: a disabled account stays disabled.
    public static let disableUser = Endpoint<PathID, NoBody, User>(
        "POST", "/auth/users/{id}/disable", access: .staff, operation: "disableUser",
        summary:
            "Disable the account: its sessions end, it cannot sign in or refresh (403 account_disabled) (support or admin)",
        answers: "The account, disabled", problems: [.notFound, .conflict, .forbidden], retryable: true)

    public static let enableUser = Endpoint<PathID, NoBody, User>(
        "POST", "/auth/users/{id}/enable", access: .staff, operation: "enableUser",
        summary: "Enable the account again (support or admin)", answers: "The account, enabled",
        problems: [.notFound, .forbidden], retryable: true)

    public static let exportUser = Endpoint<PathID, NoBody, DataExport>(
        "GET", "/auth/users/{id}/export", access: .staff, operation: "exportUser",
        summary: "Everything every service holds about the account (support or admin)",
        answers: "The export (recorded in the audit log)", problems: [.notFound, .unavailable])

    public static let setRole = Endpoint<PathID, RoleChange, User>(
        "PUT", "/auth/users/{id}/role", access: .admin, operation: "setUserRole",
        summary: "Give the account a role: user, support or admin (admins)",
        description:
            "Every session of the account ends, whoever holds it; pending resets and changes of address are void; identities linked while the address was unproven are unlinked. Needs the admin's password or a sign-in within 5 minutes.",
        answers: "The account, its sessions ended",
        problems: [.validationFailed, .notFound, .addressUnverified, .lastAdmin] + confirmation)

    public static let deleteUser = Endpoint<PathID, ReauthenticationRequest?, NoContent>(
        "DELETE", "/auth/users/{id}", access: .admin, operation: "deleteUser",
        summary: "Delete the account and every service's data about it (admins)",
        description:
            "Needs the admin's password (body {password}) or a sign-in within 5 minutes (401 reauthentication_required otherwise); never the last admin (409 last_admin).",
        status: 204,
        problems: [.validationFailed, .notFound, .lastAdmin] + confirmation, retryable: false)

    // MARK: - Webhooks (admins)

    public static let webhookEndpoints = Endpoint<NoParameters, NoBody, ItemList<WebhookEndpoint>>(
        "GET", "/auth/webhooks", access: .admin, operation: "listWebhookEndpoints",
        summary: "The endpoints webhooks go to (PIER_WEBHOOKS) and how their deliveries stand (admins)",
        description: "Append-only: entries are never changed or removed.",
        answers: "Every configured endpoint; secrets are never shown, only how many sign")

    public static let webhookDeliveries = Endpoint<WebhookDeliveryQuery, NoBody, WebhookDeliveryPage>(
        "GET", "/auth/webhooks/deliveries", access: .admin, operation: "listWebhookDeliveries",
        summary: "Webhook deliveries, newest first (admins)", description: "Append-only: entries are never changed or removed.",
        answers: "A page of deliveries", problems: [.validationFailed])

    public static let webhookDelivery = Endpoint<DeliveryID, NoBody, WebhookDelivery>(
        "GET", "/auth/webhooks/deliveries/{id}", access: .admin, operation: "getWebhookDelivery",
        summary: "One webhook delivery with the body it sends (admins)", answers: "The delivery, its payload included",
        problems: [.notFound])

    public static let replayWebhook = Endpoint<DeliveryID, NoBody, WebhookDelivery>(
        "POST", "/auth/webhooks/deliveries/{id}/replay", access: .admin, operation: "replayWebhookDelivery",
        summary:
            "Send a delivery's message again, with the same webhook-id, after what is pending for its subject (admins; audited)",
        status: 201, answers: "The new delivery, pending", problems: [.notFound, .conflict])
}
