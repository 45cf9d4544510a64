import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The feedback endpoints of the HTTP contract.
struct FeedbackController: Sendable {
    let database: PostgresPool
    let configuration: FeedbackConfiguration
    let authenticator: Authenticator
    let quota: SenderQuota
    let logger: Logger

    func routes(into routes: inout Routes) {
        let router = Router<ServiceRequestContext>()
        let anyone = router.group(Authentication(authenticator, .optional))
        let signedIn = router.group(Authentication(authenticator, .required))
        let admins = router.group(Authentication(authenticator, .admin))
        anyone.post("/feedback") { try await self.create($0, $1) }
        signedIn.get("/feedback/mine") { try await self.mine($0, $1) }
        signedIn.get("/feedback/{id}") { try await self.item($0, $1) }
        admins.get("/feedback/stats") { try await self.stats($0, $1) }
        admins.get("/feedback/export") { try await self.export($0, $1) }
        admins.get("/feedback") { try await self.list($0, $1) }
        admins.patch("/feedback/{id}") { try await self.update($0, $1) }
        routes.merge(router.routes)
    }

    // MARK: - Intake

    private enum Created: Sendable {
        case created(String, UUID)
        case replayed(String, UUID)
        case keyReused
        case overQuota(Int, String)
    }

    func create(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let principal = context.principal
        let body = try request.decodeStrictly(CreateFeedback.self)
        let feedback = try ValidFeedback(body, anonymous: principal == nil)
        let key = try idempotencyKey(request, body)
        let scope = try principal.map { $0.userID.uuidString.lowercased() } ?? anonymousScope(request)
        let requestHash = PostgresBytes(SHA256.hash(request.body))
        // A client id that an item already has (another sender's: the sender's own retry is
        // answered from its idempotency key before anything is stored) meets the primary key;
        // the statement (or the key's transaction) then changed nothing, and the item is stored
        // again under a fresh id, so that the answer is a 201 either way and says nothing of the
        // other item.
        @Sendable func attempt(_ id: UUID, counting: Bool) async throws -> Created {
            let address = request.clientAddress
            let moderation = principal == nil && configuration.moderateAnonymous ? "pending" : "approved"
            let sender = principal.map { "user:" + $0.userID.uuidString.lowercased() } ?? "address:" + request.clientKey

            let store: PostgresQuery = """
                INSERT INTO feedback.items (id, user_id, email, message, rating, category, app_version, build, platform,
                    os_version, device, locale, request_ids, metadata, moderation, client_address)
                VALUES (\(id), \(principal?.userID), \(feedback.email), \(feedback.message), \(feedback.rating),
                    \(feedback.category), \(feedback.appVersion), \(feedback.build), \(feedback.platform), \(feedback.osVersion),
                    \(feedback.device), \(feedback.locale), \(PostgresTextArray(feedback.requestIds))::text[],
                    \(PostgresJSON(feedback.metadata))::jsonb, \(moderation), \(address))
                RETURNING \(unsafeSQL: FeedbackRows.columns)
                """
            // Counted in memory (see SenderQuota), only once a replay is ruled out.
            @Sendable func run(_ connection: PostgresConnection) throws -> Created {
                if counting, case .refused(let seconds, let limit) = quota.count(sender) { return .overQuota(seconds, limit) }
                let rows = try connection.query(store)
                return .created(
                    String(decoding: try JSON.encode(try FeedbackRows.item(rows[0], admin: false)), as: UTF8.self), id)
            }
            try await quota.prepare(sender)

            let outcome: Created
            if let key {
                outcome = try await database.withTransaction { connection in
                    // Concurrent requests with one key take turns: the first stores, the others replay.
                    try connection.execute("SELECT pg_advisory_xact_lock(hashtext(\("feedback-key:" + scope + ":" + key)))")
                    let existing = try connection.query(
                        """
                        SELECT request_hash, response, item_id FROM feedback.idempotency_keys WHERE scope = \(scope) AND key = \(key)
                        """)
                    if let row = existing.first {
                        guard try row.decode("request_hash", as: PostgresBytes.self) == requestHash else { return .keyReused }
                        return .replayed(try row.decode("response"), try row.decode("item_id"))
                    }
                    let result = try run(connection)
                    if case .created(let response, _) = result {
                        try connection.execute(
                            """
                            INSERT INTO feedback.idempotency_keys (scope, key, request_hash, item_id, response)
                            VALUES (\(scope), \(key), \(requestHash), \(id), \(response))
                            """)
                    }
                    return result
                }
            } else {
                outcome = try await database.withConnection { connection in try run(connection) }
            }
            return outcome
        }
        let outcome: Created
        do {
            outcome = try await attempt(body.id ?? UUID(), counting: true)
        } catch let error as PostgresError where body.id != nil && error.isUniqueViolation && error.constraint == "items_pkey" {
            outcome = try await attempt(UUID(), counting: false)
        }

        switch outcome {
        case .created(let body, let id):
            logger.info(
                "feedback received",
                [("feedback_id", .string(id.uuidString.lowercased())), ("request_id", .string(request.requestID))])
            return created(body, id: id, replayed: false)
        case .replayed(let body, let id):
            return created(body, id: id, replayed: true)
        case .keyReused:
            throw HTTPError.invalid("Idempotency-Key", "was already used with a different request body")
        case .overQuota(let seconds, let limit):
            throw HTTPError.tooManyRequests(
                retryAfter: seconds, "Too much feedback from one sender (\(limit)); try again in \(max(1, seconds)) s.")
        }
    }

    private func created(_ body: String, id: UUID, replayed: Bool) -> Response {
        var headers: HTTPHeaders = ["Content-Type": "application/json", "Location": "/feedback/\(id.uuidString.lowercased())"]
        if replayed { headers.set("Idempotent-Replayed", "true") }
        return Response(status: 201, headers: headers, body: Array(body.utf8))
    }

    /// Where an anonymous sender's idempotency keys and ids live: its installation
    /// (`X-Installation-ID`, which the client library sends) or else its address, so that two
    /// apps choosing the same key never meet.
    private func anonymousScope(_ request: Request) throws(HTTPError) -> String {
        guard let installation = request.headers["X-Installation-ID"] else { return "anonymous:address:" + request.clientKey }
        guard !installation.isEmpty, installation.utf8.count <= 128, installation.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { throw .invalid("X-Installation-ID", "must be 1 to 128 visible ASCII characters") }
        return "anonymous:installation:" + installation
    }

    /// The `Idempotency-Key` header, or the client-generated `id`.
    private func idempotencyKey(_ request: Request, _ body: CreateFeedback) throws(HTTPError) -> String? {
        if let key = request.headers["Idempotency-Key"] {
            guard !key.isEmpty, key.utf8.count <= 255, key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw .invalid("Idempotency-Key", "must be 1 to 255 visible ASCII characters")
            }
            return key
        }
        return body.id.map { "id:" + $0.uuidString.lowercased() }
    }

    // MARK: - Reading

    func mine(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<FeedbackPage> {
        let principal = try context.caller()
        let page = try PageRequest(request)
        var query: PostgresQuery =
            "SELECT \(unsafeSQL: FeedbackRows.columns) FROM feedback.items WHERE user_id = \(principal.userID)"
        if let cursor = page.cursor { query.append(cursor.condition) }
        query.append(" ORDER BY created_at DESC, id DESC LIMIT \(page.limit + 1)")
        return JSONResponse(try page.page(try await database.query(query), admin: false))
    }

    func item(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<FeedbackItem> {
        let principal = try context.caller()
        guard let id = UUID(uuidString: request.parameter("id")) else { throw HTTPError.notFound("No such feedback.") }
        let rows = try await database.query("SELECT \(unsafeSQL: FeedbackRows.columns) FROM feedback.items WHERE id = \(id)")
        // Someone else's item answers exactly like a missing one: existence does not leak.
        guard let row = rows.first, try principal.isAdmin || row.decode("user_id", as: UUID?.self) == principal.userID else {
            throw HTTPError.notFound("No such feedback.")
        }
        var item = try FeedbackRows.item(row, admin: principal.isAdmin)
        if principal.isAdmin { item.history = try await history(id) }
        return JSONResponse(item)
    }

    private func history(_ id: UUID) async throws -> [FeedbackChange] {
        let rows = try await database.query(
            """
            SELECT actor, changed_at, changes::text AS changes FROM feedback.history WHERE item_id = \(id) ORDER BY id
            """)
        return try rows.map { row in
            FeedbackChange(
                actor: try row.decode("actor"), changedAt: try row.decode("changed_at"),
                changes: try row.decode("changes", as: PostgresJSON<[String: FeedbackChange.FieldChange]>.self).value)
        }
    }

    func list(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<FeedbackPage> {
        _ = try context.admin()
        let filter = try FeedbackFilter(request)
        let page = try PageRequest(request)
        var query: PostgresQuery = "SELECT \(unsafeSQL: FeedbackRows.columns) FROM feedback.items "
        query.append(filter.condition)
        if let cursor = page.cursor { query.append(cursor.condition) }
        query.append(" ORDER BY created_at DESC, id DESC LIMIT \(page.limit + 1)")
        var result = try page.page(try await database.query(query), admin: true)
        if request.query("includeTotal") == "true" {
            var count: PostgresQuery = "SELECT count(*)::int AS total FROM feedback.items "
            count.append(filter.condition)
            result.total = try await database.query(count)[0].decode("total", as: Int.self)
        }
        return JSONResponse(result)
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

    private enum Updated: Sendable {
        case updated
        case missing
        case conflict(String)
        case invalid(String, String)
    }

    func update(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<FeedbackItem> {
        let admin = try context.admin()
        guard let id = UUID(uuidString: request.parameter("id")) else { throw HTTPError.notFound("No such feedback.") }
        let patch = try request.decodeStrictly(UpdateFeedback.self)
        var errors: [Problem.FieldError] = []
        if let status = patch.status, !Vocabulary.statuses.contains(status) {
            errors.append(.init(field: "status", message: "must be one of \(Vocabulary.list(Vocabulary.statuses))"))
        }
        if let moderation = patch.moderation, moderation != "approved" && moderation != "rejected" {
            errors.append(.init(field: "moderation", message: "must be approved or rejected"))
        }
        if patch.duplicateOf != nil && patch.status != "duplicate" {
            errors.append(.init(field: "duplicateOf", message: "goes with status duplicate"))
        }
        if patch.status == "duplicate" && patch.duplicateOf == nil {
            errors.append(.init(field: "duplicateOf", message: "is required with status duplicate"))
        }
        if patch.duplicateOf == id { errors.append(.init(field: "duplicateOf", message: "must be another item")) }
        var tags: [String]?
        if let given = patch.tags {
            let normalized = Set(given.map { $0.trimmingWhitespace().lowercased() })
            if normalized.count > 20 { errors.append(.init(field: "tags", message: "must hold at most 20 tags")) }
            if normalized.contains(where: { $0.isEmpty || $0.unicodeScalars.count > 32 }) {
                errors.append(.init(field: "tags", message: "each tag must be 1 to 32 characters"))
            }
            tags = normalized.sorted()
        }
        if let note = patch.internalNote, note.unicodeScalars.count > 5000 {
            errors.append(.init(field: "internalNote", message: "must be at most 5000 characters"))
        }
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        if patch.status == nil && patch.tags == nil && patch.internalNote == nil && patch.moderation == nil {
            throw HTTPError.badRequest("Nothing to change: send status, tags, internalNote or moderation.")
        }

        let actor = admin.userID
        let newTags = tags
        let outcome: Updated = try await database.withTransaction { connection in
            let rows = try connection.query(
                """
                SELECT status, duplicate_of, tags, internal_note, moderation FROM feedback.items WHERE id = \(id) FOR UPDATE
                """)
            guard let row = rows.first else { return .missing }
            var changes: [String: FeedbackChange.FieldChange] = [:]
            var update: PostgresQuery = "UPDATE feedback.items SET updated_at = now()"
            let status = try row.decode("status", as: String.self)
            if let next = patch.status, next != status {
                guard FeedbackController.transitions[status, default: []].contains(next) else {
                    return .conflict("Feedback cannot go from \(status) to \(next).")
                }
                if next == "duplicate", let original = patch.duplicateOf {
                    let exists = try connection.query("SELECT 1 FROM feedback.items WHERE id = \(original)")
                    guard !exists.isEmpty else { return .invalid("duplicateOf", "is not an existing feedback id") }
                    update.append(", duplicate_of = \(original)")
                    changes["duplicateOf"] = .init(from: .null, to: .string(original.uuidString.lowercased()))
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
            try connection.execute(update)
            try connection.execute(
                """
                INSERT INTO feedback.history (item_id, actor, changes) VALUES (\(id), \(actor), \(PostgresJSON(changes))::jsonb)
                """)
            return .updated
        }
        switch outcome {
        case .missing: throw HTTPError.notFound("No such feedback.")
        case .conflict(let detail): throw HTTPError.conflict(detail)
        case .invalid(let field, let message): throw HTTPError.invalid(field, message)
        case .updated: return try await item(request, context)
        }
    }

    // MARK: - Reports

    func stats(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<FeedbackStats> {
        _ = try context.admin()
        var errors: [Problem.FieldError] = []
        let from = try request.query("from").map { text throws(HTTPError) -> Date in
            guard let date = FeedbackFilter.parseDate(text) else {
                throw .invalid("from", "must be an ISO 8601 date or date-time")
            }
            return date
        }
        let to = try request.query("to").map { text throws(HTTPError) -> Date in
            guard let date = FeedbackFilter.parseDate(text) else { throw .invalid("to", "must be an ISO 8601 date or date-time") }
            return date
        }
        if let from, let to, from > to { errors.append(.init(field: "from", message: "must not be after to")) }
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        let range: PostgresQuery =
            "WHERE created_at >= coalesce(\(from)::timestamptz, '-infinity') AND created_at < coalesce(\(to)::timestamptz, 'infinity')"
        let stats = try await database.withConnection { connection -> FeedbackStats in
            func counts(_ column: String) throws -> [String: Int] {
                var query: PostgresQuery =
                    "SELECT coalesce(\(unsafeSQL: column), 'unknown') AS key, count(*)::int AS n FROM feedback.items "
                query.append(range)
                query.append(" GROUP BY 1")
                var result: [String: Int] = [:]
                for row in try connection.query(query) { result[try row.decode("key")] = try row.decode("n", as: Int.self) }
                return result
            }
            let byStatus = try counts("status")
            var ratings: PostgresQuery = """
                SELECT app_version, round(avg(rating), 2)::float8 AS average, count(rating)::int AS n FROM feedback.items
                """
            ratings.append(" \(range)")
            ratings.append(" GROUP BY app_version ORDER BY app_version NULLS LAST")
            let byVersion = try connection.query(ratings).map { row in
                FeedbackStats.AppVersionRating(
                    appVersion: try row.decode("app_version", as: String?.self),
                    averageRating: try row.decode("average", as: Double?.self),
                    ratings: try row.decode("n", as: Int.self))
            }
            return FeedbackStats(
                from: from, to: to, total: byStatus.values.reduce(0, +), byStatus: byStatus,
                byCategory: try counts("category"), byPlatform: try counts("platform"),
                ratingByAppVersion: byVersion)
        }
        return JSONResponse(stats)
    }

    /// Streams every item matching the filters, newest first, as NDJSON or CSV, a thousand rows
    /// at a time: memory stays bounded however many rows there are.
    func export(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        _ = try context.admin()
        let filter = try FeedbackFilter(request)
        let format = request.query("format") ?? (request.headers["Accept"]?.contains("text/csv") == true ? "csv" : "ndjson")
        guard format == "csv" || format == "ndjson" else { throw HTTPError.invalid("format", "must be ndjson or csv") }
        let database = database
        let headers: HTTPHeaders = [
            "Content-Type": format == "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson",
            "Content-Disposition": "attachment; filename=\"feedback.\(format)\"",
        ]
        return Response.streaming(headers: headers) { writer in
            if format == "csv" { try await writer.write(CSVExport.header) }
            var cursor: PageCursor?
            let batch = 1000
            while true {
                var query: PostgresQuery = "SELECT \(unsafeSQL: FeedbackRows.columns) FROM feedback.items "
                query.append(filter.condition)
                if let cursor { query.append(cursor.condition) }
                query.append(" ORDER BY created_at DESC, id DESC LIMIT \(batch)")
                let rows = try await database.query(query)
                var chunk = [UInt8]()
                for row in rows {
                    let item = try FeedbackRows.item(row, admin: true)
                    if format == "csv" {
                        chunk += Array(CSVExport.line(item).utf8)
                    } else {
                        chunk += try JSON.encode(item)
                        chunk.append(UInt8(ascii: "\n"))
                    }
                }
                try await writer.write(chunk)
                guard rows.count == batch, let last = rows.last else { return }
                cursor = try FeedbackRows.cursor(after: last)
            }
        }
    }
}

/// CSV (RFC 4180) of feedback items. Cells that a spreadsheet would run as a formula are
/// prefixed with an apostrophe (OWASP's CSV injection guidance).
enum CSVExport {
    static let header =
        "id,createdAt,status,category,rating,platform,appVersion,build,osVersion,device,locale,message,tags,userId,email,moderation\r\n"

    static func line(_ item: FeedbackItem) -> String {
        let cells: [String] = [
            item.id.uuidString.lowercased(), CivilDate.iso8601(secondsSince1970: item.createdAt.timeIntervalSince1970),
            item.status, item.category, item.rating.map(String.init) ?? "", item.platform ?? "", item.appVersion ?? "",
            item.build ?? "", item.osVersion ?? "", item.device ?? "", item.locale ?? "", item.message,
            (item.tags ?? []).joined(separator: " "), item.userId?.uuidString.lowercased() ?? "", item.email ?? "",
            item.moderation ?? "",
        ]
        return cells.map(cell).joined(separator: ",") + "\r\n"
    }

    static func cell(_ value: String) -> String {
        var value = value
        if startsLikeAFormula(value) { value = "'" + value }
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// True when the first Unicode scalar that a spreadsheet does not skip is `=`, `+`, `-` or
    /// `@`, or the cell starts with a tab or carriage return. Scalars, not characters: `=`
    /// followed by a combining mark or a zero-width joiner is one character that is not "=".
    static func startsLikeAFormula(_ value: String) -> Bool {
        let scalars = value.unicodeScalars
        if let first = scalars.first, first == "\t" || first == "\r" { return true }
        let visible = scalars.first { scalar in
            !(scalar.properties.isWhitespace || scalar.properties.generalCategory == .format
                || scalar.properties.isDefaultIgnorableCodePoint)
        }
        guard let visible else { return false }
        return visible == "=" || visible == "+" || visible == "-" || visible == "@"
            || visible == "\u{FF1D}" || visible == "\u{FF0B}" || visible == "\u{FF0D}" || visible == "\u{FF20}"
    }
}

extension String {
    fileprivate func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
