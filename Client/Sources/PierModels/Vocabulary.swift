/// A value of a set the server may grow: the values this version knows are cases, and one it
/// does not know yet arrives as `unknown(String)` instead of failing the whole answer, so an
/// app built today keeps working when the server learns a new category, status or role.
///
/// `init?(rawValue:)` accepts known values only (what the server validates with);
/// `init(wire:)`, decoding and a string literal take anything (`status == "active"` reads as
/// it did when these were strings); encoding writes the wire's spelling back.
public protocol OpenVocabulary: RawRepresentable, CaseIterable, Codable, Hashable, Sendable, ExpressibleByStringLiteral
where RawValue == String, AllCases == [Self] {
    static func unknown(_ value: String) -> Self
}

extension OpenVocabulary {
    public init?(rawValue: String) {
        guard let known = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = known
    }

    /// The value as sent on the wire, known or not.
    public init(wire value: String) { self = Self(rawValue: value) ?? .unknown(value) }

    public init(stringLiteral value: String) { self.init(wire: value) }

    /// True for a value this version does not know.
    public var isUnknown: Bool { !Self.allCases.contains(self) }

    public init(from decoder: any Decoder) throws {
        self.init(wire: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// What a feedback is about.
public enum FeedbackCategory: OpenVocabulary {
    case bug, idea, praise, question, other
    case unknown(String)

    public static let allCases: [Self] = [.bug, .idea, .praise, .question, .other]

    public var rawValue: String {
        switch self {
        case .bug: "bug"
        case .idea: "idea"
        case .praise: "praise"
        case .question: "question"
        case .other: "other"
        case .unknown(let value): value
        }
    }
}

/// The platform an app runs on, as feedback reports it.
public enum Platform: OpenVocabulary {
    case ios, ipados, macos, watchos, tvos, visionos, android, web, other
    case unknown(String)

    public static let allCases: [Self] = [.ios, .ipados, .macos, .watchos, .tvos, .visionos, .android, .web, .other]

    public var rawValue: String {
        switch self {
        case .ios: "ios"
        case .ipados: "ipados"
        case .macos: "macos"
        case .watchos: "watchos"
        case .tvos: "tvos"
        case .visionos: "visionos"
        case .android: "android"
        case .web: "web"
        case .other: "other"
        case .unknown(let value): value
        }
    }
}

/// Where a subscription status stands (`SubscriptionStatus.status`).
public enum SubscriptionState: OpenVocabulary {
    /// `paused`: the subscriber paused it (Google Play); no access until it resumes.
    case active, trialing, gracePeriod, billingRetry, paused, expired, revoked, none
    case unknown(String)

    public static let allCases: [Self] = [
        .active, .trialing, .gracePeriod, .billingRetry, .paused, .expired, .revoked, .none,
    ]

    /// True for the states that unlock the entitlements (a state this version does not know
    /// gives nothing: the entitlements' own dates still say what is unlocked).
    public var givesAccess: Bool { self == .active || self == .trialing || self == .gracePeriod }

    public var rawValue: String {
        switch self {
        case .active: "active"
        case .trialing: "trialing"
        case .gracePeriod: "grace_period"
        case .billingRetry: "billing_retry"
        case .paused: "paused"
        case .expired: "expired"
        case .revoked: "revoked"
        case .none: "none"
        case .unknown(let value): value
        }
    }
}

/// Where a status comes from.
public enum SubscriptionSource: OpenVocabulary {
    case appstore, googleplay, grant
    case unknown(String)

    public static let allCases: [Self] = [.appstore, .googleplay, .grant]

    public var rawValue: String {
        switch self {
        case .appstore: "appstore"
        case .googleplay: "googleplay"
        case .grant: "grant"
        case .unknown(let value): value
        }
    }
}

/// The kind of App Store offer a purchase was made with (Apple's `offerType` 1–4).
public enum OfferType: OpenVocabulary {
    case introductory, promotional, offerCode, winBack
    case unknown(String)

    public static let allCases: [Self] = [.introductory, .promotional, .offerCode, .winBack]

    public var rawValue: String {
        switch self {
        case .introductory: "introductory"
        case .promotional: "promotional"
        case .offerCode: "offer_code"
        case .winBack: "win_back"
        case .unknown(let value): value
        }
    }
}

/// Why a subscription expired or will not renew (Apple's `expirationIntent`).
public enum ExpirationReason: OpenVocabulary {
    case cancelled, billingError, priceIncreaseDeclined, productUnavailable, other
    case unknown(String)

    public static let allCases: [Self] = [.cancelled, .billingError, .priceIncreaseDeclined, .productUnavailable, .other]

    public var rawValue: String {
        switch self {
        case .cancelled: "cancelled"
        case .billingError: "billing_error"
        case .priceIncreaseDeclined: "price_increase_declined"
        case .productUnavailable: "product_unavailable"
        case .other: "other"
        case .unknown(let value): value
        }
    }
}

/// Where a price increase stands: the user has not consented yet, or has.
public enum PriceIncrease: OpenVocabulary {
    case pending, accepted
    case unknown(String)

    public static let allCases: [Self] = [.pending, .accepted]

    public var rawValue: String {
        switch self {
        case .pending: "pending"
        case .accepted: "accepted"
        case .unknown(let value): value
        }
    }
}
