import PierAudit
import PierCrypto
import PierHTTP
import PierIdentity
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

/// `/feedback`, `/feedback/mine`, `/feedback/{id}`: reading feedback (a sender's own, the team's
/// view) and triaging it.
struct ItemsController: Sendable {
    let database: PostgresPool
    /// Where a reply moves a new item (`PIER_FEEDBACK_REPLY_STATUS`).
    var replyMovesNewTo: FeedbackStatus? = nil
    /// Reads the event log up to now (the team as auth last told it): an assignee the team list
    /// does not know yet may have been given a role a moment ago.
    var catchUp: @Sendable () async throws -> Void = {}
    var items: FeedbackItems { FeedbackItems(database) }

    var replies: FeedbackReplies { FeedbackReplies(database) }

    /// The sender's items with the team's replies and their moves through the workflow: what an
    /// app shows as the sender's inbox.
    func mine(_ context: ServiceRequestContext, _ query: PageQuery) async throws -> JSONResponse<FeedbackPage> {
        let principal = try context.caller()
        var page = try await items.page(of: principal.userID, try PageRequest(limit: query.limit, cursor: query.cursor))
        page.items = try await replies.attach(to: page.items, staff: false)
        return JSONResponse(page)
    }

    func item(_ context: ServiceRequestContext, _ id: UUID) async throws -> JSONResponse<FeedbackItem> {
        let principal = try context.caller()
        guard var item = try await items.item(id, admin: principal.isStaff),
            // Someone else's item answers exactly like a missing one: existence does not leak.
            principal.isStaff || item.owner == principal.userID
        else { throw HTTPError.notFound("No such feedback.") }
        if principal.isStaff { item.value.history = try await items.history(of: id) }
        return JSONResponse(try await replies.attach(to: [item.value], staff: principal.isStaff)[0])
    }

    /// `POST /feedback/{id}/replies`: 201 with the reply; a retry with its id, 200 with it.
    func reply(_ context: ServiceRequestContext, _ item: UUID, _ body: CreateFeedbackReply) async throws
        -> JSONResponse<FeedbackReply>
    {
        let actor = try context.auditActor()
        let message = body.message.trimmingWhitespace()
        guard (1...5000).contains(message.unicodeScalars.count) else {
            throw HTTPError.invalid("message", "must be 1 to 5000 characters")
        }
        switch try await FeedbackReplying(database: database, moveNewTo: replyMovesNewTo).reply(
            to: item, id: body.id ?? UUID.random(), message: message, actor: actor)
        {
        case .created(let reply): return JSONResponse(reply, status: 201)
        case .replayed(let reply): return JSONResponse(reply)
        case .missing: throw HTTPError.notFound("No such feedback.")
        case .conflict: throw HTTPError.conflict("A reply with this id exists, to another item or with another text.")
        }
    }

    /// Written row by row into the answer: the page's items are never built.
    func list(_ context: ServiceRequestContext, _ query: FeedbackQuery) async throws -> EndpointReply<FeedbackPage> {
        let filter = try FeedbackFilter(query)
        let page = try PageRequest(limit: query.limit, cursor: query.cursor)
        let rows = try await items.pageRows(matching: filter, page)
        let total = query.includeTotal ? try await items.count(matching: filter) : nil
        var writer = JSONWriter(capacity: 64 + rows.count * 768)
        try page.write(rows, admin: true, total: total, into: &writer)
        return EndpointReply(writtenJSON: writer.bytes)
    }

    func update(_ context: ServiceRequestContext, _ id: UUID, _ patch: UpdateFeedback) async throws
        -> JSONResponse<FeedbackItem>
    {
        let actor = try context.auditActor()
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
        var assignee: UUID??
        if let given = patch.assignee {
            if given.isEmpty {
                assignee = .some(nil)
            } else if let id = UUID(uuidString: given) {
                assignee = .some(id)
            } else {
                errors.append(.init(field: "assignee", message: "must be a team member's account id, or empty to unassign"))
            }
        }
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        if patch.status == nil && patch.tags == nil && patch.internalNote == nil && patch.moderation == nil
            && patch.assignee == nil
        {
            throw HTTPError.badRequest("Nothing to change: send status, tags, internalNote, moderation or assignee.")
        }

        let checked = FeedbackTriage.Patch(
            status: patch.status.flatMap(FeedbackStatus.init(rawValue:)), duplicateOf: patch.duplicateOf, tags: tags,
            internalNote: patch.internalNote, moderation: patch.moderation.flatMap(Moderation.init(rawValue:)),
            assignee: assignee)
        var outcome = try await FeedbackTriage(database: database).update(id, checked, actor: actor)
        if case .notTeamMember = outcome {
            try await catchUp()
            outcome = try await FeedbackTriage(database: database).update(id, checked, actor: actor)
        }
        switch outcome {
        case .missing: throw HTTPError.notFound("No such feedback.")
        case .conflict(let detail): throw HTTPError.conflict(detail)
        case .unknownOriginal: throw HTTPError.invalid("duplicateOf", "is not an existing feedback id")
        case .notTeamMember: throw HTTPError.invalid("assignee", "is not a team member's account (support or admin)")
        case .updated: return try await item(context, id)
        }
    }
}
