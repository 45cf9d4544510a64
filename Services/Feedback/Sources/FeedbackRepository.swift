import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Every SQL statement of the feedback service and how its rows become wire types: the
/// controller asks in the domain's terms and gets the domain's answers (enums for outcomes),
/// never an HTTP error, and builds no SQL.
struct FeedbackRepository: Sendable {
    let database: PostgresPool

    // MARK: - Intake

    /// An item to store, with the idempotency key that guards it.
    struct Submission: Sendable {
        struct Idempotency: Sendable {
            /// Whose keys these are: a user's, an installation's or an address's.
            let scope: String
            let key: String
            let requestHash: PostgresBytes
        }

        var id: UUID
        let userID: UUID?
        let feedback: ValidFeedback
        let moderation: String
        let clientAddress: String
        let idempotency: Idempotency?
    }

    enum Stored: Sendable {
        /// Stored now; the body answered (and kept for replays).
        case created([UInt8], UUID)
        /// The key's earlier answer.
        case replayed([UInt8], UUID)
        case keyReused
        /// Over the sender's quota: retry after, limit, window (seconds).
        case overQuota(Int, Int, Int)
    }

    /// Stores `submission` once: a retry with its key answers what the first attempt answered,
    /// a reuse of the key with another body is refused. `admit` counts the attempt against the
    /// sender's quota once a replay is ruled out; `render` makes the body kept for replays.
    ///
    /// A client id that an item already has (another sender's: the sender's own retry is
    /// answered from its key first) meets the primary key; the statement (or the key's
    /// transaction) then changed nothing, and the item is stored again under a fresh id, so the
    /// answer is a 201 either way and says nothing of the other item.
    func store(
        _ submission: Submission, clientChoseID: Bool, admit: @escaping @Sendable () -> SenderQuota.Decision,
        render: @escaping @Sendable (FeedbackItem) throws -> [UInt8]
    ) async throws -> Stored {
        do {
            return try await attempt(submission, admit: admit, render: render)
        } catch let error as PostgresError where clientChoseID && error.isUniqueViolation && error.constraint == "items_pkey" {
            // The same sender sending its id again under another key: the first answer again.
            if let scope = submission.idempotency?.scope,
                let row = try await database.query(
                    "SELECT response FROM feedback.idempotency_keys WHERE scope = \(scope) AND item_id = \(submission.id) LIMIT 1"
                ).first
            {
                return .replayed(Array(try row.decode("response", as: String.self).utf8), submission.id)
            }
            // Another sender's id: theirs stays theirs, this one gets a new id.
            var fresh = submission
            fresh.id = UUID()
            // Counted already: the failed statement stored nothing.
            return try await attempt(fresh, admit: { .allowed }, render: render)
        }
    }

    private func attempt(
        _ submission: Submission, admit: @escaping @Sendable () -> SenderQuota.Decision,
        render: @escaping @Sendable (FeedbackItem) throws -> [UInt8]
    ) async throws -> Stored {
        let feedback = submission.feedback
        let insert: PostgresQuery = """
            INSERT INTO feedback.items (id, user_id, name, email, message, rating, category, app_version, build, platform,
                os_version, device, locale, request_ids, metadata, moderation, client_address)
            VALUES (\(submission.id), \(submission.userID), \(feedback.name), \(feedback.email), \(feedback.message), \(feedback.rating),
                \(feedback.category), \(feedback.appVersion), \(feedback.build), \(feedback.platform), \(feedback.osVersion),
                \(feedback.device), \(feedback.locale), \(PostgresTextArray(feedback.requestIds))::text[],
                \(PostgresJSON(feedback.metadata))::jsonb, \(submission.moderation), \(submission.clientAddress))
            RETURNING \(unsafeSQL: FeedbackRows.columns)
            """
        @Sendable func store(_ connection: PostgresConnection) async throws -> Stored {
            if case .refused(let seconds, let limit, let window) = admit() { return .overQuota(seconds, limit, window) }
            let rows = try await connection.query(insert)
            return .created(try render(try FeedbackRows.item(rows[0], admin: false)), submission.id)
        }
        guard let idempotency = submission.idempotency else {
            return try await database.withConnection(store)
        }
        let (scope, key) = (idempotency.scope, idempotency.key)
        return try await database.withTransaction { connection in
            // Concurrent requests with one key take turns: the first stores, the others replay.
            try await connection.execute("SELECT pg_advisory_xact_lock(hashtext(\("feedback-key:" + scope + ":" + key)))")
            let existing = try await connection.query(
                "SELECT request_hash, response, item_id FROM feedback.idempotency_keys WHERE scope = \(scope) AND key = \(key)")
            if let row = existing.first {
                guard try row.decode("request_hash", as: PostgresBytes.self) == idempotency.requestHash else { return .keyReused }
                return .replayed(Array(try row.decode("response", as: String.self).utf8), try row.decode("item_id"))
            }
            let result = try await store(connection)
            if case .created(let response, _) = result {
                try await connection.execute(
                    """
                    INSERT INTO feedback.idempotency_keys (scope, key, request_hash, item_id, response)
                    VALUES (\(scope), \(key), \(idempotency.requestHash), \(submission.id), \(String(decoding: response, as: UTF8.self)))
                    """)
            }
            return result
        }
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
        try page.page(try await rows(where: filter.condition, after: page.cursor, limit: page.limit + 1), admin: true)
    }

    /// Items newest first: the one query behind pages and export batches.
    private func rows(where condition: PostgresQuery, after cursor: PageCursor?, limit: Int) async throws -> [PostgresRow] {
        var query: PostgresQuery = "SELECT \(unsafeSQL: FeedbackRows.columns) FROM feedback.items "
        query.append(condition)
        if let cursor { query.append(cursor.condition) }
        query.append(" ORDER BY created_at DESC, id DESC LIMIT \(limit)")
        return try await database.query(query)
    }

    func count(matching filter: FeedbackFilter) async throws -> Int {
        var query: PostgresQuery = "SELECT count(*)::int AS total FROM feedback.items "
        query.append(filter.condition)
        return try await database.query(query)[0].decode("total", as: Int.self)
    }

    /// One item (with the team's fields for `admin`) and who sent it.
    func item(_ id: UUID, admin: Bool) async throws -> (value: FeedbackItem, owner: UUID?)? {
        let rows = try await database.query("SELECT \(unsafeSQL: FeedbackRows.columns) FROM feedback.items WHERE id = \(id)")
        guard let row = rows.first else { return nil }
        return (try FeedbackRows.item(row, admin: admin), try row.decode("user_id", as: UUID?.self))
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
    func batch(matching filter: FeedbackFilter, after cursor: PageCursor?, count: Int) async throws -> (
        [FeedbackItem], PageCursor?
    ) {
        let rows = try await rows(where: filter.condition, after: cursor, limit: count)
        let next = try rows.count == count ? rows.last.map(FeedbackRows.cursor(after:)) : nil
        return (try rows.map { try FeedbackRows.item($0, admin: true) }, next)
    }

    // MARK: - Triage

    /// new → triaged → planned → in_progress → done; closed or duplicate from any open state;
    /// closed and duplicate items can be reopened as triaged.
    static let transitions: [String: Set<String>] = [
        "new": ["triaged", "closed", "duplicate"],
        "triaged": ["planned", "closed", "duplicate"],
        "planned": ["in_progress", "closed", "duplicate"],
        "in_progress": ["done", "closed", "duplicate"],
        "done": [],
        "closed": ["triaged"],
        "duplicate": ["triaged"],
    ]

    enum Updated: Sendable {
        case updated
        case missing
        /// The workflow does not allow it; says why.
        case conflict(String)
        /// `duplicateOf` names no item.
        case unknownOriginal
    }

    /// Applies a checked patch under the item's row lock and records what changed (nothing
    /// recorded when nothing changed).
    func update(_ id: UUID, _ patch: UpdateFeedback, tags newTags: [String]?, actor: UUID) async throws -> Updated {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                "SELECT status, duplicate_of, tags, internal_note, moderation FROM feedback.items WHERE id = \(id) FOR UPDATE")
            guard let row = rows.first else { return .missing }
            var changes: [String: FeedbackChange.FieldChange] = [:]
            var update: PostgresQuery = "UPDATE feedback.items SET updated_at = now()"
            let status = try row.decode("status", as: String.self)
            if let next = patch.status, next != status {
                guard Self.transitions[status, default: []].contains(next) else {
                    return .conflict("Feedback cannot go from \(status) to \(next).")
                }
                if next == "duplicate", let original = patch.duplicateOf {
                    guard !(try await connection.query("SELECT 1 FROM feedback.items WHERE id = \(original)")).isEmpty else {
                        return .unknownOriginal
                    }
                    update.append(", duplicate_of = \(original)")
                    changes["duplicateOf"] = .init(from: .null, to: .string(original.text()))
                } else {
                    update.append(", duplicate_of = NULL")
                }
                update.append(", status = \(next)")
                changes["status"] = .init(from: .string(status), to: .string(next))
            }
            let oldTags = try row.decode("tags", as: PostgresTextArray.self).values
            if let tags = newTags, tags != oldTags {
                update.append(", tags = \(PostgresTextArray(tags))::text[]")
                changes["tags"] = .init(from: .array(oldTags.map(JSONValue.string)), to: .array(tags.map(JSONValue.string)))
            }
            let oldNote = try row.decode("internal_note", as: String?.self)
            if let note = patch.internalNote {
                let newNote = note.isEmpty ? nil : note
                if newNote != oldNote {
                    update.append(", internal_note = \(newNote)")
                    changes["internalNote"] = .init(
                        from: oldNote.map(JSONValue.string) ?? .null, to: newNote.map(JSONValue.string) ?? .null)
                }
            }
            let oldModeration = try row.decode("moderation", as: String.self)
            if let moderation = patch.moderation, moderation != oldModeration {
                update.append(", moderation = \(moderation)")
                changes["moderation"] = .init(from: .string(oldModeration), to: .string(moderation))
            }
            guard !changes.isEmpty else { return .updated }
            update.append(" WHERE id = \(id)")
            try await connection.execute(update)
            try await connection.execute(
                "INSERT INTO feedback.history (item_id, actor, changes) VALUES (\(id), \(actor), \(PostgresJSON(changes))::jsonb)"
            )
            return .updated
        }
    }

    // MARK: - Reports

    /// Counts by status, category and platform, and the average rating per app version, of the
    /// items created in [from, to).
    func stats(from: Date?, to: Date?) async throws -> FeedbackStats {
        let range: PostgresQuery =
            "WHERE created_at >= coalesce(\(from)::timestamptz, '-infinity') AND created_at < coalesce(\(to)::timestamptz, 'infinity')"
        return try await database.withConnection { connection -> FeedbackStats in
            func counts(_ column: String) async throws -> [String: Int] {
                var query: PostgresQuery =
                    "SELECT coalesce(\(unsafeSQL: column), 'unknown') AS key, count(*)::int AS n FROM feedback.items "
                query.append(range)
                query.append(" GROUP BY 1")
                var result: [String: Int] = [:]
                for row in try await connection.query(query) { result[try row.decode("key")] = try row.decode("n", as: Int.self) }
                return result
            }
            let byStatus = try await counts("status")
            var ratings: PostgresQuery = """
                SELECT app_version, round(avg(rating), 2)::float8 AS average, count(rating)::int AS n FROM feedback.items
                """
            ratings.append(" \(range)")
            ratings.append(" GROUP BY app_version ORDER BY app_version NULLS LAST")
            let byVersion = try await connection.query(ratings).map { row in
                FeedbackStats.AppVersionRating(
                    appVersion: try row.decode("app_version", as: String?.self),
                    averageRating: try row.decode("average", as: Double?.self),
                    ratings: try row.decode("n", as: Int.self))
            }
            let byCategory = try await counts("category")
            let byPlatform = try await counts("platform")
            return FeedbackStats(
                from: from, to: to, total: byStatus.values.reduce(0, +), byStatus: byStatus,
                byCategory: byCategory, byPlatform: byPlatform,
                ratingByAppVersion: byVersion)
        }
    }
}
