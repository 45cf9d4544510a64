import PierPostgres

/// Failed-login back-off per account and per client address, kept in the database so that it
/// holds across replicas: after `limit` failures within an hour, each further failure doubles
/// the wait (1 s, 2 s, 4 s, … up to 15 minutes).
///
/// An account's attempt is reserved — counted as a failure — before its password is hashed, in
/// one statement that locks the key's row: concurrent guesses queue on it, and once the limit is
/// reached the rest are refused unhashed (checking first and counting after let 64 concurrent
/// guesses through a limit of 5). A correct password then clears the account's count. The
/// address count is checked before and incremented after a failure, atomically; how many
/// hashes one address has in flight is bounded separately (``AddressSlots``).
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

    /// Reserves an attempt on `account` unless `address` is blocked, and looks the account up,
    /// in one statement: the account's row (columns of `auth.users`, null when unknown) with
    /// `retry`, the seconds to wait when the address or the account is blocked (nothing is then
    /// counted). Otherwise the attempt counts as a failure until ``reset(account:on:)``.
    func reserve(_ account: String, emailKey: String, address: String) async throws -> PostgresRow {
        var query: PostgresQuery = """
            WITH address AS (
                SELECT ceil(extract(epoch FROM blocked_until - now()))::int AS retry FROM auth.login_throttle
                WHERE key = \(address) AND blocked_until > now()
            ), reservation AS (
            """
        query.append(Self.count(account, limit: accountLimit, returning: true, unless: "SELECT 1 FROM address"))
        query.append(
            """
            )
            SELECT u.id, u.email, u.display_name, u.role, u.created_at, u.password_hash,
                   coalesce((SELECT retry FROM address),
                            (SELECT CASE WHEN admitted THEN NULL ELSE greatest(retry, 1) END FROM reservation)) AS retry
            FROM (SELECT 1) AS one LEFT JOIN auth.users u ON u.email_key = \(emailKey)
            """)
        return try await database.query(query)[0]
    }

    /// Reserves an attempt on `key` alone (a password change: the account is known).
    func reserve(_ key: String, limit: Int) async throws -> Int? {
        let rows = try await database.query(Self.count(key, limit: limit, returning: true))
        let row = rows[0]
        guard try !row.decode("admitted", as: Bool.self) else { return nil }
        return max(1, try row.decode("retry", as: Int?.self) ?? 1)
    }

    /// Counts a failure against `key` (an atomic increment: concurrent failures all count).
    func recordFailure(_ key: String, limit: Int) async throws {
        try await database.execute(Self.count(key, limit: limit, returning: false))
    }

    /// Forgets an account's failures after a successful login.
    func reset(account: String) async throws {
        try await database.execute(Self.reset(account))
    }

    /// The same, on `connection` (in the transaction that opens the session).
    static func reset(_ account: String, on connection: PostgresConnection) throws {
        try connection.execute(reset(account))
    }

    private static func reset(_ account: String) -> PostgresQuery {
        "DELETE FROM auth.login_throttle WHERE key = \(account)"
    }

    /// One attempt against `key`, unless it is blocked now. The `DO UPDATE` reads the row as
    /// locked (its newest version), so concurrent attempts are counted one after another.
    /// `admitted`: this statement moved `last_failure_at` to its own transaction's `now()`.
    /// `unless`: a query that, when it returns a row, makes the statement count nothing.
    private static func count(_ key: String, limit: Int, returning: Bool, unless: PostgresQuery? = nil) -> PostgresQuery {
        var query: PostgresQuery = """
            INSERT INTO auth.login_throttle AS t (key, failures, last_failure_at, blocked_until)
            SELECT \(key), 1, now(), CASE WHEN 1 >= \(limit) THEN now() + interval '1 second' END
            """
        if let unless {
            query.append(" WHERE NOT EXISTS (")
            query.append(unless)
            query.append(")")
        }
        query.append(
            """

            ON CONFLICT (key) DO UPDATE SET
                failures = CASE WHEN t.blocked_until > now() THEN t.failures
                                WHEN t.last_failure_at < now() - interval '1 hour' THEN 1
                                ELSE t.failures + 1 END,
                last_failure_at = CASE WHEN t.blocked_until > now() THEN t.last_failure_at ELSE now() END,
                blocked_until = CASE
                    WHEN t.blocked_until > now() THEN t.blocked_until
                    WHEN t.last_failure_at >= now() - interval '1 hour' AND t.failures + 1 >= \(limit)
                        THEN now() + least(interval '15 minutes',
                                           interval '1 second' * power(2, least(t.failures + 1 - \(limit), 20)))
                    WHEN 1 >= \(limit) THEN now() + interval '1 second'
                END
            """)
        if returning {
            query.append(
                """
                 RETURNING t.last_failure_at = now() AS admitted,
                    ceil(extract(epoch FROM t.blocked_until - now()))::int AS retry
                """)
        }
        return query
    }
}
