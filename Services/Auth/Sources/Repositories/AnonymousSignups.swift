import PierPostgres

/// The anonymous sign-ups of the last day (`auth.anonymous_signups`), counted per installation
/// and per client network against the sign-up limits.
struct AnonymousSignups: Sendable {
    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    /// Sign-ups counted: an installation's in the last day, a network's in the last hour.
    struct Recent: PostgresRowDecodable, Sendable {
        var installation: Int
        var address: Int

        init(row: PostgresRow) throws {
            installation = try row.decode("installation")
            address = try row.decode("address")
        }
    }

    /// The sign-ups of `installation` in the last day and of `client` (its address, an IPv6
    /// /64) in the last hour, each counted under its lock: call it in the transaction that
    /// records the sign-up, so concurrent sign-ups cannot pass a limit together.
    func lockAndCount(installation: String, client: String) async throws -> Recent {
        // Locked first, counted in the next statement: its snapshot sees what the holders before committed.
        try await database.execute(
            """
            SELECT pg_advisory_xact_lock(hashtextextended('pier.anonymous.installation:' || \(installation), 0)),
                pg_advisory_xact_lock(hashtextextended('pier.anonymous.address:' || \(client), 0))
            """)
        return try await database.query(
            """
            SELECT
                (SELECT count(*) FROM auth.anonymous_signups WHERE installation = \(installation)
                    AND created_at > now() - interval '1 day')::int AS installation,
                (SELECT count(*) FROM auth.anonymous_signups WHERE address = \(client)
                    AND created_at > now() - interval '1 hour')::int AS address
            """)[0].decode(Recent.self)
    }

    func record(installation: String, client: String) async throws {
        try await database.execute(
            "INSERT INTO auth.anonymous_signups (installation, address) VALUES (\(installation), \(client))")
    }

    /// Forgets the sign-ups older than a day, which count against no limit any more.
    func forgetOld() async throws {
        try await database.execute("DELETE FROM auth.anonymous_signups WHERE created_at < now() - interval '1 day'")
    }
}
