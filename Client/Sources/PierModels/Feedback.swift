#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `POST /feedback`. `feedback` is accepted as another name of `message` (exactly one of the two).
public struct CreateFeedback: Codable, Sendable, StrictDecodable {
    /// A client-generated id: a retry with the same id creates nothing new.
    public var id: UUID?
    public var message: String
    /// The name the sender gave (shown to the team beside the account of a signed-in sender).
    public var name: String?
    public var rating: Int?
    public var category: String?
    /// A reply address, kept for anonymous senders only: a signed-in sender's replies go to the
    /// account's verified address.
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
        id: UUID? = nil, message: String, name: String? = nil, rating: Int? = nil, category: String? = nil, email: String? = nil,
        appVersion: String? = nil, build: String? = nil, platform: String? = nil, osVersion: String? = nil,
        device: String? = nil, locale: String? = nil, requestIds: [String]? = nil, metadata: [String: JSONValue]? = nil
    ) {
        self.id = id
        self.message = message
        self.name = name
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

    public static let required: [[String]] = [["message", "feedback"]]

    public enum CodingKeys: String, CodingKey {
        case id, message, feedback, name, rating, category, email, appVersion, build, platform, osVersion, device, locale
        case requestIds, metadata
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decodeIfPresent(UUID.self, forKey: .id)
        switch (
            try container.decodeIfPresent(String.self, forKey: .message),
            try container.decodeIfPresent(String.self, forKey: .feedback)
        ) {
        case (let text?, nil), (nil, let text?): message = text
        case (nil, nil):
            throw DecodingError.keyNotFound(
                CodingKeys.message, .init(codingPath: decoder.codingPath, debugDescription: "message (or feedback) is required"))
        case (_?, _?):
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath + [CodingKeys.feedback],
                    debugDescription: "must not be sent with message: it is another name for message"))
        }
        name = try container.decodeIfPresent(String.self, forKey: .name)
        rating = try container.decodeIfPresent(Int.self, forKey: .rating)
        category = try container.decodeIfPresent(String.self, forKey: .category)
        email = try container.decodeIfPresent(String.self, forKey: .email)
        appVersion = try container.decodeIfPresent(String.self, forKey: .appVersion)
        build = try container.decodeIfPresent(String.self, forKey: .build)
        platform = try container.decodeIfPresent(String.self, forKey: .platform)
        osVersion = try container.decodeIfPresent(String.self, forKey: .osVersion)
        device = try container.decodeIfPresent(String.self, forKey: .device)
        locale = try container.decodeIfPresent(String.self, forKey: .locale)
        requestIds = try container.decodeIfPresent([String].self, forKey: .requestIds)
        metadata = try container.decodeIfPresent([String: JSONValue].self, forKey: .metadata)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(id, forKey: .id)
        try container.encode(message, forKey: .message)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encodeIfPresent(rating, forKey: .rating)
        try container.encodeIfPresent(category, forKey: .category)
        try container.encodeIfPresent(email, forKey: .email)
        try container.encodeIfPresent(appVersion, forKey: .appVersion)
        try container.encodeIfPresent(build, forKey: .build)
        try container.encodeIfPresent(platform, forKey: .platform)
        try container.encodeIfPresent(osVersion, forKey: .osVersion)
        try container.encodeIfPresent(device, forKey: .device)
        try container.encodeIfPresent(locale, forKey: .locale)
        try container.encodeIfPresent(requestIds, forKey: .requestIds)
        try container.encodeIfPresent(metadata, forKey: .metadata)
    }
}

/// One feedback item. The sender sees the public fields; admins also see who sent it, the
/// moderation state, tags, the internal note and the history.
public struct FeedbackItem: Codable, Sendable, Equatable {
    public var id: UUID
    public var message: String
    public var rating: Int?
    public var category: FeedbackCategory
    public var status: FeedbackStatus
    public var duplicateOf: UUID?
    public var appVersion: String?
    public var build: String?
    public var platform: Platform?
    public var osVersion: String?
    public var device: String?
    public var locale: String?
    public var requestIds: [String]
    public var metadata: [String: JSONValue]
    public var createdAt: Date
    public var updatedAt: Date
    // Admins only.
    public var userId: UUID?
    /// The anonymous sender's name, when given.
    public var name: String?
    public var email: String?
    public var moderation: Moderation?
    public var tags: [String]?
    public var internalNote: String?
    /// The team member the item is assigned to (their account's id).
    public var assignee: UUID?
    public var history: [FeedbackChange]?
    /// The team's replies, oldest first (a sender's items and one item; not the team's lists).
    public var replies: [FeedbackReply]?
    /// The item's moves through the workflow, oldest first (the sender's view).
    public var statusChanges: [FeedbackStatusChange]?

    public init(
        id: UUID, message: String, rating: Int? = nil, category: FeedbackCategory, status: FeedbackStatus,
        duplicateOf: UUID? = nil, appVersion: String? = nil, build: String? = nil, platform: Platform? = nil,
        osVersion: String? = nil, device: String? = nil,
        locale: String? = nil, requestIds: [String], metadata: [String: JSONValue], createdAt: Date, updatedAt: Date,
        userId: UUID? = nil, name: String? = nil, email: String? = nil, moderation: Moderation? = nil, tags: [String]? = nil,
        internalNote: String? = nil, assignee: UUID? = nil,
        history: [FeedbackChange]? = nil, replies: [FeedbackReply]? = nil, statusChanges: [FeedbackStatusChange]? = nil
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
        self.name = name
        self.email = email
        self.moderation = moderation
        self.tags = tags
        self.internalNote = internalNote
        self.assignee = assignee
        self.history = history
        self.replies = replies
        self.statusChanges = statusChanges
    }
}

/// A reply of the team to a feedback item: shown to its sender with the item, and mailed to
/// them (a signed-in sender's verified address, an anonymous sender's reply address).
public struct FeedbackReply: Codable, Sendable, Equatable {
    public var id: UUID
    public var message: String
    public var createdAt: Date
    /// Who wrote it (the team's view only).
    public var authorId: UUID?
    /// Where it was sent (the team's view only): `account` (the sender's account, mailed when
    /// its address is verified), `address` (the anonymous sender's reply address), `none`.
    public var delivery: String?

    public init(id: UUID, message: String, createdAt: Date, authorId: UUID? = nil, delivery: String? = nil) {
        self.id = id
        self.message = message
        self.createdAt = createdAt
        self.authorId = authorId
        self.delivery = delivery
    }
}

/// The item reached `status` at `changedAt`.
public struct FeedbackStatusChange: Codable, Sendable, Equatable {
    public var status: FeedbackStatus
    public var changedAt: Date

    public init(status: FeedbackStatus, changedAt: Date) {
        self.status = status
        self.changedAt = changedAt
    }
}

/// `POST /feedback/{id}/replies` (staff). A retry with the same `id` creates and mails nothing
/// more.
public struct CreateFeedbackReply: Codable, Sendable, StrictDecodable {
    public var id: UUID?
    public var message: String

    public init(id: UUID? = nil, message: String) {
        self.id = id
        self.message = message
    }

    public static let required: [[String]] = [["message"]]
    public enum CodingKeys: String, CodingKey { case id, message }
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

/// A whole collection, in the envelope every list answer has (`{"items": [...]}`, like a page).
public struct ItemList<Item: Codable & Sendable>: Codable, Sendable {
    public var items: [Item]
    public init(_ items: [Item]) { self.items = items }
}

/// A page of items, newest first; `nextCursor` fetches the next page.
public struct FeedbackPage: Codable, Sendable {
    public var items: [FeedbackItem]
    public var nextCursor: String?
    /// The number of items matching the filter, when asked for (`includeTotal=true`), counted up
    /// to 10000 (10000 means at least as many).
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
    /// A team member's account id (support or admin; any other is 422 naming the field); an
    /// empty string unassigns.
    public var assignee: String?

    public init(
        status: String? = nil, duplicateOf: UUID? = nil, tags: [String]? = nil, internalNote: String? = nil,
        moderation: String? = nil, assignee: String? = nil
    ) {
        self.status = status
        self.duplicateOf = duplicateOf
        self.tags = tags
        self.internalNote = internalNote
        self.moderation = moderation
        self.assignee = assignee
    }

    public enum CodingKeys: String, CodingKey { case status, duplicateOf, tags, internalNote, moderation, assignee }
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

/// `GET /feedback/stats/daily` (staff): what came in each UTC day of a range, and the triage
/// backlog now.
public struct FeedbackDaily: Codable, Sendable, Equatable {
    public var days: [Day]
    /// Open items (new, triaged, planned, in progress) now, of the moderation asked for.
    public var open: Int
    /// When the oldest open item came in.
    public var oldestOpenAt: Date?
    /// Items now in each status, of the moderation asked for.
    public var byStatus: [String: Int]

    public struct Day: Codable, Sendable, Equatable {
        /// `YYYY-MM-DD`, UTC.
        public var day: String
        public var items: Int
        public var byCategory: [String: Int]
        public var byPlatform: [String: Int]
        public var ratings: Int
        public var averageRating: Double?

        public init(
            day: String, items: Int, byCategory: [String: Int], byPlatform: [String: Int], ratings: Int,
            averageRating: Double?
        ) {
            self.day = day
            self.items = items
            self.byCategory = byCategory
            self.byPlatform = byPlatform
            self.ratings = ratings
            self.averageRating = averageRating
        }
    }

    public init(days: [Day], open: Int, oldestOpenAt: Date?, byStatus: [String: Int]) {
        self.days = days
        self.open = open
        self.oldestOpenAt = oldestOpenAt
        self.byStatus = byStatus
    }
}
