import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The help desk's own records in the console's schema: each team member's saved views of the
/// inbox, the team's saved replies, and who has which item open.
struct HelpDesk: Sendable {
    let database: PostgresPool

    struct View: Sendable, PostgresRowDecodable {
        let id: UUID
        let name: String
        /// The inbox's query string.
        let query: String

        init(row: PostgresRow) throws {
            (id, name, query) = (try row.decode("id"), try row.decode("name"), try row.decode("query"))
        }
    }

    struct SavedReply: Sendable, PostgresRowDecodable {
        let id: UUID
        let title: String
        let body: String

        init(row: PostgresRow) throws {
            (id, title, body) = (try row.decode("id"), try row.decode("title"), try row.decode("body"))
        }
    }

    /// Someone else with an item open.
    struct Viewer: Sendable, PostgresRowDecodable {
        let name: String
        let seenAt: Date

        init(row: PostgresRow) throws { (name, seenAt) = (try row.decode("name"), try row.decode("seen_at")) }
    }

    // MARK: - Views

    func views(of owner: UUID) async throws -> [View] {
        try await database.query("SELECT id, name, query FROM console.views WHERE owner = \(owner) ORDER BY name LIMIT 50")
            .decode(View.self)
    }

    /// Saves `query` as `name` (replacing the owner's view of that name).
    func saveView(_ name: String, query: String, owner: UUID) async throws {
        try await database.execute(
            """
            INSERT INTO console.views (id, owner, name, query) VALUES (\(UUID.random()), \(owner), \(name), \(query))
            ON CONFLICT (owner, name) DO UPDATE SET query = excluded.query
            """)
    }

    func deleteView(_ id: UUID, owner: UUID) async throws {
        try await database.execute("DELETE FROM console.views WHERE id = \(id) AND owner = \(owner)")
    }

    // MARK: - Saved replies

    func savedReplies() async throws -> [SavedReply] {
        try await database.query("SELECT id, title, body FROM console.saved_replies ORDER BY title LIMIT 200")
            .decode(SavedReply.self)
    }

    func savedReply(_ id: UUID) async throws -> SavedReply? {
        try await database.query("SELECT id, title, body FROM console.saved_replies WHERE id = \(id)").decode(SavedReply.self)
            .first
    }

    /// Saves a reply under `title`; false when another has that title.
    func saveReply(_ id: UUID?, title: String, body: String, by author: UUID) async throws -> Bool {
        if let id {
            return try await database.query(
                """
                UPDATE console.saved_replies SET title = \(title), body = \(body), updated_at = now()
                WHERE id = \(id) AND NOT EXISTS (SELECT 1 FROM console.saved_replies WHERE title = \(title) AND id <> \(id))
                RETURNING 1
                """
            ).count == 1
        }
        return try await database.query(
            """
            INSERT INTO console.saved_replies (id, title, body, created_by) VALUES (\(UUID.random()), \(title), \(body), \(author))
            ON CONFLICT (title) DO NOTHING RETURNING 1
            """
        ).count == 1
    }

    func deleteReply(_ id: UUID) async throws {
        try await database.execute("DELETE FROM console.saved_replies WHERE id = \(id)")
    }

    // MARK: - Presence

    /// How long an open page counts as someone there without telling again.
    static let presenceSeconds = 45

    /// Notes that `user` has `item` open, and answers the others who have.
    func present(_ user: UUID, name: String, at item: UUID) async throws -> [Viewer] {
        try await database.execute(
            """
            INSERT INTO console.presence (item_id, user_id, name) VALUES (\(item), \(user), \(name))
            ON CONFLICT (item_id, user_id) DO UPDATE SET seen_at = now(), name = excluded.name
            """)
        return try await database.query(
            """
            SELECT name, seen_at FROM console.presence
            WHERE item_id = \(item) AND user_id <> \(user) AND seen_at > now() - make_interval(secs => \(Self.presenceSeconds))
            ORDER BY name
            """
        ).decode(Viewer.self)
    }

    /// `user` closed `item`.
    func left(_ user: UUID, item: UUID) async throws {
        try await database.execute("DELETE FROM console.presence WHERE item_id = \(item) AND user_id = \(user)")
    }

    /// Forgets who left without saying (the sweep).
    func sweep() async throws {
        try await database.execute(
            "DELETE FROM console.presence WHERE seen_at < now() - make_interval(secs => \(Self.presenceSeconds * 2))")
    }
}
