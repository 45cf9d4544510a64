import PierEvents
import PierIdentity
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The team's figures of the accounts (the dashboard's).
extension Users {
    /// Sign-ups on each UTC day of the last `days`, today included, oldest first (an index
    /// range of those days' accounts): all of them, the anonymous ones among them (those merged
    /// since included), and the anonymous accounts kept (made permanent) and merged that day.
    func signUpsPerDay(days: Int) async throws -> [SignUpStats.Day] {
        let rows = try await database.query(
            """
            SELECT d.day::text AS day, count(u.id)::int AS n, count(u.anonymous_at)::int AS anonymous,
                (SELECT count(*) FROM auth.users k WHERE k.permanent_at >= (d.day AT TIME ZONE 'UTC')
                    AND k.permanent_at < ((d.day + interval '1 day') AT TIME ZONE 'UTC'))::int AS kept,
                (SELECT count(*) FROM auth.merges m WHERE m.merged_at >= (d.day AT TIME ZONE 'UTC')
                    AND m.merged_at < ((d.day + interval '1 day') AT TIME ZONE 'UTC'))::int AS merged,
                (SELECT count(*) FROM auth.merges m WHERE m.anonymous_at >= (d.day AT TIME ZONE 'UTC')
                    AND m.anonymous_at < ((d.day + interval '1 day') AT TIME ZONE 'UTC'))::int AS merged_began
            FROM generate_series((now() AT TIME ZONE 'UTC')::date - \(days - 1)::int, (now() AT TIME ZONE 'UTC')::date, interval '1 day') AS d (day)
            LEFT JOIN auth.users u ON u.created_at >= (d.day AT TIME ZONE 'UTC') AND u.created_at < ((d.day + interval '1 day') AT TIME ZONE 'UTC')
                AND u.role = 'user'
            GROUP BY d.day ORDER BY d.day
            """)
        return try rows.map {
            let began: Int = try $0.decode("merged_began")
            return SignUpStats.Day(
                day: String(try $0.decode("day", as: String.self).prefix(10)), signUps: try $0.decode("n") + began,
                anonymous: try $0.decode("anonymous") + began, kept: try $0.decode("kept"), merged: try $0.decode("merged"))
        }
    }

    /// How many accounts there are: the planner's estimate of a large table, or counted when
    /// the table is small (its estimate may be -1, never analyzed, or rough).
    func count() async throws -> Int {
        let estimate = try await database.query(
            "SELECT reltuples::bigint AS estimate FROM pg_class WHERE oid = 'auth.users'::regclass")
        let counted = try estimate.first?.decode("estimate", as: Int64.self) ?? 0
        guard counted < 100_000 else { return Int(counted) }
        return Int(try await database.query("SELECT count(*) AS n FROM auth.users")[0].decode("n", as: Int64.self))
    }
}
