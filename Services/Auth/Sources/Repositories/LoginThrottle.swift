import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Failed-login back-off per account and per client address, kept in the database so that it
/// holds across replicas (an address counts the guesses at accounts that exist, so that made-up
/// addresses sent from a shared network lock none of its users out): after `limit` failures within an hour, each further failure doubles
/// the wait (1 s, 2 s, 4 s, … up to 15 minutes). Failures are counted by one atomic upsert that
/// reads the row as locked, so concurrent failures all count.
///
/// An account's attempt is reserved before its password is hashed (checking first and counting
/// after let 64 concurrent guesses through a limit of 5): it takes a place among the account's
/// attempts in flight, then reads the recorded failures, and goes ahead only when those and the
/// attempts in flight stay within the limit (one at a time once the limit is reached and the
/// back-off has passed); a failure is recorded before its place is given back. So no more than
/// `limit` guesses are checked for an account in a replica until the back-off starts. The
/// places live in memory, not in a row: a successful login writes nothing here (a write per
/// login cost 9 % of login throughput, measured); with R replicas, at most R × `limit`.
struct LoginThrottle: Sendable {
    let database: PostgresPool
    let accountLimit: Int
    let addressLimit: Int
    private let inFlight: InFlightLimiter

    init(database: PostgresPool, accountLimit: Int, addressLimit: Int) {
        self.database = database
        self.accountLimit = accountLimit
        self.addressLimit = addressLimit
        inFlight = InFlightLimiter(limit: accountLimit)
    }

    static func accountKey(_ emailKey: String) -> String { "email:" + emailKey }
    static func addressKey(_ address: String) -> String { "ip:" + address }

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

    /// The standing of the account of `emailKey` and of the client `address`.
    func lookUp(emailKey: String, account: String, address: String) async throws -> Standing {
        // Counted before the read: an attempt that ends meanwhile is then counted twice (in
        // flight and among the failures), never not at all.
        let inFlight = self.inFlight.inFlight(account)
        let row = try await database.query(
            """
            SELECT \(unsafeSQL: Users.columns("u")), u.password_hash,
                   (SELECT ceil(extract(epoch FROM max(blocked_until) - now()))::int FROM auth.login_throttle
                    WHERE key IN (\(account), \(address)) AND blocked_until > now()) AS retry,
                   coalesce((SELECT failures FROM auth.login_throttle
                             WHERE key = \(account) AND last_failure_at >= now() - interval '1 hour'), 0) AS failures
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

    /// Counts a failure against the account, and against the address when one is given.
    func recordFailure(account: String, address: String?) async throws {
        guard let address else {
            try await database.execute(Self.count(account, limit: accountLimit))
            return
        }
        try await database.withConnection { [accountLimit, addressLimit] connection in
            try await connection.execute(Self.count(account, limit: accountLimit))
            try await connection.execute(Self.count(address, limit: addressLimit))
        }
    }

    /// Forgets an account's failures after a successful login.
    func reset(account: String) async throws {
        try await database.execute("DELETE FROM auth.login_throttle WHERE key = \(account)")
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
