import PierEvents
import PierJSON
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The statements of the feedback items and their history, on whatever it is given: the pool
/// for a read, a use case's transaction for a change. Answers in the domain's terms, never an
/// HTTP error.
struct FeedbackItems: Sendable {
    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    // MARK: - Intake

    /// Stores new items and their `feedback.created` events in one statement (announced by the
    /// caller once it committed) and returns each item as its sender sees it, by id. The rows
    /// travel as one JSON array, so a batch of any size is one prepared statement; they share
    /// the transaction's `created_at` (pages order by it, then by id). A
    /// submission whose id an item has already is left out (absent from the answer).
    func insert(_ submissions: [FeedbackIntake.Submission]) async throws -> [UUID: FeedbackItem] {
        let rows = try await database.query(
            """
            WITH item AS (
                INSERT INTO feedback.items (id, user_id, name, email, message, rating, category, app_version, build, platform,
                    os_version, device, locale, request_ids, metadata, moderation, client_address)
                SELECT id, user_id, name, email, message, rating, category, app_version, build, platform,
                    os_version, device, locale, coalesce(request_ids, '{}'), coalesce(metadata, '{}'), moderation, client_address
                FROM jsonb_to_recordset(\(Self.json(submissions))::jsonb) AS given(
                    id uuid, user_id uuid, name text, email text, message text, rating smallint, category text,
                    app_version text, build text, platform text, os_version text, device text, locale text,
                    request_ids text[], metadata jsonb, moderation text, client_address text)
                -- Inserted in one order by every batch: two batches that meet on two ids cannot each
                -- wait for the other's (a batch waits only for ids after those it holds).
                ORDER BY id
                ON CONFLICT (id) DO NOTHING
                RETURNING \(unsafeSQL: FeedbackRows.columns)
            ), event AS (
                INSERT INTO events.events (type, payload)
                SELECT \(FeedbackCreated.type), jsonb_build_object(
                    'feedbackId', id, 'userId', user_id, 'message', message, 'rating', rating, 'category', category,
                    'platform', platform, 'appVersion', app_version, 'moderation', moderation,
                    'createdAt', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                FROM item
            )
            SELECT * FROM item
            """)
        var items: [UUID: FeedbackItem] = [:]
        items.reserveCapacity(rows.count)
        for row in rows {
            let item = try FeedbackRows.item(row, admin: false)
            items[item.id] = item
        }
        return items
    }

    private static let keys = (
        id: JSONKey("id"), userID: JSONKey("user_id"), name: JSONKey("name"), email: JSONKey("email"),
        message: JSONKey("message"), rating: JSONKey("rating"), category: JSONKey("category"),
        appVersion: JSONKey("app_version"), build: JSONKey("build"), platform: JSONKey("platform"),
        osVersion: JSONKey("os_version"), device: JSONKey("device"), locale: JSONKey("locale"),
        requestIDs: JSONKey("request_ids"), metadata: JSONKey("metadata"), moderation: JSONKey("moderation"),
        clientAddress: JSONKey("client_address")
    )

    /// The rows to insert as a JSON array of objects named as the columns (absent: NULL).
    private static func json(_ submissions: [FeedbackIntake.Submission]) -> String {
        var writer = JSONWriter(capacity: 256 * submissions.count)
        writer.beginArray()
        for submission in submissions {
            let feedback = submission.feedback
            writer.element()
            writer.beginObject()
            writer.member(keys.id, submission.id)
            writer.member(keys.userID, ifPresent: submission.userID)
            writer.member(keys.name, ifPresent: feedback.name)
            writer.member(keys.email, ifPresent: feedback.email)
            writer.member(keys.message, feedback.message)
            writer.member(keys.rating, ifPresent: feedback.rating)
            writer.member(keys.category, feedback.category)
            writer.member(keys.appVersion, ifPresent: feedback.appVersion)
            writer.member(keys.build, ifPresent: feedback.build)
            writer.member(keys.platform, ifPresent: feedback.platform)
            writer.member(keys.osVersion, ifPresent: feedback.osVersion)
            writer.member(keys.device, ifPresent: feedback.device)
            writer.member(keys.locale, ifPresent: feedback.locale)
            if !feedback.requestIds.isEmpty { writer.member(keys.requestIDs, feedback.requestIds) }
            if !feedback.metadata.isEmpty { writer.member(keys.metadata, JSONValue.object(feedback.metadata)) }
            writer.member(keys.moderation, submission.moderation.rawValue)
            writer.member(keys.clientAddress, submission.clientAddress)
            writer.endObject()
        }
        writer.endArray()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    // MARK: - Reading

    /// A sender's own items, newest first.
    func page(of user: UUID, _ page: PageRequest) async throws -> FeedbackPage {
        try page.page(try await rows(where: "WHERE user_id = \(user)", after: page.cursor, limit: page.limit + 1), admin: false)
    }

    /// Every item of a sender, newest first (their export).
    func all(of user: UUID) async throws -> [FeedbackItem] {
        try await rows(where: "WHERE user_id = \(user)", after: nil, limit: 100_000).map {
            try FeedbackRows.item($0, admin: false)
        }
    }

    /// The items `filter` selects, newest first, with the team's fields.
    func page(matching filter: FeedbackFilter, _ page: PageRequest) async throws -> FeedbackPage {
        try page.page(try await pageRows(matching: filter, page), admin: true)
    }

    /// The rows of that page (one more than its limit: the next page's start), for writing
    /// them as JSON without building items.
    func pageRows(matching filter: FeedbackFilter, _ page: PageRequest) async throws -> [PostgresRow] {
        try await rows(where: filter.condition, after: page.cursor, limit: page.limit + 1)
    }

    /// A batch of the export, as rows, and where the next starts.
    func batchRows(matching filter: FeedbackFilter, after cursor: PageCursor?, count: Int) async throws -> Batch<PostgresRow> {
        let rows = try await rows(where: filter.condition, after: cursor, limit: count)
        return Batch(elements: rows, next: try rows.count == count ? rows.last.map(FeedbackRows.cursor(after:)) : nil)
    }

    /// Some of a list, and where the next part starts (nil at the end).
    struct Batch<Element: Sendable>: Sendable {
        var elements: [Element]
        var next: PageCursor?
    }

    /// Items newest first: the one query behind pages and export batches.
    private func rows(where condition: PostgresQuery, after cursor: PageCursor?, limit: Int) async throws -> [PostgresRow] {
        var query: PostgresQuery = "SELECT \(unsafeSQL: FeedbackRows.columns) FROM feedback.items "
        query.append(condition)
        if let cursor { query.append(cursor.condition) }
        query.append(" ORDER BY created_at DESC, id DESC LIMIT \(limit)")
        return try await database.query(query)
    }

    /// How far `includeTotal` counts: a larger total is said as this many.
    static let countCap = 10_000

    func count(matching filter: FeedbackFilter) async throws -> Int {
        // Counted up to the cap: a count of a million rows would cost more than the page.
        var query: PostgresQuery = "SELECT count(*)::int AS total FROM (SELECT 1 FROM feedback.items "
        query.append(filter.condition)
        query.append(" LIMIT \(Self.countCap)) AS matching")
        return try await database.query(query)[0].decode("total", as: Int.self)
    }

    /// One item (with the team's fields for `admin`) and who sent it.
    func item(_ id: UUID, admin: Bool) async throws -> Owned? {
        let rows = try await database.query("SELECT \(unsafeSQL: FeedbackRows.columns) FROM feedback.items WHERE id = \(id)")
        guard let row = rows.first else { return nil }
        return Owned(value: try FeedbackRows.item(row, admin: admin), owner: try row.decode("user_id", as: UUID?.self))
    }

    /// An item and who sent it (nil: anonymous, or an account since deleted).
    struct Owned: Sendable {
        var value: FeedbackItem
        var owner: UUID?
    }

    func exists(_ id: UUID) async throws -> Bool {
        !(try await database.query("SELECT 1 FROM feedback.items WHERE id = \(id)")).isEmpty
    }

    /// Every recorded change of an item, oldest first.
    func history(of id: UUID) async throws -> [FeedbackChange] {
        let rows = try await database.query(
            "SELECT actor, changed_at, changes::text AS changes FROM feedback.history WHERE item_id = \(id) ORDER BY id")
        return try rows.map { row in
            FeedbackChange(
                actor: try row.decode("actor"), changedAt: try row.decode("changed_at"),
                changes: try row.decode("changes", as: PostgresJSON<[String: FeedbackChange.FieldChange]>.self).value)
        }
    }

    /// Up to `count` items after `cursor`, and the cursor of the next batch (nil at the end).
    func batch(matching filter: FeedbackFilter, after cursor: PageCursor?, count: Int) async throws -> Batch<FeedbackItem> {
        let rows = try await batchRows(matching: filter, after: cursor, count: count)
        return Batch(elements: try rows.elements.map { try FeedbackRows.item($0, admin: true) }, next: rows.next)
    }

    // MARK: - Triage

    /// What the team may change of an item, as stored.
    struct Triage: Sendable {
        var status: FeedbackStatus
        var duplicateOf: UUID?
        var tags: [String]
        var internalNote: String?
        var moderation: Moderation
        var assignee: UUID?
        /// The signed-in sender (not changed by triage).
        var sender: UUID? = nil
    }

    /// The item's triage fields, its row locked until the transaction ends (nil: no such item).
    func lockTriage(of id: UUID) async throws -> Triage? {
        let rows = try await database.query(
            """
            SELECT status, duplicate_of, tags, internal_note, moderation, assignee, user_id FROM feedback.items
            WHERE id = \(id) FOR UPDATE
            """
        )
        guard let row = rows.first else { return nil }
        guard let status = FeedbackStatus(rawValue: try row.decode("status")),
            let moderation = Moderation(rawValue: try row.decode("moderation"))
        else {
            throw PostgresError(.decoding, message: "feedback.items \(id) holds a status or moderation outside the vocabulary")
        }
        return Triage(
            status: status, duplicateOf: try row.decode("duplicate_of", as: UUID?.self),
            tags: try row.decode("tags", as: PostgresTextArray.self).values,
            internalNote: try row.decode("internal_note", as: String?.self), moderation: moderation,
            assignee: try row.decode("assignee", as: UUID?.self), sender: try row.decode("user_id", as: UUID?.self))
    }

    /// Stores `triage` and records `changes` by `actor` in the item's history.
    func save(
        _ triage: Triage, of id: UUID, changes: [String: FeedbackChange.FieldChange], actor: UUID
    ) async throws {
        try await database.execute(
            """
            UPDATE feedback.items SET updated_at = now(), status = \(triage.status.rawValue),
                duplicate_of = \(triage.duplicateOf), tags = \(PostgresTextArray(triage.tags))::text[],
                internal_note = \(triage.internalNote), moderation = \(triage.moderation.rawValue),
                assignee = \(triage.assignee)
            WHERE id = \(id)
            """)
        try await database.execute(
            "INSERT INTO feedback.history (item_id, actor, changes) VALUES (\(id), \(actor), \(PostgresJSON(changes))::jsonb)")
    }

    // MARK: - Deleted and merged accounts

    /// A merged account's feedback (and with it the replies) becomes the account's it went into.
    func move(from user: UUID, to into: UUID) async throws {
        try await database.execute("UPDATE feedback.items SET user_id = \(into), updated_at = now() WHERE user_id = \(user)")
    }

    /// The sender's feedback stays (the team still needs it) but no longer points to them, nor
    /// carries the name they gave.
    func anonymize(_ user: UUID) async throws {
        try await database.execute(
            "UPDATE feedback.items SET user_id = NULL, email = NULL, name = NULL, updated_at = now() WHERE user_id = \(user)")
    }
}
