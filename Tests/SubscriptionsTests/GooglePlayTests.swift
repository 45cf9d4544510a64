import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierService
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import SubscriptionsService

/// Google Play beside the App Store, against a stand-in of Google's endpoints
/// (``TestGooglePlay``): purchases read from Google and bound to their account, Google's states
/// in Pier's status, Real-time developer notifications verified and applied once, Google away.
@Suite(.serialized) struct GooglePlayTests {
    func withService(_ body: (SubscriptionsHarness, TestGooglePlay) async throws -> Void) async throws {
        let google = try TestGooglePlay()
        do {
            try await SubscriptionsHarness.with(database: "pier_test_google_play", settings: google.settings) {
                try await body($0, google)
            }
        } catch {
            await google.stop()
            throw error
        }
        await google.stop()
    }

    static func post(_ service: SubscriptionsHarness, _ token: String, product: String = "seeds_pro", user: UUID)
        async throws -> Reply
    {
        try await service.send(
            "POST", "/subscriptions/google/purchases",
            json: #"{"purchaseToken":"\#(token)","productId":"\#(product)"}"#, token: try service.token(user))
    }

    static func push(_ service: SubscriptionsHarness, _ google: TestGooglePlay, _ body: String, bearer: String? = nil)
        async throws -> Reply
    {
        try await service.send(
            "POST", "/subscriptions/google/notifications", json: body,
            headers: ["Authorization": "Bearer " + (try bearer ?? google.pushToken())])
    }

    @Test func aPurchaseIsReadFromGoogleBoundToItsAccountAndAcknowledged() async throws {
        try await withService { service, google in
            let (anna, bob) = (UUID(), UUID())
            google.set("tok-anna.1", TestGooglePlay.purchase(account: anna))
            let reply = try await Self.post(service, "tok-anna.1", user: anna)
            #expect(reply.status == 200, "\(reply.text)")
            let status = try reply.decode(SubscriptionStatus.self)
            #expect(status.status == .active && status.source == .googleplay && status.plan?.id == "pro-monthly")
            #expect(status.entitlements.map(\.key) == ["pro"] && status.willRenew && status.environment == "production")
            #expect(status.price == 499 && status.currency == "USD")
            #expect(google.refusals.withLock { $0 }.isEmpty, "\(google.refusals.withLock { $0 })")
            // Acknowledged to Google, from the outbox, soon after.
            #expect(await eventually { google.acknowledgements.withLock { $0 } == ["tok-anna.1"] })
            // Bound: another account cannot take it, nor a purchase naming another account.
            let taken = try await Self.post(service, "tok-anna.1", user: bob)
            #expect(taken.status == 409, "\(taken.text)")
            google.set("tok-anna.2", TestGooglePlay.purchase(account: anna))
            #expect(try await Self.post(service, "tok-anna.2", user: bob).status == 409)
            #expect(try await service.status(bob).status == SubscriptionState.none)
            // What Google does not confirm changes nothing.
            let unknown = try await Self.post(service, "tok-unknown", user: bob)
            #expect(unknown.status == 422 && unknown.fields == ["purchaseToken"], "\(unknown.text)")
            let other = try await Self.post(service, "tok-anna.2", product: "seeds_team", user: anna)
            #expect(other.status == 422 && other.fields == ["productId"], "\(other.text)")
            let garbled = try await Self.post(service, "tok/../x y", product: "Seeds Pro", user: anna)
            #expect(garbled.status == 422 && Set(garbled.fields) == ["purchaseToken", "productId"], "\(garbled.text)")
            let nul = try await Self.post(service, "tok\\u0000x", user: anna)
            #expect(nul.status == 422 && nul.fields == ["purchaseToken"], "\(nul.text)")
            // A purchase without the account id is the caller's.
            google.set("tok-bob.1", TestGooglePlay.purchase(product: "seeds_team", basePlan: "yearly"))
            let bobs = try await Self.post(service, "tok-bob.1", product: "seeds_team", user: bob)
            #expect(try bobs.decode(SubscriptionStatus.self).plan?.id == "team-yearly", "\(bobs.text)")
        }
    }

    @Test func googlesStatesBecomePiersStatus() async throws {
        try await withService { service, google in
            let user = UUID()
            let day: TimeInterval = 86_400
            func status(_ purchase: [String: Any]) async throws -> SubscriptionStatus {
                google.set("tok-1", purchase)
                let reply = try await Self.post(service, "tok-1", user: user)
                guard reply.status == 200 else { throw TestFailure("answered \(reply.status): \(reply.text)") }
                return try reply.decode(SubscriptionStatus.self)
            }
            let later = Date().addingTimeInterval(20 * day)
            let trial = try await status(TestGooglePlay.purchase(trial: true))
            #expect(trial.status == .trialing && trial.offer?.type == .introductory, "\(trial)")
            #expect(trial.offer?.discountType == "free_trial" && trial.offer?.identifier == "free-week")
            let canceled = try await status(TestGooglePlay.purchase(state: "SUBSCRIPTION_STATE_CANCELED", autoRenew: false))
            #expect(canceled.status == .active && !canceled.willRenew)
            let grace = try await status(TestGooglePlay.purchase(state: "SUBSCRIPTION_STATE_IN_GRACE_PERIOD", expires: later))
            #expect(grace.status == .gracePeriod && grace.active, "\(grace)")
            let hold = try await status(
                TestGooglePlay.purchase(state: "SUBSCRIPTION_STATE_ON_HOLD", expires: Date().addingTimeInterval(-day)))
            #expect(hold.status == .billingRetry && !hold.active && hold.entitlements.isEmpty)
            let paused = try await status(
                TestGooglePlay.purchase(
                    state: "SUBSCRIPTION_STATE_PAUSED", expires: Date().addingTimeInterval(-day), pausedUntil: later))
            #expect(paused.status == .paused && !paused.active)
            #expect(try await status(TestGooglePlay.purchase(expires: later)).status == .active)  // recovered
            let expired = try await status(
                TestGooglePlay.purchase(
                    state: "SUBSCRIPTION_STATE_EXPIRED", expires: Date().addingTimeInterval(-day), autoRenew: false))
            #expect(expired.status == .expired && !expired.active)
            let pending = try await status(TestGooglePlay.purchase(state: "SUBSCRIPTION_STATE_PENDING"))
            #expect(pending.status == SubscriptionState.none)
            // Prices in the currency's own minor units.
            let yen = try await status(TestGooglePlay.purchase(price: ("500", 0, "JPY")))
            #expect(yen.price == 500 && yen.currency == "JPY")
            // A licence tester's purchase is a sandbox fact, and never stands for a paid one.
            google.set("tok-test", TestGooglePlay.purchase(product: "seeds_team", basePlan: "yearly", test: true))
            let tested = try await Self.post(service, "tok-test", product: "seeds_team", user: user)
            let both = try tested.decode(SubscriptionStatus.self)
            #expect(both.plan?.id == "pro-monthly" && both.environment == "production", "\(tested.text)")
            let tester = UUID()
            google.set("tok-tester", TestGooglePlay.purchase(test: true))
            let alone = try await Self.post(service, "tok-tester", user: tester).decode(SubscriptionStatus.self)
            #expect(alone.status == .active && alone.environment == "sandbox")
        }
    }

    @Test func notificationsAreVerifiedReadFromGoogleAndAppliedOnce() async throws {
        try await withService { service, google in
            let user = UUID()
            google.set("tok-1", TestGooglePlay.purchase(account: user))
            #expect(try await Self.post(service, "tok-1", user: user).status == 200)
            // Tokens Pub/Sub would not send: each refused, nothing read.
            let renewed = try TestGooglePlay.pushBody(TestGooglePlay.subscription(2, token: "tok-1"))
            let impostor = try TestIdentityProvider()
            let forged = try impostor.token([
                "iss": "https://accounts.google.com", "aud": TestGooglePlay.audience,
                "email": TestGooglePlay.pushAccount, "email_verified": true,
            ])
            let now = Int(Date().timeIntervalSince1970)
            for bearer in [
                forged, try google.pushToken(["exp": now - 3600, "iat": now - 7200]),
                try google.pushToken(["aud": "https://elsewhere.example"]),
                try google.pushToken(["email": "someone@evil.example"]), try google.pushToken(["email_verified": false]),
                try google.pushToken(["iss": "https://evil.example"]),
            ] {
                let refused = try await Self.push(service, google, renewed, bearer: bearer)
                #expect(refused.status == 401, "\(refused.text)")
            }
            let bare = try await service.send("POST", "/subscriptions/google/notifications", json: renewed)
            #expect(bare.status == 401)
            // Google's word, read when the notification comes: cancelled now.
            google.set("tok-1", TestGooglePlay.purchase(state: "SUBSCRIPTION_STATE_CANCELED", autoRenew: false, account: user))
            let canceled = try TestGooglePlay.pushBody(TestGooglePlay.subscription(3, token: "tok-1"), messageID: "m-3")
            #expect(try await Self.push(service, google, canceled).status == 204)
            #expect(try await service.status(user).willRenew == false)
            // The same message again is applied once, and Google is not asked again for it.
            let reads = google.reads.withLock { $0.count }
            #expect(try await Self.push(service, google, canceled).status == 204)
            let stored = try await service.pool.query(
                "SELECT count(*)::int AS n FROM subscriptions.google_notifications WHERE message_id = 'm-3'")
            #expect(try stored[0].decode("n", as: Int.self) == 1)
            #expect(google.reads.withLock { $0.count } == reads)
            // A test notification is acknowledged; another app's is stored and ignored.
            #expect(
                try await Self.push(service, google, try TestGooglePlay.pushBody(["testNotification": ["version": "1.0"]])).status
                    == 204)
            let elsewhere = try TestGooglePlay.pushBody(TestGooglePlay.subscription(2, token: "tok-1"), package: "com.other.app")
            #expect(try await Self.push(service, google, elsewhere).status == 204)
            // An upgrade: the new token links to the old one, which it supersedes.
            google.set(
                "tok-2",
                TestGooglePlay.purchase(product: "seeds_team", basePlan: "yearly", account: user, linked: "tok-1", order: "GPA.1")
            )
            let upgraded = try TestGooglePlay.pushBody(TestGooglePlay.subscription(4, token: "tok-2", product: "seeds_team"))
            #expect(try await Self.push(service, google, upgraded).status == 204)
            let upgrade = try await service.status(user)
            #expect(upgrade.plan?.id == "team-yearly" && upgrade.status == .active, "\(upgrade)")
            // A refund voids the purchase: access ends, whatever Google's state says.
            let voided = try TestGooglePlay.pushBody([
                "voidedPurchaseNotification": ["purchaseToken": "tok-2", "orderId": "GPA.1", "productType": 1, "refundType": 1]
            ])
            #expect(try await Self.push(service, google, voided).status == 204)
            #expect(try await service.status(user).status == .revoked)
            // The team's list: each message once, with what became of it.
            let listed = try await service.send("GET", "/subscriptions/google/notifications?limit=10", token: try service.admin())
            let entries = try listed.decode(ItemList<GoogleNotificationEntry>.self).items
            #expect(entries.filter { $0.messageId == "m-3" }.count == 1 && entries.count == 5, "\(listed.text)")
            #expect(entries.contains { $0.kind == "test" && $0.outcome == "ignored" && $0.reason == "a test notification" })
            #expect(entries.first?.kind == "voided" && entries.first?.outcome == "applied", "\(listed.text)")
            #expect(
                try await service.send("GET", "/subscriptions/google/notifications", token: try service.token(user)).status == 403
            )
            // Garbled pushes are 4xx, never 5xx.
            for body in [
                #"{"message":{}}"#, #"{"message":{"messageId":"x","data":"%%%"}}"#,
                #"{"message":{"messageId":"x\u0000","data":""}}"#, "[]",
            ] {
                let reply = try await Self.push(service, google, body)
                #expect((400..<500).contains(reply.status), "\(body): \(reply.status) \(reply.text)")
            }
        }
    }

    @Test func googleAwayIsRetriedAndChangesNothingUntilKnown() async throws {
        try await withService { service, google in
            let user = UUID()
            google.set("tok-1", TestGooglePlay.purchase(account: user, acknowledged: false))
            google.down.withLock { $0 = true }
            let refused = try await Self.post(service, "tok-1", user: user)
            #expect(refused.status == 503 && refused.problem?.code == .googlePlayFailed, "\(refused.text)")
            #expect(refused.headers["Retry-After"] != nil)
            #expect(try await service.status(user).status == SubscriptionState.none)
            google.down.withLock { $0 = false }
            // Google answering something that is not a purchase changes nothing either.
            google.set("tok-odd", ["subscriptionState": "SUBSCRIPTION_STATE_ACTIVE", "lineItems": []])
            let odd = try await Self.post(service, "tok-odd", user: user)
            #expect(odd.status == 503 && odd.problem?.code == .googlePlayFailed, "\(odd.text)")
            let stored = try await service.pool.query("SELECT count(*)::int AS n FROM subscriptions.google_purchases")
            #expect(try stored[0].decode("n", as: Int.self) == 0)
            #expect(try await Self.post(service, "tok-1", user: user).status == 200)
            // A renewal notification while Google is away: not a 2xx (Pub/Sub delivers it again),
            // the status as it was; delivered again once Google answers, it applies.
            google.down.withLock { $0 = true }
            let later = Date().addingTimeInterval(60 * 86_400)
            google.set("tok-1", TestGooglePlay.purchase(expires: later, account: user))
            let renewed = try TestGooglePlay.pushBody(TestGooglePlay.subscription(2, token: "tok-1"), messageID: "m-2")
            #expect(try await Self.push(service, google, renewed).status == 503)
            let before = try await service.status(user)
            #expect(before.status == .active && abs((before.currentPeriodEnd ?? later).timeIntervalSince(later)) > 86_400)
            let marked = try await service.pool.query(
                "SELECT reread_at IS NOT NULL AS marked FROM subscriptions.google_purchases WHERE purchase_token = 'tok-1'")
            #expect(try marked[0].decode("marked", as: Bool.self))
            google.down.withLock { $0 = false }
            #expect(try await Self.push(service, google, renewed).status == 204)
            let after = try await service.status(user)
            #expect(abs((after.currentPeriodEnd ?? .distantPast).timeIntervalSince(later)) < 2)
            // The acknowledgement owed since the purchase (tried while Google was away, or not
            // yet) goes out at the worker's next round once it is due.
            try await service.pool.execute("UPDATE subscriptions.google_acknowledgements SET next_attempt_at = now()")
            let play = try #require(service.live.service.controller.googlePlay.play)
            await play.round(quiet: 600)
            #expect(google.acknowledgements.withLock { $0 }.contains("tok-1"))
        }
    }

    @Test func theWorkerReadsAgainWhatMayHaveMoved() async throws {
        try await withService { service, google in
            let user = UUID()
            // Read when it was about to end; Google has renewed it since, and no notification came.
            google.set(
                "tok-1", TestGooglePlay.purchase(expires: Date().addingTimeInterval(-60), account: user, acknowledged: true))
            #expect(try await Self.post(service, "tok-1", user: user).status == 200)
            #expect(try await service.status(user).status == .expired)
            let renewed = Date().addingTimeInterval(30 * 86_400)
            google.set("tok-1", TestGooglePlay.purchase(expires: renewed, account: user, acknowledged: true))
            let play = try #require(service.live.service.controller.googlePlay.play)
            await play.round(quiet: 0)
            #expect(try await service.status(user).status == .active)
            // An acknowledgement Google refused is tried again later, not lost.
            google.set("tok-2", TestGooglePlay.purchase(product: "seeds_team", basePlan: "yearly", account: user))
            google.down.withLock { $0 = true }
            await play.round(quiet: 0)
            google.down.withLock { $0 = false }
            #expect(try await Self.post(service, "tok-2", product: "seeds_team", user: user).status == 200)
            #expect(await eventually { google.acknowledgements.withLock { $0 }.contains("tok-2") })
            // Google has it; the outbox row goes once Pier has recorded the answer.
            #expect(
                await eventually {
                    let owed = try? await service.pool.query(
                        "SELECT count(*)::int AS n FROM subscriptions.google_acknowledgements")
                    return (try? owed?.first?.decode("n", as: Int.self)) == 0
                })
        }
    }

    /// A user with an App Store and a Google Play subscription: the better status, both stores'
    /// facts in the history; support reads Google again; deletion detaches, a merge moves.
    @Test func bothStoresTheTeamsRefreshDeletionAndMerge() async throws {
        try await withService { service, google in
            let (user, anonymous, gone) = (UUID(), UUID(), UUID())
            let apple = try AppStoreServerAPITests.transaction(
                service.ca, id: "4000000001", original: "4000000000", user: user, days: 5)
            #expect(try await service.postTransaction(apple, user: user).status == 200)
            google.set("tok-1", TestGooglePlay.purchase(product: "seeds_team", basePlan: "yearly", account: user))
            #expect(try await Self.post(service, "tok-1", product: "seeds_team", user: user).status == 200)
            let both = try await service.status(user)
            #expect(both.source == .googleplay && both.plan?.id == "team-yearly", "\(both)")
            let counted = try await service.send("GET", "/subscriptions/subscribers", token: try service.admin())
            let plans = try counted.decode(ItemList<PlanSubscribers>.self).items
            #expect(plans.first { $0.planId == "team-yearly" }?.googlePlay == 1, "\(counted.text)")
            #expect(plans.first { $0.planId == "pro-monthly" }?.appStore == 1, "\(counted.text)")
            #expect(Set(both.entitlements.map(\.key)) == ["pro", "team"])
            // Support reads Google again: the customer's cancellation shows.
            google.set(
                "tok-1",
                TestGooglePlay.purchase(
                    state: "SUBSCRIPTION_STATE_CANCELED", product: "seeds_team", basePlan: "yearly", autoRenew: false,
                    account: user))
            let support = try service.token(UUID(), role: "support")
            let refreshed = try await service.send("POST", "/subscriptions/users/\(user)/google/refresh", token: support)
            #expect(refreshed.status == 200, "\(refreshed.text)")
            let history = try refreshed.decode(SubscriptionHistory.self)
            #expect(!history.subscription.willRenew)
            let kinds = Set(history.facts.map(\.kind))
            #expect(kinds.isSuperset(of: ["appstore.transaction", "googleplay.purchase"]), "\(kinds)")
            #expect(history.facts.first { $0.kind == "googleplay.purchase" }?.reference.hasPrefix("GPA.") == true)
            let customer = try await service.send(
                "POST", "/subscriptions/users/\(user)/google/refresh", token: try service.token(user))
            #expect(customer.status == 403)
            // A deleted account's purchase stays, bound to nobody, and a renewal does not bind it again.
            google.set("tok-gone", TestGooglePlay.purchase(account: gone))
            #expect(try await Self.post(service, "tok-gone", user: gone).status == 200)
            try await service.pool.withConnection { try await SubscriptionFacts.detach(gone, on: $0) }
            #expect(try await service.status(gone).status == SubscriptionState.none)
            let renewal = try TestGooglePlay.pushBody(TestGooglePlay.subscription(2, token: "tok-gone"))
            #expect(try await Self.push(service, google, renewal).status == 204)
            let kept = try await service.pool.query(
                """
                SELECT user_id IS NULL AS detached, payload ? 'externalAccountIdentifiers' AS named
                FROM subscriptions.google_purchases WHERE purchase_token = 'tok-gone'
                """)
            #expect(try kept[0].decode("detached", as: Bool.self) && !kept[0].decode("named", as: Bool.self))
            #expect(try await Self.post(service, "tok-gone", user: UUID()).status == 409)
            // An anonymous account merged into another: its purchase is that account's.
            let merger = UUID()
            google.set("tok-anon", TestGooglePlay.purchase(account: anonymous))
            #expect(try await Self.post(service, "tok-anon", user: anonymous).status == 200)
            try await service.pool.withConnection { try await SubscriptionFacts.move(anonymous, to: merger, on: $0) }
            #expect(try await service.status(merger).status == .active)
            #expect(try await service.status(anonymous).status == SubscriptionState.none)
        }
    }

    /// What webhooks and live streams follow: a Google purchase and a notification publish
    /// `subscription.updated` (reason `google_play`, the status's source `googleplay`), and the
    /// user's open stream gets the new status.
    @Test func changesReachWebhooksAndLiveStreams() async throws {
        try await withService { service, google in
            let user = UUID()
            let stream = try await EventStream.open(
                service.live.base + "/subscriptions/me/events", token: try service.token(user))
            #expect(try await stream.next()?.data != nil)  // the state now
            google.set("tok-1", TestGooglePlay.purchase(account: user))
            #expect(try await Self.post(service, "tok-1", user: user).status == 200)
            let bought = try LiveStatusTests.decode(
                SubscriptionStatus.self, Array(try #require(try await stream.nextEvent()?.data).utf8))
            #expect(bought.active && bought.source == .googleplay)
            google.set(
                "tok-1",
                TestGooglePlay.purchase(
                    state: "SUBSCRIPTION_STATE_ON_HOLD", expires: Date().addingTimeInterval(-60), account: user))
            #expect(
                try await Self.push(service, google, try TestGooglePlay.pushBody(TestGooglePlay.subscription(5, token: "tok-1")))
                    .status == 204)
            let held = try LiveStatusTests.decode(
                SubscriptionStatus.self, Array(try #require(try await stream.nextEvent()?.data).utf8))
            #expect(held.status == .billingRetry && !held.active)
            await stream.close()
            let events = try await service.pool.query(
                """
                SELECT payload ->> 'reason' AS reason, payload -> 'status' ->> 'source' AS source FROM events.events
                WHERE type = 'subscription.updated' AND payload ->> 'userId' = \(user.uuidString.lowercased()) ORDER BY id
                """)
            #expect(try events.map { try $0.decode("reason", as: String.self) } == ["google_play", "google_play"])
            #expect(try events.map { try $0.decode("source", as: String?.self) } == ["googleplay", "googleplay"])
        }
    }

    /// The dashboard's figures count Google Play too: today's active subscriptions, a trial that
    /// converted, a cancellation, a refund.
    @Test func theDashboardCountsGooglePlay() async throws {
        try await withService { service, google in
            let (user, other) = (UUID(), UUID())
            google.set("tok-1", TestGooglePlay.purchase(account: user, trial: true))
            #expect(try await Self.post(service, "tok-1", user: user).status == 200)
            google.set("tok-1", TestGooglePlay.purchase(account: user))  // the trial ended in a paid period
            #expect(
                try await Self.push(service, google, try TestGooglePlay.pushBody(TestGooglePlay.subscription(2, token: "tok-1")))
                    .status == 204)
            google.set("tok-1", TestGooglePlay.purchase(state: "SUBSCRIPTION_STATE_CANCELED", autoRenew: false, account: user))
            #expect(
                try await Self.push(service, google, try TestGooglePlay.pushBody(TestGooglePlay.subscription(3, token: "tok-1")))
                    .status == 204)
            google.set(
                "tok-2", TestGooglePlay.purchase(product: "seeds_team", basePlan: "yearly", account: other, order: "GPA.2"))
            #expect(try await Self.post(service, "tok-2", product: "seeds_team", user: other).status == 200)
            let voided = try TestGooglePlay.pushBody([
                "voidedPurchaseNotification": ["purchaseToken": "tok-2", "orderId": "GPA.2", "productType": 1, "refundType": 1]
            ])
            #expect(try await Self.push(service, google, voided).status == 204)
            let reply = try await service.send("GET", "/subscriptions/stats/daily?days=3", token: try service.admin())
            let today = try #require(try reply.decode(SubscriptionDaily.self).days.last, "\(reply.text)")
            #expect(today.active["pro-monthly"] == 1 && today.active["team-yearly"] == nil, "\(reply.text)")
            #expect(today.conversions == 1 && today.cancellations == 1 && today.refunds == 1, "\(reply.text)")
        }
    }

    @Test func settingsAreCheckedAtStart() throws {
        func failure(_ values: [String: String]) -> String? {
            do throws(Environment.Failure) {
                _ = try GooglePlaySettings(environment: Environment(values))
                return nil
            } catch { return error.variable }
        }
        #expect(failure([:]) == nil)
        #expect(failure(["PIER_SUBSCRIPTIONS_GOOGLE_PACKAGE": "seeds"]) == "PIER_SUBSCRIPTIONS_GOOGLE_PACKAGE")
        #expect(failure(["PIER_SUBSCRIPTIONS_GOOGLE_PACKAGE": "com.example.seeds"]) == "PIER_SUBSCRIPTIONS_GOOGLE_KEY_FILE")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pier-google-\(UUID()).json")
        try Data(#"{"client_email":"a@b.c","private_key":"not a key"}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(
            failure(["PIER_SUBSCRIPTIONS_GOOGLE_PACKAGE": "com.example.seeds", "PIER_SUBSCRIPTIONS_GOOGLE_KEY_FILE": file.path])
                == "PIER_SUBSCRIPTIONS_GOOGLE_KEY_FILE")
        #expect(
            try GoogleSubscription.minorUnits([
                "currencyCode": .string("USD"), "units": .string("4"), "nanos": .number(990_000_000),
            ])
                == 499)
        #expect(
            try GoogleSubscription.minorUnits([
                "currencyCode": .string("KWD"), "units": .string("1"), "nanos": .number(250_000_000),
            ])
                == 1250)
        #expect(
            try GoogleSubscription.minorUnits(["currencyCode": .string("USD"), "units": .string("4"), "nanos": .number(999_999)])
                == nil)
    }

    /// Every number from Google is checked before arithmetic: a price that would overflow
    /// (922,337,203,685,478 CLF, four decimals), one beyond any plan's, or one too long for an
    /// integer is out of range, never a trap.
    @Test func pricesBeyondRangeAreRefusedNotComputed() throws {
        for (units, code) in [
            ("922337203685478", "CLF"), ("10000000001", "USD"), ("99999999999999999999999", "JPY"),
            ("9223372036854775807", "USD"),
        ] {
            #expect(throws: GoogleSubscription.Failure.self, "\(units) \(code)") {
                try GoogleSubscription.minorUnits(["currencyCode": .string(code), "units": .string(units)])
            }
        }
        #expect(
            try GoogleSubscription.minorUnits(["currencyCode": .string("USD"), "units": .string("9999999999")]) == 999_999_999_900
        )
    }
}
