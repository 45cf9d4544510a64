import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The statements of the team's replies (`feedback.replies`) and of what a sender sees of their
/// items' progress.
struct FeedbackReplies: Sendable {
    /// Who sent an item, as a reply needs it.
    struct Sender: Sendable {
        var userID: UUID?
        var email: String?
        var message: String
    }

    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    /// The item's sender, its row locked until the transaction ends (nil: no such item).
    func lockSender(of item: UUID) async throws -> Sender? {
        try await database.query("SELECT user_id, email, message FROM feedback.items WHERE id = \(item) FOR UPDATE").first
            .map { row in
                Sender(
                    userID: try row.decode("user_id", as: UUID?.self), email: try row.decode("email", as: String?.self),
                    message: try row.decode("message"))
            }
    }

    /// Stores the reply and marks the item as changed; false when a reply with its id exists.
    func insert(id: UUID, item: UUID, author: UUID, message: String, delivery: String) async throws -> Bool {
        let inserted = try await database.query(
            """
            INSERT INTO feedback.replies (id, item_id, author, message, delivery)
            VALUES (\(id), \(item), \(author), \(message), \(delivery))
            ON CONFLICT (id) DO NOTHING RETURNING id
            """)
        guard !inserted.isEmpty else { return false }
        try await database.execute("UPDATE feedback.items SET updated_at = now() WHERE id = \(item)")
        return true
    }

    /// One reply with its item (the team's view), or nil.
    func reply(_ id: UUID) async throws -> Stored? {
        try await database.query(
            "SELECT item_id, \(unsafeSQL: Self.columns) FROM feedback.replies WHERE id = \(id)"
        ).first?.decode(Stored.self)
    }

    /// A reply as the team sees it, and the item it answers.
    struct Stored: PostgresRowDecodable, Sendable {
        var item: UUID
        var reply: FeedbackReply

        init(row: PostgresRow) throws { (item, reply) = (try row.decode("item_id"), try FeedbackReplies.reply(row, staff: true)) }
    }

    /// `items` with their replies and, for their sender, their moves through the workflow: one
    /// statement (a sender's inbox is read often), the two kinds of rows oldest first.
    func attach(to items: [FeedbackItem], staff: Bool) async throws -> [FeedbackItem] {
        guard !items.isEmpty else { return items }
        let ids = Self.ids(items.map(\.id))
        var replies: [UUID: [FeedbackReply]] = [:]
        var changes: [UUID: [FeedbackStatusChange]] = [:]
        for row in try await database.query(
            """
            SELECT item_id, \(unsafeSQL: Self.columns), NULL AS status, 0 AS kind FROM feedback.replies
            WHERE item_id = ANY(\(ids)::uuid[])
            UNION ALL
            SELECT item_id, NULL, NULL, NULL, NULL, changed_at, changes->'status'->>'to', 1 FROM feedback.history
            WHERE NOT \(staff) AND item_id = ANY(\(ids)::uuid[]) AND changes ? 'status'
            ORDER BY kind, created_at, id
            """)
        {
            let item: UUID = try row.decode("item_id")
            if try row.decode("kind", as: Int.self) == 0 {
                replies[item, default: []].append(try Self.reply(row, staff: staff))
            } else {
                changes[item, default: []].append(
                    FeedbackStatusChange(
                        status: FeedbackStatus(wire: try row.decode("status")), changedAt: try row.decode("created_at")))
            }
        }
        return items.map { item in
            var item = item
            item.replies = replies[item.id] ?? []
            if !staff { item.statusChanges = changes[item.id] ?? [] }
            return item
        }
    }

    private static let columns = "id, author, message, delivery, created_at"

    private static func reply(_ row: PostgresRow, staff: Bool) throws -> FeedbackReply {
        FeedbackReply(
            id: try row.decode("id"), message: try row.decode("message"), createdAt: try row.decode("created_at"),
            authorId: staff ? try row.decode("author", as: UUID.self) : nil,
            delivery: staff ? try row.decode("delivery", as: String.self) : nil)
    }

    private static func ids(_ items: [UUID]) -> PostgresTextArray { PostgresTextArray(items.map { $0.text() }) }
}
