import PierPostgres

/// Failed-login back-off per account and per client address, kept in the database so that it
/// holds across replicas: after `limit` failures within an hour, each further failure doubles
/// the wait (1 s, 2 s, 4 s, … up to 15 minutes).
struct LoginThrottle: Sendable {
    let database: PostgresPool
    let accountLimit: Int
    let addressLimit: Int

    static func accountKey(_ emailKey: String) -> String { "email:" + emailKey }
    static func addressKey(_ address: String) -> String { "ip:" + address }

    /// Seconds to wait when any of the keys is blocked now; nil when none is.
    func retryAfter(_ keys: [String]) async throws -> Int? {
        let keys = PostgresTextArray(keys)
        let rows = try await database.query(
            """
            SELECT ceil(extract(epoch FROM max(blocked_until) - now()))::int AS retry
            FROM auth.login_throttle WHERE key = ANY(\(keys)::text[]) AND blocked_until > now()
            """)
        return try rows.first?.decode("retry", as: Int?.self)
    }

    /// Counts a failure against the account and the address.
    func recordFailure(account: String, address: String) async throws {
        let accountLimit = accountLimit, addressLimit = addressLimit
        try await database.withConnection { connection in
            for (key, limit) in [(account, accountLimit), (address, addressLimit)] {
                try connection.execute(
                    """
                    WITH previous AS (SELECT failures, last_failure_at FROM auth.login_throttle WHERE key = \(key)),
                    next AS (
                        SELECT CASE WHEN p.last_failure_at IS NULL OR p.last_failure_at < now() - interval '1 hour'
                                    THEN 1 ELSE p.failures + 1 END AS failures
                        FROM (SELECT 1) one LEFT JOIN previous p ON true
                    )
                    INSERT INTO auth.login_throttle (key, failures, last_failure_at, blocked_until)
                    SELECT \(key), next.failures, now(),
                           CASE WHEN next.failures >= \(limit)
                                THEN now() + least(interval '15 minutes',
                                                   interval '1 second' * power(2, least(next.failures - \(limit), 20)))
                           END
                    FROM next
                    ON CONFLICT (key) DO UPDATE SET failures = excluded.failures,
                        last_failure_at = excluded.last_failure_at, blocked_until = excluded.blocked_until
                    """)
            }
        }
    }

    /// Forgets an account's failures after a successful login.
    func reset(account: String) async throws {
        try await database.execute("DELETE FROM auth.login_throttle WHERE key = \(account)")
    }
}
