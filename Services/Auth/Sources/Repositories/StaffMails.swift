import PierPostgres

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The mails staff sent an account, as the audit log (`auth.audit`) holds them.
struct StaffMails: Sendable {
    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    /// How many mails staff sent `user` in the last hour, and the seconds until the oldest of
    /// them is an hour old (nil when there is none).
    struct LastHour: PostgresRowDecodable, Sendable {
        var count: Int
        var secondsToFirstExpiry: Int?

        init(row: PostgresRow) throws { (count, secondsToFirstExpiry) = (try row.decode("n"), try row.decode("wait")) }
    }

    func lastHour(to user: UUID) async throws -> LastHour {
        try await database.query(
            """
            SELECT count(*)::int AS n, ceil(extract(epoch FROM min(at) + interval '1 hour' - now()))::int AS wait
            FROM auth.audit
            WHERE subject_id = \(user) AND action = 'user.mail_sent' AND at > now() - interval '1 hour'
            """)[0].decode(LastHour.self)
    }
}
