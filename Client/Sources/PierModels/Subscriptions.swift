#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A plan an app sells (or the team grants): what it costs and what it unlocks.
public struct Plan: Codable, Sendable, Equatable {
    /// A slug: lowercase letters, digits, `-` and `_`.
    public var id: String
    public var name: String
    public var description: String
    /// In minor units of `currency` (cents for USD).
    public var price: Int
    /// ISO 4217, uppercase.
    public var currency: String
    /// ISO 8601 duration: `P1W`, `P1M`, `P1Y`…
    public var billingPeriod: String
    public var trialPeriod: String?
    /// The keys this plan unlocks (`pro`, …).
    public var entitlements: [String]
    /// The App Store products that are this plan.
    public var appStoreProductIds: [String]
    public var active: Bool

    public init(
        id: String, name: String, description: String, price: Int, currency: String, billingPeriod: String,
        trialPeriod: String?, entitlements: [String], appStoreProductIds: [String], active: Bool
    ) {
        self.id = id
        self.name = name
        self.description = description
        self.price = price
        self.currency = currency
        self.billingPeriod = billingPeriod
        self.trialPeriod = trialPeriod
        self.entitlements = entitlements
        self.appStoreProductIds = appStoreProductIds
        self.active = active
    }
}

/// `POST /subscriptions/plans`.
public struct CreatePlan: Codable, Sendable, StrictDecodable {
    public var id: String
    public var name: String
    public var description: String?
    public var price: Int
    public var currency: String
    public var billingPeriod: String
    public var trialPeriod: String?
    public var entitlements: [String]
    public var appStoreProductIds: [String]?
    public var active: Bool?

    public init(
        id: String, name: String, description: String? = nil, price: Int, currency: String, billingPeriod: String,
        trialPeriod: String? = nil, entitlements: [String], appStoreProductIds: [String]? = nil, active: Bool? = nil
    ) {
        self.id = id
        self.name = name
        self.description = description
        self.price = price
        self.currency = currency
        self.billingPeriod = billingPeriod
        self.trialPeriod = trialPeriod
        self.entitlements = entitlements
        self.appStoreProductIds = appStoreProductIds
        self.active = active
    }

    public enum CodingKeys: String, CodingKey {
        case id, name, description, price, currency, billingPeriod, trialPeriod, entitlements, appStoreProductIds, active
    }
    public static let required: [[String]] = [["id"], ["name"], ["price"], ["currency"], ["billingPeriod"], ["entitlements"]]
}

/// `PATCH /subscriptions/plans/{id}`: only the fields present change (`trialPeriod: ""` removes the trial).
public struct UpdatePlan: Codable, Sendable, StrictDecodable {
    public var name: String?
    public var description: String?
    public var price: Int?
    public var currency: String?
    public var billingPeriod: String?
    public var trialPeriod: String?
    public var entitlements: [String]?
    public var appStoreProductIds: [String]?
    public var active: Bool?

    public init(
        name: String? = nil, description: String? = nil, price: Int? = nil, currency: String? = nil,
        billingPeriod: String? = nil, trialPeriod: String? = nil, entitlements: [String]? = nil,
        appStoreProductIds: [String]? = nil, active: Bool? = nil
    ) {
        self.name = name
        self.description = description
        self.price = price
        self.currency = currency
        self.billingPeriod = billingPeriod
        self.trialPeriod = trialPeriod
        self.entitlements = entitlements
        self.appStoreProductIds = appStoreProductIds
        self.active = active
    }

    public enum CodingKeys: String, CodingKey {
        case name, description, price, currency, billingPeriod, trialPeriod, entitlements, appStoreProductIds, active
    }
}

/// The plan a status refers to.
public struct PlanReference: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }
}

/// One unlocked key and until when (the latest expiry over every source that gives it).
public struct Entitlement: Codable, Sendable, Equatable {
    public var key: String
    public var expiresAt: Date
    public init(key: String, expiresAt: Date) {
        self.key = key
        self.expiresAt = expiresAt
    }
}

/// The offer the deciding App Store transaction was bought with.
public struct SubscriptionOffer: Codable, Sendable, Equatable {
    /// `introductory`, `promotional`, `offer_code` or `win_back` (Apple's `offerType` 1–4).
    public var type: OfferType
    /// `free_trial`, `pay_as_you_go` or `pay_up_front`, when Apple says.
    public var discountType: String?
    /// The offer's id in App Store Connect (promotional, offer codes, win-back).
    public var identifier: String?

    public init(type: OfferType, discountType: String? = nil, identifier: String? = nil) {
        self.type = type
        self.discountType = discountType
        self.identifier = identifier
    }
}

/// Why an App Store purchase was revoked (refunded).
public struct SubscriptionRevocation: Codable, Sendable, Equatable {
    /// `app_issue` (Apple's revocationReason 1) or `other` (0).
    public var reason: String
    /// `refund_full`, `refund_prorated` or `family_revoke`, when Apple says.
    public var type: String?

    public init(reason: String, type: String? = nil) {
        self.reason = reason
        self.type = type
    }
}

/// `GET /subscriptions/me`: one answer merged from every source of the user.
public struct SubscriptionStatus: Codable, Sendable, Equatable {
    /// `active`, `trialing`, `grace_period`, `billing_retry`, `expired`, `revoked` or `none`.
    public var status: SubscriptionState
    /// True when the status gives access (active, trialing, grace period).
    public var active: Bool
    public var plan: PlanReference?
    public var entitlements: [Entitlement]
    public var currentPeriodStart: Date?
    public var currentPeriodEnd: Date?
    public var graceUntil: Date?
    public var willRenew: Bool
    /// `appstore` or `grant`.
    public var source: SubscriptionSource?
    /// `production` or `sandbox` (App Store sources).
    public var environment: String?
    /// The offer of the deciding App Store purchase, if any: only a free trial makes the status
    /// `trialing`; a paid introductory offer is `active`.
    public var offer: SubscriptionOffer?
    /// The plan a pending downgrade or crossgrade renews to (`autoRenewProductId`), when it is
    /// not the current one.
    public var renewsTo: PlanReference?
    /// Why it expired or will not renew: `cancelled`, `billing_error`, `price_increase_declined`,
    /// `product_unavailable` or `other` (Apple's `expirationIntent`).
    public var expirationReason: ExpirationReason?
    /// A price increase: `pending` (the user has not consented yet) or `accepted`.
    public var priceIncrease: PriceIncrease?
    /// What the user actually paid for the deciding purchase, in milliunits of `currency`
    /// (Apple's unit: 4990 is 4.99), in their storefront's currency.
    public var price: Int?
    public var currency: String?
    /// True when the user has access through Family Sharing, not their own purchase.
    public var familyShared: Bool?
    /// Set when the deciding purchase was refunded.
    public var revocation: SubscriptionRevocation?
    /// When this answer can change next; `Cache-Control: max-age` matches it.
    public var checkAgainAt: Date

    public init(
        status: SubscriptionState, active: Bool, plan: PlanReference?, entitlements: [Entitlement],
        currentPeriodStart: Date?, currentPeriodEnd: Date?, graceUntil: Date?, willRenew: Bool, source: SubscriptionSource?,
        environment: String?,
        offer: SubscriptionOffer? = nil, checkAgainAt: Date
    ) {
        self.status = status
        self.active = active
        self.plan = plan
        self.entitlements = entitlements
        self.currentPeriodStart = currentPeriodStart
        self.currentPeriodEnd = currentPeriodEnd
        self.graceUntil = graceUntil
        self.willRenew = willRenew
        self.source = source
        self.environment = environment
        self.offer = offer
        self.checkAgainAt = checkAgainAt
    }
}

/// `GET /subscriptions/me/entitlements/{key}`.
public struct EntitlementStatus: Codable, Sendable, Equatable {
    public var key: String
    public var active: Bool
    public var expiresAt: Date?
    public init(key: String, active: Bool, expiresAt: Date?) {
        self.key = key
        self.active = active
        self.expiresAt = expiresAt
    }
}

/// `POST /subscriptions/appstore/transactions`.
public struct AppStoreTransactionRequest: Codable, Sendable, StrictDecodable {
    /// The JWS StoreKit 2 gives the app (`Transaction.jwsRepresentation`).
    public var signedTransaction: String
    public init(signedTransaction: String) { self.signedTransaction = signedTransaction }
    public enum CodingKeys: String, CodingKey { case signedTransaction }
    public static let required: [[String]] = [["signedTransaction"]]
}

/// `POST /subscriptions/appstore/notifications` (App Store Server Notifications V2).
public struct AppStoreNotificationRequest: Codable, Sendable, StrictDecodable {
    public var signedPayload: String
    public init(signedPayload: String) { self.signedPayload = signedPayload }
    public enum CodingKeys: String, CodingKey { case signedPayload }
    public static let required: [[String]] = [["signedPayload"]]
}

/// `POST /subscriptions/grants`: `duration` (ISO 8601, from now) or `until`, not both.
public struct CreateGrant: Codable, Sendable, StrictDecodable {
    public var userId: UUID
    public var planId: String
    public var duration: String?
    public var until: Date?
    public var reason: String
    public init(userId: UUID, planId: String, duration: String? = nil, until: Date? = nil, reason: String) {
        self.userId = userId
        self.planId = planId
        self.duration = duration
        self.until = until
        self.reason = reason
    }
    public enum CodingKeys: String, CodingKey { case userId, planId, duration, until, reason }
    public static let required: [[String]] = [["userId"], ["planId"], ["reason"]]
}

/// A grant of a plan to a user by the team.
public struct Grant: Codable, Sendable, Equatable {
    public var id: UUID
    /// Absent once the account was deleted.
    public var userId: UUID?
    public var planId: String
    public var startsAt: Date
    public var endsAt: Date
    public var reason: String
    public var grantedBy: UUID
    public var createdAt: Date
    public var revokedAt: Date?
    public var cancelledAt: Date?

    public init(
        id: UUID, userId: UUID?, planId: String, startsAt: Date, endsAt: Date, reason: String, grantedBy: UUID,
        createdAt: Date, revokedAt: Date?, cancelledAt: Date?
    ) {
        self.id = id
        self.userId = userId
        self.planId = planId
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.reason = reason
        self.grantedBy = grantedBy
        self.createdAt = createdAt
        self.revokedAt = revokedAt
        self.cancelledAt = cancelledAt
    }
}

/// One fact behind a status, for admins: what arrived, when, from where.
public struct SubscriptionFact: Codable, Sendable, Equatable {
    /// `grant`, `appstore.transaction`, `appstore.renewal` or `appstore.notification`.
    public var kind: String
    /// The grant id, transaction id, original transaction id or notification UUID.
    public var reference: String
    /// When the fact was signed (App Store) or made (grants).
    public var at: Date
    public var details: [String: JSONValue]

    public init(kind: String, reference: String, at: Date, details: [String: JSONValue]) {
        self.kind = kind
        self.reference = reference
        self.at = at
        self.details = details
    }
}

/// `GET /subscriptions/users/{userId}`: the status and the facts it was computed from.
public struct SubscriptionHistory: Codable, Sendable, Equatable {
    public var userId: UUID
    public var subscription: SubscriptionStatus
    public var facts: [SubscriptionFact]

    public init(userId: UUID, subscription: SubscriptionStatus, facts: [SubscriptionFact]) {
        self.userId = userId
        self.subscription = subscription
        self.facts = facts
    }
}

/// One App Store Server Notification as the team sees it: what became of it.
public struct AppStoreNotificationEntry: Codable, Sendable, Equatable {
    public var receivedAt: Date
    /// `applied` (its signed facts recorded), `ignored` (stored, changes nothing: `reason`), or
    /// `refused` (it did not verify: `reason`; nothing of it is kept but that).
    public var outcome: String
    public var reason: String?
    public var notificationType: String?
    public var subtype: String?
    public var environment: String?
    public var notificationUUID: UUID?
    public var originalTransactionId: String?

    public init(
        receivedAt: Date, outcome: String, reason: String? = nil, notificationType: String? = nil, subtype: String? = nil,
        environment: String? = nil, notificationUUID: UUID? = nil, originalTransactionId: String? = nil
    ) {
        self.receivedAt = receivedAt
        self.outcome = outcome
        self.reason = reason
        self.notificationType = notificationType
        self.subtype = subtype
        self.environment = environment
        self.notificationUUID = notificationUUID
        self.originalTransactionId = originalTransactionId
    }
}

/// `GET /subscriptions/subscribers` (staff): the accounts with access now, per plan.
public struct PlanSubscribers: Codable, Sendable, Equatable {
    public var planId: String
    public var name: String
    public var onSale: Bool
    /// Accounts whose App Store subscription to the plan is current (not expired, not revoked).
    public var appStore: Int
    /// Of those, in an introductory offer (a free trial or an introductory price).
    public var introductoryOffer: Int
    /// Expired, still served in Apple's billing grace period.
    public var gracePeriod: Int
    /// Expired, Apple still trying to bill (no access).
    public var billingRetry: Int
    /// Accounts with a current grant of the plan.
    public var grants: Int

    public init(
        planId: String, name: String, onSale: Bool, appStore: Int = 0, introductoryOffer: Int = 0, gracePeriod: Int = 0,
        billingRetry: Int = 0, grants: Int = 0
    ) {
        self.planId = planId
        self.name = name
        self.onSale = onSale
        self.appStore = appStore
        self.introductoryOffer = introductoryOffer
        self.gracePeriod = gracePeriod
        self.billingRetry = billingRetry
        self.grants = grants
    }
}

/// `GET /subscriptions/stats/daily`: App Store subscriptions over the last days (UTC), for the
/// team's dashboard.
public struct SubscriptionDaily: Codable, Sendable, Equatable {
    public var days: [Day]

    public struct Day: Codable, Sendable, Equatable {
        /// `YYYY-MM-DD`, UTC.
        public var day: String
        /// Subscriptions in a paid or introductory period at the end of the day (today: now), per
        /// plan id; introductory offers included.
        public var active: [String: Int]
        /// Of those, in an introductory offer (a free trial or an introductory price), per plan id.
        public var trials: [String: Int]
        /// Paid periods that began that day right after an introductory offer (within 60 days of
        /// its end: Apple retries billing that long).
        public var conversions: Int
        /// Subscribers who turned auto-renew off that day (Apple's `DID_CHANGE_RENEWAL_STATUS`,
        /// `AUTO_RENEW_DISABLED`).
        public var cancellations: Int
        /// Periods refunded or revoked that day.
        public var refunds: Int

        public init(
            day: String, active: [String: Int] = [:], trials: [String: Int] = [:], conversions: Int = 0,
            cancellations: Int = 0, refunds: Int = 0
        ) {
            self.day = day
            self.active = active
            self.trials = trials
            self.conversions = conversions
            self.cancellations = cancellations
            self.refunds = refunds
        }
    }

    public init(days: [Day]) { self.days = days }
}

/// The claims of a signed status (`Pier-Signed-Status`, a compact JWS of type
/// ``type`` signed ES256 by the subscriptions service's key, published at
/// `GET /subscriptions/.well-known/jwks.json`): the status, bound to its user, to the
/// installation that asked and to the nonce it sent, for a limited time.
public struct SignedStatusClaims: Codable, Sendable, Equatable {
    /// The JWS header's `typ`.
    public static let type = "pier-status+jwt"
    /// The request header that asks for a signed status, with a fresh nonce.
    public static let nonceHeader = "Pier-Status-Nonce"
    /// The response header that carries it.
    public static let header = "Pier-Signed-Status"

    /// The user's id.
    public var sub: UUID
    /// The `X-Installation-ID` of the request (nil when it sent none).
    public var ins: String?
    public var nonce: String
    /// Issued and expires at, in seconds since 1970.
    public var iat: Int
    public var exp: Int
    public var status: SubscriptionStatus

    public init(sub: UUID, ins: String?, nonce: String, iat: Int, exp: Int, status: SubscriptionStatus) {
        self.sub = sub
        self.ins = ins
        self.nonce = nonce
        self.iat = iat
        self.exp = exp
        self.status = status
    }

    /// Whether `nonce` is one a client may send: 16 to 128 base64url characters.
    public static func isNonce(_ nonce: String) -> Bool {
        (16...128).contains(nonce.utf8.count)
            && nonce.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == 0x2D || byte == 0x5F
            }
    }
}
