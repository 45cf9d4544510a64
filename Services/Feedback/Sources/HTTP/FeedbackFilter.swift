import PierHTTP
import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The admin filters of `GET /feedback` and `GET /feedback/export`, from the query string.
struct FeedbackFilter: Sendable {
    var statuses: [String] = []
    var categories: [String] = []
    var platforms: [String] = []
    var ratingMin: Int?
    var ratingMax: Int?
    var createdFrom: Date?
    var createdTo: Date?
    var appVersion: String?
    /// The search's words as a `to_tsquery` text: each typed word a prefix (`crash:* & pay:*`).
    var text: String?
    /// The same words, matched as they are (word for word, accents aside).
    var words: [String] = []
    /// Items with every one of these tags.
    var tags: [String] = []
    /// One team member's items; `.some(nil)`: nobody's.
    var assignee: UUID??
    /// One account's items (the console's user page).
    var sender: UUID?
    /// nil: every moderation state; the default view shows approved items only.
    var moderation: String? = "approved"

    /// The filters of `query`, its kinds and ranges checked against their declarations already;
    /// the lists, dates, words and tags checked here.
    init(_ query: FeedbackQuery) throws(HTTPError) {
        var errors: [Problem.FieldError] = []
        func values(_ name: String, _ text: String?, _ allowed: Set<String>) -> [String] {
            guard let text else { return [] }
            let values = text.split(separator: ",").map(String.init)
            if values.isEmpty || !values.allSatisfy(allowed.contains) {
                errors.append(.init(field: name, message: "must be one or more of \(Vocabulary.list(allowed)), comma-separated"))
            }
            return values
        }
        func date(_ name: String, _ text: String?) -> Date? {
            guard let text else { return nil }
            guard let value = FeedbackFilter.parseDate(text) else {
                errors.append(.init(field: name, message: "must be an ISO 8601 date or date-time"))
                return nil
            }
            return value
        }
        statuses = values("status", query.status, Vocabulary.statuses)
        categories = values("category", query.category, Vocabulary.categories)
        platforms = values("platform", query.platform, Vocabulary.platforms)
        ratingMin = query.ratingMin
        ratingMax = query.ratingMax
        createdFrom = date("createdFrom", query.createdFrom)
        createdTo = date("createdTo", query.createdTo)
        appVersion = query.appVersion
        sender = query.userID
        if let q = query.text {
            if q.trimmingWhitespace().isEmpty {
                errors.append(.init(field: "q", message: "must be 1 to 200 characters"))
            } else if let prefixes = PostgresTextSearch.prefixQuery(q), let typed = PostgresTextSearch.words(q) {
                text = prefixes
                words = typed
            } else {
                errors.append(.init(field: "q", message: "must hold a letter or a digit"))
            }
        }
        if let given = query.tag {
            tags = given.split(separator: ",").map { $0.trimmingWhitespace().lowercased() }.filter { !$0.isEmpty }
            if tags.isEmpty || tags.count > 10 || tags.contains(where: { $0.unicodeScalars.count > 32 }) {
                errors.append(.init(field: "tag", message: "must be 1 to 10 tags of at most 32 characters, comma-separated"))
            }
        }
        if let given = query.assignee {
            if given == "none" {
                assignee = .some(nil)
            } else if let id = UUID(uuidString: given) {
                assignee = .some(id)
            } else {
                errors.append(.init(field: "assignee", message: "must be a team member's account id, or none"))
            }
        }
        // Checked against the declared set (pending, approved, rejected, all).
        if let value = query.moderation { moderation = value == "all" ? nil : value }
        guard errors.isEmpty else { throw .invalid(errors) }
    }

    /// `WHERE …` for these filters (always a valid clause).
    var condition: PostgresQuery {
        var query: PostgresQuery = "WHERE true"
        if !statuses.isEmpty { query.append(" AND status = ANY(\(PostgresTextArray(statuses))::text[])") }
        if !categories.isEmpty { query.append(" AND category = ANY(\(PostgresTextArray(categories))::text[])") }
        if !platforms.isEmpty { query.append(" AND platform = ANY(\(PostgresTextArray(platforms))::text[])") }
        if let ratingMin { query.append(" AND rating >= \(ratingMin)") }
        if let ratingMax { query.append(" AND rating <= \(ratingMax)") }
        if let createdFrom { query.append(" AND created_at >= \(createdFrom)") }
        if let createdTo { query.append(" AND created_at < \(createdTo)") }
        if let appVersion { query.append(" AND app_version = \(appVersion)") }
        if let sender { query.append(" AND user_id = \(sender)") }
        if let text {
            // Stemmed (English) or word for word: "crash" finds "crashes", "café" finds "cafe".
            query.append(" AND search @@ (to_tsquery('feedback.english', \(text)) || ")
            query.append(PostgresTextSearch.lexemes(words, normalize: "feedback.unaccent"))
            query.append(")")
        }
        if !tags.isEmpty { query.append(" AND tags @> \(PostgresTextArray(tags))::text[]") }
        if let assignee {
            if let assignee { query.append(" AND assignee = \(assignee)") } else { query.append(" AND assignee IS NULL") }
        }
        if let moderation { query.append(" AND moderation = \(moderation)") }
        return query
    }

    /// `2026-11-29`, `2026-11-29T10:00:00Z` or with an offset; impossible dates and years
    /// outside 0001–9999 are refused (``CivilDate/parse(_:)``).
    static func parseDate(_ text: String) -> Date? {
        CivilDate.parse(text).map { Date(timeIntervalSince1970: $0) }
    }
}
