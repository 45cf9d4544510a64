import PierAudit
import PierEvents
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The team's changes to an item: the unit of work of `PATCH /feedback/{id}`. Under the item's
/// row lock it checks the move against the workflow (``FeedbackStatus``), applies the patch and
/// records what changed.
struct FeedbackTriage: Sendable {
    /// A checked patch: every given value is in the vocabulary (the controller checked).
    struct Patch: Sendable {
        var status: FeedbackStatus?
        var duplicateOf: UUID?
        var tags: [String]?
        /// An empty note removes it.
        var internalNote: String?
        var moderation: Moderation?
        /// `.some(nil)` unassigns.
        var assignee: UUID??
    }

    enum Updated: Sendable {
        case updated
        case missing
        /// The workflow does not allow it; says why.
        case conflict(String)
        /// `duplicateOf` names no item.
        case unknownOriginal
        /// `assignee` is not one of the team.
        case notTeamMember
    }

    let database: PostgresPool

    /// Applies `patch` by `actor` and records what changed in the item's history and the audit
    /// log (nothing recorded when nothing did).
    func update(_ id: UUID, _ patch: Patch, actor: AuditActor) async throws -> Updated {
        try await database.withTransaction { connection in try await Self.apply(patch, to: id, by: actor, on: connection) }
    }

    /// ``update(_:_:actor:)``'s work inside the caller's transaction (a reply that moves the
    /// status shares the reply's).
    static func apply(_ patch: Patch, to id: UUID, by actor: AuditActor, on connection: PostgresConnection) async throws
        -> Updated
    {
        let items = FeedbackItems(connection)
        guard let before = try await items.lockTriage(of: id) else { return .missing }
        var after = before
        var changes: [String: FeedbackChange.FieldChange] = [:]
        if let next = patch.status, next != before.status {
            guard before.status.allows(next) else {
                let allowed = before.status.next.map(\.rawValue).sorted()
                let moves = allowed.isEmpty ? "none" : allowed.joined(separator: ", ")
                return .conflict(
                    "Feedback cannot go from \(before.status.rawValue) to \(next.rawValue); from \(before.status.rawValue) it can go to: \(moves)."
                )
            }
            after.status = next
            after.duplicateOf = nil
            if next == .duplicate, let original = patch.duplicateOf {
                guard try await items.exists(original) else { return .unknownOriginal }
                after.duplicateOf = original
                changes["duplicateOf"] = .init(from: .null, to: .string(original.text()))
            }
            changes["status"] = .init(from: .string(before.status.rawValue), to: .string(next.rawValue))
        }
        if let tags = patch.tags, tags != before.tags {
            after.tags = tags
            changes["tags"] = .init(
                from: .array(before.tags.map(JSONValue.string)), to: .array(tags.map(JSONValue.string)))
        }
        if let note = patch.internalNote {
            after.internalNote = note.isEmpty ? nil : note
            if after.internalNote != before.internalNote {
                changes["internalNote"] = .init(
                    from: before.internalNote.map(JSONValue.string) ?? .null,
                    to: after.internalNote.map(JSONValue.string) ?? .null)
            }
        }
        if let moderation = patch.moderation, moderation != before.moderation {
            after.moderation = moderation
            changes["moderation"] = .init(from: .string(before.moderation.rawValue), to: .string(moderation.rawValue))
        }
        if let assignee = patch.assignee, assignee != before.assignee {
            if let member = assignee, try await !TeamMembers(connection).isMember(member) { return .notTeamMember }
            after.assignee = assignee
            changes["assignee"] = .init(
                from: before.assignee.map { .string($0.text()) } ?? .null, to: assignee.map { .string($0.text()) } ?? .null)
        }
        guard !changes.isEmpty, let staff = actor.id else { return .updated }
        try await items.save(after, of: id, changes: changes, actor: staff)
        // Reports count by status and moderation: the item's day is read from the items
        // until the rollup has it again.
        if changes["status"] != nil || changes["moderation"] != nil { try await FeedbackRollup(connection).markChanged(id) }
        try await EventLog.append(
            FeedbackUpdated.type,
            payload: FeedbackUpdated(feedbackId: id, userId: before.sender, changes: changes, updatedAt: Date()),
            on: connection)
        try await AuditLog.append(
            .init(
                .feedbackUpdated, target: ("feedback", id.text()), subject: before.sender,
                before: .object(changes.mapValues(\.from)), after: .object(changes.mapValues(\.to))),
            by: actor, schema: FeedbackService.schema, on: connection)
        return .updated
    }
}
