import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Failed-login back-off, kept in the database so that it holds across replicas. Failures
/// count against the account, or against a device that signed in to the account before (its
/// device token: the failures of others at the account do not hold it); never against a client
/// address, so that failures at one account lock out no other account behind the same network.
/// After `limit` failures within an hour, each further failure doubles the wait (1 s, 2 s,
/// 4 s, … up to 15 minutes). Failures are counted by one atomic upsert that reads the row as
/// locked, so concurrent failures all count.
///
/// An attempt is reserved before its password is hashed (checking first and counting after
/// let 64 concurrent guesses through a limit of 5): it takes a place among its key's attempts
/// in flight, then reads the recorded failures, and goes ahead only when those and the
/// attempts in flight stay within the limit (one at a time once the limit is reached and the
/// back-off has passed); a failure is recorded before its place is given back. So no more than
/// `limit` guesses are checked for a key in a replica until the back-off starts. The places
/// live in memory, not in a row: a successful login writes nothing here (a write per login
/// cost 9 % of login throughput, measured); with R replicas, at most R × `limit`.
struct LoginThrottle: Sendable {
    let database: PostgresPool
    let accountLimit: Int
    private let inFlight: InFlightLimiter

    init(database: PostgresPool, accountLimit: Int) {
        self.database = database
        self.accountLimit = accountLimit
        inFlight = InFlightLimiter(limit: accountLimit)
    }

    static func accountKey(_ emailKey: String) -> String { "email:" + emailKey }

    /// What a password check starts from, read at once (one read, no write).
    struct Standing: PostgresRowDecodable {
        /// The account of the address, and its password's hash; nil when there is no account,
        /// or it has no password (signed up with Apple).
        var account: (user: User, passwordHash: String)?
        /// The seconds to wait while the address or the account is blocked.
        var retry: Int?
        /// The account's failures within the hour.
        var failures: Int
        /// The account's attempts in flight when the read began, for ``admits(failures:inFlight:)``.
        var inFlight = 0

        init(row: PostgresRow) throws {
            if try row.decode("id", as: UUID?.self) != nil, let hash = try row.decode("password_hash", as: String?.self) {
                account = (try row.decode(User.self), hash)
            }
            retry = try row.decode("retry", as: Int?.self)
            failures = try row.decode("failures")
        }
    }

    /// The account of `emailKey`, and the standing of `key` (the account's, or a known device's).
    func lookUp(emailKey: String, key: String) async throws -> Standing {
        // Counted before the read: an attempt that ends meanwhile is then counted twice (in
        // flight and among the failures), never not at all.
        let inFlight = self.inFlight.inFlight(key)
        let row = try await database.query(
            """
            SELECT \(unsafeSQL: Users.columns("u")), u.password_hash,
                   (SELECT ceil(extract(epoch FROM blocked_until - now()))::int FROM auth.login_throttle
                    WHERE key = \(key) AND blocked_until > now()) AS retry,
                   coalesce((SELECT failures FROM auth.login_throttle
                             WHERE key = \(key) AND last_failure_at >= now() - interval '1 hour'), 0) AS failures
            FROM (SELECT 1) AS one LEFT JOIN auth.users u ON u.email_key = \(emailKey)
            """)[0]
        var standing = try row.decode(Standing.self)
        standing.inFlight = inFlight
        return standing
    }

    /// Runs `body` holding one of the account's places in flight; nil, without running it, when
    /// all are taken. Inside, ``admits(failures:inFlight:)`` says whether the attempt may be checked.
    func reserving<T: Sendable>(_ account: String, _ body: () async throws -> T) async rethrows -> T? {
        try await inFlight.run(account, body)
    }

    /// Whether an attempt may be checked: the attempts in flight when its failures were read
    /// (itself included) fit in what the limit leaves (at least one, once a back-off has passed).
    func admits(failures: Int, inFlight: Int) -> Bool {
        inFlight <= max(1, accountLimit - failures)
    }

    /// Counts a failure against `key` (an account's, or a known device's).
    func recordFailure(_ key: String) async throws {
        try await database.execute(Self.count(key, limit: accountLimit))
    }

    /// Forgets `key`'s failures after a successful login.
    func reset(_ key: String) async throws {
        try await database.execute("DELETE FROM auth.login_throttle WHERE key = \(key)")
    }

    // MARK: - Second-factor codes

    /// Wrong codes (authenticator app, recovery codes) count against the account under a key of
    /// their own: a right password resets the password's failures, and must not reset these.
    static func codeKey(_ user: UUID) -> String { "mfa:" + user.text() }

    /// The seconds to wait while the account's codes are backing off; nil to go ahead.
    func codeWait(of user: UUID, on connection: any PostgresExecutor) async throws -> Int? {
        try await connection.query(
            """
            SELECT ceil(extract(epoch FROM blocked_until - now()))::int AS retry FROM auth.login_throttle
            WHERE key = \(Self.codeKey(user)) AND blocked_until > now()
            """
        ).first?.decode("retry")
    }

    /// Counts a wrong code against the account (the same back-off as passwords).
    func recordCodeFailure(of user: UUID, on connection: any PostgresExecutor) async throws {
        try await connection.execute(Self.count(Self.codeKey(user), limit: accountLimit))
    }

    /// Forgets the account's wrong codes after a right one.
    func resetCodes(of user: UUID, on connection: any PostgresExecutor) async throws {
        try await connection.execute("DELETE FROM auth.login_throttle WHERE key = \(Self.codeKey(user))")
    }

    /// One failure against `key`. The `DO UPDATE` reads the row as locked (its newest
    /// version), so concurrent failures are counted one after another, none lost.
    private static func count(_ key: String, limit: Int) -> PostgresQuery {
        """
        INSERT INTO auth.login_throttle AS t (key, failures, last_failure_at, blocked_until)
        VALUES (\(key), 1, now(), CASE WHEN 1 >= \(limit) THEN now() + interval '1 second' END)
        ON CONFLICT (key) DO UPDATE SET
            failures = CASE WHEN t.last_failure_at < now() - interval '1 hour' THEN 1 ELSE t.failures + 1 END,
            last_failure_at = now(),
            blocked_until = CASE
                WHEN t.last_failure_at >= now() - interval '1 hour' AND t.failures + 1 >= \(limit)
                    THEN now() + least(interval '15 minutes',
                                       interval '1 second' * power(2, least(t.failures + 1 - \(limit), 20)))
                WHEN 1 >= \(limit) THEN now() + interval '1 second'
            END
        """
    }
}
