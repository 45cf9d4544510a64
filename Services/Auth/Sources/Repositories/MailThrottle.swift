import PierPostgres

/// Requests that send mail (password resets, changes of address), counted per key in fixed
/// windows in the database, so that a limit holds across replicas. A key names what is limited:
/// `reset:<address>`, `change:<account>`, `change-to:<address>`.
///
/// The row is written whether or not an account has the address: the answer to an unknown
/// address costs the same write (and the same commit) as the answer to a known one.
enum MailThrottle {
    struct Taken: Sendable {
        /// Requests in the current window, this one included.
        var count: Int
        /// Seconds until the window ends.
        var retryAfter: Int

        func exceeds(_ limit: Int) -> Bool { count > limit }
    }

    /// Counts one request against `key` in a window of `seconds`, on the caller's transaction.
    /// Rows of windows long past are removed a few at a time by the same statement, so the
    /// table stays as large as the traffic of the last day.
    static func take(_ key: String, windowSeconds seconds: Int, on connection: PostgresConnection) async throws -> Taken {
        let row = try await connection.query(
            """
            WITH stale AS (
                DELETE FROM auth.mail_throttle WHERE ctid IN (
                    SELECT ctid FROM auth.mail_throttle WHERE window_start < now() - interval '1 day' LIMIT 8)
            )
            INSERT INTO auth.mail_throttle AS t (key, window_start, count) VALUES (\(key), now(), 1)
            ON CONFLICT (key) DO UPDATE SET
                window_start = CASE WHEN t.window_start <= now() - make_interval(secs => \(seconds)) THEN now()
                    ELSE t.window_start END,
                count = CASE WHEN t.window_start <= now() - make_interval(secs => \(seconds)) THEN 1 ELSE t.count + 1 END
            RETURNING count,
                greatest(1, ceil(extract(epoch FROM t.window_start + make_interval(secs => \(seconds)) - now())))::int AS retry
            """)[0]
        return Taken(count: try row.decode("count"), retryAfter: try row.decode("retry"))
    }
}
