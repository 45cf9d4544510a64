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
    /// The Google Play subscriptions that are this plan: a product id (any of its base plans) or
    /// `productId:basePlanId`.
    public var googleProductIds: [String]
    public var active: Bool

    public init(
        id: String, name: String, description: String, price: Int, currency: String, billingPeriod: String,
        trialPeriod: String?, entitlements: [String], appStoreProductIds: [String], googleProductIds: [String] = [],
        active: Bool
    ) {
        self.googleProductIds = googleProductIds
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
    public var googleProductIds: [String]?
    public var active: Bool?

    public init(
        id: String, name: String, description: String? = nil, price: Int, currency: String, billingPeriod: String,
        trialPeriod: String? = nil, entitlements: [String], appStoreProductIds: [String]? = nil,
        googleProductIds: [String]? = nil, active: Bool? = nil
    ) {
        self.googleProductIds = googleProductIds
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
        case id, name, description, price, currency, billingPeriod, trialPeriod, entitlements, appStoreProductIds
        case googleProductIds, active
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
    public var googleProductIds: [String]?
    public var active: Bool?

    public init(
        name: String? = nil, description: String? = nil, price: Int? = nil, currency: String? = nil,
        billingPeriod: String? = nil, trialPeriod: String? = nil, entitlements: [String]? = nil,
        appStoreProductIds: [String]? = nil, googleProductIds: [String]? = nil, active: Bool? = nil
    ) {
        self.googleProductIds = googleProductIds
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
        case name, description, price, currency, billingPeriod, trialPeriod, entitlements, appStoreProductIds
        case googleProductIds, active
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
    /// What the user actually paid for the deciding purchase, in the minor units of `currency`
    /// (ISO 4217: 499 is 4.99 USD, 500 is 500 JPY, 1250 is 1.250 KWD), whichever store sold it;
    /// ``paid`` reads it as a ``Price``.
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
