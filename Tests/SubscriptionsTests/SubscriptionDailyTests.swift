import Foundation
import PierModels
import PierServiceTestSupport
import Testing

@testable import SubscriptionsService

/// The dashboard's subscriptions per day, checked against the periods counted one by one: two
/// dozen subscriptions over six weeks (introductory offers, renewals, expiries, refunds, auto-renew
/// turned off), each posted as Apple signs it.
@Suite(.serialized) struct SubscriptionDailyTests {
    static let day = 86_400.0

    struct Period {
        let id: String
        let original: String
        let product: String
        let user: UUID
        let plan: String
        let trial: Bool
        let starts: Date
        let expires: Date
        var revoked: Date?
        let afterTrial: Bool

        var ends: Date { max(starts, min(expires, revoked ?? .distantFuture)) }
    }

    @Test func theDaysCountWhatThePeriodsSay() async throws {
        try await SubscriptionsHarness.with(database: "pier_test_subscriptions_daily") { service in
            let now = Date()
            var periods: [Period] = []
            var cancellations: [Date] = []
            for number in 0..<24 {
                let user = UUID()
                let (plan, product) = number % 3 == 2 ? ("team-yearly", "pier.team.yearly") : ("pro-monthly", "pier.pro.monthly")
                let original = "88\(number)00"
                var start = now.addingTimeInterval(-Double(number * 37 % 45) * Self.day - Double(number * 7 % 24) * 3600)
                var last = ""
                var lastStart = start
                let trial = number % 3 == 0
                let paidPeriods = number % 4 == 1 ? 1 : 3
                for index in 0..<((trial ? 1 : 0) + paidPeriods) where start < now {
                    let isTrial = trial && index == 0
                    let expires = start.addingTimeInterval((isTrial ? 7 : 30) * Self.day)
                    let refund = start.addingTimeInterval(10 * Self.day)
                    let revoked = number % 5 == 2 && !isTrial && refund < now.addingTimeInterval(-3600) ? refund : nil
                    let id = "88\(number)0\(index + 1)"
                    let jws = try service.ca.sign(
                        AppStorePayload.transaction(
                            id: id, original: original, product: product, purchased: start, expires: expires, revoked: revoked,
                            user: user, offerType: isTrial ? 1 : nil))
                    let reply = try await service.postTransaction(jws, user: user)
                    #expect(reply.status == 200, "\(reply.text)")
                    periods.append(
                        Period(
                            id: id, original: original, product: product, user: user, plan: plan, trial: isTrial, starts: start,
                            expires: expires, revoked: revoked,
                            afterTrial: trial && index == 1))
                    last = jws
                    lastStart = start
                    if revoked != nil { break }
                    start = expires
                }
                // One in four turns auto-renew off two days into its last period.
                let signed = lastStart.addingTimeInterval(2 * Self.day)
                if number % 4 == 1, !last.isEmpty, signed < now {
                    let renewal = try service.ca.sign(
                        AppStorePayload.renewal(original: original, autoRenew: false, signed: signed))
                    let notification = try service.ca.sign(
                        AppStorePayload.notification(
                            "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", signed: signed, transaction: last,
                            renewal: renewal))
                    let reply = try await service.postNotification(notification)
                    #expect(reply.status == 200, "\(reply.text)")
                    cancellations.append(signed)
                }
            }
            #expect(periods.contains { $0.trial } && periods.contains { $0.revoked != nil } && !cancellations.isEmpty)
            // Apple re-signs two current periods with a refund: their ends move.
            periods = try await Self.refundTwo(periods, service: service, now: now)

            let admin = try service.admin()
            for days in [1, 7, 45] {
                let reply = try await service.send("GET", "/subscriptions/stats/daily?days=\(days)", token: admin)
                #expect(reply.status == 200, "\(reply.text)")
                let daily = try reply.decode(SubscriptionDaily.self)
                let taken = Date()
                #expect(daily.days.count == days)
                for entry in daily.days {
                    let midnight = try #require(ISO8601DateFormatter().date(from: entry.day + "T00:00:00Z"))
                    let end = min(midnight.addingTimeInterval(Self.day), taken)
                    func at(_ date: Date) -> Bool { date >= midnight && date < midnight.addingTimeInterval(Self.day) }
                    var active: [String: Int] = [:]
                    var trials: [String: Int] = [:]
                    for period in periods where period.starts <= end && period.ends > end {
                        active[period.plan, default: 0] += 1
                        if period.trial { trials[period.plan, default: 0] += 1 }
                    }
                    #expect(entry.active == active, "\(entry.day) active")
                    #expect(entry.trials == trials, "\(entry.day) trials")
                    #expect(entry.conversions == periods.filter { $0.afterTrial && at($0.starts) }.count, "\(entry.day)")
                    #expect(entry.refunds == periods.filter { $0.revoked.map(at) == true }.count, "\(entry.day)")
                    #expect(entry.cancellations == cancellations.filter(at).count, "\(entry.day)")
                }
                if days == 45 {
                    #expect(daily.days.reduce(0) { $0 + $1.conversions } > 0)
                    #expect(daily.days.reduce(0) { $0 + $1.refunds } > 0)
                    #expect(daily.days.contains { !$0.trials.isEmpty })
                }
            }
            // Today's level is the subscribers' count (one subscription per account here).
            let subscribers = try await service.send("GET", "/subscriptions/subscribers", token: admin)
                .decode(ItemList<PlanSubscribers>.self).items
            let today = try await service.send("GET", "/subscriptions/stats/daily?days=1", token: admin)
                .decode(SubscriptionDaily.self).days[0]
            for plan in subscribers {
                #expect((today.active[plan.planId] ?? 0) == plan.appStore, "\(plan.planId)")
                #expect((today.trials[plan.planId] ?? 0) == plan.introductoryOffer, "\(plan.planId)")
            }
            for bad in ["0", "367", "x"] {
                let refused = try await service.send("GET", "/subscriptions/stats/daily?days=\(bad)", token: admin)
                #expect(refused.status == 422 && refused.problem?.errors?.first?.field == "days", "\(bad)")
            }
            #expect(
                try await service.send("GET", "/subscriptions/stats/daily", token: try service.token(UUID())).status == 403)
        }
    }

    /// The team's grants count on the days they were current at the day's end (today: now): a
    /// grant that ended or was revoked counts no more.
    @Test func grantsCountOnTheDaysTheyHold() async throws {
        try await SubscriptionsHarness.with(database: "pier_test_subscriptions_daily_grants") { service in
            let plan = try #require(
                try await service.pool.query("SELECT id FROM subscriptions.plans ORDER BY id LIMIT 1").first?.decode(
                    "id", as: String.self))
            let day = 86_400.0
            let now = Date()
            for (starts, ends, revoked) in [
                (-10.0, 20.0, nil), (-5.0, -2.5, nil), (-4.0, 30.0, -1.5), (-0.1, 2.0, nil),
            ] as [(Double, Double, Double?)] {
                try await service.pool.execute(
                    """
                    INSERT INTO subscriptions.grants (id, user_id, plan_id, starts_at, ends_at, reason, granted_by, revoked_at)
                    VALUES (\(UUID()), \(UUID()), \(plan), \(now.addingTimeInterval(starts * day)),
                        \(now.addingTimeInterval(ends * day)), 'test', \(UUID()), \(revoked.map { now.addingTimeInterval($0 * day) }))
                    """)
            }
            let daily = try await service.send("GET", "/subscriptions/stats/daily?days=12", token: try service.admin())
                .decode(SubscriptionDaily.self)
            let taken = Date()
            for entry in daily.days {
                let midnight = try #require(ISO8601DateFormatter().date(from: entry.day + "T00:00:00Z"))
                let end = min(midnight.addingTimeInterval(day), taken).timeIntervalSince(now) / day
                let expected = [(-10.0, 20.0, nil), (-5.0, -2.5, nil), (-4.0, 30.0, -1.5), (-0.1, 2.0, nil)].filter {
                    (starts: Double, ends: Double, revoked: Double?) in
                    starts <= end && ends > end && (revoked ?? .infinity) > end
                }.count
                #expect((entry.granted[plan] ?? 0) == expected, "\(entry.day)")
            }
            #expect(daily.days.last?.granted[plan] == 2)
            #expect(daily.days.contains { ($0.granted[plan] ?? 0) == 3 })
        }
    }

    /// Two current paid periods re-signed with a refund: one two days ago (the steps of whole
    /// days move), one a minute ago (today's, read from the periods). Signed after the first
    /// signature, however long posting them took: an older one would change nothing.
    static func refundTwo(_ periods: [Period], service: SubscriptionsHarness, now: Date) async throws -> [Period] {
        var periods = periods
        let current = periods.indices.filter {
            !periods[$0].trial && periods[$0].ends > now && periods[$0].revoked == nil
                && periods[$0].starts < now.addingTimeInterval(-3 * day)
        }
        #expect(current.count >= 2)
        for (position, ago) in zip(current.prefix(2), [2 * day, 60]) {
            let period = periods[position]
            let refunded = now.addingTimeInterval(-ago)
            let jws = try service.ca.sign(
                AppStorePayload.transaction(
                    id: period.id, original: period.original, product: period.product, purchased: period.starts,
                    expires: period.expires, signed: Date().addingTimeInterval(1), revoked: refunded, user: period.user))
            let reply = try await service.postTransaction(jws, user: period.user)
            #expect(reply.status == 200, "\(reply.text)")
            periods[position].revoked = refunded
        }
        return periods
    }
}
