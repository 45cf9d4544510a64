#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The subscriptions service's endpoints: plans, a user's status and entitlements, the App
/// Store's signed data, grants, and the team's views.
public enum SubscriptionsAPI {
    /// Every one, as the API document lists them.
    public static let all: [EndpointDefinition] =
        [
            plans.definition, createPlan.definition, updatePlan.definition, deletePlan.definition, me.definition,
            keys.definition, events.definition, entitlement.definition, cancel.definition, user.definition,
            refresh.definition, transaction.definition, notification.definition, notifications.definition,
            subscribers.definition, daily.definition, grant.definition, grants.definition, revokeGrant.definition,
        ] + googlePlay

    /// `GET /subscriptions/plans`: the active plans; `all=true` (the team) adds inactive ones.
    public static let plans = Endpoint<PlansQuery, NoBody, ItemList<Plan>>(
        "GET", "/subscriptions/plans", access: .public, operation: "listPlans",
        summary: "Active plans (staff: all=true adds inactive ones)", answers: "The plans",
        headers: ["ETag", "Cache-Control", "Vary"], problems: [.authenticationRequired, .forbidden])

    public static let createPlan = Endpoint<NoParameters, CreatePlan, Plan>(
        "POST", "/subscriptions/plans", access: .admin, operation: "createPlan", summary: "Create a plan (admins)",
        status: 201, answers: "The plan", problems: [.validationFailed, .conflict])

    /// A change of price, currency or period needs a recent sign-in.
    public static let updatePlan = Endpoint<PlanID, UpdatePlan, Plan>(
        "PATCH", "/subscriptions/plans/{id}", access: .admin, operation: "updatePlan",
        summary: "Change a plan; only the fields present change (admins)",
        description:
            "Changing price, currency or billingPeriod needs a sign-in within 5 minutes (401 reauthentication_required; POST /auth/reauthenticate gives one).",
        answers: "The plan", problems: [.validationFailed, .notFound, .conflict, .reauthenticationRequired])

    /// Only a plan nobody ever had can be deleted; deactivate one in use.
    public static let deletePlan = Endpoint<PlanID, NoBody, NoContent>(
        "DELETE", "/subscriptions/plans/{id}", access: .admin, operation: "deletePlan",
        summary: "Delete a plan nobody ever had; one in use answers 409 (deactivate it instead) (admins)", status: 204,
        problems: [.notFound, .conflict])

    /// `GET /subscriptions/me`: cacheable until `checkAgainAt`; signed when asked with a nonce.
    public static let me = Endpoint<StatusRequest, NoBody, SubscriptionStatus>(
        "GET", "/subscriptions/me", access: .signedIn, operation: "getMySubscription",
        summary: "The caller's status, merged from every source",
        answers: "The status", headers: ["Cache-Control", "ETag", "Vary", "Pier-Signed-Status"], problems: [.validationFailed])

    public static let keys = Endpoint<NoParameters, NoBody, JWKSetAnswer>(
        "GET", "/subscriptions/.well-known/jwks.json", access: .public, operation: "getStatusSigningKeys",
        summary: "The key that signs statuses (`Pier-Signed-Status`), to pin in the app", answers: "JWK set",
        problems: [.notFound])

    /// `GET /subscriptions/me/events`: the status now and whenever it changes.
    public static let events = Endpoint<EventStreamRequest, NoBody, EventStreamAnswer>(
        "GET", "/subscriptions/me/events", access: .signedIn, operation: "streamMySubscription",
        summary: "The caller's status, live (server-sent events)",
        description:
            "A `text/event-stream`: first the status now (`event: status`, `data` a SubscriptionStatus on one line, `id` a fingerprint of it, with `retry`), then the status again whenever it changes (a grant, its revocation, an App Store transaction, notification or refund), within about a second; a `: heartbeat` comment every `PIER_LIVE_HEARTBEAT_S`. Reconnect with `Last-Event-ID`: the status is sent again only if it changed since that id. The stream ends when the access token it was opened with expires (open the next with a fresh token), when its session ends and when the account is deleted.",
        answers: "The stream of status messages", headers: ["Cache-Control"], problems: [.tooManyStreams])

    public static let entitlement = Endpoint<EntitlementKey, NoBody, EntitlementStatus>(
        "GET", "/subscriptions/me/entitlements/{key}", access: .signedIn, operation: "getMyEntitlement",
        summary: "Whether the caller has one entitlement (the cheap paywall check)", answers: "The entitlement",
        headers: ["Cache-Control"], problems: [.validationFailed])

    /// Grants only: App Store renewals are cancelled in the App Store.
    public static let cancel = Endpoint<NoParameters, NoBody, SubscriptionStatus>(
        "POST", "/subscriptions/me/cancel", access: .signedIn, operation: "cancelMySubscription",
        summary: "Turn renewal off for grants; App Store subscriptions answer 409 (cancel in the App Store)",
        answers: "The status", problems: [.conflict])

    public static let user = Endpoint<UserID, NoBody, SubscriptionHistory>(
        "GET", "/subscriptions/users/{userId}", access: .staff, operation: "getUserSubscription",
        summary: "A user's status and the facts behind it (staff)", answers: "Status and history",
        problems: [.validationFailed, .notFound])

    public static let refresh = Endpoint<UserID, NoBody, SubscriptionHistory>(
        "POST", "/subscriptions/users/{userId}/appstore/refresh", access: .staff, operation: "refreshUserFromAppStore",
        summary: "Re-read a user's App Store subscriptions from Apple (staff)",
        description:
            "Asks Apple's App Store Server API (Get All Subscription Statuses, with the configured In-App Purchase key) for every App Store subscription linked to the user, records what Apple signed (verified like any signed data; items that do not verify are skipped and logged) and answers the user's status and facts, as `GET /subscriptions/users/{userId}`. A subscription Apple does not know is skipped.",
        answers: "Status and history after the refresh",
        problems: [.validationFailed, .notFound, .appStoreAPIUnconfigured, .appStoreAPIFailed],
        retryable: true)

    /// A transaction the app got from StoreKit, verified and bound to the caller.
    public static let transaction = Endpoint<NoParameters, AppStoreTransactionRequest, SubscriptionStatus>(
        "POST", "/subscriptions/appstore/transactions", access: .signedIn, operation: "postAppStoreTransaction",
        summary: "Record a StoreKit 2 signed transaction after verifying it; answers the new status",
        answers: "The status with the purchase", problems: [.validationFailed, .forbidden, .conflict], retryable: true)

    /// Apple's server calls this; the signed payload is the credential.
    public static let notification = Endpoint<NoParameters, AppStoreNotificationRequest, NoContent>(
        "POST", "/subscriptions/appstore/notifications", access: .public, operation: "postAppStoreNotification",
        summary: "App Store Server Notifications V2 (signed); 200 once durably stored, idempotent by notificationUUID",
        answers: "Stored (or already stored)", problems: [.validationFailed], retryable: true)

    public static let notifications = Endpoint<LimitQuery, NoBody, ItemList<AppStoreNotificationEntry>>(
        "GET", "/subscriptions/appstore/notifications", access: .staff, operation: "listAppStoreNotifications",
        summary: "Recent App Store notifications and their outcome (staff)",
        description:
            "The newest notifications, newest first: `applied` (their signed facts recorded), `ignored` (stored; `reason` says why), or `refused` (they did not verify: only the time and the reason are kept, the newest thousand).",
        answers: "The notifications", problems: [.validationFailed])

    public static let subscribers = Endpoint<NoParameters, NoBody, ItemList<PlanSubscribers>>(
        "GET", "/subscriptions/subscribers", access: .staff, operation: "countSubscribers",
        summary: "Accounts with access now, per plan (staff)",
        description:
            "Per plan: accounts whose App Store subscription is current, of them in an introductory offer, expired but in the billing grace period, expired with Apple still retrying to bill; and accounts with a current grant.",
        answers: "Every plan")

    public static let daily = Endpoint<DaysQuery, NoBody, SubscriptionDaily>(
        "GET", "/subscriptions/stats/daily", access: .staff, operation: "getSubscriptionDaily",
        summary: "Subscriptions per day: active and introductory offers by plan, conversions, cancellations, refunds (staff)",
        description: "Accounts created each UTC day of the last `days` (today included), and the number of accounts.",
        answers: "The days, oldest first", problems: [.validationFailed])

    public static let grant = Endpoint<NoParameters, CreateGrant, Grant>(
        "POST", "/subscriptions/grants", access: .staff, operation: "createGrant",
        summary: "Grant a plan to a user for a duration or until a date (staff)", status: 201,
        answers: "The grant", problems: [.validationFailed, .notFound, .conflict])

    public static let grants = Endpoint<GrantsQuery, NoBody, ItemList<Grant>>(
        "GET", "/subscriptions/grants", access: .staff, operation: "listGrants", summary: "A user's grants, newest first (staff)",
        answers: "The grants", problems: [.validationFailed])

    public static let revokeGrant = Endpoint<PathID, NoBody, Grant>(
        "DELETE", "/subscriptions/grants/{id}", access: .staff, operation: "revokeGrant",
        summary: "Revoke a grant at once; it stays in the history (staff)", answers: "The revoked grant", problems: [.notFound])
}

/// `{id}` of a plan: its slug.
public struct PlanID: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [.path("id", .string, "The plan's id (a slug such as `pro-yearly`).")]
    public var id: String
    public init(_ id: String) { self.id = id }
}

/// `{userId}`: the account a path names.
public struct UserID: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [.path("userId", .uuid, "The account's id.")]
    enum CodingKeys: String, CodingKey {
        case id = "userId"
    }
    public var id: UUID
    public init(_ id: UUID) { self.id = id }
}

/// `{key}`: an entitlement's key.
public struct EntitlementKey: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [.path("key", .string, "The entitlement's key (`pro`).")]
    public var key: String
    public init(_ key: String) { self.key = key }
}

/// `GET /subscriptions/plans?all=true`.
public struct PlansQuery: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [
        .query("all", .boolean, "`true`: inactive plans too (the team only).").defaulting("false"), ifNoneMatchHeader,
    ]
    enum CodingKeys: String, CodingKey {
        case all
        case ifNoneMatch = "If-None-Match"
    }
    public var all: Bool
    /// The `ETag` of the list kept: 304 while it is current.
    public var ifNoneMatch: String?
    public init(all: Bool = false, ifNoneMatch: String? = nil) {
        self.all = all
        self.ifNoneMatch = ifNoneMatch
    }
}

/// `GET /subscriptions/me`'s headers: a nonce asks for the status signed, bound to the
/// installation.
public struct StatusRequest: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [
        ifNoneMatchHeader,
        .header("Pier-Status-Nonce", .string, "16 to 128 base64url characters: the answer carries the status signed.").matching(
            "^[A-Za-z0-9_-]{16,128}$"),
        .header("X-Installation-ID", .string, "The installation the signed status is bound to.").sized(
            1...128, pattern: "^[!-~]+$"),
    ]
    enum CodingKeys: String, CodingKey {
        case ifNoneMatch = "If-None-Match"
        case nonce = "Pier-Status-Nonce"
        case installationID = "X-Installation-ID"
    }
    /// The `ETag` of the status kept: 304 while it is current.
    public var ifNoneMatch: String?
    public var nonce: String?
    public var installationID: String?
    public init(ifNoneMatch: String? = nil, nonce: String? = nil, installationID: String? = nil) {
        self.ifNoneMatch = ifNoneMatch
        self.nonce = nonce
        self.installationID = installationID
    }
}

/// `If-None-Match`: the `ETag` of what the caller keeps.
private let ifNoneMatchHeader = Parameter.header(
    "If-None-Match", .string, "The ETag of the answer kept: 304 while it is current.")

/// `Last-Event-ID`: where a reconnecting event stream takes up.
public struct EventStreamRequest: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [
        .header("Last-Event-ID", .string, "The id of the last event read: the stream takes up after it.").sized(1...64)
    ]
    enum CodingKeys: String, CodingKey {
        case lastEventID = "Last-Event-ID"
    }
    public var lastEventID: String?
    public init(lastEventID: String? = nil) { self.lastEventID = lastEventID }
}

/// `limit`: how many of the newest.
public struct LimitQuery: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [
        .query("limit", .integer, "How many, 1 to 200 (50 by default).").within(1...200, defaultValue: 50)
    ]
    public var limit: Int?
    public init(limit: Int? = nil) { self.limit = limit }
}

/// `days`: how many UTC days back from today.
public struct DaysQuery: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [
        .query("days", .integer, "Days back from today, 1 to 366 (30 by default).").within(1...366, defaultValue: 30)
    ]
    public var days: Int?
    public init(days: Int? = nil) { self.days = days }
}

/// `GET /subscriptions/grants?userId=`.
public struct GrantsQuery: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [.query("userId", .uuid, "The account whose grants.", required: true)]
    enum CodingKeys: String, CodingKey {
        case userID = "userId"
    }
    public var userID: UUID
    public init(userID: UUID) { self.userID = userID }
}

/// A key set (RFC 7517), read as bytes: an app pins what it holds.
public struct JWKSetAnswer: Sendable, Equatable {
    public init() {}
}

/// Server-sent events (`text/event-stream`): read with an event-stream reader, not decoded.
public struct EventStreamAnswer: Sendable, Equatable {
    public init() {}
}
