import PierCrypto
import PierHTTP
import PierJSON
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
        assignee, (extract(epoch FROM created_at) * 1000000)::bigint AS created_us
        """

    /// The item as its sender sees it, or with the team's fields when `admin`.
    static func item(_ row: PostgresRow, admin: Bool) throws -> FeedbackItem {
        // Most feedback has no metadata: no JSON to parse then.
        let metadata =
            try row.decode("metadata", as: String.self) == "{}"
            ? [:] : try row.decode("metadata", as: PostgresJSON<[String: JSONValue]>.self).value
        return FeedbackItem(
            id: try row.decode("id"), message: try row.decode("message"), rating: try row.decode("rating", as: Int?.self),
            category: FeedbackCategory(wire: try row.decode("category")), status: FeedbackStatus(wire: try row.decode("status")),
            duplicateOf: try row.decode("duplicate_of", as: UUID?.self),
            appVersion: try row.decode("app_version", as: String?.self), build: try row.decode("build", as: String?.self),
            platform: try row.decode("platform", as: String?.self).map(Platform.init(wire:)),
            osVersion: try row.decode("os_version", as: String?.self),
            device: try row.decode("device", as: String?.self), locale: try row.decode("locale", as: String?.self),
            requestIds: try row.decode("request_ids", as: PostgresTextArray.self).values, metadata: metadata,
            createdAt: try row.decode("created_at"), updatedAt: try row.decode("updated_at"),
            userId: admin ? try row.decode("user_id", as: UUID?.self) : nil,
            name: admin ? try row.decode("name", as: String?.self) : nil,
            email: admin ? try row.decode("email", as: String?.self) : nil,
            moderation: admin ? Moderation(wire: try row.decode("moderation")) : nil,
            tags: admin ? try row.decode("tags", as: PostgresTextArray.self).values : nil,
            internalNote: admin ? try row.decode("internal_note", as: String?.self) : nil,
            assignee: admin ? try row.decode("assignee", as: UUID?.self) : nil,
            history: nil)
    }

    /// Where each column of ``columns`` sits in a result: found once per result, not per cell.
    struct Positions {
        let id, message, rating, category, status, duplicateOf, appVersion, build, platform, osVersion, device, locale: Int
        let requestIds, metadata, createdAt, updatedAt, userId, name, email, moderation, tags, internalNote, assignee: Int
        /// The members' names, taken once per result.
        let keys = FeedbackItem.Keys.shared

        init(_ columns: PostgresColumns) throws {
            func at(_ name: String) throws -> Int {
                guard let position = columns.position(of: name) else {
                    throw PostgresError(.decoding, message: "no column \(name) in the result")
                }
                return position
            }
            (id, message, rating, category) = (try at("id"), try at("message"), try at("rating"), try at("category"))
            (status, duplicateOf, appVersion) = (try at("status"), try at("duplicate_of"), try at("app_version"))
            (build, platform, osVersion, device) = (try at("build"), try at("platform"), try at("os_version"), try at("device"))
            (locale, requestIds, metadata) = (try at("locale"), try at("request_ids"), try at("metadata"))
            (createdAt, updatedAt, userId, name) = (try at("created_at"), try at("updated_at"), try at("user_id"), try at("name"))
            (email, moderation, tags, internalNote) = (
                try at("email"), try at("moderation"), try at("tags"), try at("internal_note")
            )
            assignee = try at("assignee")
        }
    }

    /// The item's JSON written straight from the row's cells, as ``item(_:admin:)`` followed by
    /// `FeedbackItem.write` would write it (FeedbackTests hold the two to the same bytes): text
    /// and ids copied with their escapes, numbers as their digits, times rearranged in place;
    /// only arrays and non-empty metadata are parsed.
    static func write(_ row: PostgresRow, _ at: Positions, admin: Bool, into writer: inout JSONWriter) throws {
        let keys = at.keys
        func text(_ key: JSONKey, _ column: Int, required: Bool = false) throws {
            try row.withBytes(column: column) { bytes throws in
                guard let bytes else {
                    if required { throw PostgresError(.decoding, message: "column \(column) is NULL") }
                    return
                }
                writer.member(key)
                writer.writeString(utf8: bytes)
            }
        }
        func time(_ key: JSONKey, _ column: Int) throws {
            writer.member(key)
            let written = row.withBytes(column: column) { bytes in bytes.map { writeTime($0, into: &writer) } ?? false }
            if !written { writer.write(try row.decode(column: column, as: Date.self)) }
        }
        func strings(_ key: JSONKey, _ column: Int) throws {
            writer.member(key)
            let empty = row.withBytes(column: column) { $0.map { $0.count == 2 && $0[0] == 0x7B && $0[1] == 0x7D } ?? false }
            if empty {
                writer.beginArray()
                writer.endArray()
            } else {
                writer.write(try row.decode(column: column, as: PostgresTextArray.self).values)
            }
        }
        writer.beginObject()
        try text(keys.appVersion, at.appVersion)
        if admin { try text(keys.assignee, at.assignee) }
        try text(keys.build, at.build)
        try text(keys.category, at.category, required: true)
        try time(keys.createdAt, at.createdAt)
        try text(keys.device, at.device)
        try text(keys.duplicateOf, at.duplicateOf)
        if admin { try text(keys.email, at.email) }
        try text(keys.id, at.id, required: true)
        if admin { try text(keys.internalNote, at.internalNote) }
        try text(keys.locale, at.locale)
        try text(keys.message, at.message, required: true)
        writer.member(keys.metadata)
        let emptyMetadata = row.withBytes(column: at.metadata) { $0.map { $0.count == 2 && $0[0] == 0x7B && $0[1] == 0x7D } }
        if emptyMetadata ?? false {
            writer.beginObject()
            writer.endObject()
        } else {
            writer.write(try row.decode(column: at.metadata, as: PostgresJSON<[String: JSONValue]>.self).value)
        }
        if admin { try text(keys.moderation, at.moderation, required: true) }
        if admin { try text(keys.name, at.name) }
        try text(keys.osVersion, at.osVersion)
        try text(keys.platform, at.platform)
        row.withBytes(column: at.rating) { bytes in
            if let bytes {
                writer.member(keys.rating)
                writer.writeRaw(bytes)
            }
        }
        try strings(keys.requestIds, at.requestIds)
        try text(keys.status, at.status, required: true)
        if admin { try strings(keys.tags, at.tags) }
        try time(keys.updatedAt, at.updatedAt)
        if admin { try text(keys.userId, at.userId) }
        writer.endObject()
    }

    /// `2026-12-01 22:03:50.069123+00` (a UTC timestamptz as connections read it) written as
    /// `"2026-12-01T22:03:50Z"`; false, nothing written, for any other shape.
    static func writeTime(_ bytes: UnsafeBufferPointer<UInt8>, into writer: inout JSONWriter) -> Bool {
        func digits(_ range: Range<Int>) -> Bool { range.allSatisfy { bytes[$0] >= 0x30 && bytes[$0] <= 0x39 } }
        guard bytes.count >= 22, digits(0..<4), bytes[4] == 0x2D, digits(5..<7), bytes[7] == 0x2D, digits(8..<10),
            bytes[10] == 0x20, digits(11..<13), bytes[13] == 0x3A, digits(14..<16), bytes[16] == 0x3A, digits(17..<19)
        else { return false }
        var end = 19
        if bytes[end] == 0x2E {
            end += 1
            while end < bytes.count, bytes[end] >= 0x30, bytes[end] <= 0x39 { end += 1 }
        }
        guard end + 3 == bytes.count, bytes[end] == 0x2B, bytes[end + 1] == 0x30, bytes[end + 2] == 0x30 else { return false }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 22) { text in
            text[0] = 0x22
            for index in 0..<19 { text[index + 1] = bytes[index] }
            text[11] = UInt8(ascii: "T")
            text[20] = UInt8(ascii: "Z")
            text[21] = 0x22
            writer.writeRaw(UnsafeBufferPointer(text))
        }
        return true
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

    /// - Parameters: `limit` and `cursor` as the endpoint's parameters were read (the limit
    ///   checked against its declaration).
    init(limit: Int?, cursor: String?) throws(HTTPError) {
        self.limit = limit ?? 20
        self.cursor = try cursor.map { text throws(HTTPError) in try PageCursor(text) }
    }

    /// The page of `rows` (fetched with `limit + 1`) as JSON, written row by row: no item is
    /// built on the way.
    func write(_ rows: [PostgresRow], admin: Bool, total: Int?, into writer: inout JSONWriter) throws {
        writer.beginObject()
        writer.member(FeedbackPage.Keys.items)
        writer.beginArray()
        if let first = rows.first {
            let positions = try FeedbackRows.Positions(first.columns)
            for row in rows.prefix(limit) {
                writer.element()
                try FeedbackRows.write(row, positions, admin: admin, into: &writer)
            }
        }
        writer.endArray()
        if rows.count > limit {
            writer.member(FeedbackPage.Keys.nextCursor, try FeedbackRows.cursor(after: rows[limit - 1]).encoded)
        }
        writer.member(FeedbackPage.Keys.total, ifPresent: total)
        writer.endObject()
    }

    /// The page of `rows` (fetched with `limit + 1`) and the cursor of the next one.
    func page(_ rows: [PostgresRow], admin: Bool) throws -> FeedbackPage {
        let items = try rows.prefix(limit).map { try FeedbackRows.item($0, admin: admin) }
        let next = rows.count > limit ? try FeedbackRows.cursor(after: rows[limit - 1]).encoded : nil
        return FeedbackPage(items: items, nextCursor: next, total: nil)
    }
}
