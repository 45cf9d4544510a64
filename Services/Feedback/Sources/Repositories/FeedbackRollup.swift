import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Reports that stay fast however much feedback there is: counts per UTC day are rolled up into
/// `feedback.daily` by the worker, and a report reads them for the whole days they cover and the
/// items only for the rest (the days after the rollup, the partial days at the range's edges,
/// the days whose items were triaged since). One statement, one snapshot: a report never counts
/// an item twice or misses one while the rollup moves on.
struct FeedbackRollup: Sendable {
    /// What a report groups its counts by.
    enum Key: String, Sendable {
        case day, category, platform
        case appVersion = "app_version"
        case status
    }

    /// One group's counts.
    struct Counts: Sendable {
        var key: [Key: String]
        var items: Int
        var ratings: Int
        var ratingSum: Int
    }

    /// A day ends this long before it is rolled up: an intake transaction that began before
    /// midnight has committed by then.
    static let grace = "5 minutes"
    static let openStatuses = ["new", "triaged", "planned", "in_progress"]

    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    // MARK: - Reading

    /// Runs `body` on one snapshot (``PostgresPool/withReport(_:)``): the rollup's state and its
    /// rows, and the items, as of one moment.
    static func reading<T: Sendable>(_ pool: PostgresPool, _ body: (FeedbackRollup) async throws -> T) async throws -> T {
        try await pool.withReport { try await body(FeedbackRollup($0)) }
    }

    /// The counts of the items created in [from, to) (of one moderation state when given),
    /// grouped by `keys`. On a snapshot (``reading(_:_:)``): the bounds are read first and given
    /// to the query as values, so that each part is an index range the planner sees.
    func counts(from: Date?, to: Date?, moderation: String?, by keys: [Key]) async throws -> [Counts] {
        let day = 86_400.0
        let through = try await database.query(
            "SELECT (through - date '1970-01-01') AS through FROM feedback.rollup_state")[0].decode("through", as: Int?.self)
        // Whole days in the range: [firstFull, fullEnd), those the rollup has; the rest from the items.
        let firstFull = from.map { ($0.timeIntervalSince1970 / day).rounded(.up) * day } ?? -.infinity
        let lastFull = to.map { ($0.timeIntervalSince1970 / day).rounded(.down) * day } ?? .infinity
        let rolledEnd = through.map { Double($0 + 1) * day } ?? -.infinity
        let fullEnd = max(firstFull, min(lastFull, rolledEnd))
        func time(_ seconds: Double) -> Date? { seconds.isFinite ? Date(timeIntervalSince1970: seconds) : nil }
        let (lowest, highest) = (time(firstFull), time(fullEnd))
        let columns = keys.map(\.rawValue).joined(separator: ", ")
        let selected = keys.map { $0 == .day ? "(day - date '1970-01-01') AS day" : $0.rawValue }.joined(separator: ", ")
        let rows = try await database.query(
            """
            WITH live AS (
                SELECT * FROM feedback.items
                WHERE created_at >= coalesce(\(from)::timestamptz, '-infinity')
                    AND created_at < least(coalesce(\(to)::timestamptz, 'infinity'), coalesce(\(lowest)::timestamptz, '-infinity'))
                UNION ALL
                SELECT * FROM feedback.items
                WHERE created_at >= greatest(coalesce(\(from)::timestamptz, '-infinity'),
                        coalesce(\(highest)::timestamptz, '-infinity'))
                    AND created_at < coalesce(\(to)::timestamptz, 'infinity')
                UNION ALL
                SELECT i.* FROM feedback.daily_stale s, feedback.items i
                WHERE s.day >= (coalesce(\(lowest)::timestamptz, '-infinity') AT TIME ZONE 'UTC')::date
                    AND s.day < (coalesce(\(highest)::timestamptz, '-infinity') AT TIME ZONE 'UTC')::date
                    AND i.created_at >= (s.day::timestamp AT TIME ZONE 'UTC') AND i.created_at < ((s.day + 1)::timestamp AT TIME ZONE 'UTC')
            ),
            counted AS (
                SELECT d.day, d.category, d.platform, d.app_version, d.status, d.moderation, d.items, d.ratings, d.rating_sum
                FROM feedback.daily d
                WHERE d.day >= (coalesce(\(lowest)::timestamptz, '-infinity') AT TIME ZONE 'UTC')::date
                    AND d.day < (coalesce(\(highest)::timestamptz, '-infinity') AT TIME ZONE 'UTC')::date
                    AND d.day NOT IN (SELECT day FROM feedback.daily_stale)
                UNION ALL
                SELECT (created_at AT TIME ZONE 'UTC')::date, category, coalesce(platform, ''), coalesce(app_version, ''), status,
                    moderation, 1, (rating IS NOT NULL)::int, coalesce(rating, 0)
                FROM live
            )
            SELECT \(unsafeSQL: selected), sum(items)::bigint AS items, sum(ratings)::bigint AS ratings,
                sum(rating_sum)::bigint AS rating_sum
            FROM counted WHERE \(moderation)::text IS NULL OR moderation = \(moderation)::text
            GROUP BY \(unsafeSQL: columns)
            """)
        return try rows.map { row in
            var key: [Key: String] = [:]
            for name in keys {
                key[name] =
                    name == .day ? Self.text(day: try row.decode("day", as: Int.self)) : try row.decode(name.rawValue)
            }
            return Counts(
                key: key, items: Int(try row.decode("items", as: Int64.self)),
                ratings: Int(try row.decode("ratings", as: Int64.self)),
                ratingSum: Int(try row.decode("rating_sum", as: Int64.self)))
        }
    }

    /// `GET /feedback/stats`: counts by status, category and platform, and the average rating
    /// per app version, of the items created in [from, to).
    func stats(from: Date?, to: Date?, moderation: String?) async throws -> FeedbackStats {
        let groups = try await counts(
            from: from, to: to, moderation: moderation, by: [.category, .platform, .appVersion, .status])
        func sums(_ key: Key, empty: String = "unknown") -> [String: Int] {
            groups.reduce(into: [:]) { sums, group in
                let value = group.key[key] ?? ""
                sums[value.isEmpty ? empty : value, default: 0] += group.items
            }
        }
        var versions: [String: (ratings: Int, sum: Int)] = [:]
        for group in groups {
            versions[group.key[.appVersion] ?? "", default: (0, 0)].ratings += group.ratings
            versions[group.key[.appVersion] ?? "", default: (0, 0)].sum += group.ratingSum
        }
        // Versions in order, the items without one last.
        let ratings = versions.keys.sorted { ($0.isEmpty ? 1 : 0, $0) < ($1.isEmpty ? 1 : 0, $1) }.map { version in
            let (count, sum) = versions[version]!
            return FeedbackStats.AppVersionRating(
                appVersion: version.isEmpty ? nil : version,
                averageRating: count == 0 ? nil : (Double(sum) / Double(count) * 100).rounded() / 100, ratings: count)
        }
        let byStatus = sums(.status)
        return FeedbackStats(
            from: from, to: to, total: byStatus.values.reduce(0, +), byStatus: byStatus, byCategory: sums(.category),
            byPlatform: sums(.platform), ratingByAppVersion: ratings)
    }

    /// `GET /feedback/stats/daily`: each UTC day from `first` (days since 1970) to today, and the
    /// backlog now.
    func daily(first: Int, moderation: String?) async throws -> FeedbackDaily {
        let from = Date(timeIntervalSince1970: Double(first) * 86_400)
        let groups = try await counts(from: from, to: nil, moderation: moderation, by: [.day, .category, .platform])
        var days: [String: FeedbackDaily.Day] = [:]
        let today = Int((Date().timeIntervalSince1970 / 86_400).rounded(.down))
        for day in first...max(first, today) {
            let text = Self.text(day: day)
            days[text] = FeedbackDaily.Day(day: text, items: 0, byCategory: [:], byPlatform: [:], ratings: 0, averageRating: nil)
        }
        var sums: [String: Int] = [:]
        for group in groups {
            let text = group.key[.day] ?? ""
            var day =
                days[text]
                ?? FeedbackDaily.Day(day: text, items: 0, byCategory: [:], byPlatform: [:], ratings: 0, averageRating: nil)
            day.items += group.items
            day.byCategory[group.key[.category] ?? "other", default: 0] += group.items
            let platform = group.key[.platform] ?? ""
            day.byPlatform[platform.isEmpty ? "unknown" : platform, default: 0] += group.items
            day.ratings += group.ratings
            sums[text, default: 0] += group.ratingSum
            days[text] = day
        }
        let list = days.keys.sorted().map { text in
            var day = days[text]!
            if day.ratings > 0 { day.averageRating = (Double(sums[text] ?? 0) / Double(day.ratings) * 100).rounded() / 100 }
            return day
        }
        let statuses = try await counts(from: nil, to: nil, moderation: moderation, by: [.status])
        let byStatus = statuses.reduce(into: [String: Int]()) { $0[$1.key[.status] ?? "", default: 0] += $1.items }
        return FeedbackDaily(
            days: list, open: Self.openStatuses.reduce(0) { $0 + (byStatus[$1] ?? 0) },
            oldestOpenAt: try await oldestOpen(moderation: moderation), byStatus: byStatus)
    }

    /// When the oldest open item (of one moderation state when given) came in.
    func oldestOpen(moderation: String?) async throws -> Date? {
        try await database.query(
            """
            SELECT min(created_at) AS oldest FROM feedback.items
            WHERE status IN ('new', 'triaged', 'planned', 'in_progress')
                AND (\(moderation)::text IS NULL OR moderation = \(moderation)::text)
            """
        ).first?.decode("oldest", as: Date?.self)
    }

    // MARK: - Rolling up

    /// Rolls up again the days triaged since, and up to `batch` days after those rolled up
    /// (days that ended more than ``grace`` ago); returns how many new days it rolled up. On a
    /// transaction: replicas take turns (an advisory lock), a busy one skips.
    func rollUp(batch: Int = 31) async throws -> Int {
        guard
            try await database.query("SELECT pg_try_advisory_xact_lock(hashtext('feedback.rollup')) AS mine")[0]
                .decode("mine", as: Bool.self)
        else { return 0 }
        let state = try await database.query(
            """
            SELECT (through - date '1970-01-01') AS through,
                (((now() - interval '\(unsafeSQL: Self.grace)') AT TIME ZONE 'UTC')::date - 1 - date '1970-01-01') AS closed,
                (SELECT (min(created_at) AT TIME ZONE 'UTC')::date FROM feedback.items) - date '1970-01-01' AS first
            FROM feedback.rollup_state FOR UPDATE
            """)[0]
        let through = try state.decode("through", as: Int?.self)
        let closed = try state.decode("closed", as: Int.self)
        // The marks go first: a triage committed after this statement marks its day again.
        let stale = try await database.query(
            "DELETE FROM feedback.daily_stale RETURNING (day - date '1970-01-01') AS day"
        ).map { try $0.decode("day", as: Int.self) }.filter { day in through.map { day <= $0 } ?? false }
        // Without items yet, the rollup waits for the first: it starts at that one's day.
        let first = try state.decode("first", as: Int?.self)
        let start = through.map { $0 + 1 } ?? first ?? closed + 1
        let next = start <= closed ? Array(start...min(closed, start + batch - 1)) : []
        let days = stale + next
        if !days.isEmpty {
            let list = PostgresTextArray(days.map(Self.text(day:)))
            try await database.execute("DELETE FROM feedback.daily WHERE day = ANY(\(list)::date[])")
            try await database.execute(
                """
                INSERT INTO feedback.daily (day, category, platform, app_version, status, moderation, items, ratings, rating_sum)
                SELECT d.day, i.category, coalesce(i.platform, ''), coalesce(i.app_version, ''), i.status, i.moderation,
                    count(*), count(i.rating), coalesce(sum(i.rating), 0)
                FROM unnest(\(list)::date[]) AS d (day)
                JOIN feedback.items i ON i.created_at >= (d.day::timestamp AT TIME ZONE 'UTC')
                    AND i.created_at < ((d.day + 1)::timestamp AT TIME ZONE 'UTC')
                GROUP BY 1, 2, 3, 4, 5, 6
                """)
        }
        if let newThrough = next.last {
            try await database.execute(
                "UPDATE feedback.rollup_state SET through = date '1970-01-01' + \(newThrough)::int")
        }
        return next.count
    }

    /// `YYYY-MM-DD` of a day counted from 1970-01-01.
    static func text(day: Int) -> String {
        String(CivilDate.iso8601(secondsSince1970: Double(day) * 86_400).prefix(10))
    }

    /// Marks the day item `id` came in as changed (its status or moderation was). A mark that
    /// exists is updated, not skipped: its row stays locked until the triage commits, so a
    /// rollup that takes the marks meanwhile waits for it and then reads the triage's change
    /// (skipping it, the rollup could take the mark and roll the day without the change).
    func markChanged(_ id: UUID) async throws {
        try await database.execute(
            """
            INSERT INTO feedback.daily_stale (day)
            SELECT (created_at AT TIME ZONE 'UTC')::date FROM feedback.items WHERE id = \(id)
            ON CONFLICT (day) DO UPDATE SET day = excluded.day
            """)
    }
}
