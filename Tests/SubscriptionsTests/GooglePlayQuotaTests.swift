import Foundation
import PierModels
import PierPostgres
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import SubscriptionsService

/// Google Play where the outside attacked it or Google's documents say otherwise than Pier
/// did: the app's Google quota spent by made-up tokens, Google's 429 and 400 "Invalid Value",
/// dot segments, a product no plan offers, a refund of a past order, a pause's resume time, and
/// prices Pier cannot hold. The stand-in answers as Google's reference says.
@Suite(.serialized) struct GooglePlayQuotaTests {
    func withService(
        _ settings: [String: String] = [:], _ body: (SubscriptionsHarness, TestGooglePlay) async throws -> Void
    ) async throws {
        let google = try TestGooglePlay()
        do {
            try await SubscriptionsHarness.with(
                database: "pier_test_google_play_quota",
                settings: google.settings.merging(settings.merging(["PIER_DB_POOL_SIZE": "3"]) { $1 }) { $1 }
            ) { try await body($0, google) }
        } catch {
            await google.stop()
            throw error
        }
        await google.stop()
    }

    /// Each made-up token costs Google one call, once: the same token again is answered from
    /// memory, Google's 400 "Invalid Value" is as final as its 404, and an account (then an
    /// address) posting too much is refused before Google is asked.
    @Test func madeUpTokensSpendOneCallAndThenNone() async throws {
        try await withService([
            "PIER_SUBSCRIPTIONS_GOOGLE_POSTS_PER_ACCOUNT_PER_MINUTE": "5",
            "PIER_SUBSCRIPTIONS_GOOGLE_POSTS_PER_ADDRESS_PER_MINUTE": "8",
        ]) { service, google in
            let user = UUID()
            for _ in 0..<3 {
                let reply = try await GooglePlayTests.post(service, "made-up-1", user: user)
                #expect(reply.status == 422 && reply.fields == ["purchaseToken"], "\(reply.text)")
            }
            #expect(google.reads.withLock { $0 } == ["made-up-1"])
            google.invalidValue.withLock { $0 = true }
            let invalid = try await GooglePlayTests.post(service, "made-up-2", user: user)
            #expect(invalid.status == 422 && invalid.fields == ["purchaseToken"], "\(invalid.text)")
            let again = try await GooglePlayTests.post(service, "made-up-2", user: user)
            #expect(again.status == 422)
            #expect(google.reads.withLock { $0.count } == 2)
            // The account's fifth post this minute was the last.
            let limited = try await GooglePlayTests.post(service, "made-up-3", user: user)
            #expect(limited.status == 429 && limited.problem?.code == .rateLimited, "\(limited.text)")
            #expect(Int(limited.headers["Retry-After"] ?? "") ?? 0 >= 1)
            // Other accounts from the same address: three more, then the address is limited.
            for index in 0..<3 {
                #expect(try await GooglePlayTests.post(service, "made-up-x\(index)", user: UUID()).status == 422)
            }
            #expect(try await GooglePlayTests.post(service, "made-up-y", user: UUID()).status == 429)
            #expect(google.reads.withLock { $0.count } == 5)
        }
    }

    /// Google's 429 stops every call until its `Retry-After`: the post answers 503 with that
    /// wait, the next post calls nobody; and a post is one call even when Google answers 5xx.
    @Test func googlesRateLimitIsHonoured() async throws {
        try await withService { service, google in
            let user = UUID()
            google.set("tok-1", TestGooglePlay.purchase(account: user))
            google.throttled.withLock { $0 = 120 }
            let first = try await GooglePlayTests.post(service, "tok-1", user: user)
            #expect(first.status == 503 && first.problem?.code == .googlePlayFailed, "\(first.text)")
            #expect(first.headers["Retry-After"] == "120")
            #expect(google.calls.withLock { $0 } == 1)
            google.throttled.withLock { $0 = nil }
            let second = try await GooglePlayTests.post(service, "tok-1", user: user)
            #expect(second.status == 503 && Int(second.headers["Retry-After"] ?? "") ?? 0 > 100, "\(second.text)")
            #expect(google.calls.withLock { $0 } == 1)
        }
        try await withService { service, google in
            google.down.withLock { $0 = true }
            let reply = try await GooglePlayTests.post(service, "tok-1", user: UUID())
            #expect(reply.status == 503)
            #expect(google.calls.withLock { $0 } == 1)
        }
    }

    /// A token made of dots would be resolved into another path of Google's API: refused
    /// before any call; every other byte of a path segment is percent-encoded.
    @Test func dotSegmentsNeverReachGoogle() async throws {
        try await withService { service, google in
            for token in [".", "..", "..."] {
                let reply = try await GooglePlayTests.post(service, token, user: UUID())
                #expect(reply.status == 422 && reply.fields == ["purchaseToken"], "\(token): \(reply.text)")
            }
            #expect(google.reads.withLock { $0 }.isEmpty)
        }
        #expect(GooglePlayAPI.segment("a/b?c#d%e") == "a%2Fb%3Fc%23d%25e")
        #expect(GooglePlayAPI.segment("..") == "%2E%2E" && GooglePlayAPI.segment("ab.c-_~") == "ab.c-_~")
    }

    /// A purchase of a product no plan offers is kept for the team, bound, never acknowledged
    /// (Google refunds it), and the app is told why.
    @Test func aProductNoPlanOffersIsNotAcknowledged() async throws {
        try await withService { service, google in
            let user = UUID()
            google.set("tok-1", TestGooglePlay.purchase(product: "seeds_gold", account: user))
            let reply = try await GooglePlayTests.post(service, "tok-1", product: "seeds_gold", user: user)
            #expect(reply.status == 422 && reply.problem?.code == .productNotOffered, "\(reply.text)")
            #expect(reply.fields == ["productId"])
            // Like an App Store product no plan lists: no plan, nothing it gives access to.
            let status = try await service.status(user)
            #expect(status.plan == nil && status.entitlements.isEmpty, "\(status)")
            let play = try #require(service.live.service.controller.googlePlay.play)
            await play.round(quiet: 0)
            #expect(google.acknowledgements.withLock { $0 }.isEmpty)
            let owed = try await service.pool.query("SELECT count(*)::int AS n FROM subscriptions.google_acknowledgements")
            #expect(try owed[0].decode("n", as: Int.self) == 0)
            let history = try await service.send("GET", "/subscriptions/users/\(user)", token: try service.admin())
            let fact = try history.decode(SubscriptionHistory.self).facts.first { $0.kind == "googleplay.purchase" }
            #expect(fact?.details["offered"] == .bool(false) && fact?.details["productId"] == .string("seeds_gold"))
        }
    }

    /// A refund of an earlier renewal's order leaves the period another order paid for; a
    /// refund of that order ends it.
    @Test func onlyTheCurrentOrdersRefundRevokes() async throws {
        try await withService { service, google in
            let user = UUID()
            google.set("tok-1", TestGooglePlay.purchase(account: user, order: "GPA.3301-5555..1"))
            #expect(try await GooglePlayTests.post(service, "tok-1", user: user).status == 200)
            func voided(_ order: String) throws -> String {
                try TestGooglePlay.pushBody([
                    "voidedPurchaseNotification": ["purchaseToken": "tok-1", "orderId": order, "productType": 1, "refundType": 1]
                ])
            }
            #expect(try await GooglePlayTests.push(service, google, try voided("GPA.3301-5555..0")).status == 204)
            #expect(try await service.status(user).status == .active)
            let notes = try await service.send("GET", "/subscriptions/google/notifications", token: try service.admin())
            let past = try notes.decode(ItemList<GoogleNotificationEntry>.self).items.first
            #expect(past?.outcome == "applied" && past?.reason?.contains("GPA.3301-5555..0") == true, "\(notes.text)")
            #expect(try await GooglePlayTests.push(service, google, try voided("GPA.3301-5555..1")).status == 204)
            #expect(try await service.status(user).status == .revoked)
        }
    }

    /// A paused purchase is answered as paused until Google resumes it, and no longer: the
    /// status says to check again at `autoResumeTime`.
    @Test func aPauseEndsWhenGoogleResumes() async throws {
        try await withService { service, google in
            let user = UUID()
            let resumes = Date().addingTimeInterval(90)
            google.set(
                "tok-1",
                TestGooglePlay.purchase(
                    state: "SUBSCRIPTION_STATE_PAUSED", expires: Date().addingTimeInterval(-60), account: user,
                    pausedUntil: resumes))
            let reply = try await GooglePlayTests.post(service, "tok-1", user: user)
            let status = try reply.decode(SubscriptionStatus.self)
            #expect(status.status == .paused)
            #expect(abs(status.checkAgainAt.timeIntervalSince(resumes)) < 1.5, "\(status.checkAgainAt) vs \(resumes)")
            let age = Int(reply.headers["Cache-Control"]?.split(separator: "=").last ?? "") ?? -1
            #expect((85...90).contains(age), "\(reply.headers["Cache-Control"] ?? "")")
        }
    }

    /// A price that cannot be held (units ≥ 922,337,203,685,478 of a four-decimal currency
    /// overflowed before) is refused to the app, acknowledged to Pub/Sub and marked on the
    /// purchase; the service keeps serving.
    @Test func aPriceBeyondRangeIsRefusedNotATrap() async throws {
        try await withService { service, google in
            let user = UUID()
            google.set("tok-1", TestGooglePlay.purchase(account: user))
            #expect(try await GooglePlayTests.post(service, "tok-1", user: user).status == 200)
            let huge = TestGooglePlay.purchase(account: user, price: ("922337203685478", 0, "CLF"))
            google.set("tok-1", huge)
            let posted = try await GooglePlayTests.post(service, "tok-1", user: user)
            #expect(posted.status == 422 && posted.fields == ["purchaseToken"], "\(posted.text)")
            let push = try TestGooglePlay.pushBody(TestGooglePlay.subscription(2, token: "tok-1"), messageID: "m-huge")
            #expect(try await GooglePlayTests.push(service, google, push).status == 204)
            let notes = try await service.send("GET", "/subscriptions/google/notifications", token: try service.admin())
            let entry = try notes.decode(ItemList<GoogleNotificationEntry>.self).items.first
            #expect(entry?.outcome == "ignored" && entry?.reason?.contains("cannot hold") == true, "\(notes.text)")
            let marked = try await service.pool.query(
                "SELECT unreadable FROM subscriptions.google_purchases WHERE purchase_token = 'tok-1'")
            #expect(try marked[0].decode("unreadable", as: String?.self)?.contains("922337203685478") == true)
            // Still serving, and the worker leaves the purchase alone until something reads it again.
            let play = try #require(service.live.service.controller.googlePlay.play)
            let reads = google.reads.withLock { $0.count }
            await play.round(quiet: 0)
            #expect(google.reads.withLock { $0.count } == reads)
            #expect(try await service.status(user).status == .active)
            // An unknown token in a push is final too: acknowledged and stored, not retried for a week.
            google.invalidValue.withLock { $0 = true }
            let unknown = try TestGooglePlay.pushBody(TestGooglePlay.subscription(2, token: "tok-gone"), messageID: "m-gone")
            #expect(try await GooglePlayTests.push(service, google, unknown).status == 204)
        }
    }
}
