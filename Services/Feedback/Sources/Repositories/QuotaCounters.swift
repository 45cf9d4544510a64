import PierPostgres

/// The statements of the quota counters that replicas share (`feedback.quota`): one row per
/// sender with its minute and day windows.
struct QuotaCounters: Sendable {
    /// A sender's shared windows: starts in seconds since 1970, and the attempts counted.
    struct Row: Sendable {
        let sender: String
        let minuteStart: Double
        let minuteCount: Int
        let dayStart: Double
        let dayCount: Int
    }

    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    func read(_ senders: [String]) async throws -> [Row] {
        try await database.query(
            "SELECT \(unsafeSQL: Self.columns) FROM feedback.quota WHERE sender = ANY(\(PostgresTextArray(senders))::text[])"
        ).map(Self.row)
    }

    /// Adds each sender's attempts to its row (a window that ended starts again now) and
    /// returns the rows as they are after.
    func add(_ batch: [(sender: String, count: Int)]) async throws -> [Row] {
        try await database.query(
            """
            INSERT INTO feedback.quota AS q (sender, minute_start, minute_count, day_start, day_count)
            SELECT sender, now(), added, now(), added
            FROM unnest(\(PostgresTextArray(batch.map(\.sender)))::text[], \(PostgresTextArray(batch.map { String($0.count) }))::int[])
                AS b(sender, added)
            ON CONFLICT (sender) DO UPDATE SET
                minute_start = CASE WHEN q.minute_start <= now() - interval '1 minute' THEN now() ELSE q.minute_start END,
                minute_count = CASE WHEN q.minute_start <= now() - interval '1 minute' THEN excluded.minute_count
                    ELSE q.minute_count + excluded.minute_count END,
                day_start = CASE WHEN q.day_start <= now() - interval '1 day' THEN now() ELSE q.day_start END,
                day_count = CASE WHEN q.day_start <= now() - interval '1 day' THEN excluded.day_count
                    ELSE q.day_count + excluded.day_count END
            RETURNING \(unsafeSQL: Self.columns)
            """
        ).map(Self.row)
    }

    /// Forgets rows whose day ended two days ago.
    func expire() async throws {
        try await database.execute("DELETE FROM feedback.quota WHERE day_start < now() - interval '2 days'")
    }

    private static let columns = """
        sender, extract(epoch FROM minute_start)::float8 AS minute_start, minute_count,
        extract(epoch FROM day_start)::float8 AS day_start, day_count
        """

    private static func row(_ row: PostgresRow) throws -> Row {
        Row(
            sender: try row.decode("sender"), minuteStart: try row.decode("minute_start"),
            minuteCount: try row.decode("minute_count"), dayStart: try row.decode("day_start"),
            dayCount: try row.decode("day_count"))
    }
}
