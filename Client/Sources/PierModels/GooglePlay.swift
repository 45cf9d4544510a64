#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `POST /subscriptions/google/purchases`: what the Play Billing Library gave the app
/// (`Purchase.getPurchaseToken()` and the product), after a purchase whose
/// `obfuscatedAccountId` the app set to the user's id.
public struct GooglePurchaseRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case purchaseToken, productId }
    public static let required = [["purchaseToken"], ["productId"]]
    public var purchaseToken: String
    public var productId: String
    public init(purchaseToken: String, productId: String) {
        self.purchaseToken = purchaseToken
        self.productId = productId
    }
}

/// `POST /subscriptions/google/notifications`: a Cloud Pub/Sub push of a Real-time developer
/// notification (the push's OIDC token in `Authorization` is the credential). Members Google adds
/// later are ignored.
public struct GooglePushRequest: Codable, Sendable, LenientDecodable {
    public struct Message: Codable, Sendable {
        /// The notification, base64 JSON.
        public var data: String?
        public var messageId: String?
        public var message_id: String?
        public var publishTime: String?
        public init(data: String?, messageId: String?, publishTime: String? = nil) {
            self.data = data
            self.messageId = messageId
            self.publishTime = publishTime
        }
    }
    public var message: Message
    public var subscription: String?
    public init(message: Message, subscription: String? = nil) {
        self.message = message
        self.subscription = subscription
    }
}

/// One Real-time developer notification as the team sees it: what became of it.
public struct GoogleNotificationEntry: Codable, Sendable, Equatable {
    public var receivedAt: Date
    public var messageId: String
    /// `subscription`, `voided`, `test` or `other`.
    public var kind: String
    /// A subscription notification's `notificationType` (2 renewed, 3 canceled, 5 on hold, …).
    public var notificationType: Int?
    /// The purchase's order id, or its token's first characters.
    public var purchase: String?
    /// `applied` or `ignored` (`reason` says why).
    public var outcome: String
    public var reason: String?

    public init(
        receivedAt: Date, messageId: String, kind: String, notificationType: Int?, purchase: String?, outcome: String,
        reason: String?
    ) {
        (self.receivedAt, self.messageId, self.kind, self.notificationType) = (receivedAt, messageId, kind, notificationType)
        (self.purchase, self.outcome, self.reason) = (purchase, outcome, reason)
    }
}

extension ProblemCode {
    /// Google Play is not configured here (`PIER_SUBSCRIPTIONS_GOOGLE_PACKAGE`), or its push
    /// notifications are not (`PIER_SUBSCRIPTIONS_GOOGLE_PUSH_AUDIENCE`).
    public static let googlePlayUnconfigured: ProblemCode = "google_play_unconfigured"
    /// Google Play could not be reached or refused: nothing changed; retry after `Retry-After`.
    public static let googlePlayFailed: ProblemCode = "google_play_failed"
    /// No plan offers the Google Play purchase's product: it is kept for the team, not
    /// acknowledged (Google refunds it), and gives nothing.
    public static let productNotOffered: ProblemCode = "product_not_offered"
}

extension SubscriptionsAPI {
    static let googlePlay: [EndpointDefinition] = [
        googlePurchase.definition, googleNotification.definition, googleNotifications.definition,
        googleRefresh.definition,
    ]

    public static let googleNotifications = Endpoint<LimitQuery, NoBody, ItemList<GoogleNotificationEntry>>(
        "GET", "/subscriptions/google/notifications", access: .staff, operation: "listGoogleNotifications",
        summary: "Recent Google Play notifications and their outcome (staff)",
        description:
            "The newest Real-time developer notifications Pier accepted, newest first: `applied` (the purchase read from Google again, or revoked) or `ignored` (`reason` says why: a test, another app's, a one-time product's). Pushes whose token was refused are not kept.",
        answers: "The notifications", problems: [.validationFailed])

    /// The team's "read again from Google": every Google Play purchase of the user read again.
    public static let googleRefresh = Endpoint<UserID, NoBody, SubscriptionHistory>(
        "POST", "/subscriptions/users/{userId}/google/refresh", access: .staff, operation: "refreshUserFromGooglePlay",
        summary: "Re-read a user's Google Play purchases from Google (staff)",
        description:
            "Reads every Google Play purchase bound to the user (not replaced by a newer token) from the Play Developer API, records what Google says and answers the user's status and facts, as `GET /subscriptions/users/{userId}`. 503 google_play_failed when Google cannot be read (what was read before it stays recorded); 404 google_play_unconfigured when Google Play is off.",
        answers: "Status and history after the refresh",
        problems: [.validationFailed, .notFound, .googlePlayFailed, .googlePlayUnconfigured], retryable: true)

    /// A purchase the app made on Google Play, read from Google and bound to the caller.
    public static let googlePurchase = Endpoint<NoParameters, GooglePurchaseRequest, SubscriptionStatus>(
        "POST", "/subscriptions/google/purchases", access: .signedIn, operation: "postGooglePurchase",
        summary: "Record a Google Play subscription purchase after reading it from Google; answers the new status",
        description:
            "Pier reads the purchase from the Play Developer API (purchases.subscriptionsv2.get, as the configured service account; one call per post at most, none for a token Google called unknown in the last 10 minutes), checks that it is of `productId` and that its `obfuscatedExternalAccountId`, when set, names the caller (or an anonymous account merged into the caller's), binds it to the caller and acknowledges it to Google (retried until done). 409 conflict: the purchase is another account's; 422 names the field (a token Google does not know or calls invalid, another product, a purchase with a number Pier cannot hold); 422 product_not_offered: no plan offers the product (kept for the team, not acknowledged, so Google refunds it); 429: too many posts from the account or the address (PIER_SUBSCRIPTIONS_GOOGLE_POSTS_PER_ACCOUNT_PER_MINUTE, _PER_ADDRESS_PER_MINUTE); 503 google_play_failed: Google could not be reached or asked to slow down (nothing changed, retry after Retry-After); 404 google_play_unconfigured: Google Play is off here.",
        answers: "The status with the purchase",
        problems: [.validationFailed, .conflict, .productNotOffered, .rateLimited, .googlePlayFailed, .googlePlayUnconfigured],
        retryable: true)

    /// Cloud Pub/Sub pushes Google Play's Real-time developer notifications here.
    public static let googleNotification = Endpoint<NoParameters, GooglePushRequest, NoContent>(
        "POST", "/subscriptions/google/notifications", access: .public, operation: "postGoogleNotification",
        summary: "Google Play Real-time developer notifications (Cloud Pub/Sub push); 204 once applied, idempotent by messageId",
        description:
            "The push's OIDC token (`Authorization: Bearer`) must be Google's, for PIER_SUBSCRIPTIONS_GOOGLE_PUSH_AUDIENCE, signed as PIER_SUBSCRIPTIONS_GOOGLE_PUSH_SERVICE_ACCOUNT. A subscription or voided-purchase notification makes Pier read the purchase from Google again (never the message alone); a voided purchase revokes access when its order paid for the current period (a refund of an earlier renewal's order does not); a test notification is acknowledged. Each message is applied once, and a repeated message id is answered without calling Google. A token Google does not know (404, or 400 Invalid Value) and a purchase with a number Pier cannot hold are final: acknowledged and stored as ignored. 503 when Google cannot be read: Pub/Sub delivers the message again later.",
        status: 204, answers: "Applied (or already applied)",
        problems: [.validationFailed, .authenticationRequired, .tokenInvalid, .googlePlayFailed, .googlePlayUnconfigured],
        retryable: true)
}
