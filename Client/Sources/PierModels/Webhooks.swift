#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// An endpoint webhooks are sent to (`GET /auth/webhooks`, admins), as the settings configure
/// it, with how its deliveries stand. Its secrets are never shown: only how many sign.
public struct WebhookEndpoint: Codable, Sendable, Equatable {
    public var name: String
    public var url: String
    public var events: [String]
    /// 1, or 2 while a secret is rotated (every message is signed with each).
    public var secrets: Int
    /// Messages waiting for a first or a next attempt.
    public var pending: Int
    /// Messages given up after their last attempt (replayable).
    public var failed: Int
    public var lastDeliveredAt: Date?

    public init(
        name: String, url: String, events: [String], secrets: Int, pending: Int, failed: Int, lastDeliveredAt: Date?
    ) {
        self.name = name
        self.url = url
        self.events = events
        self.secrets = secrets
        self.pending = pending
        self.failed = failed
        self.lastDeliveredAt = lastDeliveredAt
    }
}

/// Where a delivery stands.
public enum WebhookDeliveryState: OpenVocabulary {
    case pending, delivered, failed
    case unknown(String)

    public static let allCases: [Self] = [.pending, .delivered, .failed]

    public var rawValue: String {
        switch self {
        case .pending: "pending"
        case .delivered: "delivered"
        case .failed: "failed"
        case .unknown(let value): value
        }
    }
}

/// One message to one endpoint and its attempts (`GET /auth/webhooks/deliveries`, admins).
public struct WebhookDelivery: Codable, Sendable, Equatable {
    public var id: Int
    /// The `webhook-id` header: the same on every attempt and replay of the message.
    public var messageId: String
    public var endpoint: String
    public var type: String
    /// What order is kept within: `user:<id>` or `feedback:<id>`.
    public var subject: String
    public var state: WebhookDeliveryState
    public var attempts: Int
    /// The next attempt of a pending delivery.
    public var nextAttemptAt: Date?
    public var lastAttemptAt: Date?
    /// The receiver's last status code, when it answered.
    public var lastStatus: Int?
    public var lastError: String?
    public var createdAt: Date
    public var deliveredAt: Date?
    /// The delivery this one replays.
    public var replayOf: Int?
    /// The body sent (one delivery's detail only).
    public var payload: JSONValue?

    public init(
        id: Int, messageId: String, endpoint: String, type: String, subject: String, state: WebhookDeliveryState,
        attempts: Int, nextAttemptAt: Date?, lastAttemptAt: Date?, lastStatus: Int?, lastError: String?, createdAt: Date,
        deliveredAt: Date?, replayOf: Int?, payload: JSONValue? = nil
    ) {
        self.id = id
        self.messageId = messageId
        self.endpoint = endpoint
        self.type = type
        self.subject = subject
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastAttemptAt = lastAttemptAt
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.createdAt = createdAt
        self.deliveredAt = deliveredAt
        self.replayOf = replayOf
        self.payload = payload
    }
}

/// A page of deliveries, newest first; `nextCursor` fetches the next.
public struct WebhookDeliveryPage: Codable, Sendable {
    public var items: [WebhookDelivery]
    public var nextCursor: String?

    public init(items: [WebhookDelivery], nextCursor: String?) {
        self.items = items
        self.nextCursor = nextCursor
    }
}
