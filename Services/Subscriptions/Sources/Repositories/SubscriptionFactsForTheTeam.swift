import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension SubscriptionFacts {
    // MARK: - The team's view

    /// A notification refused (its signature or content did not verify): the newest thousand
    /// are kept.
    static func refused(_ reason: String, on connection: any PostgresExecutor) async throws {
        try await connection.execute("INSERT INTO subscriptions.appstore_refusals (reason) VALUES (\(reason))")
        try await connection.execute(
            """
            DELETE FROM subscriptions.appstore_refusals
            WHERE id <= (SELECT max(id) - 1000 FROM subscriptions.appstore_refusals)
            """)
    }

    /// The newest notifications, refused ones included, newest first.
    static func recentNotifications(limit: Int, on connection: any PostgresExecutor) async throws -> [AppStoreNotificationEntry] {
        try await connection.query(
            """
            (SELECT received_at, notification_uuid, notification_type, subtype, environment, original_transaction_id,
                outcome, reason FROM subscriptions.appstore_notifications ORDER BY received_at DESC LIMIT \(limit))
            UNION ALL
            (SELECT received_at, NULL, NULL, NULL, NULL, NULL, 'refused', reason FROM subscriptions.appstore_refusals
                ORDER BY id DESC LIMIT \(limit))
            ORDER BY received_at DESC LIMIT \(limit)
            """
        ).map { row in
            AppStoreNotificationEntry(
                receivedAt: try row.decode("received_at"), outcome: try row.decode("outcome"),
                reason: try row.decode("reason", as: String?.self),
                notificationType: try row.decode("notification_type", as: String?.self),
                subtype: try row.decode("subtype", as: String?.self),
                environment: try row.decode("environment", as: String?.self),
                notificationUUID: try row.decode("notification_uuid", as: UUID?.self),
                originalTransactionId: try row.decode("original_transaction_id", as: String?.self))
        }
    }

    /// Accounts with access now, per plan: through the App Store (its latest transaction of
    /// each subscription not expired nor revoked; in an introductory offer, in a grace period,
    /// in billing retry) and through grants.
    static func subscribers(on connection: any PostgresExecutor) async throws -> [PlanSubscribers] {
        let appStore = try await connection.query(
            """
            SELECT p.id AS plan,
                count(DISTINCT o.user_id) FILTER (WHERE t.expires_date > now()) AS active,
                count(DISTINCT o.user_id) FILTER (WHERE t.expires_date > now() AND t.offer_type = 1) AS introductory,
                count(DISTINCT o.user_id) FILTER (WHERE t.expires_date <= now() AND r.grace_period_expires_date > now()) AS grace,
                count(DISTINCT o.user_id) FILTER (WHERE t.expires_date <= now() AND r.billing_retry
                    AND coalesce(r.grace_period_expires_date, '-infinity') <= now()) AS retrying
            FROM subscriptions.appstore_owners o
            JOIN LATERAL (
                SELECT * FROM subscriptions.appstore_transactions t
                WHERE t.original_transaction_id = o.original_transaction_id AND t.environment = o.environment
                ORDER BY t.expires_date DESC NULLS LAST LIMIT 1) t ON true
            LEFT JOIN subscriptions.appstore_renewals r
                ON r.original_transaction_id = o.original_transaction_id AND r.environment = o.environment
            JOIN subscriptions.plans p ON t.product_id = ANY (p.appstore_product_ids)
            WHERE o.user_id IS NOT NULL AND t.revocation_date IS NULL
            GROUP BY p.id
            """)
        let google = try await connection.query(
            """
            SELECT p.id AS plan,
                count(DISTINCT g.user_id) FILTER (WHERE g.state IN ('SUBSCRIPTION_STATE_ACTIVE', 'SUBSCRIPTION_STATE_CANCELED')
                    AND g.expiry_time > now()) AS active,
                count(DISTINCT g.user_id) FILTER (WHERE g.state IN ('SUBSCRIPTION_STATE_ACTIVE', 'SUBSCRIPTION_STATE_CANCELED')
                    AND g.expiry_time > now() AND g.trial) AS introductory,
                count(DISTINCT g.user_id) FILTER (WHERE g.state = 'SUBSCRIPTION_STATE_IN_GRACE_PERIOD'
                    AND g.expiry_time > now()) AS grace,
                count(DISTINCT g.user_id) FILTER (WHERE g.state = 'SUBSCRIPTION_STATE_ON_HOLD'
                    OR (g.state = 'SUBSCRIPTION_STATE_IN_GRACE_PERIOD' AND g.expiry_time <= now())) AS retrying,
                count(DISTINCT g.user_id) FILTER (WHERE g.state = 'SUBSCRIPTION_STATE_PAUSED') AS paused
            FROM subscriptions.google_purchases g
            JOIN subscriptions.plans p
                ON g.product_id = ANY (p.google_product_ids) OR g.product_id || ':' || g.base_plan_id = ANY (p.google_product_ids)
            WHERE g.user_id IS NOT NULL AND g.revoked_at IS NULL AND g.superseded_by IS NULL
            GROUP BY p.id
            """)
        let grants = try await connection.query(
            """
            SELECT plan_id AS plan, count(DISTINCT user_id) AS granted FROM subscriptions.grants
            WHERE user_id IS NOT NULL AND revoked_at IS NULL AND starts_at <= now() AND ends_at > now()
            GROUP BY plan_id
            """)
        var byPlan: [String: PlanSubscribers] = [:]
        for row in try await connection.query("SELECT id, name, active FROM subscriptions.plans ORDER BY id") {
            let id: String = try row.decode("id")
            byPlan[id] = PlanSubscribers(planId: id, name: try row.decode("name"), onSale: try row.decode("active"))
        }
        for row in appStore {
            let id: String = try row.decode("plan")
            byPlan[id]?.appStore = Int(try row.decode("active", as: Int64.self))
            byPlan[id]?.introductoryOffer = Int(try row.decode("introductory", as: Int64.self))
            byPlan[id]?.gracePeriod = Int(try row.decode("grace", as: Int64.self))
            byPlan[id]?.billingRetry = Int(try row.decode("retrying", as: Int64.self))
        }
        for row in google {
            let id: String = try row.decode("plan")
            byPlan[id]?.googlePlay = Int(try row.decode("active", as: Int64.self))
            byPlan[id]?.introductoryOffer += Int(try row.decode("introductory", as: Int64.self))
            byPlan[id]?.gracePeriod += Int(try row.decode("grace", as: Int64.self))
            byPlan[id]?.billingRetry += Int(try row.decode("retrying", as: Int64.self))
            byPlan[id]?.paused = Int(try row.decode("paused", as: Int64.self))
        }
        for row in grants {
            byPlan[try row.decode("plan", as: String.self)]?.grants = Int(try row.decode("granted", as: Int64.self))
        }
        return byPlan.keys.sorted().compactMap { byPlan[$0] }
    }

    /// App Store subscriptions per UTC day over the last `days` (today included), on one
    /// snapshot: see ``SubscriptionDaily``. A period counts from its purchase to its expiry or
    /// revocation: the levels of whole days are the sums of the periods' steps kept by
    /// migration 6's trigger (a small table, whatever the years of history), today's adds the
    /// steps of today up to now read from the periods themselves.
    static func daily(days: Int, on connection: any PostgresExecutor) async throws -> SubscriptionDaily {
        let bounds = try await connection.query(
            """
            SELECT now() AS now, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS today,
                (date_trunc('day', now() AT TIME ZONE 'UTC') - \(days - 1) * interval '1 day') AT TIME ZONE 'UTC' AS first
            """)[0]
        let now: Date = try bounds.decode("now")
        let today: Date = try bounds.decode("today")
        let first: Date = try bounds.decode("first")
        var result = try await connection.query(
            """
            SELECT to_char(d, 'YYYY-MM-DD') AS day
            FROM generate_series(\(first)::timestamptz AT TIME ZONE 'UTC', \(now)::timestamptz AT TIME ZONE 'UTC',
                interval '1 day') AS d
            """
        ).map { SubscriptionDaily.Day(day: try $0.decode("day")) }
        var index: [String: Int] = [:]
        for (position, day) in result.enumerated() { index[day.day] = position }
        try await addLevels(to: &result, index: index, first: first, today: today, now: now, on: connection)
        try await addFlows(to: &result, index: index, first: first, now: now, on: connection)
        try await addGrants(to: &result, index: index, first: first, now: now, on: connection)
        return SubscriptionDaily(days: result)
    }

    /// The active subscriptions and trials of each day, by plan: the steps before the first day
    /// add up to where it starts.
    private static func addLevels(
        to result: inout [SubscriptionDaily.Day], index: [String: Int], first: Date, today: Date, now: Date,
        on connection: any PostgresExecutor
    ) async throws {
        let steps = try await connection.query(
            """
            SELECT greatest(s.day, (\(first)::timestamptz AT TIME ZONE 'UTC')::date)::text AS day, p.id AS plan, s.trial,
                sum(s.starts - s.ends)::int AS step
            FROM subscriptions.period_steps s
            JOIN subscriptions.plans p ON s.product_id = ANY (p.appstore_product_ids)
            WHERE s.day < (\(today)::timestamptz AT TIME ZONE 'UTC')::date
            GROUP BY 1, 2, 3
            UNION ALL
            SELECT (\(today)::timestamptz AT TIME ZONE 'UTC')::date::text, p.id, today.trial, sum(today.step)::int
            FROM (
                SELECT product_id, coalesce(offer_type = 1, false) AS trial, 1 AS step
                FROM subscriptions.appstore_transactions
                WHERE purchase_date > \(today)::timestamptz AND purchase_date <= \(now)::timestamptz
                    AND expires_date IS NOT NULL
                UNION ALL
                SELECT product_id, coalesce(offer_type = 1, false), -1
                FROM subscriptions.appstore_transactions
                WHERE subscriptions.period_ends(purchase_date, expires_date, revocation_date) > \(today)::timestamptz
                    AND subscriptions.period_ends(purchase_date, expires_date, revocation_date) <= \(now)::timestamptz
            ) AS today
            JOIN subscriptions.plans p ON today.product_id = ANY (p.appstore_product_ids)
            GROUP BY 1, 2, 3
            UNION ALL
            -- Google Play: a purchase counts from its start to its expiry or voiding (the trial
            -- flag is its current phase's), read from the purchases themselves.
            SELECT greatest(g.day, (\(first)::timestamptz AT TIME ZONE 'UTC')::date)::text, p.id, g.trial, sum(g.step)::int
            FROM (
                SELECT subscriptions.step_day(start_time) AS day, product_id, base_plan_id, trial, 1 AS step
                FROM subscriptions.google_purchases WHERE start_time <= \(now)::timestamptz AND expiry_time IS NOT NULL
                UNION ALL
                SELECT subscriptions.step_day(subscriptions.period_ends(start_time, expiry_time, revoked_at)), product_id,
                    base_plan_id, trial, -1
                FROM subscriptions.google_purchases
                WHERE start_time IS NOT NULL AND subscriptions.period_ends(start_time, expiry_time, revoked_at) <= \(now)::timestamptz
            ) AS g
            JOIN subscriptions.plans p
                ON g.product_id = ANY (p.google_product_ids) OR g.product_id || ':' || g.base_plan_id = ANY (p.google_product_ids)
            GROUP BY 1, 2, 3
            """)
        var active: [[String: Int]] = Array(repeating: [:], count: result.count)
        var trials: [[String: Int]] = Array(repeating: [:], count: result.count)
        for row in steps {
            guard let position = index[try row.decode("day", as: String.self)] else { continue }
            let plan: String = try row.decode("plan")
            let step: Int = try row.decode("step")
            active[position][plan, default: 0] += step
            if try row.decode("trial", as: Bool.self) { trials[position][plan, default: 0] += step }
        }
        var level: [String: Int] = [:]
        var trialLevel: [String: Int] = [:]
        for position in result.indices {
            for (plan, step) in active[position] { level[plan, default: 0] += step }
            for (plan, step) in trials[position] { trialLevel[plan, default: 0] += step }
            result[position].active = level.filter { $0.value != 0 }
            result[position].trials = trialLevel.filter { $0.value != 0 }
        }
    }

    /// The grants current at the end of each day (today: now), by plan.
    private static func addGrants(
        to result: inout [SubscriptionDaily.Day], index: [String: Int], first: Date, now: Date,
        on connection: any PostgresExecutor
    ) async throws {
        let rows = try await connection.query(
            """
            SELECT to_char(d.start, 'YYYY-MM-DD') AS day, g.plan_id AS plan, count(*)::int AS granted
            FROM (
                SELECT start, least((start + interval '1 day') AT TIME ZONE 'UTC', \(now)::timestamptz) AS at
                FROM generate_series(\(first)::timestamptz AT TIME ZONE 'UTC', \(now)::timestamptz AT TIME ZONE 'UTC',
                    interval '1 day') AS start
            ) AS d
            JOIN subscriptions.grants g ON g.starts_at <= d.at AND g.ends_at > d.at
                AND coalesce(g.revoked_at, 'infinity') > d.at
            GROUP BY 1, 2
            """)
        for row in rows {
            guard let position = index[try row.decode("day", as: String.self)] else { continue }
            result[position].granted[try row.decode("plan", as: String.self)] = try row.decode("granted", as: Int.self)
        }
    }

    /// The conversions, refunds and cancellations of each day.
    private static func addFlows(
        to result: inout [SubscriptionDaily.Day], index: [String: Int], first: Date, now: Date,
        on connection: any PostgresExecutor
    ) async throws {
        // Flows, each an index range of the days asked for.
        let flows: [(WritableKeyPath<SubscriptionDaily.Day, Int>, PostgresQuery)] = [
            (
                \.conversions,
                """
                SELECT to_char(next.purchase_date AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*)::int AS n
                FROM subscriptions.appstore_transactions t
                JOIN LATERAL (
                    SELECT following.purchase_date, following.offer_type FROM subscriptions.appstore_transactions following
                    WHERE following.original_transaction_id = t.original_transaction_id
                        AND following.environment = t.environment AND following.expires_date > t.expires_date
                    ORDER BY following.expires_date LIMIT 1) AS next ON true
                WHERE t.offer_type = 1 AND t.expires_date >= \(first)::timestamptz - interval '60 days'
                    AND t.expires_date <= \(now)::timestamptz AND next.offer_type IS DISTINCT FROM 1
                    AND next.purchase_date >= \(first)::timestamptz AND next.purchase_date <= \(now)::timestamptz
                    AND next.purchase_date <= t.expires_date + interval '60 days'
                GROUP BY 1
                UNION ALL
                SELECT to_char(converted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), count(*)::int
                FROM subscriptions.google_purchases
                WHERE converted_at >= \(first)::timestamptz AND converted_at <= \(now)::timestamptz
                GROUP BY 1
                """
            ),
            (
                \.refunds,
                """
                SELECT to_char(revocation_date AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*)::int AS n
                FROM subscriptions.appstore_transactions
                WHERE revocation_date >= \(first)::timestamptz AND revocation_date <= \(now)::timestamptz
                GROUP BY 1
                UNION ALL
                SELECT to_char(revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), count(*)::int
                FROM subscriptions.google_purchases
                WHERE revoked_at >= \(first)::timestamptz AND revoked_at <= \(now)::timestamptz
                GROUP BY 1
                """
            ),
            (
                \.cancellations,
                """
                SELECT to_char(signed_date AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*)::int AS n
                FROM subscriptions.appstore_notifications
                WHERE notification_type = 'DID_CHANGE_RENEWAL_STATUS' AND subtype = 'AUTO_RENEW_DISABLED'
                    AND outcome = 'applied' AND signed_date >= \(first)::timestamptz AND signed_date <= \(now)::timestamptz
                GROUP BY 1
                UNION ALL
                -- Google's SUBSCRIPTION_CANCELED (3): the subscriber turned renewal off.
                SELECT to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), count(*)::int
                FROM subscriptions.google_notifications
                WHERE kind = 'subscription' AND notification_type = 3 AND outcome = 'applied'
                    AND received_at >= \(first)::timestamptz AND received_at <= \(now)::timestamptz
                GROUP BY 1
                """
            ),
        ]
        for (field, query) in flows {
            for row in try await connection.query(query) {
                guard let position = index[try row.decode("day", as: String.self)] else { continue }
                result[position][keyPath: field] += try row.decode("n", as: Int.self)
            }
        }
    }
}
