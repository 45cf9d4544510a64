#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

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
    /// `grant`, `appstore.transaction`, `appstore.renewal`, `appstore.notification`,
    /// `googleplay.purchase` or `googleplay.notification`.
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
    /// Accounts whose Google Play subscription to the plan is current (active or cancelled and
    /// not expired, not voided).
    public var googlePlay: Int
    /// Of those (both stores), in an introductory offer (a free trial or an introductory price).
    public var introductoryOffer: Int
    /// Expired, still served in the store's billing grace period.
    public var gracePeriod: Int
    /// Expired, the store still trying to bill (no access; Google's account hold).
    public var billingRetry: Int
    /// Paused by the subscriber (Google Play; no access until it resumes).
    public var paused: Int
    /// Accounts with a current grant of the plan.
    public var grants: Int

    public init(
        planId: String, name: String, onSale: Bool, appStore: Int = 0, googlePlay: Int = 0, introductoryOffer: Int = 0,
        gracePeriod: Int = 0, billingRetry: Int = 0, paused: Int = 0, grants: Int = 0
    ) {
        self.googlePlay = googlePlay
        self.paused = paused
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
        /// The team's grants current at the end of the day (today: now), per plan id.
        public var granted: [String: Int]
        /// Paid periods that began that day right after an introductory offer (within 60 days of
        /// its end: Apple retries billing that long).
        public var conversions: Int
        /// Subscribers who turned auto-renew off that day (Apple's `DID_CHANGE_RENEWAL_STATUS`,
        /// `AUTO_RENEW_DISABLED`).
        public var cancellations: Int
        /// Periods refunded or revoked that day.
        public var refunds: Int

        public init(
            day: String, active: [String: Int] = [:], trials: [String: Int] = [:], granted: [String: Int] = [:],
            conversions: Int = 0, cancellations: Int = 0, refunds: Int = 0
        ) {
            self.day = day
            self.active = active
            self.trials = trials
            self.granted = granted
            self.conversions = conversions
            self.cancellations = cancellations
            self.refunds = refunds
        }
    }

    public init(days: [Day]) { self.days = days }
}
