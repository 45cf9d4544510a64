#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The feedback service's endpoints: intake from apps, a sender's own items, and the team's
/// triage, replies, counts and export.
public enum FeedbackAPI {
    /// Every one, as the API document lists them.
    public static let all: [EndpointDefinition] = [
        create.definition, mine.definition, item.definition, list.definition, update.definition, reply.definition,
        stats.definition, daily.definition, export.definition,
    ]

    /// `POST /feedback`: anonymous or signed in; a retry with the same `id` (or
    /// `Idempotency-Key`) stores nothing more and answers the stored item.
    public static let create = Endpoint<FeedbackSender, CreateFeedback, FeedbackItem>(
        "POST", "/feedback", access: .anyone, operation: "createFeedback",
        summary: "Send feedback (anonymous or signed in); safe to retry with its id", status: 201,
        answers: "Stored (or the original answer to a retry)", headers: ["Location", "Idempotent-Replayed"],
        problems: [.validationFailed, .idempotencyKeyReused, .rateLimited, .attestationRequired, .invalidAttestation],
        retryable: true)

    /// `GET /feedback/mine`: the caller's own items with the team's replies, newest first.
    public static let mine = Endpoint<PageQuery, NoBody, FeedbackPage>(
        "GET", "/feedback/mine", access: .signedIn, operation: "listMyFeedback",
        summary: "The caller's own feedback with the team's replies, newest first", answers: "A page",
        problems: [.validationFailed])

    /// `GET /feedback/{id}`: one item, for its sender or the team (with its history).
    public static let item = Endpoint<PathID, NoBody, FeedbackItem>(
        "GET", "/feedback/{id}", access: .signedIn, operation: "getFeedback",
        summary: "One item (its sender, or the team with its history)", answers: "The item", problems: [.notFound])

    /// `GET /feedback`: everyone's items, filtered, newest first (the team).
    public static let list = Endpoint<FeedbackQuery, NoBody, FeedbackPage>(
        "GET", "/feedback", access: .staff, operation: "listFeedback",
        summary: "Everyone's feedback, filtered, newest first (the team)", answers: "A page", problems: [.validationFailed])

    /// `PATCH /feedback/{id}`: triage (status, tags, internal note, moderation).
    public static let update = Endpoint<PathID, UpdateFeedback, FeedbackItem>(
        "PATCH", "/feedback/{id}", access: .staff, operation: "updateFeedback",
        summary: "Triage an item: status, tags, internal note, moderation, assignee (the team)",
        description:
            "`assignee` must be a team member's account (support or admin, as auth's events told feedback): any other id is 422 naming the field.",
        answers: "The item with its history", problems: [.validationFailed, .notFound, .conflict])

    /// `POST /feedback/{id}/replies`: a reply to the sender; a retry with its `id` answers the
    /// stored reply (200) instead of 201.
    public static let reply = Endpoint<PathID, CreateFeedbackReply, FeedbackReply>(
        "POST", "/feedback/{id}/replies", access: .staff, operation: "replyToFeedback",
        summary: "Reply to an item's sender, in their app and by mail (the team); safe to retry with its id",
        description:
            "The reply is stored with the item (the sender sees it in `GET /feedback/mine` and `GET /feedback/{id}`) and mailed: to a signed-in sender's address when it is verified and the account enabled, or to an anonymous sender's reply address (`delivery` says which; `none` when the sender cannot be reached). A retry with the same `id` answers 200 with the stored reply and mails nothing more; the same `id` with another item or text is 409.",
        status: 201, answers: "The reply, stored (200: the stored reply, to a retry)", also: [200],
        problems: [.validationFailed, .notFound, .conflict], retryable: true)

    /// `GET /feedback/stats`: counts by status, category and platform, ratings by app version.
    public static let stats = Endpoint<FeedbackStatsQuery, NoBody, FeedbackStats>(
        "GET", "/feedback/stats", access: .staff, operation: "getFeedbackStats",
        summary: "Counts by status, category and platform; ratings by app version (the team)",
        description:
            "Whole UTC days are read from a daily rollup (kept by the feedback worker every minute), the rest of the range (today, partial days at its edges, days triaged since their rollup) from the items, in one statement: exact, and as fast on a year of feedback as on a day.",
        answers: "Statistics", problems: [.validationFailed])

    /// `GET /feedback/stats/daily`: each UTC day of the last N, and the backlog now.
    public static let daily = Endpoint<FeedbackDailyQuery, NoBody, FeedbackDaily>(
        "GET", "/feedback/stats/daily", access: .staff, operation: "getFeedbackDaily",
        summary: "What came in each UTC day of the last N days, and the triage backlog now (the team)",
        description:
            "Each UTC day of the last `days` (today included): items, by category and by platform, ratings and their average; and now: items per status, open items (new, triaged, planned, in progress) and when the oldest came in. Read like `/feedback/stats`.",
        answers: "The days, oldest first, and the backlog", problems: [.validationFailed])

    /// `GET /feedback/export`: every item matching the filters, as NDJSON or CSV, streamed.
    public static let export = Endpoint<FeedbackExportQuery, NoBody, FileAnswer>(
        "GET", "/feedback/export", access: .staff, operation: "exportFeedback",
        summary: "Every item matching the filters as NDJSON or CSV, streamed (the team)", answers: "NDJSON or CSV",
        media: ["application/x-ndjson", "text/csv"], problems: [.validationFailed])
}

/// `POST /feedback`'s headers: where an anonymous sender's ids and keys live, and an
/// idempotency key for clients that do not choose the item's id.
public struct FeedbackSender: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [
        .header("Idempotency-Key", .string, "Makes a retry safe when the body carries no `id` (1 to 255 characters).").sized(
            1...255),
        .header(
            "X-Installation-ID", .string,
            "The app installation's id: an anonymous sender's ids and keys are its own (else its address's)."
        ).sized(1...128, pattern: "^[!-~]+$"),
        .header(
            "X-Installation-Token", .string,
            "App Attest's word for the installation (`POST /auth/app-attest/installation-token`): required of anonymous senders when PIER_FEEDBACK_APP_ATTEST=required; an attested installation's quota is its own."
        ).sized(1...4096),
    ]
    enum CodingKeys: String, CodingKey {
        case idempotencyKey = "Idempotency-Key"
        case installationID = "X-Installation-ID"
        case installationToken = "X-Installation-Token"
    }
    public var idempotencyKey: String?
    public var installationID: String?
    public var installationToken: String?

    public init(idempotencyKey: String? = nil, installationID: String? = nil, installationToken: String? = nil) {
        self.idempotencyKey = idempotencyKey
        self.installationID = installationID
        self.installationToken = installationToken
    }
}

/// The filters of `GET /feedback` (and of the export): every one that is set narrows the list.
public struct FeedbackQuery: EndpointParameters, Equatable {
    public static let declared: [Parameter] =
        filters + [
            .query("includeTotal", .boolean, "`true`: the page says how many items match in all, counted up to 10000.")
                .defaulting("false")
        ]
        + PageQuery.declared

    static let filters: [Parameter] = [
        .query("status", .string, "Statuses, comma-separated (`new,triaged`)."),
        .query("category", .string, "Categories, comma-separated."),
        .query("platform", .string, "Platforms, comma-separated."),
        .query("ratingMin", .integer, "The lowest rating, 1 to 5.").within(1...5),
        .query("ratingMax", .integer, "The highest rating, 1 to 5.").within(1...5),
        .query("createdFrom", .date, "Sent at or after (ISO 8601 date or date-time)."),
        .query("createdTo", .date, "Sent before (ISO 8601 date or date-time)."),
        .query("appVersion", .string, "One app version, exactly."),
        .query("userId", .uuid, "One account's items."),
        .query(
            "q", .string,
            "Words searched for in the message (stemmed: `crash` finds `crashes`), the sender's name and address and the tags; each word's start is enough (1 to 200 characters)."
        ).sized(1...200),
        .query("tag", .string, "Tags, comma-separated: items with every one."),
        .query("assignee", .string, "A team member's account id: the items assigned to them; `none`: to nobody."),
        .query("moderation", .string, "`pending`, `approved` (the default), `rejected` or `all`.").one(of: [
            "pending", "approved", "rejected", "all",
        ]),
    ]

    enum CodingKeys: String, CodingKey {
        case status, category, platform, ratingMin, ratingMax, createdFrom, createdTo, appVersion, tag, assignee, moderation
        case includeTotal, limit, cursor
        case userID = "userId"
        case text = "q"
    }

    public var status: String?
    public var category: String?
    public var platform: String?
    public var ratingMin: Int?
    public var ratingMax: Int?
    public var createdFrom: String?
    public var createdTo: String?
    public var appVersion: String?
    public var userID: UUID?
    /// Words searched for in the message, the name and the address.
    public var text: String?
    /// `pending`, `approved`, `rejected` or `all`.
    public var moderation: String?
    /// Tags, comma-separated (items with every one).
    public var tag: String?
    /// An account id, or `none`.
    public var assignee: String?
    public var includeTotal: Bool
    public var limit: Int?
    public var cursor: String?

    public init(
        status: String? = nil, category: String? = nil, platform: String? = nil, ratingMin: Int? = nil,
        ratingMax: Int? = nil, createdFrom: String? = nil, createdTo: String? = nil, appVersion: String? = nil,
        userID: UUID? = nil, text: String? = nil, moderation: String? = nil, tag: String? = nil, assignee: String? = nil,
        includeTotal: Bool = false, limit: Int? = nil, cursor: String? = nil
    ) {
        self.tag = tag
        self.assignee = assignee
        self.status = status
        self.category = category
        self.platform = platform
        self.ratingMin = ratingMin
        self.ratingMax = ratingMax
        self.createdFrom = createdFrom
        self.createdTo = createdTo
        self.appVersion = appVersion
        self.userID = userID
        self.text = text
        self.moderation = moderation
        self.includeTotal = includeTotal
        self.limit = limit
        self.cursor = cursor
    }

    var filterValues: [(String, String?)] {
        [
            ("status", status), ("category", category), ("platform", platform), ("ratingMin", ratingMin.map(String.init)),
            ("ratingMax", ratingMax.map(String.init)), ("createdFrom", createdFrom), ("createdTo", createdTo),
            ("appVersion", appVersion), ("userId", userID.map { $0.uuidString.lowercased() }), ("q", text),
            ("moderation", moderation), ("tag", tag), ("assignee", assignee),
        ]
    }
}

/// `GET /feedback/export`: the format and the list's filters.
public struct FeedbackExportQuery: EndpointParameters, Equatable {
    public static let declared: [Parameter] =
        [.query("format", .string, "`ndjson` (the default) or `csv`.").one(of: ["ndjson", "csv"])] + FeedbackQuery.filters

    public var format: String?
    public var filter: FeedbackQuery

    enum CodingKeys: String, CodingKey { case format }

    /// The format beside the list's filters, in one query.
    public init(from decoder: any Decoder) throws {
        format = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(String.self, forKey: .format)
        filter = try FeedbackQuery(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(format, forKey: .format)
        try filter.encode(to: encoder)
    }

    public init(format: String? = nil, filter: FeedbackQuery = FeedbackQuery()) {
        self.format = format
        self.filter = filter
    }
}

/// `GET /feedback/stats`: the range and moderation counted.
public struct FeedbackStatsQuery: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [
        .query("from", .date, "Counted from (ISO 8601 date or date-time)."),
        .query("to", .date, "Counted until (ISO 8601 date or date-time)."),
        .query("moderation", .string, "`pending`, `approved` or `rejected`; every state when absent.").one(of: [
            "pending", "approved", "rejected",
        ]),
    ]
    public var from: String?
    public var to: String?
    public var moderation: String?

    public init(from: String? = nil, to: String? = nil, moderation: String? = nil) {
        self.from = from
        self.to = to
        self.moderation = moderation
    }
}

/// `GET /feedback/stats/daily`: how many days, and the moderation counted.
public struct FeedbackDailyQuery: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [
        .query("days", .integer, "Days counted back from today, 1 to 366 (30 by default).").within(1...366, defaultValue: 30),
        .query("moderation", .string, "`pending`, `approved` or `rejected`; every state when absent.").one(of: [
            "pending", "approved", "rejected",
        ]),
    ]
    public var days: Int?
    public var moderation: String?

    public init(days: Int? = nil, moderation: String? = nil) {
        self.days = days
        self.moderation = moderation
    }
}
