#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `POST /feedback`.
public struct CreateFeedback: Codable, Sendable, StrictDecodable {
    /// A client-generated id: a retry with the same id creates nothing new.
    public var id: UUID?
    public var message: String
    public var rating: Int?
    public var category: String?
    /// A reply address, kept for anonymous senders only.
    public var email: String?
    public var appVersion: String?
    public var build: String?
    public var platform: String?
    public var osVersion: String?
    public var device: String?
    public var locale: String?
    /// `X-Request-ID`s of calls that failed for the user.
    public var requestIds: [String]?
    /// A flat object of string or number values.
    public var metadata: [String: JSONValue]?

    public init(
        id: UUID? = nil, message: String, rating: Int? = nil, category: String? = nil, email: String? = nil,
        appVersion: String? = nil, build: String? = nil, platform: String? = nil, osVersion: String? = nil,
        device: String? = nil, locale: String? = nil, requestIds: [String]? = nil, metadata: [String: JSONValue]? = nil
    ) {
        self.id = id
        self.message = message
        self.rating = rating
        self.category = category
        self.email = email
        self.appVersion = appVersion
        self.build = build
        self.platform = platform
        self.osVersion = osVersion
        self.device = device
        self.locale = locale
        self.requestIds = requestIds
        self.metadata = metadata
    }

    public static let fields: Set<String> = [
        "id", "message", "rating", "category", "email", "appVersion", "build", "platform", "osVersion", "device", "locale",
        "requestIds", "metadata",
    ]
}

/// One feedback item. The sender sees the public fields; admins also see who sent it, the
/// moderation state, tags, the internal note and the history.
public struct FeedbackItem: Codable, Sendable, Equatable {
    public var id: UUID
    public var message: String
    public var rating: Int?
    public var category: String
    public var status: String
    public var duplicateOf: UUID?
    public var appVersion: String?
    public var build: String?
    public var platform: String?
    public var osVersion: String?
    public var device: String?
    public var locale: String?
    public var requestIds: [String]
    public var metadata: [String: JSONValue]
    public var createdAt: Date
    public var updatedAt: Date
    // Admins only.
    public var userId: UUID?
    public var email: String?
    public var moderation: String?
    public var tags: [String]?
    public var internalNote: String?
    public var history: [FeedbackChange]?

    public init(
        id: UUID, message: String, rating: Int? = nil, category: String, status: String, duplicateOf: UUID? = nil,
        appVersion: String? = nil, build: String? = nil, platform: String? = nil, osVersion: String? = nil, device: String? = nil,
        locale: String? = nil, requestIds: [String], metadata: [String: JSONValue], createdAt: Date, updatedAt: Date,
        userId: UUID? = nil, email: String? = nil, moderation: String? = nil, tags: [String]? = nil, internalNote: String? = nil,
        history: [FeedbackChange]? = nil
    ) {
        self.id = id
        self.message = message
        self.rating = rating
        self.category = category
        self.status = status
        self.duplicateOf = duplicateOf
        self.appVersion = appVersion
        self.build = build
        self.platform = platform
        self.osVersion = osVersion
        self.device = device
        self.locale = locale
        self.requestIds = requestIds
        self.metadata = metadata
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.userId = userId
        self.email = email
        self.moderation = moderation
        self.tags = tags
        self.internalNote = internalNote
        self.history = history
    }
}

/// One admin change: who, when, and each field's old and new value.
public struct FeedbackChange: Codable, Sendable, Equatable {
    public var actor: UUID
    public var changedAt: Date
    public var changes: [String: FieldChange]

    public struct FieldChange: Codable, Sendable, Equatable {
        public var from: JSONValue
        public var to: JSONValue

        public init(from: JSONValue, to: JSONValue) {
            self.from = from
            self.to = to
        }
    }

    public init(actor: UUID, changedAt: Date, changes: [String: FieldChange]) {
        self.actor = actor
        self.changedAt = changedAt
        self.changes = changes
    }
}

/// A page of items, newest first; `nextCursor` fetches the next page.
public struct FeedbackPage: Codable, Sendable {
    public var items: [FeedbackItem]
    public var nextCursor: String?
    /// The number of items matching the filter, when asked for (`includeTotal=true`).
    public var total: Int?

    public init(items: [FeedbackItem], nextCursor: String? = nil, total: Int? = nil) {
        self.items = items
        self.nextCursor = nextCursor
        self.total = total
    }
}

/// `PATCH /feedback/{id}` (admins).
public struct UpdateFeedback: Codable, Sendable, StrictDecodable {
    public var status: String?
    public var duplicateOf: UUID?
    public var tags: [String]?
    /// An empty string removes the note.
    public var internalNote: String?
    /// `approved` or `rejected`.
    public var moderation: String?

    public init(
        status: String? = nil, duplicateOf: UUID? = nil, tags: [String]? = nil, internalNote: String? = nil,
        moderation: String? = nil
    ) {
        self.status = status
        self.duplicateOf = duplicateOf
        self.tags = tags
        self.internalNote = internalNote
        self.moderation = moderation
    }

    public static let fields: Set<String> = ["status", "duplicateOf", "tags", "internalNote", "moderation"]
}

/// `GET /feedback/stats`.
public struct FeedbackStats: Codable, Sendable {
    public var from: Date?
    public var to: Date?
    public var total: Int
    public var byStatus: [String: Int]
    public var byCategory: [String: Int]
    public var byPlatform: [String: Int]
    public var ratingByAppVersion: [AppVersionRating]

    public struct AppVersionRating: Codable, Sendable {
        public var appVersion: String?
        public var averageRating: Double?
        public var ratings: Int

        public init(appVersion: String? = nil, averageRating: Double? = nil, ratings: Int) {
            self.appVersion = appVersion
            self.averageRating = averageRating
            self.ratings = ratings
        }
    }

    public init(
        from: Date? = nil, to: Date? = nil, total: Int, byStatus: [String: Int], byCategory: [String: Int],
        byPlatform: [String: Int], ratingByAppVersion: [AppVersionRating]
    ) {
        self.from = from
        self.to = to
        self.total = total
        self.byStatus = byStatus
        self.byCategory = byCategory
        self.byPlatform = byPlatform
        self.ratingByAppVersion = ratingByAppVersion
    }
}
