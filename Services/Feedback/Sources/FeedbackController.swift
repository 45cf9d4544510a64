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
    let repository: FeedbackRepository
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

    func create(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let principal = context.principal
        let body = try request.decodeStrictly(CreateFeedback.self)
        let feedback = try ValidFeedback(body, anonymous: principal == nil)
        let key = try idempotencyKey(request, body)
        let scope = try principal.map { $0.userID.text() } ?? anonymousScope(request)
        let sender = principal.map { "user:" + $0.userID.text() } ?? "address:" + request.clientKey
        let submission = FeedbackRepository.Submission(
            id: body.id ?? UUID(), userID: principal?.userID, feedback: feedback,
            moderation: principal == nil && configuration.moderateAnonymous ? "pending" : "approved",
            clientAddress: request.clientAddress,
            idempotency: key.map { .init(scope: scope, key: $0, requestHash: PostgresBytes(SHA256.hash(request.body))) })
        try await quota.prepare(sender)
        let outcome = try await repository.store(
            submission, clientChoseID: body.id != nil, admit: { [quota] in quota.count(sender) },
            render: { item in try JSON.encode(item) })
        switch outcome {
        case .created(let body, let id):
            logger.info("feedback received", [("feedback_id", .string(id.text())), ("request_id", .string(request.requestID))])
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

    private func created(_ body: [UInt8], id: UUID, replayed: Bool) -> Response {
        var headers: HTTPHeaders = ["Content-Type": "application/json", "Location": "/feedback/\(id.text())"]
        if replayed { headers.set("Idempotent-Replayed", "true") }
        return Response(status: 201, headers: headers, body: body)
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
        return JSONResponse(try await repository.page(of: principal.userID, try PageRequest(request)))
    }

    func item(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<FeedbackItem> {
        let principal = try context.caller()
        guard let id = UUID(text: request.parameter("id")),
            var item = try await repository.item(id, admin: principal.isAdmin),
            // Someone else's item answers exactly like a missing one: existence does not leak.
            principal.isAdmin || item.owner == principal.userID
        else { throw HTTPError.notFound("No such feedback.") }
        if principal.isAdmin { item.value.history = try await repository.history(of: id) }
        return JSONResponse(item.value)
    }

    func list(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<FeedbackPage> {
        _ = try context.admin()
        let filter = try FeedbackFilter(request)
        var page = try await repository.page(matching: filter, try PageRequest(request))
        if request.query("includeTotal") == "true" { page.total = try await repository.count(matching: filter) }
        return JSONResponse(page)
    }

    // MARK: - Triage

    func update(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<FeedbackItem> {
        let admin = try context.admin()
        guard let id = UUID(text: request.parameter("id")) else { throw HTTPError.notFound("No such feedback.") }
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

        switch try await repository.update(id, patch, tags: tags, actor: admin.userID) {
        case .missing: throw HTTPError.notFound("No such feedback.")
        case .conflict(let detail): throw HTTPError.conflict(detail)
        case .unknownOriginal: throw HTTPError.invalid("duplicateOf", "is not an existing feedback id")
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
        return JSONResponse(try await repository.stats(from: from, to: to))
    }

    /// Streams every item matching the filters, newest first, as NDJSON or CSV, a thousand rows
    /// at a time: memory stays bounded however many rows there are.
    func export(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        _ = try context.admin()
        let filter = try FeedbackFilter(request)
        let format = request.query("format") ?? (request.headers["Accept"]?.contains("text/csv") == true ? "csv" : "ndjson")
        guard format == "csv" || format == "ndjson" else { throw HTTPError.invalid("format", "must be ndjson or csv") }
        let repository = repository
        let headers: HTTPHeaders = [
            "Content-Type": format == "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson",
            "Content-Disposition": "attachment; filename=\"feedback.\(format)\"",
        ]
        return Response.streaming(headers: headers) { writer in
            if format == "csv" { try await writer.write(CSVExport.header) }
            var cursor: PageCursor?
            repeat {
                let (items, next) = try await repository.batch(matching: filter, after: cursor, count: 1000)
                var chunk = [UInt8]()
                for item in items {
                    if format == "csv" {
                        chunk += Array(CSVExport.line(item).utf8)
                    } else {
                        chunk += try JSON.encode(item)
                        chunk.append(UInt8(ascii: "\n"))
                    }
                }
                try await writer.write(chunk)
                cursor = next
            } while cursor != nil
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
