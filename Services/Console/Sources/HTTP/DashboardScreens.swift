import PierHTML
import PierHTTP
import PierModels
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The dashboard: feedback per day by category and by platform, the average rating, the triage
/// backlog and its age, sign-ups per day, subscriptions and introductory offers by plan over
/// time, conversions, cancellations and refunds. Charts are SVG drawn here (no script, no library):
/// each bar carries its figures as a tooltip, each chart a legend and its scale.
struct DashboardScreens: Sendable {
    let console: Console

    static let spans = [7, 30, 90, 365]

    func dashboard(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let days = request.query("days").flatMap { Int($0) }.flatMap { Self.spans.contains($0) ? $0 : nil } ?? 30
        async let feedback = console.fetch(FeedbackAPI.daily, FeedbackDailyQuery(days: days), as: session, request)
        async let signUps = console.fetch(AuthAPI.signUps, DaysQuery(days: days), as: session, request)
        async let subscriptions = console.fetch(SubscriptionsAPI.daily, DaysQuery(days: days), as: session, request)
        async let counted = console.fetch(SubscriptionsAPI.subscribers, NoParameters(), as: session, request)
        let (daily, accounts, subscribed, subscribers) = try await (feedback, signUps, subscriptions, counted)
        // A bar a day up to 90 days, a week beyond (a year is 53 bars, not 365).
        let group = Grouping(days: daily.days.map(\.day))
        let per = group.size == 1 ? "day" : "week"
        let sums = group.sums
        let categories = Vocabulary.categories.sorted()
        let platforms = Set(daily.days.flatMap(\.byPlatform.keys)).sorted()
        let byCategory = Self.bars(
            group,
            categories.map { name in
                (Labels.english(FeedbackCategory(wire: name)), sums(daily.days.map { $0.byCategory[name] ?? 0 }))
            }, what: "items")
        let byPlatform = Self.bars(
            group,
            platforms.map { name in
                // Items that named no platform are counted as `unknown`.
                (
                    name == "unknown" ? "Not said" : Labels.english(Platform(wire: name)),
                    sums(daily.days.map { $0.byPlatform[name] ?? 0 })
                )
            }, what: "items")
        let ratings = group.ranges.map { range -> Double? in
            let days = daily.days[range.clamped(to: daily.days.indices)]
            let count = days.reduce(0) { $0 + $1.ratings }
            return count == 0 ? nil : days.reduce(0.0) { $0 + ($1.averageRating ?? 0) * Double($1.ratings) } / Double(count)
        }
        let rating = Self.line(group, ratings, top: 5, what: "average rating")
        let signUpChart = Self.bars(
            group,
            [
                ("with an address or identity", sums(accounts.days.map { $0.signUps - $0.anonymous })),
                ("anonymous", sums(accounts.days.map(\.anonymous))),
            ], what: "sign-ups")
        let keptChart = Self.bars(
            group, [("kept", sums(accounts.days.map(\.kept))), ("merged", sums(accounts.days.map(\.merged)))],
            what: "anonymous accounts kept or merged")
        let statuses = HTML.join(
            FeedbackStatus.allCases.map { status in
                "<li><a href=\"\(ConsolePath("inbox", query: [("status", status.rawValue)]))\">\(label: status)</a> <strong>\(daily.byStatus[status.rawValue] ?? 0)</strong></li>"
            })
        let spans = HTML.join(
            Self.spans.map { span in
                span == days
                    ? "<strong>\(span) days</strong>"
                    : "<a href=\"\(ConsolePath("dashboard", query: [("days", String(span))]))\">\(span) days</a>"
            })
        return console.page(
            title: "Dashboard", session: session,
            """
            <h1>Dashboard</h1>
            <p class="spans">\(spans)</p>
            \(Self.tiles(daily, accounts, subscribed, subscribers.items, days: days))
            <h2>Items by status now</h2>
            <ul class="statuses">\(statuses)</ul>
            <div class="charts">
            <section><h2>Feedback per \(per), by category</h2>\(byCategory)\(Self.noData(daily.days.allSatisfy { $0.items == 0 }, "feedback sent from the app"))</section>
            <section><h2>Feedback per \(per), by platform</h2>\(byPlatform)\(Self.noData(daily.days.allSatisfy { $0.items == 0 }, "feedback sent from the app"))</section>
            <section><h2>Average rating per \(per)</h2>\(rating)\(Self.noData(daily.days.allSatisfy { $0.ratings == 0 }, "feedback sent with a rating"))</section>
            <section><h2>Sign-ups per \(per)</h2>\(signUpChart)\(Self.noData(accounts.days.allSatisfy { $0.signUps == 0 }, "accounts registered from the app"))</section>
            <section><h2>Anonymous accounts kept or merged per \(per)</h2>\(keptChart)\(Self.noData(accounts.days.allSatisfy { $0.kept == 0 && $0.merged == 0 }, "anonymous accounts that add an address, an identity or a passkey, or merge into an account"))</section>
            \(Self.subscriptionCharts(subscribed, group: group, per: per))
            </div>
            <p class="muted">Approved and pending feedback alike; days in UTC. Whole days come from a daily rollup, today from the items.
            Subscriptions at the end of each day (today: now), introductory offers included; a conversion is a paid period right after an introductory offer, a cancellation auto-renew turned off.</p>
            """)
    }

    /// The charts of access: App Store subscriptions and grants by plan, introductory offers,
    /// conversions, cancellations and refunds.
    static func subscriptionCharts(_ subscribed: SubscriptionDaily, group: Grouping, per: String) -> HTML {
        let sums = group.sums, lasts = group.lasts
        let plans = Set(subscribed.days.flatMap(\.active.keys)).sorted()
        let grantedPlans = Set(subscribed.days.flatMap(\.granted.keys)).sorted()
        let activeChart = bars(
            group,
            plans.map { plan in (plan + " (App Store)", lasts(subscribed.days.map { $0.active[plan] ?? 0 })) }
                + grantedPlans.map { plan in (plan + " (granted)", lasts(subscribed.days.map { $0.granted[plan] ?? 0 })) },
            what: "subscriptions and grants", level: true)
        let trialChart = bars(
            group, plans.map { plan in (plan, lasts(subscribed.days.map { $0.trials[plan] ?? 0 })) }, what: "introductory offers",
            level: true)
        let movesChart = bars(
            group,
            [
                ("conversions", sums(subscribed.days.map(\.conversions))),
                ("cancellations", sums(subscribed.days.map(\.cancellations))), ("refunds", sums(subscribed.days.map(\.refunds))),
            ], what: "changes")
        return """
            <section><h2>Access by plan: App Store and granted</h2>\(activeChart)\(noData(plans.isEmpty && grantedPlans.isEmpty, "purchases in the app, sent to Pier by PierClient or by Apple's notifications, and access the team grants"))</section>
            <section><h2>Introductory offers (trials) by plan</h2>\(trialChart)\(noData(subscribed.days.allSatisfy { $0.trials.isEmpty }, "App Store subscriptions that start with a free trial or an introductory price"))</section>
            <section><h2>Conversions, cancellations and refunds per \(per)</h2>\(movesChart)\(noData(subscribed.days.allSatisfy { $0.conversions + $0.cancellations + $0.refunds == 0 }, "App Store subscriptions that convert, stop renewing or are refunded"))</section>
            """
    }

    /// Under a chart with nothing to draw: that there is no data yet, and what would fill it.
    static func noData(_ empty: Bool, _ fills: String) -> HTML {
        empty ? "<p class=\"muted\" data-empty>No data yet: \(fills) will show here.</p>" : .empty
    }

    /// The figures of the span, one tile each.
    static func tiles(
        _ daily: FeedbackDaily, _ accounts: SignUpStats, _ subscribed: SubscriptionDaily, _ plans: [PlanSubscribers],
        days: Int
    ) -> HTML {
        let now = subscribed.days.last
        // Every source of access, each said: the App Store's current subscriptions (as the
        // charts count them) and the team's current grants.
        let appStore = now?.active.values.reduce(0, +) ?? 0
        let granted = plans.reduce(0) { $0 + $1.grants }
        let inTrial = now?.trials.values.reduce(0, +) ?? 0
        let conversions = subscribed.days.reduce(0) { $0 + $1.conversions }
        let cancellations = subscribed.days.reduce(0) { $0 + $1.cancellations }
        let received = daily.days.reduce(0) { $0 + $1.items }
        let rated = daily.days.reduce(0) { $0 + $1.ratings }
        let ratingSum = daily.days.reduce(0.0) { $0 + ($1.averageRating ?? 0) * Double($1.ratings) }
        let average = rated == 0 ? "-" : String((ratingSum / Double(rated) * 10).rounded() / 10)
        let age = daily.oldestOpenAt.map { Self.age(since: $0) } ?? "-"
        return """
            <div class="tiles">
            <div class="tile"><span class="muted">Feedback, \(days) days</span><strong data-figure="received">\(received)</strong></div>
            <div class="tile"><span class="muted">Average rating</span><strong data-figure="rating">\(average)</strong></div>
            <div class="tile"><span class="muted">Open (backlog)</span><strong data-figure="open">\(daily.open)</strong></div>
            <div class="tile"><span class="muted">Oldest open item</span><strong data-figure="oldest">\(age)</strong></div>
            <div class="tile"><span class="muted">Sign-ups, \(days) days (the team not counted)</span><strong data-figure="signups">\(accounts.days.reduce(0) { $0 + $1.signUps })</strong></div>
            <div class="tile"><span class="muted">Anonymous sign-ups, \(days) days</span><strong data-figure="anonymous">\(accounts.days.reduce(0) { $0 + $1.anonymous })</strong><span class="muted"><span data-figure="kept">\(accounts.days.reduce(0) { $0 + $1.kept })</span> kept, <span data-figure="merged">\(accounts.days.reduce(0) { $0 + $1.merged })</span> merged</span></div>
            <div class="tile"><span class="muted">Accounts</span><strong data-figure="accounts">\(accounts.total)</strong></div>
            <div class="tile"><span class="muted">Access now (an account with both counts in each)</span><strong data-figure="subscriptions">\(appStore + granted)</strong><span class="muted" data-figure="sources">\(appStore) from the App Store, \(granted) granted by the team</span></div>
            <div class="tile"><span class="muted">In an introductory offer</span><strong data-figure="trials">\(inTrial)</strong></div>
            <div class="tile"><span class="muted">Conversions, \(days) days</span><strong data-figure="conversions">\(conversions)</strong></div>
            <div class="tile"><span class="muted">Cancellations, \(days) days</span><strong data-figure="cancellations">\(cancellations)</strong></div>
            </div>
            """
    }

    // MARK: - Charts

    static let width = 640.0
    static let height = 180.0
    static let left = 40.0
    static let bottom = 20.0

    /// Stacked bars, one per label, a series per colour (`s0`…`s8` in the stylesheet). The
    /// legend gives each series' total, or its latest value for a `level` (subscriptions, not
    /// events).
    static func bars(_ group: Grouping, _ series: [(name: String, values: [Int])], what: String, level: Bool = false) -> HTML {
        let labels = group.labels
        let count = max(labels.count, 1)
        let totals = (0..<labels.count).map { index in series.reduce(0) { $0 + ($1.values.count > index ? $1.values[index] : 0) }
        }
        let top = Self.niceTop(totals.max() ?? 0)
        let slot = (width - left) / Double(count)
        let scale = (height - bottom) / Double(top)
        var rects: [HTML] = []
        for index in labels.indices {
            var y = height - bottom
            for (number, serie) in series.enumerated() {
                let value = serie.values.count > index ? serie.values[index] : 0
                guard value > 0 else { continue }
                let h = Double(value) * scale
                y -= h
                let x = left + Double(index) * slot + slot * 0.1
                rects.append(
                    "<rect class=\"s\(number % 9)\" x=\"\(x)\" y=\"\(y)\" width=\"\(max(slot * 0.8, 0.5))\" height=\"\(h)\"><title>\(labels[index]): \(value) \(serie.name)</title></rect>"
                )
            }
        }
        let legend = HTML.join(
            series.enumerated().map { number, serie in
                "<li><span class=\"swatch s\(number % 9)\"></span>\(serie.name) <strong>\(level ? serie.values.last ?? 0 : serie.values.reduce(0, +))</strong>\(level ? " now" : "")</li>"
            })
        return chart(group, top: String(top), what: what, marks: HTML.join(rects), legend: legend)
    }

    /// A line through the days that have a value (gaps where none).
    static func line(_ group: Grouping, _ values: [Double?], top: Double, what: String) -> HTML {
        let labels = group.labels
        let count = max(labels.count, 1)
        let slot = (width - left) / Double(count)
        let scale = (height - bottom) / top
        var dots: [HTML] = []
        var segments: [HTML] = []
        var previous: (Double, Double)?
        for (index, value) in values.enumerated() {
            guard let value else {
                previous = nil
                continue
            }
            let x = left + Double(index) * slot + slot / 2
            let y = height - bottom - value * scale
            if let (px, py) = previous {
                segments.append("<line class=\"s0 stroke\" x1=\"\(px)\" y1=\"\(py)\" x2=\"\(x)\" y2=\"\(y)\"></line>")
            }
            dots.append(
                "<circle class=\"s0\" cx=\"\(x)\" cy=\"\(y)\" r=\"2.5\"><title>\(labels[index]): \(value)</title></circle>")
            previous = (x, y)
        }
        return chart(group, top: String(Int(top)), what: what, marks: HTML.join(segments + dots), legend: .empty)
    }

    static func chart(_ group: Grouping, top: String, what: String, marks: HTML, legend: HTML) -> HTML {
        let base = height - bottom
        let first = group.days.first ?? ""
        let last = group.days.last ?? ""
        return """
            <figure class="chart">
            <svg viewBox="0 0 \(width) \(height)" role="img" aria-label="\(what) per \(group.size == 1 ? "day" : "week"), \(first) to \(last)" data-chart>
            <line class="axis" x1="\(left)" y1="\(base)" x2="\(width)" y2="\(base)"></line>
            <line class="grid" x1="\(left)" y1="0.5" x2="\(width)" y2="0.5"></line>
            <text class="label" x="\(left - 4)" y="10" text-anchor="end">\(top)</text>
            <text class="label" x="\(left - 4)" y="\(base)" text-anchor="end">0</text>
            <text class="label" x="\(left)" y="\(height - 4)">\(first)</text>
            <text class="label" x="\(width)" y="\(height - 4)" text-anchor="end">\(last)</text>
            \(marks)
            </svg>
            <ul class="legend">\(legend)</ul>
            </figure>
            """
    }

    /// The days drawn a bar each (up to 90), or a week each, the last week ending today.
    struct Grouping {
        let days: [String]
        let size: Int
        /// The days of each bar, oldest first.
        let ranges: [Range<Int>]
        /// Each bar's tooltip label: its day, or its first and last days.
        let labels: [String]

        init(days: [String]) {
            self.days = days
            let size = days.count > 90 ? 7 : 1
            let ranges = Array(stride(from: days.count, to: 0, by: -size).map { max(0, $0 - size)..<$0 }.reversed())
            self.size = size
            self.ranges = ranges
            labels = ranges.map { range in
                size == 1 ? days[range.lowerBound] : "\(days[range.lowerBound]) to \(days[range.upperBound - 1])"
            }
        }

        // Each service answers the days of its own clock: a series is read within its length.

        /// A flow's bars: the sum of each bar's days.
        func sums(_ values: [Int]) -> [Int] { ranges.map { values[$0.clamped(to: values.indices)].reduce(0, +) } }

        /// A level's bars: its value on each bar's last day.
        func lasts(_ values: [Int]) -> [Int] {
            ranges.map { range in range.clamped(to: values.indices).last.map { values[$0] } ?? 0 }
        }
    }

    /// The scale's top: 1, 2 or 5 times a power of ten, at least the largest value.
    static func niceTop(_ value: Int) -> Int {
        var step = 1
        while true {
            for factor in [1, 2, 5] where factor * step >= value { return max(factor * step, 1) }
            step *= 10
        }
    }

    /// How long ago, in the largest whole unit.
    static func age(since date: Date) -> String {
        let seconds = max(0, Date().timeIntervalSince(date))
        if seconds >= 86_400 * 2 { return "\(Int(seconds / 86_400)) days" }
        if seconds >= 3_600 * 2 { return "\(Int(seconds / 3_600)) hours" }
        return "\(Int(seconds / 60)) minutes"
    }
}
