#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The auth service's endpoints for the app's team: finding and helping an account, webhooks.
extension AuthAPI {
    // MARK: - The team's: finding and helping an account

    public static let users = Endpoint<UserSearch, NoBody, UserList>(
        "GET", "/auth/users", access: .staff, operation: "searchUsers",
        summary:
            "Accounts found by an address or its start, a display name's start (case aside), the starts of their words, or an id (staff)",
        description:
            "What was typed is matched as text (`%` and `_` are not wildcards). By address, `limit` at most; `more` says a longer query would narrow them down.",
        answers: "The accounts found", problems: [.validationFailed])

    public static let teamMembers = Endpoint<NoParameters, NoBody, ItemList<User>>(
        "GET", "/auth/team", access: .staff, operation: "listTeam",
        summary: "The team: every support and admin account that is not disabled, by address (staff)",
        description: "Who an item can be assigned to, and whose names the console shows.",
        answers: "The team's accounts")

    public static let signUps = Endpoint<DaysQuery, NoBody, SignUpStats>(
        "GET", "/auth/users/stats", access: .staff, operation: "getSignUps", summary: "Sign-ups per day (staff)",
        description:
            "User accounts created each UTC day of the last `days` (today included; team accounts not counted), and the number of accounts.",
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
        problems: [.validationFailed, .notFound, .addressUnverified, .anonymousAccount, .lastAdmin] + confirmation)

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
