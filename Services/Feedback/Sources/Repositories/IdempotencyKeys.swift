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

    /// A key in its scope.
    struct Key: Hashable, Sendable {
        let scope: String
        let key: String
    }

    /// A key with what its first request was answered.
    struct Record: Sendable {
        let key: Key
        let entry: Entry
    }

    /// Makes concurrent requests with these keys take turns until the transaction ends (locks
    /// taken in one order everywhere, so two batches never wait on each other in a circle), and
    /// reads the entries the keys have.
    func lockAndRead(_ keys: [Key]) async throws -> [Key: Entry] {
        guard !keys.isEmpty else { return [:] }
        let scopes = PostgresTextArray(keys.map(\.scope))
        let names = PostgresTextArray(keys.map(\.key))
        try await database.execute(
            """
            SELECT pg_advisory_xact_lock(lock) FROM (
                SELECT DISTINCT hashtext('feedback-key:' || scope || ':' || key) AS lock
                FROM unnest(\(scopes)::text[], \(names)::text[]) AS given(scope, key) ORDER BY lock
            ) AS locks
            """)
        let rows = try await database.query(
            """
            SELECT scope, key, request_hash, response, item_id FROM feedback.idempotency_keys
            WHERE (scope, key) IN (SELECT * FROM unnest(\(scopes)::text[], \(names)::text[]))
            """)
        var entries: [Key: Entry] = [:]
        for row in rows {
            entries[Key(scope: try row.decode("scope"), key: try row.decode("key"))] = Entry(
                requestHash: try row.decode("request_hash"), response: Array(try row.decode("response", as: String.self).utf8),
                itemID: try row.decode("item_id"))
        }
        return entries
    }

    /// The answer stored for `item` under any key of `scope`.
    func response(scope: String, item: UUID) async throws -> [UInt8]? {
        try await database.query(
            "SELECT response FROM feedback.idempotency_keys WHERE scope = \(scope) AND item_id = \(item) LIMIT 1"
        ).first.map { Array(try $0.decode("response", as: String.self).utf8) }
    }

    /// Keeps each key's first answer.
    func record(_ records: [Record]) async throws {
        guard !records.isEmpty else { return }
        try await database.execute(
            """
            INSERT INTO feedback.idempotency_keys (scope, key, request_hash, item_id, response)
            SELECT * FROM unnest(\(PostgresTextArray(records.map(\.key.scope)))::text[],
                \(PostgresTextArray(records.map(\.key.key)))::text[],
                \(PostgresTextArray(records.map(\.entry.requestHash.postgresText)))::bytea[],
                \(PostgresTextArray(records.map { $0.entry.itemID.text() }))::uuid[],
                \(PostgresTextArray(records.map { String(decoding: $0.entry.response, as: UTF8.self) }))::text[])
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
