import Foundation
import PierModels
import Testing

@testable import SubscriptionsService

/// Status is computed from the facts and the time of asking; every boundary belongs to the
/// later state (at the period end exactly, access has ended).
@Suite struct StatusResolverTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let pro = PlanReference(id: "pro-monthly", name: "Pro")
    static let team = PlanReference(id: "team-yearly", name: "Team")

    static func appStore(
        start: TimeInterval = -86_400, end: TimeInterval, revoked: Bool = false, grace: TimeInterval? = nil,
        retry: Bool = false, renew: Bool = true, trial: Bool = false
    ) -> AccessSource {
        AccessSource(
            kind: .appstore, reference: "1000", plan: pro, entitlements: ["pro"], periodStart: now.addingTimeInterval(start),
            periodEnd: now.addingTimeInterval(end), revoked: revoked, graceUntil: grace.map { now.addingTimeInterval($0) },
            billingRetry: retry, willRenew: renew, trial: trial, environment: "production")
    }

    static func grant(
        _ plan: PlanReference = pro, _ entitlements: [String] = ["pro"], end: TimeInterval, revoked: Bool = false
    ) -> AccessSource {
        AccessSource(
            kind: .grant, reference: UUID().uuidString, plan: plan, entitlements: entitlements,
            periodStart: now.addingTimeInterval(-3600), periodEnd: now.addingTimeInterval(end), revoked: revoked)
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let sources: [AccessSource]
        let status: SubscriptionState
        let active: Bool
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "no facts", sources: [], status: .none, active: false),
        Case(name: "inside the period", sources: [appStore(end: 3600)], status: .active, active: true),
        Case(name: "one second before the end", sources: [appStore(end: 1)], status: .active, active: true),
        Case(name: "exactly at the period end", sources: [appStore(end: 0)], status: .expired, active: false),
        Case(name: "after the period", sources: [appStore(end: -1)], status: .expired, active: false),
        Case(name: "free trial", sources: [appStore(end: 3600, trial: true)], status: .trialing, active: true),
        Case(
            name: "in the grace period", sources: [appStore(end: -60, grace: 60, retry: true)], status: "grace_period",
            active: true),
        Case(
            name: "exactly at the grace end, still retrying", sources: [appStore(end: -60, grace: 0, retry: true)],
            status: .billingRetry, active: false),
        Case(
            name: "billing retry without grace", sources: [appStore(end: -60, retry: true)], status: "billing_retry",
            active: false),
        Case(name: "grace ended, retry over", sources: [appStore(end: -60, grace: -1)], status: .expired, active: false),
        Case(name: "refunded after a renewal", sources: [appStore(end: 86_400, revoked: true)], status: .revoked, active: false),
        Case(name: "grant inside its period", sources: [grant(end: 60)], status: .active, active: true),
        Case(name: "grant revoked", sources: [grant(end: 60, revoked: true)], status: .revoked, active: false),
        Case(
            name: "refunded purchase but an active grant", sources: [appStore(end: 86_400, revoked: true), grant(end: 60)],
            status: .active, active: true),
        Case(
            name: "billing retry beats an older expiry", sources: [grant(end: -10), appStore(end: -60, retry: true)],
            status: .billingRetry, active: false),
    ]

    @Test(arguments: cases) func statusAt(_ example: Case) {
        let answer = StatusResolver.resolve(example.sources, at: Self.now, recheckSeconds: 300)
        #expect(answer.status == example.status)
        #expect(answer.active == example.active)
        #expect(answer.entitlements.isEmpty == !example.active)
        #expect(answer.checkAgainAt > Self.now)
        #expect(answer.checkAgainAt <= Self.now.addingTimeInterval(300))
    }

    @Test func overlappingSourcesGiveTheUnionWithTheLatestExpiries() {
        let sources = [
            Self.appStore(end: 3600),
            Self.grant(Self.team, ["pro", "team"], end: 7200),
            Self.grant(Self.pro, ["pro", "beta"], end: 600),
            Self.grant(Self.pro, ["gone"], end: 9000, revoked: true),
        ]
        let answer = StatusResolver.resolve(sources, at: Self.now, recheckSeconds: 300)
        #expect(answer.status == .active)
        #expect(
            answer.entitlements == [
                Entitlement(key: "beta", expiresAt: Self.now.addingTimeInterval(600)),
                Entitlement(key: "pro", expiresAt: Self.now.addingTimeInterval(7200)),
                Entitlement(key: "team", expiresAt: Self.now.addingTimeInterval(7200)),
            ])
        // The deciding source is the one giving access longest.
        #expect(answer.plan == Self.team)
        #expect(answer.source == .grant)
        #expect(answer.willRenew == false)
    }

    @Test func checkAgainAtIsTheNextBoundary() {
        let soon = StatusResolver.resolve([Self.appStore(end: 42)], at: Self.now, recheckSeconds: 300)
        #expect(soon.checkAgainAt == Self.now.addingTimeInterval(42))
        let later = StatusResolver.resolve([Self.appStore(end: 86_400)], at: Self.now, recheckSeconds: 300)
        #expect(later.checkAgainAt == Self.now.addingTimeInterval(300))
        let grace = StatusResolver.resolve([Self.appStore(end: -5, grace: 30, retry: true)], at: Self.now, recheckSeconds: 300)
        #expect(grace.checkAgainAt == Self.now.addingTimeInterval(30))
        #expect(grace.graceUntil == Self.now.addingTimeInterval(30))
        #expect(grace.entitlements == [Entitlement(key: "pro", expiresAt: Self.now.addingTimeInterval(30))])
    }

    @Test func theAppStoreAnswerCarriesItsDetails() {
        let answer = StatusResolver.resolve([Self.appStore(end: 3600, renew: false)], at: Self.now, recheckSeconds: 300)
        #expect(answer.source == .appstore)
        #expect(answer.environment == "production")
        #expect(answer.plan == Self.pro)
        #expect(answer.willRenew == false)
        #expect(answer.currentPeriodStart == Self.now.addingTimeInterval(-86_400))
        #expect(answer.currentPeriodEnd == Self.now.addingTimeInterval(3600))
        let renewing = StatusResolver.resolve([Self.appStore(end: 3600)], at: Self.now, recheckSeconds: 300)
        #expect(renewing.willRenew)
        let expired = StatusResolver.resolve([Self.appStore(end: -3600)], at: Self.now, recheckSeconds: 300)
        #expect(!expired.willRenew)
    }
}
