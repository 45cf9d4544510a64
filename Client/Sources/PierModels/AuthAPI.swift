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
        problems: [.validationFailed, .weakPassword, .emailTaken, .rateLimited])

    public static let login = Endpoint<NoParameters, LoginRequest, AuthSession>(
        "POST", "/auth/login", access: .public, operation: "login", summary: "Log in",
        problems: [
            .validationFailed, .invalidCredentials, .mfaRequired, .emailUnverified, .accountDisabled, .rateLimited,
        ])

    /// Safe to send again: the same refresh token resent within the grace window (an app killed
    /// mid-refresh) answers the same successor.
    public static let refresh = Endpoint<NoParameters, RefreshRequest, AuthSession>(
        "POST", "/auth/refresh", access: .public, operation: "refresh", summary: "Rotate the refresh token",
        problems: [.invalidRefreshToken, .accountDisabled], retryable: true)

    /// Safe to send again: a refresh token ended already answers 204 too.
    public static let logout = Endpoint<NoParameters, RefreshRequest, NoContent>(
        "POST", "/auth/logout", access: .anyone, operation: "logout",
        summary: "End the session of a refresh token (the access token is optional)", status: 204, retryable: true)

    public static let logoutAll = Endpoint<NoParameters, NoBody, NoContent>(
        "POST", "/auth/logout/all", access: .signedIn, operation: "logoutEverywhere",
        summary: "End every session of the caller, this one included", status: 204, retryable: true)

    /// 201 when the account was created by this sign-in, 200 otherwise.
    public static let apple = Endpoint<NoParameters, IdentitySignInRequest, AuthSession>(
        "POST", "/auth/apple", access: .public, operation: "signInWithApple", summary: "Sign in with Apple",
        problems: [
            .validationFailed, .invalidIdentityToken, .mfaRequired, .emailUnverified, .accountDisabled, .notFound,
        ])

    /// 201 when the account was created by this sign-in, 200 otherwise.
    public static let oidc = Endpoint<ProviderName, IdentitySignInRequest, AuthSession>(
        "POST", "/auth/oidc/{provider}", access: .public, operation: "signInWithProvider",
        summary: "Sign in with an OpenID Connect provider",
        problems: [
            .validationFailed, .invalidIdentityToken, .mfaRequired, .emailUnverified, .accountDisabled, .notFound,
        ])

    /// Apple's server calls it: the signed payload is the credential.
    public static let appleNotifications = Endpoint<NoParameters, AppleNotificationRequest, NoContent>(
        "POST", "/auth/apple/notifications", access: .public, operation: "receiveAppleAccountNotification",
        summary: "Apple's server-to-server notifications for Sign in with Apple",
        problems: [.validationFailed, .invalidIdentityToken, .notFound], retryable: true)

    public static let keys = Endpoint<NoParameters, NoBody, JWKSetAnswer>(
        "GET", "/auth/.well-known/jwks.json", access: .public, operation: "getAuthKeys", summary: "Public keys")

    // MARK: - The account

    public static let me = Endpoint<NoParameters, NoBody, User>(
        "GET", "/auth/me", access: .signedIn, operation: "getMe", summary: "The signed-in user",
        problems: [.accountDeleted])

    public static let events = Endpoint<EventStreamRequest, NoBody, EventStreamAnswer>(
        "GET", "/auth/me/events", access: .signedIn, operation: "streamMe",
        summary: "The caller's account, live (server-sent events)", problems: [.tooManyStreams])

    /// Safe to send again: the same change twice leaves the same profile.
    public static let updateProfile = Endpoint<NoParameters, ProfileChange, User>(
        "PATCH", "/auth/me", access: .signedIn, operation: "updateMe", summary: "Change the display name or locale",
        problems: [.validationFailed, .accountDeleted], retryable: true)

    public static let deleteAccount = Endpoint<NoParameters, ReauthenticationRequest?, NoContent>(
        "DELETE", "/auth/me", access: .signedIn, operation: "deleteMe", summary: "Delete the account", status: 204,
        problems: [.validationFailed, .accountDeleted] + confirmation, retryable: false)

    public static let changePassword = Endpoint<NoParameters, PasswordChangeRequest, NoContent>(
        "POST", "/auth/password", access: .signedIn, operation: "changePassword",
        summary: "Change the password; other sessions end", status: 204,
        problems: [.validationFailed, .weakPassword, .accountDeleted, .rateLimited])

    public static let reauthenticate = Endpoint<NoParameters, ReauthenticationRequest, StepUpToken>(
        "POST", "/auth/reauthenticate", access: .signedIn, operation: "reauthenticate",
        summary:
            "Give the password, a code or a passkey again: a fresh access token of the same session whose auth_time is now (step-up)",
        problems: [.validationFailed, .sessionRevoked, .accountDeleted] + confirmation)

    public static let reauthenticationPasskeyOptions = Endpoint<NoParameters, NoBody, PasskeyRequestOptions>(
        "POST", "/auth/reauthenticate/passkey-options", access: .signedIn, operation: "reauthenticationPasskeyOptions",
        summary: "Options to confirm a sensitive action with one of the caller's passkeys",
        problems: [.conflict, .accountDeleted])

    public static let changeEmail = Endpoint<NoParameters, EmailChangeRequest, NoContent>(
        "POST", "/auth/email/change", access: .signedIn, operation: "changeEmail", summary: "Ask to use another address",
        status: 202,
        problems: [.validationFailed, .emailTaken, .mfaEnrolmentRequired, .accountDeleted] + confirmation)

    public static let identities = Endpoint<NoParameters, NoBody, ItemList<LinkedIdentity>>(
        "GET", "/auth/identities", access: .signedIn, operation: "listIdentities",
        summary: "The identity providers the caller signs in with")

    public static let unlinkIdentity = Endpoint<PathID, ReauthenticationRequest?, NoContent>(
        "DELETE", "/auth/identities/{id}", access: .signedIn, operation: "unlinkIdentity",
        summary: "Unlink one of the caller's identities", status: 204,
        problems: [.validationFailed, .notFound, .lastSignInMethod] + confirmation, retryable: false)

    public static let export = Endpoint<NoParameters, NoBody, DataExport>(
        "GET", "/auth/me/export", access: .signedIn, operation: "exportMe",
        summary: "Download my data: everything every service holds about the caller",
        problems: [.accountDeleted, .unavailable])

    public static let sessions = Endpoint<NoParameters, NoBody, ItemList<SessionInfo>>(
        "GET", "/auth/sessions", access: .signedIn, operation: "listSessions",
        summary: "The caller's live sessions, most recently used first")

    public static let endSession = Endpoint<PathID, NoBody, NoContent>(
        "DELETE", "/auth/sessions/{id}", access: .signedIn, operation: "endSession",
        summary: "End one of the caller's sessions at once, everywhere", status: 204, problems: [.notFound])

    // MARK: - Mailed links: a page for browsers (GET), the token spent by POST (JSON or the page's form)

    public static let verifyEmailPage = Endpoint<TokenQuery, NoBody, HTMLPage>(
        "GET", "/auth/email/verify", access: .public, operation: "verifyEmailPage",
        summary: "The page behind the mailed verification link (a form that posts the token)")

    /// A form post answers a page instead of the user.
    public static let verifyEmail = Endpoint<NoParameters, EmailTokenRequest, User>(
        "POST", "/auth/email/verify", access: .public, operation: "verifyEmail",
        summary: "Mark the address verified with the mailed token", problems: [.validationFailed, .invalidEmailToken],
        retryable: true)

    /// Signed in, the body is not needed; else it names the address.
    public static let resendVerification = Endpoint<NoParameters, EmailRequest?, NoContent>(
        "POST", "/auth/email/verify/resend", access: .anyone, operation: "resendVerification",
        summary: "Mail the verification link again", status: 202, problems: [.validationFailed, .rateLimited],
        retryable: true)

    public static let forgotPassword = Endpoint<NoParameters, EmailRequest, NoContent>(
        "POST", "/auth/password/forgot", access: .public, operation: "forgotPassword",
        summary: "Mail a password-reset link", status: 202, problems: [.validationFailed, .rateLimited], retryable: true)

    public static let resetPasswordPage = Endpoint<TokenQuery, NoBody, HTMLPage>(
        "GET", "/auth/password/reset", access: .public, operation: "resetPasswordPage",
        summary: "The page behind the mailed reset link (a form for the new password)")

    /// A form post answers a page (200) instead of 204.
    public static let resetPassword = Endpoint<NoParameters, ResetPasswordRequest, NoContent>(
        "POST", "/auth/password/reset", access: .public, operation: "resetPassword",
        summary: "Set a new password with the mailed token", status: 204,
        problems: [.validationFailed, .weakPassword, .invalidEmailToken, .rateLimited])

    public static let confirmEmailChangePage = Endpoint<TokenQuery, NoBody, HTMLPage>(
        "GET", "/auth/email/change/confirm", access: .public, operation: "confirmEmailChangePage",
        summary: "The page behind the mailed address-change link (a form that posts the token)")

    /// A form post answers a page instead of the user.
    public static let confirmEmailChange = Endpoint<NoParameters, EmailTokenRequest, User>(
        "POST", "/auth/email/change/confirm", access: .public, operation: "confirmEmailChange",
        summary: "Confirm a change of address with the token mailed to the new address",
        problems: [.validationFailed, .invalidEmailToken, .emailTaken], retryable: true)

    public static let cancelEmailChangePage = Endpoint<TokenQuery, NoBody, HTMLPage>(
        "GET", "/auth/email/change/cancel", access: .public, operation: "cancelEmailChangePage",
        summary: "The page behind the cancel link mailed to the old address (a form that posts the token)")

    /// A form post answers a page instead of the user.
    public static let cancelEmailChange = Endpoint<NoParameters, EmailTokenRequest, User>(
        "POST", "/auth/email/change/cancel", access: .public, operation: "cancelEmailChange",
        summary: "Cancel a change of address with the token mailed to the old address",
        problems: [.validationFailed, .invalidEmailToken], retryable: true)

    // MARK: - Second factors

    public static let verifySecondFactor = Endpoint<NoParameters, MFAVerifyRequest, AuthSession>(
        "POST", "/auth/mfa/verify", access: .public, operation: "verifySecondFactor",
        summary: "Finish a sign-in that answered `mfa_required`, with a code or a passkey",
        problems: [
            .validationFailed, .invalidMFAToken, .invalidCode, .invalidPasskey, .conflict, .accountDisabled, .rateLimited,
        ])

    public static let secondFactorPasskeyOptions = Endpoint<NoParameters, MFATokenRequest, PasskeyRequestOptions>(
        "POST", "/auth/mfa/passkey-options", access: .public, operation: "secondFactorPasskeyOptions",
        summary: "Options for a passkey to finish a sign-in that answered `mfa_required`",
        problems: [.invalidMFAToken, .conflict, .rateLimited])

    public static let secondFactorStatus = Endpoint<NoParameters, NoBody, MFAStatus>(
        "GET", "/auth/mfa", access: .signedIn, operation: "getSecondFactors", summary: "The caller's second factors")

    public static let setUpAuthenticatorApp = Endpoint<NoParameters, ReauthenticationRequest?, TOTPEnrolment>(
        "POST", "/auth/mfa/totp", access: .signedIn, operation: "setUpAuthenticatorApp",
        summary: "Set up an authenticator app (TOTP, RFC 6238)", status: 201,
        problems: [.validationFailed, .emailUnverified, .enrolmentApprovalRequired, .conflict, .accountDeleted]
            + confirmation)

    public static let confirmAuthenticatorApp = Endpoint<NoParameters, MFACodeRequest, RecoveryCodes>(
        "POST", "/auth/mfa/totp/confirm", access: .signedIn, operation: "confirmAuthenticatorApp",
        summary: "Confirm the authenticator app with its first code",
        problems: [.validationFailed, .invalidCode, .conflict, .accountDeleted, .rateLimited])

    public static let removeAuthenticatorApp = Endpoint<NoParameters, ReauthenticationRequest?, NoContent>(
        "DELETE", "/auth/mfa/totp", access: .signedIn, operation: "turnOffSecondFactor",
        summary: "Turn two-step sign-in off", status: 204,
        problems: [.validationFailed, .notFound, .accountDeleted] + confirmation, retryable: false)

    public static let replaceRecoveryCodes = Endpoint<NoParameters, ReauthenticationRequest?, RecoveryCodes>(
        "POST", "/auth/mfa/recovery-codes", access: .signedIn, operation: "replaceRecoveryCodes",
        summary: "New recovery codes", problems: [.validationFailed, .notFound, .accountDeleted] + confirmation)

    public static let approvalPage = Endpoint<TokenQuery, NoBody, HTMLPage>(
        "GET", "/auth/mfa/approve", access: .public, operation: "approveEnrolmentPage",
        summary: "The page behind the approval link mailed to a team member (a form that posts the token)")

    /// A form post answers a page (200) instead of 204.
    public static let approveEnrolment = Endpoint<NoParameters, EmailTokenRequest, NoContent>(
        "POST", "/auth/mfa/approve", access: .public, operation: "approveEnrolment",
        summary: "Approve a team member's first second factor with the mailed token", status: 204,
        problems: [.validationFailed, .invalidEmailToken])

    // MARK: - Passkeys

    public static let passkeyRegistrationOptions = Endpoint<NoParameters, ReauthenticationRequest?, PasskeyCreationOptions>(
        "POST", "/auth/passkeys/register/options", access: .signedIn, operation: "passkeyRegistrationOptions",
        summary: "Options to create a passkey",
        problems: [.validationFailed, .emailUnverified, .enrolmentApprovalRequired, .accountDeleted] + confirmation)

    public static let registerPasskey = Endpoint<NoParameters, PasskeyRegistration, Passkey>(
        "POST", "/auth/passkeys/register", access: .signedIn, operation: "registerPasskey", summary: "Register a passkey",
        status: 201, problems: [.validationFailed, .invalidPasskey, .emailUnverified, .conflict, .accountDeleted])

    /// Without a body: a usernameless sign-in (any passkey of the site).
    public static let passkeyLoginOptions = Endpoint<NoParameters, PasskeyOptionsRequest?, PasskeyRequestOptions>(
        "POST", "/auth/passkeys/login/options", access: .public, operation: "passkeyLoginOptions",
        summary: "Options to sign in with a passkey (usernameless without a body)",
        problems: [.validationFailed, .rateLimited], retryable: true)

    public static let passkeyLogin = Endpoint<NoParameters, PasskeyAssertion, AuthSession>(
        "POST", "/auth/passkeys/login", access: .public, operation: "signInWithPasskey", summary: "Sign in with a passkey",
        problems: [.validationFailed, .invalidPasskey, .mfaRequired, .accountDisabled, .rateLimited])

    public static let passkeyList = Endpoint<NoParameters, NoBody, ItemList<Passkey>>(
        "GET", "/auth/passkeys", access: .signedIn, operation: "listPasskeys", summary: "The caller's passkeys")

    /// Safe to send again: the same name twice leaves the same passkey.
    public static let renamePasskey = Endpoint<PathID, PasskeyRename, Passkey>(
        "PATCH", "/auth/passkeys/{id}", access: .signedIn, operation: "renamePasskey", summary: "Rename a passkey",
        problems: [.validationFailed, .notFound], retryable: true)

    public static let removePasskey = Endpoint<PathID, ReauthenticationRequest?, NoContent>(
        "DELETE", "/auth/passkeys/{id}", access: .signedIn, operation: "removePasskey",
        summary: "Remove a passkey (a sensitive action)", status: 204,
        problems: [.validationFailed, .notFound, .accountDeleted] + confirmation, retryable: false)

    // MARK: - The team's: finding and helping an account

    public static let users = Endpoint<UserSearch, NoBody, UserList>(
        "GET", "/auth/users", access: .staff, operation: "searchUsers",
        summary:
            "Accounts found by an address or its start, a display name's start (case aside), or an id (staff)",
        problems: [.validationFailed])

    public static let signUps = Endpoint<DaysQuery, NoBody, SignUpStats>(
        "GET", "/auth/users/stats", access: .staff, operation: "getSignUps", summary: "Sign-ups per day (staff)",
        problems: [.validationFailed])

    public static let user = Endpoint<PathID, NoBody, User>(
        "GET", "/auth/users/{id}", access: .staff, operation: "getUser",
        summary: "One account, with its role and whether it is disabled (staff)", problems: [.notFound])

    public static let userSessions = Endpoint<PathID, NoBody, ItemList<SessionInfo>>(
        "GET", "/auth/users/{id}/sessions", access: .staff, operation: "listUserSessions",
        summary: "The account's live sessions (support or admin)", problems: [.notFound])

    /// Its pending resets and changes of address end too.
    public static let endUserSessions = Endpoint<PathID, NoBody, SessionsEnded>(
        "DELETE", "/auth/users/{id}/sessions", access: .staff, operation: "endUserSessions",
        summary: "End every session of the account (support or admin)", problems: [.notFound, .forbidden])

    public static let endUserSession = Endpoint<UserSessionID, NoBody, SessionsEnded>(
        "DELETE", "/auth/users/{id}/sessions/{session}", access: .staff, operation: "endUserSession",
        summary: "End one session of the account (support or admin)", problems: [.notFound, .forbidden])

    public static let userIdentities = Endpoint<PathID, NoBody, ItemList<LinkedIdentity>>(
        "GET", "/auth/users/{id}/identities", access: .staff, operation: "listUserIdentities",
        summary: "The providers the account signs in with (support or admin)", problems: [.notFound])

    public static let mailUser = Endpoint<PathID, StaffMailRequest, NoContent>(
        "POST", "/auth/users/{id}/mail", access: .staff, operation: "mailUser",
        summary: "Mail the account a password-reset or verification link (support or admin)", status: 202,
        problems: [.validationFailed, .notFound, .conflict, .forbidden, .rateLimited])

    public static let userSecondFactor = Endpoint<PathID, NoBody, MFAStatus>(
        "GET", "/auth/users/{id}/mfa", access: .staff, operation: "getUserSecondFactor",
        summary: "Whether the account has two-step sign-in, and its recovery codes left (support or admin)",
        problems: [.notFound])

    public static let userPasskeys = Endpoint<PathID, NoBody, ItemList<Passkey>>(
        "GET", "/auth/users/{id}/passkeys", access: .staff, operation: "listUserPasskeys",
        summary: "The account's passkeys: names, when used, synced, suspended (support or admin)", problems: [.notFound])

    public static let removeUserSecondFactor = Endpoint<PathID, ReauthenticationRequest?, NoContent>(
        "DELETE", "/auth/users/{id}/mfa", access: .staff, operation: "removeUserSecondFactor",
        summary: "Remove an account's lost second factor (staff)", status: 204,
        problems: [.validationFailed, .notFound, .forbidden] + confirmation, retryable: false)

    public static let approveUserEnrolment = Endpoint<PathID, EnrolmentApproval, NoContent>(
        "POST", "/auth/users/{id}/mfa/approve", access: .admin, operation: "approveUserEnrolment",
        summary:
            "Approve a team member's session that waits to set up its first second factor: it may, in the next 30 minutes (admin; audited)",
        status: 204, problems: [.validationFailed, .notFound])

    /// Safe to send again: a disabled account stays disabled.
    public static let disableUser = Endpoint<PathID, NoBody, User>(
        "POST", "/auth/users/{id}/disable", access: .staff, operation: "disableUser",
        summary:
            "Disable the account: its sessions end, it cannot sign in or refresh (403 account_disabled) (support or admin)",
        problems: [.notFound, .conflict, .forbidden], retryable: true)

    public static let enableUser = Endpoint<PathID, NoBody, User>(
        "POST", "/auth/users/{id}/enable", access: .staff, operation: "enableUser",
        summary: "Enable the account again (support or admin)", problems: [.notFound, .forbidden], retryable: true)

    public static let exportUser = Endpoint<PathID, NoBody, DataExport>(
        "GET", "/auth/users/{id}/export", access: .staff, operation: "exportUser",
        summary: "Everything every service holds about the account (support or admin)",
        problems: [.notFound, .unavailable])

    public static let setRole = Endpoint<PathID, RoleChange, User>(
        "PUT", "/auth/users/{id}/role", access: .admin, operation: "setUserRole",
        summary: "Give the account a role: user, support or admin (admins)",
        problems: [.validationFailed, .notFound, .addressUnverified, .lastAdmin] + confirmation)

    public static let deleteUser = Endpoint<PathID, ReauthenticationRequest?, NoContent>(
        "DELETE", "/auth/users/{id}", access: .admin, operation: "deleteUser",
        summary: "Delete the account and every service's data about it (admins)", status: 204,
        problems: [.validationFailed, .notFound, .lastAdmin] + confirmation, retryable: false)

    // MARK: - Webhooks (admins)

    public static let webhookEndpoints = Endpoint<NoParameters, NoBody, ItemList<WebhookEndpoint>>(
        "GET", "/auth/webhooks", access: .admin, operation: "listWebhookEndpoints",
        summary: "The endpoints webhooks go to (PIER_WEBHOOKS) and how their deliveries stand (admins)")

    public static let webhookDeliveries = Endpoint<WebhookDeliveryQuery, NoBody, WebhookDeliveryPage>(
        "GET", "/auth/webhooks/deliveries", access: .admin, operation: "listWebhookDeliveries",
        summary: "Webhook deliveries, newest first (admins)", problems: [.validationFailed])

    public static let webhookDelivery = Endpoint<DeliveryID, NoBody, WebhookDelivery>(
        "GET", "/auth/webhooks/deliveries/{id}", access: .admin, operation: "getWebhookDelivery",
        summary: "One webhook delivery with the body it sends (admins)", problems: [.notFound])

    public static let replayWebhook = Endpoint<DeliveryID, NoBody, WebhookDelivery>(
        "POST", "/auth/webhooks/deliveries/{id}/replay", access: .admin, operation: "replayWebhookDelivery",
        summary:
            "Send a delivery's message again, with the same webhook-id, after what is pending for its subject (admins; audited)",
        status: 201, problems: [.notFound, .conflict])
}
