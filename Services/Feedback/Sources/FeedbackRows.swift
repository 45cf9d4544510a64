import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The columns every item query selects, and how a row becomes an item.
enum FeedbackRows {
    static let columns = """
        id, message, rating, category, status, duplicate_of, app_version, build, platform, os_version, device, locale,
        request_ids, metadata::text AS metadata, created_at, updated_at, user_id, name, email, moderation, tags, internal_note,
        (extract(epoch FROM created_at) * 1000000)::bigint AS created_us
        """

    /// The item as its sender sees it, or with the team's fields when `admin`.
    static func item(_ row: PostgresRow, admin: Bool) throws -> FeedbackItem {
        // Most feedback has no metadata: no JSON to parse then.
        let metadata =
            try row.decode("metadata", as: String.self) == "{}"
            ? [:] : try row.decode("metadata", as: PostgresJSON<[String: JSONValue]>.self).value
        return FeedbackItem(
            id: try row.decode("id"), message: try row.decode("message"), rating: try row.decode("rating", as: Int?.self),
            category: try row.decode("category"), status: try row.decode("status"),
            duplicateOf: try row.decode("duplicate_of", as: UUID?.self),
            appVersion: try row.decode("app_version", as: String?.self), build: try row.decode("build", as: String?.self),
            platform: try row.decode("platform", as: String?.self), osVersion: try row.decode("os_version", as: String?.self),
            device: try row.decode("device", as: String?.self), locale: try row.decode("locale", as: String?.self),
            requestIds: try row.decode("request_ids", as: PostgresTextArray.self).values, metadata: metadata,
            createdAt: try row.decode("created_at"), updatedAt: try row.decode("updated_at"),
            userId: admin ? try row.decode("user_id", as: UUID?.self) : nil,
            name: admin ? try row.decode("name", as: String?.self) : nil,
            email: admin ? try row.decode("email", as: String?.self) : nil,
            moderation: admin ? try row.decode("moderation", as: String.self) : nil,
            tags: admin ? try row.decode("tags", as: PostgresTextArray.self).values : nil,
            internalNote: admin ? try row.decode("internal_note", as: String?.self) : nil,
            history: nil)
    }

    static func cursor(after row: PostgresRow) throws -> PageCursor {
        PageCursor(micros: try row.decode("created_us", as: Int64.self), id: try row.decode("id", as: UUID.self))
    }
}

/// Where a page ends: the (created_at, id) of its last item, newest first. Opaque to clients.
struct PageCursor: Sendable {
    let micros: Int64
    let id: UUID

    var encoded: String { Base64.urlEncoded(Array("v1:\(micros):\(id.text())".utf8)) }

    init(micros: Int64, id: UUID) {
        self.micros = micros
        self.id = id
    }

    init(_ text: String) throws(HTTPError) {
        guard let bytes = Base64.urlDecoded(text) else { throw .invalid("cursor", "is not a cursor from this API") }
        let parts = String(decoding: bytes, as: UTF8.self).split(separator: ":")
        // Bounded like every stored time (1970 to 9999): a forged cursor with a huge number
        // must not reach PostgreSQL's interval arithmetic, which would overflow.
        guard parts.count == 3, parts[0] == "v1", let micros = Int64(parts[1]), (0...253_402_300_799_999_999).contains(micros),
            let id = UUID(text: String(parts[2]))
        else { throw .invalid("cursor", "is not a cursor from this API") }
        self.micros = micros
        self.id = id
    }

    /// `AND (created_at, id) < (…)`: the rows after this cursor, newest first.
    var condition: PostgresQuery {
        " AND (created_at, id) < (timestamptz 'epoch' + \(micros)::bigint * interval '1 microsecond', \(id))"
    }
}

/// `limit` (1–100, default 20) and `cursor` from the query string.
struct PageRequest: Sendable {
    let limit: Int
    let cursor: PageCursor?

    init(_ request: Request) throws(HTTPError) {
        if let text = request.query("limit") {
            guard let value = Int(text), (1...100).contains(value) else {
                throw .invalid("limit", "must be an integer from 1 to 100")
            }
            limit = value
        } else {
            limit = 20
        }
        cursor = try request.query("cursor").map { text throws(HTTPError) in try PageCursor(text) }
    }

    /// The page of `rows` (fetched with `limit + 1`) and the cursor of the next one.
    func page(_ rows: [PostgresRow], admin: Bool) throws -> FeedbackPage {
        let items = try rows.prefix(limit).map { try FeedbackRows.item($0, admin: admin) }
        let next = rows.count > limit ? try FeedbackRows.cursor(after: rows[limit - 1]).encoded : nil
        return FeedbackPage(items: items, nextCursor: next, total: nil)
    }
}
