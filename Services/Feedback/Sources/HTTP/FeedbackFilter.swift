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

    init(_ request: Request) throws(HTTPError) {
        var errors: [Problem.FieldError] = []
        func values(_ name: String, _ allowed: Set<String>) -> [String] {
            guard let text = request.query(name) else { return [] }
            let values = text.split(separator: ",").map(String.init)
            if values.isEmpty || !values.allSatisfy(allowed.contains) {
                errors.append(.init(field: name, message: "must be one or more of \(Vocabulary.list(allowed)), comma-separated"))
            }
            return values
        }
        func date(_ name: String) -> Date? {
            guard let text = request.query(name) else { return nil }
            guard let value = FeedbackFilter.parseDate(text) else {
                errors.append(.init(field: name, message: "must be an ISO 8601 date or date-time"))
                return nil
            }
            return value
        }
        statuses = values("status", Vocabulary.statuses)
        categories = values("category", Vocabulary.categories)
        platforms = values("platform", Vocabulary.platforms)
        ratingMin = request.query("ratingMin", in: 1...5, into: &errors)
        ratingMax = request.query("ratingMax", in: 1...5, into: &errors)
        createdFrom = date("createdFrom")
        createdTo = date("createdTo")
        appVersion = request.query("appVersion")
        if let user = request.query("userId") {
            sender = UUID(uuidString: user)
            if sender == nil { errors.append(.init(field: "userId", message: "must be an account id (a UUID)")) }
        }
        if let q = request.query("q") {
            if q.trimmingWhitespace().isEmpty || q.count > 200 {
                errors.append(.init(field: "q", message: "must be 1 to 200 characters"))
            } else if let prefixes = PostgresTextSearch.prefixQuery(q), let typed = PostgresTextSearch.words(q) {
                text = prefixes
                words = typed
            } else {
                errors.append(.init(field: "q", message: "must hold a letter or a digit"))
            }
        }
        if let given = request.query("tag") {
            tags = given.split(separator: ",").map { $0.trimmingWhitespace().lowercased() }.filter { !$0.isEmpty }
            if tags.isEmpty || tags.count > 10 || tags.contains(where: { $0.unicodeScalars.count > 32 }) {
                errors.append(.init(field: "tag", message: "must be 1 to 10 tags of at most 32 characters, comma-separated"))
            }
        }
        if let given = request.query("assignee") {
            if given == "none" {
                assignee = .some(nil)
            } else if let id = UUID(uuidString: given) {
                assignee = .some(id)
            } else {
                errors.append(.init(field: "assignee", message: "must be a team member's account id, or none"))
            }
        }
        if let value = request.query("moderation") {
            if value == "all" {
                moderation = nil
            } else if Vocabulary.moderation.contains(value) {
                moderation = value
            } else {
                errors.append(.init(field: "moderation", message: "must be pending, approved, rejected or all"))
            }
        }
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
