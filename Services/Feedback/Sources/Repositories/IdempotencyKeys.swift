import PierPostgres

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The statements of idempotency keys: what a key's first request was answered, kept for its
/// retries, per scope (a user, an installation, an address).
struct IdempotencyKeys: Sendable {
    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    /// A key's first request: the hash of its body, its answer and its item.
    struct Entry: Sendable {
        let requestHash: PostgresBytes
        let response: [UInt8]
        let itemID: UUID
    }

    /// Makes concurrent requests with one key take turns until the transaction ends.
    func lock(scope: String, key: String) async throws {
        try await database.execute("SELECT pg_advisory_xact_lock(hashtext(\("feedback-key:" + scope + ":" + key)))")
    }

    func entry(scope: String, key: String) async throws -> Entry? {
        let rows = try await database.query(
            "SELECT request_hash, response, item_id FROM feedback.idempotency_keys WHERE scope = \(scope) AND key = \(key)")
        return try rows.first.map { row in
            Entry(
                requestHash: try row.decode("request_hash"), response: Array(try row.decode("response", as: String.self).utf8),
                itemID: try row.decode("item_id"))
        }
    }

    /// The answer stored for `item` under any key of `scope`.
    func response(scope: String, item: UUID) async throws -> [UInt8]? {
        try await database.query(
            "SELECT response FROM feedback.idempotency_keys WHERE scope = \(scope) AND item_id = \(item) LIMIT 1"
        ).first.map { Array(try $0.decode("response", as: String.self).utf8) }
    }

    func record(scope: String, key: String, _ entry: Entry) async throws {
        try await database.execute(
            """
            INSERT INTO feedback.idempotency_keys (scope, key, request_hash, item_id, response)
            VALUES (\(scope), \(key), \(entry.requestHash), \(entry.itemID), \(String(decoding: entry.response, as: UTF8.self)))
            """)
    }

    /// Forgets the keys of a deleted account.
    func forget(scope: String) async throws {
        try await database.execute("DELETE FROM feedback.idempotency_keys WHERE scope = \(scope)")
    }

    /// Forgets the keys older than `hours`.
    func expire(olderThan hours: Int) async throws {
        try await database.execute(
            "DELETE FROM feedback.idempotency_keys WHERE created_at < now() - make_interval(hours => \(hours))")
    }
}
