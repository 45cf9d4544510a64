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

/// A reply of the team to an item: the unit of work of `POST /feedback/{id}/replies`. In one
/// transaction, under the item's row lock: the reply is stored, the item marked as changed, the
/// audit log appended to, and `feedback.replied` appended to the event log when the sender can
/// be reached (auth mails it). A new item replied to moves to `moveNewTo` (triaged, unless
/// `PIER_FEEDBACK_REPLY_STATUS` says otherwise), recorded as the replier's triage. A retry with
/// the reply's id stores, moves and mails nothing more.
struct FeedbackReplying: Sendable {
    enum Outcome: Sendable {
        case created(FeedbackReply)
        /// A reply with this id exists already, as asked (a retry).
        case replayed(FeedbackReply)
        case missing
        /// A reply with this id exists with another item or text.
        case conflict
    }

    /// The start of the sender's feedback quoted in the mail, in characters.
    static let quoted = 300

    let database: PostgresPool
    /// Where a reply moves an item that is still new (nil: it stays).
    var moveNewTo: FeedbackStatus? = nil

    func reply(to item: UUID, id: UUID, message: String, actor: AuditActor) async throws -> Outcome {
        guard let author = actor.id else { return .missing }
        return try await database.withTransaction { connection in
            let replies = FeedbackReplies(connection)
            guard let sender = try await replies.lockSender(of: item) else { return .missing }
            let delivery = sender.userID != nil ? "account" : sender.email != nil ? "address" : "none"
            guard try await replies.insert(id: id, item: item, author: author, message: message, delivery: delivery) else {
                guard let existing = try await replies.reply(id), existing.item == item, existing.reply.message == message
                else { return .conflict }
                return .replayed(existing.reply)
            }
            if delivery != "none" {
                try await EventLog.append(
                    FeedbackReplied.type,
                    payload: FeedbackReplied(
                        feedbackId: item, replyId: id, userId: sender.userID, email: sender.userID == nil ? sender.email : nil,
                        message: message, original: String(sender.message.prefix(Self.quoted))),
                    on: connection)
            }
            try await AuditLog.append(
                .init(
                    .feedbackReplied, target: ("feedback", item.text()), subject: sender.userID,
                    after: .object(["reply": .string(id.text()), "message": .string(message), "delivery": .string(delivery)])),
                by: actor, schema: FeedbackService.schema, on: connection)
            if let next = moveNewTo, try await FeedbackItems(connection).lockTriage(of: item)?.status == .new {
                _ = try await FeedbackTriage.apply(.init(status: next), to: item, by: actor, on: connection)
            }
            guard let stored = try await replies.reply(id) else { return .missing }
            return .created(stored.reply)
        }
    }
}
