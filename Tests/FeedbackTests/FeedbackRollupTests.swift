import Foundation
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierTestSupport
import Testing

@testable import FeedbackService

/// The reports' daily rollup: whatever the range, the moment of the rollup and the triage done
/// since, a report says exactly what counting the items says.
@Suite struct FeedbackRollupTests {
    /// The report and a count of the items themselves, for the same range.
    static func expectExact(_ pool: PostgresPool, from: Date?, to: Date?, moderation: String? = nil, _ what: String)
        async throws
    {
        let stats = try await FeedbackRollup.reading(pool) { try await $0.stats(from: from, to: to, moderation: moderation) }
        let rows = try await pool.query(
            """
            SELECT status, category, coalesce(platform, 'unknown') AS platform, count(*)::int AS n
            FROM feedback.items
            WHERE created_at >= coalesce(\(from)::timestamptz, '-infinity') AND created_at < coalesce(\(to)::timestamptz, 'infinity')
                AND (\(moderation)::text IS NULL OR moderation = \(moderation)::text)
            GROUP BY 1, 2, 3
            """)
        var byStatus: [String: Int] = [:]
        var byCategory: [String: Int] = [:]
        var byPlatform: [String: Int] = [:]
        var total = 0
        for row in rows {
            let n = try row.decode("n", as: Int.self)
            byStatus[try row.decode("status", as: String.self), default: 0] += n
            byCategory[try row.decode("category", as: String.self), default: 0] += n
            byPlatform[try row.decode("platform", as: String.self), default: 0] += n
            total += n
        }
        #expect(stats.total == total, "\(what): total")
        #expect(stats.byStatus == byStatus, "\(what): by status")
        #expect(stats.byCategory == byCategory, "\(what): by category")
        #expect(stats.byPlatform == byPlatform, "\(what): by platform")
        let ratings = try await pool.query(
            """
            SELECT count(rating)::int AS n, round(avg(rating), 2)::float8 AS average FROM feedback.items
            WHERE app_version = '2.0'
                AND created_at >= coalesce(\(from)::timestamptz, '-infinity') AND created_at < coalesce(\(to)::timestamptz, 'infinity')
                AND (\(moderation)::text IS NULL OR moderation = \(moderation)::text)
            """)[0]
        let version = stats.ratingByAppVersion.first { $0.appVersion == "2.0" }
        #expect((version?.ratings ?? 0) == (try ratings.decode("n", as: Int.self)), "\(what): ratings of 2.0")
        #expect(version?.averageRating == (try ratings.decode("average", as: Double?.self)), "\(what): average of 2.0")
    }

    @Test func reportsAreExactBeforeDuringAndAfterTheRollup() async throws {
        let feedback = try await FeedbackHarness.start(database: "pier_test_feedback_rollup")
        let pool = feedback.pool
        // Forty days of items at every hour's quarter, across categories, platforms, statuses
        // and moderation states; some today.
        try await pool.execute(
            """
            INSERT INTO feedback.items (id, message, category, platform, app_version, rating, status, moderation, created_at)
            SELECT gen_random_uuid(), 'item ' || n, (ARRAY['bug', 'idea', 'praise', 'question', 'other'])[1 + n % 5],
                (ARRAY['ios', 'android', NULL])[1 + n % 3], (ARRAY['2.0', '2.1', NULL])[1 + n % 3 + (n / 7) % 2],
                CASE WHEN n % 4 = 0 THEN NULL ELSE 1 + n % 5 END,
                (ARRAY['new', 'triaged', 'done', 'closed'])[1 + n % 4], (ARRAY['approved', 'approved', 'pending', 'rejected'])[1 + n % 4],
                now() - make_interval(mins => n * 15)
            FROM generate_series(0, 40 * 96) AS n
            """)
        let now = Date()
        let ranges: [(Date?, Date?, String)] = [
            (nil, nil, "everything"),
            (
                now.addingTimeInterval(-10 * 86_400 - 3_333), now.addingTimeInterval(-2 * 86_400 + 777),
                "partial days at both edges"
            ),
            (now.addingTimeInterval(-86_400 * 3), nil, "the last three days"),
            (nil, now.addingTimeInterval(-86_400 * 30), "before a month ago"),
            (now.addingTimeInterval(-3_600), now, "the last hour"),
        ]
        func expectEveryRange(_ when: String) async throws {
            for (from, to, what) in ranges {
                try await Self.expectExact(pool, from: from, to: to, "\(what), \(when)")
                try await Self.expectExact(pool, from: from, to: to, moderation: "approved", "\(what), approved, \(when)")
            }
        }
        // Before any rollup (everything from the items), part of the way, all of the way.
        try await pool.execute("UPDATE feedback.rollup_state SET through = NULL")
        try await pool.execute("DELETE FROM feedback.daily")
        try await expectEveryRange("before the rollup")
        // (The service's own worker may roll up meanwhile: the counts stay exact all the same.)
        _ = try await pool.withTransaction { try await FeedbackRollup($0).rollUp(batch: 10) }
        try await expectEveryRange("some days rolled up")
        while try await pool.withTransaction({ try await FeedbackRollup($0).rollUp(batch: 10) }) > 0 {}
        let through = try await pool.query("SELECT (current_date - through) AS behind FROM feedback.rollup_state")[0]
        #expect(try through.decode("behind", as: Int.self) <= 2)
        try await expectEveryRange("rolled up")

        // Triage of an item of a rolled-up day: exact at once (its day is read from the items),
        // and again once that day is rolled up anew.
        let old = try await pool.query(
            "SELECT id FROM feedback.items WHERE status = 'new' AND created_at < now() - interval '5 days' LIMIT 1")[0]
            .decode("id", as: UUID.self)
        let moved = try await feedback.send(
            "PATCH", "/feedback/\(old)", json: #"{"status":"triaged","moderation":"rejected"}"#, token: feedback.admin())
        #expect(moved.status == 200, "\(moved.text)")
        #expect(try await pool.query("SELECT count(*)::int AS n FROM feedback.daily_stale")[0].decode("n", as: Int.self) == 1)
        try await expectEveryRange("after a triage")
        _ = try await pool.withTransaction { try await FeedbackRollup($0).rollUp() }
        #expect(try await pool.query("SELECT count(*)::int AS n FROM feedback.daily_stale")[0].decode("n", as: Int.self) == 0)
        try await expectEveryRange("rolled up again")

        // A triage in flight while a rollup takes the marks, its day marked already by an
        // earlier one: the rollup waits for the triage's commit, then rolls the day with it.
        // Two items of one UTC day (the two oldest straddle midnight an hour a day).
        let day = try await pool.query(
            """
            WITH d AS (
                SELECT (created_at AT TIME ZONE 'UTC')::date AS day FROM feedback.items
                WHERE status = 'new' AND created_at < now() - interval '6 days'
                GROUP BY 1 HAVING count(*) >= 2 ORDER BY 1 LIMIT 1)
            SELECT id FROM feedback.items, d
            WHERE status = 'new' AND (created_at AT TIME ZONE 'UTC')::date = d.day ORDER BY created_at LIMIT 2
            """
        ).map { try $0.decode("id", as: UUID.self) }
        #expect(day.count == 2)
        try await FeedbackRollup(pool).markChanged(day[0])
        let (marked, held) = AsyncStream.makeStream(of: Void.self)
        let (go, proceed) = AsyncStream.makeStream(of: Void.self)
        let triage = Task {
            try await pool.withTransaction { connection in
                try await connection.execute("UPDATE feedback.items SET status = 'closed' WHERE id = \(day[1])")
                try await FeedbackRollup(connection).markChanged(day[1])
                held.yield()
                for await _ in go { break }
            }
        }
        for await _ in marked { break }
        let rolling = Task { try await pool.withTransaction { try await FeedbackRollup($0).rollUp() } }
        #expect(
            try await eventually {
                try await pool.query(
                    """
                    SELECT count(*)::int AS n FROM pg_stat_activity
                    WHERE wait_event_type = 'Lock' AND datname = current_database() AND query LIKE 'DELETE FROM feedback.daily_stale%'
                    """
                )[0].decode("n", as: Int.self) == 1
            })
        proceed.yield()
        try await triage.value
        _ = try await rolling.value
        try await expectEveryRange("a triage during a rollup")

        // Replicas take turns: two at once, one rolls, the other skips; nothing counted twice.
        try await pool.execute("UPDATE feedback.rollup_state SET through = through - 5")
        async let one = pool.withTransaction { try await FeedbackRollup($0).rollUp() }
        async let two = pool.withTransaction { try await FeedbackRollup($0).rollUp() }
        let rolled = try await [one, two].sorted()
        #expect(rolled == [0, 5] || rolled == [0, 0] || rolled == [5, 0].sorted(), "\(rolled)")
        try await expectEveryRange("after two replicas")

        // The daily report: one entry per day, today included, and the backlog.
        let daily = try await feedback.send("GET", "/feedback/stats/daily?days=7&moderation=approved", token: feedback.admin())
        #expect(daily.status == 200, "\(daily.text)")
        let report = try daily.decode(FeedbackDaily.self)
        #expect(
            report.days.count == 7
                && report.days.last?.day == String(CivilDate.iso8601(secondsSince1970: now.timeIntervalSince1970).prefix(10)))
        let lastWeek = try await pool.query(
            """
            SELECT count(*)::int AS n FROM feedback.items
            WHERE moderation = 'approved' AND created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '6 days'
            """)[0].decode("n", as: Int.self)
        #expect(report.days.reduce(0) { $0 + $1.items } == lastWeek)
        let open = try await pool.query(
            """
            SELECT count(*)::int AS n, min(created_at) AS oldest FROM feedback.items
            WHERE moderation = 'approved' AND status IN ('new', 'triaged', 'planned', 'in_progress')
            """)[0]
        #expect(report.open == (try open.decode("n", as: Int.self)))
        // (JSON dates carry whole seconds.)
        let oldest = try #require(try open.decode("oldest", as: Date?.self))
        #expect(abs((report.oldestOpenAt ?? .distantPast).timeIntervalSince(oldest)) < 1)
        for bad in ["days=0", "days=367", "days=week", "moderation=maybe"] {
            #expect(
                try await feedback.send("GET", "/feedback/stats/daily?\(bad)", token: feedback.admin()).status == 422, "\(bad)")
        }
        #expect(try await feedback.send("GET", "/feedback/stats/daily", token: feedback.token(UUID())).status == 403)
        await feedback.stop()
    }
}
