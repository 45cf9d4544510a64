#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The auth service's endpoints: accounts, sign-ins (password, second factor, passkeys,
/// Apple and OpenID Connect), sessions, the mailed links and their pages, the key set, and
/// the team's (finding and helping an account, roles, webhooks).
///
/// An endpoint whose body may be left out (`ReauthenticationRequest?`) confirms a sensitive
/// action: a sign-in within the last 5 minutes stands in for it.
public enum AuthAPI {
    /// Every one, as the API document lists them.
    public static let all: [EndpointDefinition] =
        signIn + anonymous + account + mailedLinks + secondFactors + passkeys + team + webhooks

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
        users.definition, teamMembers.definition, signUps.definition, user.definition, userSessions.definition,
        endUserSessions.definition,
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
        "POST", "/auth/apple", access: .anyone, operation: "signInWithApple", summary: "Sign in with Apple",
        description:
            "Verifies the identity token as Apple documents it (RS256/ES256 against Apple's JWKS, `iss` https://appleid.apple.com, `aud` one of PIER_AUTH_APPLE_AUDIENCES, `exp`, `nonce` = SHA-256 of the raw nonce). Signs in the linked account; else links the account of the address when Apple verified it (private-relay addresses too); else creates an account without a password. \(keepsAnonymous)",
        answers: "Signed in (201: an account was created for the identity)", also: [201],
        problems: [
            .validationFailed, .invalidIdentityToken, .mfaRequired, .emailUnverified, .accountDisabled, .notFound,
            .identityTaken,
        ])

    /// 201 when the account was created by this sign-in, 200 otherwise.
    public static let oidc = Endpoint<ProviderName, IdentitySignInRequest, AuthSession>(
        "POST", "/auth/oidc/{provider}", access: .anyone, operation: "signInWithProvider",
        summary: "Sign in with an OpenID Connect provider",
        description:
            "The same verification for a provider of PIER_AUTH_OIDC_PROVIDERS, by name (its nonce plain or hashed as configured). \(keepsAnonymous)",
        answers: "Signed in (201: an account was created for the identity)", also: [201],
        problems: [
            .validationFailed, .invalidIdentityToken, .mfaRequired, .emailUnverified, .accountDisabled, .notFound,
            .identityTaken,
        ])

    static let keepsAnonymous =
        "Sent with an anonymous account's bearer token, it keeps that account instead (the same id): the identity is linked to it, with its address when the provider verified it, every other session of it ends and the answer is a new one; an identity or address another account has is 409 identity_taken and changes nothing."

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
            "Needs the current password in the optional body, unless the user signed in within the last 5 minutes. Records `account.deleted` for the other services and mails a notice. 409 last_admin: the last enabled admin cannot delete itself (make another admin first).",
        status: 204,
        problems: [.validationFailed, .accountDeleted, .lastAdmin] + confirmation, retryable: false)

    public static let changePassword = Endpoint<NoParameters, PasswordChangeRequest, NoContent>(
        "POST", "/auth/password", access: .signedIn, operation: "changePassword",
        summary: "Change the password; other sessions end", status: 204,
        answers: "Changed", problems: [.validationFailed, .weakPassword, .accountDeleted, .rateLimited])

    public static let reauthenticate = Endpoint<NoParameters, ReauthenticationRequest, StepUpToken>(
        "POST", "/auth/reauthenticate", access: .signedIn, operation: "reauthenticate",
        summary:
            "Give the password, a code or a passkey again: a fresh access token of the same session whose auth_time is now (step-up)",
        description:
            "For the actions that ask for a recent sign-in (401 reauthentication_required): changing a role, deleting an account, repricing a plan. The login's guards (rate limits, lockout) apply. 409 anonymous_account: an anonymous account has nothing to confirm with and needs no step-up (its session stands for a recent sign-in).",
        answers: "The new access token",
        problems: [.validationFailed, .sessionRevoked, .accountDeleted, .anonymousAccount] + confirmation)

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
}
