import Foundation
import PierCrypto
import PierEvents
import PierHTTP
import PierIdentity
import PierModels
import PierPostgres
import PierService
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import SubscriptionsService

/// The subscriptions service over HTTP, on a real PostgreSQL.
@Suite(.serialized) struct SubscriptionsEndpointTests {
    static let hour: TimeInterval = 3600
    static let day: TimeInterval = 86_400

    func withService(_ body: (SubscriptionsHarness) async throws -> Void) async throws {
        try await SubscriptionsHarness.with(database: "pier_test_subscriptions", body)
    }

    // MARK: - Plans

    @Test func plansAreManagedByAdminsAndListedForEveryone() async throws {
        try await withService { service in
            let admin = try service.admin()
            let list = try await service.send("GET", "/subscriptions/plans")
            #expect(list.status == 200)
            let plans = try list.decode(ItemList<Plan>.self).items
            #expect(plans.map(\.id) == ["pro-monthly", "team-yearly"])
            #expect(plans[0].trialPeriod == "P7D" && plans[0].appStoreProductIds == ["pier.pro.monthly"])
            #expect(list.headers["Cache-Control"] == "public, max-age=60")
            let tag = try #require(list.headers["ETag"])
            let cached = try await service.send("GET", "/subscriptions/plans", headers: ["If-None-Match": tag])
            #expect(cached.status == 304 && cached.body.isEmpty)

            // Deactivated: gone from the public list (and the ETag changes), still there for admins.
            let patched = try await service.send(
                "PATCH", "/subscriptions/plans/team-yearly", json: #"{"active":false,"price":8900}"#, token: admin)
            #expect(patched.status == 200)
            #expect(try patched.decode(Plan.self).price == 8900)
            let after = try await service.send("GET", "/subscriptions/plans", headers: ["If-None-Match": tag])
            #expect(after.status == 200)
            #expect(try after.decode(ItemList<Plan>.self).items.map(\.id) == ["pro-monthly"])
            let all = try await service.send("GET", "/subscriptions/plans?all=true", token: admin)
            #expect(try all.decode(ItemList<Plan>.self).items.count == 2)
            #expect(try await service.send("GET", "/subscriptions/plans?all=true").status == 401)
            // The public list is not behind authentication: an app holding a stale or broken
            // token still reads it; only the admins' view checks the token.
            let stale = try await service.send("GET", "/subscriptions/plans", token: "expired.or.broken")
            #expect(stale.status == 200)
            #expect(try stale.decode(ItemList<Plan>.self).items.map(\.id) == ["pro-monthly"])
            #expect(try await service.send("GET", "/subscriptions/plans?all=true", token: "expired.or.broken").status == 401)

            let user = try service.token(UUID())
            #expect(try await service.send("GET", "/subscriptions/plans?all=true", token: user).status == 403)
            let body = #"{"id":"x","name":"X","price":1,"currency":"USD","billingPeriod":"P1M","entitlements":["x"]}"#
            #expect(try await service.send("POST", "/subscriptions/plans", json: body).status == 401)
            #expect(try await service.send("POST", "/subscriptions/plans", json: body, token: user).status == 403)
            #expect(try await service.send("PATCH", "/subscriptions/plans/pro-monthly", json: "{}", token: user).status == 403)
            #expect(try await service.send("PATCH", "/subscriptions/plans/nope", json: "{}", token: admin).status == 404)
        }
    }

    /// What subscribers pay changes only after a recent sign-in: a token of a sign-in ten minutes
    /// old may rename a plan, not reprice it (401 with the step-up challenge).
    @Test func repricingAPlanNeedsARecentSignIn() async throws {
        try await withService { service in
            let stale = try service.tokens.token(UUID(), role: "admin", signedInAgo: 600)
            for body in [#"{"price":999}"#, #"{"currency":"EUR"}"#, #"{"billingPeriod":"P1Y"}"#] {
                let refused = try await service.send("PATCH", "/subscriptions/plans/pro-monthly", json: body, token: stale)
                #expect(refused.status == 401 && refused.problem?.code == .reauthenticationRequired, "\(body)")
                #expect(refused.headers["WWW-Authenticate"]?.contains("insufficient_user_authentication") == true)
            }
            let renamed = try await service.send(
                "PATCH", "/subscriptions/plans/pro-monthly", json: #"{"name":"Pro+"}"#, token: stale)
            #expect(renamed.status == 200)
            let fresh = try await service.send(
                "PATCH", "/subscriptions/plans/pro-monthly", json: #"{"price":999}"#, token: try service.admin())
            #expect(try fresh.decode(Plan.self).price == 999)
        }
    }

    @Test func planValidationNamesEveryBadField() async throws {
        try await withService { service in
            let admin = try service.admin()
            let bad = try await service.send(
                "POST", "/subscriptions/plans",
                json:
                    #"{"id":"Pro Plan","name":"","price":-1,"currency":"usd","billingPeriod":"monthly","trialPeriod":"P0D","entitlements":[]}"#,
                token: admin)
            #expect(bad.status == 422)
            #expect(
                Set(bad.fields) == ["id", "name", "price", "currency", "billingPeriod", "trialPeriod", "entitlements"])
            let wrongType = try await service.send(
                "POST", "/subscriptions/plans",
                json: #"{"id":"a","name":"A","price":"4.99","currency":"USD","billingPeriod":"P1M","entitlements":["a"]}"#,
                token: admin)
            #expect(wrongType.status == 422 && wrongType.fields == ["price"])
            let unknown = try await service.send(
                "POST", "/subscriptions/plans",
                json:
                    #"{"id":"a","name":"A","price":1,"currency":"USD","billingPeriod":"P1M","entitlements":["a"],"color":"red"}"#,
                token: admin)
            #expect(unknown.status == 422 && unknown.fields == ["color"])

            let duplicate = try await service.send(
                "POST", "/subscriptions/plans",
                json:
                    #"{"id":"pro-monthly","name":"Again","price":1,"currency":"USD","billingPeriod":"P1M","entitlements":["pro"]}"#,
                token: admin)
            #expect(duplicate.status == 409)
            let sameProduct = try await service.send(
                "POST", "/subscriptions/plans",
                json:
                    #"{"id":"pro-2","name":"Pro 2","price":1,"currency":"USD","billingPeriod":"P1M","entitlements":["pro"],"appStoreProductIds":["pier.pro.monthly"]}"#,
                token: admin)
            #expect(sameProduct.status == 409)
            #expect(sameProduct.problem?.detail?.contains("pier.pro.monthly") == true)
            let badPatch = try await service.send(
                "PATCH", "/subscriptions/plans/pro-monthly", json: #"{"billingPeriod":"P1X","currency":"EURO"}"#, token: admin)
            #expect(badPatch.status == 422 && Set(badPatch.fields) == ["billingPeriod", "currency"])
        }
    }

    @Test func aPlanInUseIsDeactivatedNotDeleted() async throws {
        try await withService { service in
            let admin = try service.admin()
            let created = try await service.send(
                "POST", "/subscriptions/plans",
                json: #"{"id":"unused","name":"Unused","price":0,"currency":"USD","billingPeriod":"P1W","entitlements":["x"]}"#,
                token: admin)
            #expect(created.status == 201 && created.headers["Location"] == "/subscriptions/plans/unused")
            #expect(try await service.send("DELETE", "/subscriptions/plans/unused", token: admin).status == 204)
            #expect(try await service.send("DELETE", "/subscriptions/plans/unused", token: admin).status == 404)

            let grant = #"{"userId":"\#(UUID())","planId":"pro-monthly","duration":"P1M","reason":"support"}"#
            #expect(try await service.send("POST", "/subscriptions/grants", json: grant, token: admin).status == 201)
            let refused = try await service.send("DELETE", "/subscriptions/plans/pro-monthly", token: admin)
            #expect(refused.status == 409 && refused.problem?.detail?.contains("deactivate") == true)
        }
    }

    // MARK: - Grants, status, cancel

    @Test func aGrantGivesAccessUntilRevoked() async throws {
        try await withService { service in
            let admin = try service.admin()
            let user = UUID()
            #expect(try await service.status(user).status == .none)
            let missing = try await service.send(
                "GET", "/subscriptions/me/entitlements/pro", token: try service.token(user))
            #expect(try missing.decode(EntitlementStatus.self) == EntitlementStatus(key: "pro", active: false, expiresAt: nil))

            let reply = try await service.send(
                "POST", "/subscriptions/grants",
                json: #"{"userId":"\#(user)","planId":"team-yearly","duration":"P14D","reason":"conference promo"}"#,
                token: admin)
            #expect(reply.status == 201)
            let grant = try reply.decode(Grant.self)
            #expect(abs(grant.endsAt.timeIntervalSince(grant.startsAt) - 14 * Self.day) < 1)

            let me = try await service.send("GET", "/subscriptions/me", token: try service.token(user))
            let status = try me.decode(SubscriptionStatus.self)
            #expect(status.status == .active && status.active && status.source == .grant)
            #expect(status.plan == PlanReference(id: "team-yearly", name: "Team"))
            #expect(status.entitlements.map(\.key) == ["pro", "team"])
            #expect(!status.willRenew)
            let maxAge = Int(me.headers["Cache-Control"]?.split(separator: "=").last ?? "") ?? -1
            #expect((250...300).contains(maxAge))
            // The caller's own answer: a shared URL cache must key it by the token.
            #expect(me.headers["Vary"] == "Authorization")
            // Checked again with its ETag: 304 and no body while nothing changed.
            let tag = try #require(me.headers["ETag"])
            let unchanged = try await service.send(
                "GET", "/subscriptions/me", token: try service.token(user), headers: ["If-None-Match": tag])
            #expect(unchanged.status == 304 && unchanged.body.isEmpty && unchanged.headers["ETag"] == tag)
            let stale = try await service.send(
                "GET", "/subscriptions/me", token: try service.token(user), headers: ["If-None-Match": "\"other\""])
            #expect(stale.status == 200 && stale.headers["ETag"] == tag)

            // A token seen before is answered from the verifier's cache: the same answer.
            let reused = try service.token(user)
            let first = try await service.send("GET", "/subscriptions/me", token: reused)
            let again = try await service.send("GET", "/subscriptions/me", token: reused)
            #expect(first.status == 200 && again.status == 200)
            #expect(try first.decode(SubscriptionStatus.self).entitlements == again.decode(SubscriptionStatus.self).entitlements)
            #expect(try await service.send("GET", "/subscriptions/me").status == 401)
            #expect(try await service.send("GET", "/subscriptions/me", token: reused + "x").status == 401)
            #expect(
                try await service.send("GET", "/subscriptions/me/entitlements/pro", headers: ["Authorization": "Basic eDp5"])
                    .status == 401)

            let pro = try await service.send("GET", "/subscriptions/me/entitlements/pro", token: try service.token(user))
            let entitlement = try pro.decode(EntitlementStatus.self)
            #expect(entitlement.active && entitlement.expiresAt != nil)
            let bad = try await service.send(
                "GET", "/subscriptions/me/entitlements/NOT%20A%20KEY", token: try service.token(user))
            #expect(bad.status == 422)

            let listed = try await service.send("GET", "/subscriptions/grants?userId=\(user)", token: admin)
            #expect(try listed.decode(ItemList<Grant>.self).items.map(\.id) == [grant.id])
            let revoked = try await service.send("DELETE", "/subscriptions/grants/\(grant.id)", token: admin)
            #expect(try revoked.decode(Grant.self).revokedAt != nil)
            let after = try await service.status(user)
            #expect(after.status == "revoked" && !after.active && after.entitlements.isEmpty)
            #expect(try await service.send("DELETE", "/subscriptions/grants/\(UUID())", token: admin).status == 404)
            // A malformed id gets the one answer every route gives: 404, naming the parameter.
            for (method, path) in [
                ("DELETE", "/subscriptions/grants/nope"), ("GET", "/subscriptions/users/nope"),
                ("POST", "/subscriptions/users/nope/appstore/refresh"),
            ] {
                let malformed = try await service.send(method, path, token: admin)
                #expect(malformed.status == 404 && malformed.problem?.detail?.contains("must be a UUID") == true, "\(path)")
            }
        }
    }

    @Test func grantRequestsAreValidatedAndAdminOnly() async throws {
        try await withService { service in
            let admin = try service.admin()
            let user = UUID()
            func post(_ json: String, token: String? = nil) async throws -> Reply {
                try await service.send("POST", "/subscriptions/grants", json: json, token: token ?? admin)
            }
            let both = try await post(
                #"{"userId":"\#(user)","planId":"pro-monthly","duration":"P1M","until":"2099-01-01T00:00:00Z","reason":"x"}"#)
            #expect(both.status == 422 && both.fields == ["duration"])
            let neither = try await post(#"{"userId":"\#(user)","planId":"pro-monthly","reason":"x"}"#)
            #expect(neither.status == 422 && neither.fields == ["duration"])
            let past = try await post(
                #"{"userId":"\#(user)","planId":"pro-monthly","until":"2001-01-01T00:00:00Z","reason":"x"}"#)
            #expect(past.status == 422 && past.fields == ["until"])
            let noReason = try await post(#"{"userId":"\#(user)","planId":"pro-monthly","duration":"P1M","reason":"  "}"#)
            #expect(noReason.status == 422 && noReason.fields == ["reason"])
            let noPlan = try await post(#"{"userId":"\#(user)","planId":"nope","duration":"P1M","reason":"x"}"#)
            #expect(noPlan.status == 422 && noPlan.fields == ["planId"])
            let badUser = try await post(#"{"userId":"me","planId":"pro-monthly","duration":"P1M","reason":"x"}"#)
            #expect(badUser.status == 422 && badUser.fields == ["userId"])
            let until = try await post(
                #"{"userId":"\#(user)","planId":"pro-monthly","until":"2099-01-01T00:00:00Z","reason":"lifetime deal"}"#)
            #expect(until.status == 201)
            #expect(
                try await post(
                    #"{"userId":"\#(user)","planId":"pro-monthly","duration":"P1M","reason":"x"}"#, token: try service.token(user)
                ).status == 403)
            #expect(try await service.send("GET", "/subscriptions/grants", token: admin).status == 422)
            #expect(try await service.send("GET", "/subscriptions/users/\(user)", token: try service.token(user)).status == 403)
        }
    }

    /// Support gives and takes back access and reads the catalogue; plans are the admins'.
    /// Every change is in the audit log, with the account it concerns and its before and after,
    /// and in that account's export.
    @Test func supportGrantsAccessPlansAreTheAdminsAndTheLogKeepsBoth() async throws {
        try await withService { service in
            let supportID = UUID()
            let support = try service.token(supportID, role: "support")
            let admin = try service.admin()
            let user = UUID()
            let body = #"{"id":"x","name":"X","price":1,"currency":"USD","billingPeriod":"P1M","entitlements":["x"]}"#
            #expect(try await service.send("POST", "/subscriptions/plans", json: body, token: support).status == 403)
            #expect(
                try await service.send("PATCH", "/subscriptions/plans/pro-monthly", json: #"{"price":1}"#, token: support)
                    .status == 403)
            #expect(try await service.send("DELETE", "/subscriptions/plans/pro-monthly", token: support).status == 403)
            #expect(try await service.send("GET", "/subscriptions/plans?all=true", token: support).status == 200)
            #expect(try await service.send("GET", "/subscriptions/users/\(user)", token: support).status == 200)

            let granted = try await service.send(
                "POST", "/subscriptions/grants",
                json: #"{"userId":"\#(user)","planId":"pro-monthly","duration":"P1M","reason":"refund goodwill"}"#,
                token: support)
            #expect(granted.status == 201, "\(granted.text)")
            let grant = try granted.decode(Grant.self)
            #expect(grant.grantedBy == supportID)
            #expect(try await service.status(user).active)
            #expect(try await service.send("DELETE", "/subscriptions/grants/\(grant.id)", token: support).status == 200)
            // Revoked twice is revoked once.
            #expect(try await service.send("DELETE", "/subscriptions/grants/\(grant.id)", token: support).status == 200)
            #expect(
                try await service.send("PATCH", "/subscriptions/plans/pro-monthly", json: #"{"price":599}"#, token: admin)
                    .status == 200)

            let about = try await service.send("GET", "/subscriptions/audit?subject=\(user)", token: support)
                .decode(AuditList.self).items
            #expect(about.map(\.action) == ["grant.revoked", "grant.created"])
            #expect(about.allSatisfy { $0.actorId == supportID && $0.actorRole == "support" && $0.service == "subscriptions" })
            #expect(about[0].before?.objectValue?["revokedAt"] == nil && about[0].after?.objectValue?["revokedAt"] != nil)
            let plan = try await service.send("GET", "/subscriptions/audit?target=pro-monthly", token: support)
                .decode(AuditList.self).items
            // Created by the harness, then updated.
            #expect(plan.map(\.action) == ["plan.updated", "plan.created"])
            #expect(plan.first?.after?.objectValue?["price"] == .number(599))
            #expect(plan.first?.before?.objectValue?["price"] != .number(599))
            #expect(try await service.send("GET", "/subscriptions/audit", token: try service.token(user)).status == 403)

            let export = try await service.send("GET", "/subscriptions/users/\(user)/export", token: support)
            let part = try export.decode(ExportPart.self)
            guard case .array(let entries)? = part.data.objectValue?["audit"] else {
                Issue.record("no audit in the export: \(export.text)")
                return
            }
            #expect(entries.count == 2)
            #expect(
                try await service.send("GET", "/subscriptions/users/\(user)/export", token: try service.token(user)).status == 403
            )
        }
    }

    @Test func cancellingIsForGrantsAndTheAppStoreSaysWhere() async throws {
        try await withService { service in
            let admin = try service.admin()
            let user = UUID()
            let nothing = try await service.send("POST", "/subscriptions/me/cancel", token: try service.token(user))
            #expect(nothing.status == 409)

            _ = try await service.send(
                "POST", "/subscriptions/grants",
                json: #"{"userId":"\#(user)","planId":"pro-monthly","duration":"P1M","reason":"trial extension"}"#, token: admin)
            let cancelled = try await service.send("POST", "/subscriptions/me/cancel", token: try service.token(user))
            #expect(cancelled.status == 200)
            let status = try cancelled.decode(SubscriptionStatus.self)
            #expect(status.active && !status.willRenew)
            let history = try await service.send("GET", "/subscriptions/users/\(user)", token: admin).decode(
                SubscriptionHistory.self)
            #expect(history.facts.first?.details["cancelledAt"] != nil)

            let buyer = UUID()
            let jws = try service.ca.sign(
                AppStorePayload.transaction(
                    id: "900", original: "900", purchased: Date(), expires: Date().addingTimeInterval(Self.day), user: buyer))
            #expect(try await service.postTransaction(jws, user: buyer).status == 200)
            let appStore = try await service.send("POST", "/subscriptions/me/cancel", token: try service.token(buyer))
            #expect(appStore.status == 409 && appStore.problem?.detail?.contains("App Store") == true)
        }
    }

    // MARK: - App Store transactions

    @Test func aVerifiedPurchaseGivesAccessAtOnceAndIsIdempotent() async throws {
        try await withService { service in
            let user = UUID()
            let expires = Date().addingTimeInterval(30 * Self.day)
            let jws = try service.ca.sign(
                AppStorePayload.transaction(id: "1001", original: "1000", purchased: Date(), expires: expires, user: user))
            let first = try await service.postTransaction(jws, user: user)
            #expect(first.status == 200)
            let status = try first.decode(SubscriptionStatus.self)
            #expect(status.status == .active && status.source == .appstore && status.environment == "sandbox")
            #expect(status.plan?.id == "pro-monthly" && status.willRenew)
            #expect(abs((status.currentPeriodEnd ?? .distantPast).timeIntervalSince(expires)) < 1)

            let again = try await service.postTransaction(jws, user: user)
            #expect(try again.decode(SubscriptionStatus.self).status == .active)
            let count = try await service.pool.query("SELECT count(*)::int AS n FROM subscriptions.appstore_transactions")
            #expect(try count[0].decode("n", as: Int.self) == 1)

            // Someone else cannot claim it, with or without an account token.
            let thief = UUID()
            let stolen = try await service.postTransaction(jws, user: thief)
            #expect(stolen.status == 403)
            let untagged = try service.ca.sign(
                AppStorePayload.transaction(id: "1002", original: "1000", purchased: Date(), expires: expires))
            #expect(try await service.postTransaction(untagged, user: thief).status == 409)
            #expect(try await service.status(thief).status == .none)
        }
    }

    @Test func refusedTransactionsSayWhyAndStoreNothing() async throws {
        try await withService { service in
            let user = UUID()
            let foreign = try TestCA().sign(
                AppStorePayload.transaction(id: "1", original: "1", purchased: Date(), expires: Date().addingTimeInterval(60)))
            let refused = try await service.postTransaction(foreign, user: user)
            #expect(refused.status == 422 && refused.fields == ["signedTransaction"])
            #expect(refused.problem?.errors?.first?.message.contains("does not validate") == true)
            let otherApp = try service.ca.sign(
                AppStorePayload.transaction(
                    id: "2", original: "2", purchased: Date(), expires: Date().addingTimeInterval(60), bundle: "com.other"))
            #expect(try await service.postTransaction(otherApp, user: user).status == 422)
            let consumable = try service.ca.sign(
                AppStorePayload.transaction(
                    id: "3", original: "3", purchased: Date(), expires: Date().addingTimeInterval(60), type: "Consumable"))
            #expect(try await service.postTransaction(consumable, user: user).status == 422)
            let garbage = try await service.send(
                "POST", "/subscriptions/appstore/transactions", json: #"{"signedTransaction":42}"#, token: try service.token(user)
            )
            #expect(garbage.status == 422 && garbage.fields == ["signedTransaction"])
            #expect(
                try await service.send("POST", "/subscriptions/appstore/transactions", json: #"{"signedTransaction":"x"}"#).status
                    == 401)
            let stored = try await service.pool.query("SELECT count(*)::int AS n FROM subscriptions.appstore_transactions")
            #expect(try stored[0].decode("n", as: Int.self) == 0)
        }
    }

    // MARK: - Notifications

    @Test func notificationsAreStoredOnceAndApplied() async throws {
        try await withService { service in
            let user = UUID()
            let ca = service.ca
            let now = Date()
            let purchase = try ca.sign(
                AppStorePayload.transaction(
                    id: "5001", original: "5000", purchased: now, expires: now.addingTimeInterval(Self.day), signed: now,
                    user: user))
            let uuid = UUID()
            let subscribed = try ca.sign(
                AppStorePayload.notification(
                    "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: uuid, transaction: purchase,
                    renewal: try ca.sign(AppStorePayload.renewal(original: "5000", signed: now))))
            #expect(try await service.postNotification(subscribed).status == 200)
            #expect(try await service.postNotification(subscribed).status == 200)
            let rows = try await service.pool.query("SELECT count(*)::int AS n FROM subscriptions.appstore_notifications")
            #expect(try rows[0].decode("n", as: Int.self) == 1)
            // Linked by appAccountToken before the app reported anything.
            #expect(try await service.status(user).status == .active)

            // Auto-renew turned off.
            let off = try ca.sign(
                AppStorePayload.notification(
                    "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", transaction: purchase,
                    renewal: try ca.sign(
                        AppStorePayload.renewal(original: "5000", autoRenew: false, signed: now.addingTimeInterval(1)))))
            #expect(try await service.postNotification(off).status == 200)
            #expect(try await service.status(user).willRenew == false)

            // A refund revokes at once.
            let refunded = try ca.sign(
                AppStorePayload.transaction(
                    id: "5001", original: "5000", purchased: now, expires: now.addingTimeInterval(Self.day),
                    signed: now.addingTimeInterval(2), revoked: now.addingTimeInterval(2), user: user))
            #expect(
                try await service.postNotification(
                    try ca.sign(AppStorePayload.notification("REFUND", transaction: refunded, renewal: nil))
                ).status == 200)
            let status = try await service.status(user)
            #expect(status.status == "revoked" && !status.active)

            // TEST, unknown types and summaries are stored and acknowledged, changing nothing.
            for type in ["TEST", "SOMETHING_NEW"] {
                let reply = try await service.postNotification(
                    try ca.sign(AppStorePayload.notification(type, transaction: nil, renewal: nil)))
                #expect(reply.status == 200)
            }
            var summary = AppStorePayload.notification("RENEWAL_EXTENSION", subtype: "SUMMARY", transaction: nil, renewal: nil)
            summary["summary"] = summary.removeValue(forKey: "data")
            #expect(try await service.postNotification(try ca.sign(summary)).status == 200)
            #expect(try await service.status(user).status == "revoked")
            let all = try await service.pool.query(
                "SELECT notification_type FROM subscriptions.appstore_notifications ORDER BY received_at")
            let types = try all.map { try $0.decode("notification_type", as: String.self) }
            #expect(types.contains("SOMETHING_NEW") && types.contains("RENEWAL_EXTENSION"))

            // Bad signatures are refused (Apple would retry; nothing is stored).
            let forged = try TestCA().sign(AppStorePayload.notification("TEST", transaction: nil, renewal: nil))
            let refused = try await service.postNotification(forged)
            #expect(refused.status == 422 && refused.fields == ["signedPayload"])

            // What became of each, for the team: applied, ignored and why, refused and why.
            let recent = try await service.send(
                "GET", "/subscriptions/appstore/notifications?limit=200", token: try service.admin())
            #expect(recent.status == 200, "\(recent.text)")
            let entries = try recent.decode(ItemList<AppStoreNotificationEntry>.self).items
            #expect(entries.first?.outcome == "refused" && entries.first?.reason?.isEmpty == false)
            #expect(entries.first?.notificationType == nil)
            #expect(entries.contains { $0.notificationUUID == uuid && $0.outcome == "applied" && $0.reason == nil })
            #expect(entries.contains { $0.notificationType == "REFUND" && $0.outcome == "applied" })
            #expect(
                entries.contains {
                    $0.notificationType == "SOMETHING_NEW" && $0.outcome == "ignored"
                        && $0.reason == "the SOMETHING_NEW type changes no status"
                })
            #expect(zip(entries, entries.dropFirst()).allSatisfy { $0.receivedAt >= $1.receivedAt })
            #expect(
                try await service.send("GET", "/subscriptions/appstore/notifications", token: try service.token(user)).status
                    == 403)
            #expect(
                try await service.send("GET", "/subscriptions/appstore/notifications?limit=0", token: try service.admin()).status
                    == 422)

            let history = try await service.send("GET", "/subscriptions/users/\(user)", token: try service.admin()).decode(
                SubscriptionHistory.self)
            #expect(history.subscription.status == "revoked")
            #expect(Set(history.facts.map(\.kind)) == ["appstore.transaction", "appstore.renewal", "appstore.notification"])

            // The refund reversed: Apple signs the transaction again without its revocation, and
            // access comes back.
            let reinstated = try ca.sign(
                AppStorePayload.transaction(
                    id: "5001", original: "5000", purchased: now, expires: now.addingTimeInterval(Self.day),
                    signed: now.addingTimeInterval(3), user: user))
            #expect(
                try await service.postNotification(
                    try ca.sign(AppStorePayload.notification("REFUND_REVERSED", transaction: reinstated, renewal: nil))
                ).status == 200)
            let restored = try await service.status(user)
            #expect(restored.status == .active && restored.active && restored.revocation == nil)

            // The team's view of the plans: this account through the App Store, another by a grant.
            let granted = try await service.send(
                "POST", "/subscriptions/grants",
                json: #"{"userId":"\#(UUID())","planId":"pro-monthly","duration":"P1M","reason":"support"}"#,
                token: try service.admin())
            #expect(granted.status == 201, "\(granted.text)")
            let subscribers = try await service.send("GET", "/subscriptions/subscribers", token: try service.admin())
            #expect(subscribers.status == 200, "\(subscribers.text)")
            let pro = try subscribers.decode(ItemList<PlanSubscribers>.self).items.first { $0.planId == "pro-monthly" }
            #expect(pro?.appStore == 1 && pro?.grants == 1 && pro?.billingRetry == 0 && pro?.onSale == true)
            #expect(try await service.send("GET", "/subscriptions/subscribers", token: try service.token(user)).status == 403)
        }
    }

    /// A yearly basic plan with eleven months left, upgraded to a monthly premium one: the upgrade
    /// decides at once (Apple: the higher level takes effect immediately), before and after Apple
    /// re-signs the old transaction with `isUpgraded`.
    @Test func anUpgradeDecidesAtOnce() async throws {
        try await withService { service in
            let admin = try service.admin()
            for plan in [
                #"{"id":"basic-yearly","name":"Basic","price":2900,"currency":"USD","billingPeriod":"P1Y","entitlements":["basic"],"appStoreProductIds":["pier.basic.yearly"]}"#,
                #"{"id":"premium-monthly","name":"Premium","price":999,"currency":"USD","billingPeriod":"P1M","entitlements":["basic","premium"],"appStoreProductIds":["pier.premium.monthly"]}"#,
            ] {
                #expect(try await service.send("POST", "/subscriptions/plans", json: plan, token: admin).status == 201)
            }
            let user = UUID()
            let now = Date()
            let month = 30 * Self.day
            let yearly = AppStorePayload.transaction(
                id: "7101", original: "7100", product: "pier.basic.yearly", purchased: now.addingTimeInterval(-month),
                expires: now.addingTimeInterval(11 * month), signed: now.addingTimeInterval(-month), user: user)
            #expect(try await service.postTransaction(try service.ca.sign(yearly), user: user).status == 200)
            #expect(try await service.status(user).plan?.id == "basic-yearly")

            let upgrade = AppStorePayload.transaction(
                id: "7102", original: "7100", product: "pier.premium.monthly", purchased: now.addingTimeInterval(-60),
                expires: now.addingTimeInterval(month), signed: now.addingTimeInterval(-60), user: user)
            #expect(try await service.postTransaction(try service.ca.sign(upgrade), user: user).status == 200)
            var status = try await service.status(user)
            #expect(status.plan?.id == "premium-monthly" && status.entitlements.map(\.key).contains("premium"))

            var resigned = yearly
            resigned["isUpgraded"] = true
            resigned["signedDate"] = AppStorePayload.ms(now)
            #expect(try await service.postTransaction(try service.ca.sign(resigned), user: user).status == 200)
            status = try await service.status(user)
            #expect(status.plan?.id == "premium-monthly" && status.status == .active)
            #expect(status.currentPeriodEnd.map { abs($0.timeIntervalSince(now.addingTimeInterval(month))) < 2 } == true)
        }
    }

    /// Two subscriptions of one group (Apple keeps one of a group active at a time): one source,
    /// the latest purchase, not the union of both nor the longer one.
    @Test func oneSubscriptionGroupIsOneSource() async throws {
        try await withService { service in
            let user = UUID()
            let now = Date()
            let older = AppStorePayload.transaction(
                id: "8501", original: "8500", product: "pier.team.yearly", purchased: now.addingTimeInterval(-60 * Self.day),
                expires: now.addingTimeInterval(300 * Self.day), signed: now.addingTimeInterval(-60 * Self.day), user: user)
            let newer = AppStorePayload.transaction(
                id: "8601", original: "8600", purchased: now.addingTimeInterval(-60), expires: now.addingTimeInterval(Self.day),
                signed: now.addingTimeInterval(-60), user: user)
            for payload in [older, newer] {
                #expect(try await service.postTransaction(try service.ca.sign(payload), user: user).status == 200)
            }
            let status = try await service.status(user)
            #expect(status.plan?.id == "pro-monthly" && status.entitlements.map(\.key) == ["pro"])
            // Another group is another source: its entitlements add up.
            var other = AppStorePayload.transaction(
                id: "8701", original: "8700", product: "pier.team.yearly", purchased: now,
                expires: now.addingTimeInterval(Self.day),
                signed: now, user: user)
            other["subscriptionGroupIdentifier"] = "22000000"
            #expect(try await service.postTransaction(try service.ca.sign(other), user: user).status == 200)
            #expect(try await service.status(user).entitlements.map(\.key) == ["pro", "team"])
        }
    }

    /// What an app shows around the state: the plan it renews to, why it will not renew, a price
    /// increase waiting for consent, what was paid, Family Sharing, and a refund's kind.
    @Test func theStatusSaysWhatTheAppShows() async throws {
        try await withService { service in
            let user = UUID()
            let now = Date()
            var bought = AppStorePayload.transaction(
                id: "8401", original: "8400", purchased: now, expires: now.addingTimeInterval(Self.day), signed: now, user: user)
            bought["price"] = 9990
            bought["currency"] = "EUR"
            bought["inAppOwnershipType"] = "FAMILY_SHARED"
            var renewal = AppStorePayload.renewal(original: "8400", autoRenew: false, signed: now)
            renewal["autoRenewProductId"] = "pier.team.yearly"
            renewal["expirationIntent"] = 1
            renewal["priceIncreaseStatus"] = 0
            let notification = try service.ca.sign(
                AppStorePayload.notification(
                    "DID_CHANGE_RENEWAL_PREF", subtype: "DOWNGRADE", transaction: try service.ca.sign(bought),
                    renewal: try service.ca.sign(renewal)))
            #expect(try await service.postNotification(notification).status == 200)
            let status = try await service.status(user)
            #expect(status.status == .active && status.plan?.id == "pro-monthly")
            #expect(status.renewsTo == PlanReference(id: "team-yearly", name: "Team"))
            #expect(status.expirationReason == "cancelled" && status.priceIncrease == "pending")
            // Apple's 9990 milliunits are 999 cents: every price Pier answers is in minor units.
            #expect(status.price == 999 && status.currency == "EUR" && status.familyShared == true)
            #expect(status.paid == Price(minorUnits: 999, currency: "EUR"))
            let history = try await service.send("GET", "/subscriptions/users/\(user)", token: try service.admin())
            let facts = try history.decode(SubscriptionHistory.self).facts
            #expect(facts.first { $0.kind == "appstore.transaction" }?.details["price"] == .number(999), "\(history.text)")
            #expect(status.revocation == nil)

            // Refunded, prorated, for an issue with the app.
            var refunded = bought
            refunded["revocationDate"] = AppStorePayload.ms(now)
            refunded["revocationReason"] = 1
            refunded["revocationType"] = "REFUND_PRORATED"
            refunded["signedDate"] = AppStorePayload.ms(now.addingTimeInterval(1))
            let refund = try service.ca.sign(
                AppStorePayload.notification("REFUND", transaction: try service.ca.sign(refunded), renewal: nil))
            #expect(try await service.postNotification(refund).status == 200)
            let after = try await service.status(user)
            #expect(after.status == "revoked" && !after.active)
            #expect(after.revocation == SubscriptionRevocation(reason: "app_issue", type: "refund_prorated"))
        }
    }

    /// Only a free introductory offer is a trial; a paid one (pay as you go, pay up front) is a
    /// paying subscriber. The status says which offer, in either case.
    @Test func onlyAFreeIntroductoryOfferIsATrial() async throws {
        try await withService { service in
            let now = Date()
            let cases: [(discount: String?, identifier: String?, status: SubscriptionState, offer: SubscriptionOffer)] = [
                ("FREE_TRIAL", nil, .trialing, SubscriptionOffer(type: .introductory, discountType: "free_trial")),
                ("PAY_AS_YOU_GO", nil, .active, SubscriptionOffer(type: .introductory, discountType: "pay_as_you_go")),
                ("PAY_UP_FRONT", nil, .active, SubscriptionOffer(type: .introductory, discountType: "pay_up_front")),
                // A payload from before Apple sent the discount type: a trial, as it meant then.
                (nil, nil, .trialing, SubscriptionOffer(type: .introductory)),
            ]
            for (index, expected) in cases.enumerated() {
                let user = UUID()
                var payload = AppStorePayload.transaction(
                    id: "81\(index)", original: "80\(index)", purchased: now, expires: now.addingTimeInterval(Self.day),
                    user: user,
                    offerType: 1)
                payload["offerDiscountType"] = expected.discount
                #expect(try await service.postTransaction(try service.ca.sign(payload), user: user).status == 200)
                let status = try await service.status(user)
                #expect(status.status == expected.status && status.active, "\(expected.discount ?? "none")")
                #expect(status.offer == expected.offer, "\(expected.discount ?? "none")")
            }
            // A promotional offer, with its identifier; no offer at all: none in the status.
            let user = UUID()
            var promotional = AppStorePayload.transaction(
                id: "820", original: "820", purchased: now, expires: now.addingTimeInterval(Self.day), user: user, offerType: 2)
            promotional["offerIdentifier"] = "winter-half-price"
            promotional["offerDiscountType"] = "PAY_AS_YOU_GO"
            #expect(try await service.postTransaction(try service.ca.sign(promotional), user: user).status == 200)
            #expect(
                try await service.status(user).offer
                    == SubscriptionOffer(type: "promotional", discountType: "pay_as_you_go", identifier: "winter-half-price"))
            let plain = UUID()
            let bought = AppStorePayload.transaction(
                id: "830", original: "830", purchased: now, expires: now.addingTimeInterval(Self.day), user: plain)
            #expect(try await service.postTransaction(try service.ca.sign(bought), user: plain).status == 200)
            let status = try await service.status(plain)
            #expect(status.status == .active && status.offer == nil)
        }
    }

    /// Every well-signed notification of this app is stored and acknowledged, whatever its type,
    /// or Apple retries it for days:
    /// RESCIND_CONSENT (its `appData`) and a type Pier does not act on. What names another app,
    /// or no app and no environment at all, is refused (Apple's library refuses it alike).
    @Test func notificationsPierDoesNotActOnAreStoredAndAcknowledged() async throws {
        try await withService { service in
            let ca = service.ca
            let now = Date()
            func signed(_ type: String, _ part: String?, bundle: String = SubscriptionsHarness.bundleID) throws -> (String, UUID)
            {
                let uuid = UUID()
                var payload: [String: Any] = [
                    "notificationType": type, "notificationUUID": uuid.uuidString.lowercased(), "version": "2.0",
                    "signedDate": AppStorePayload.ms(now),
                ]
                if let part {
                    payload[part] =
                        [
                            "appAppleId": SubscriptionsHarness.appAppleID, "bundleId": bundle, "environment": "Sandbox",
                            "signedAppTransactionInfo": "eyJ9.e30.sig",
                        ] as [String: Any]
                }
                return (try ca.sign(payload), uuid)
            }
            func stored(_ uuid: UUID) async throws -> (type: String, environment: String)? {
                try await service.pool.query(
                    "SELECT notification_type, environment FROM subscriptions.appstore_notifications WHERE notification_uuid = \(uuid)"
                ).first.map { (try $0.decode("notification_type"), try $0.decode("environment")) }
            }
            let (rescind, rescindID) = try signed("RESCIND_CONSENT", "appData")
            #expect(try await service.postNotification(rescind).status == 200)
            #expect(try await service.postNotification(rescind).status == 200)
            #expect(try await stored(rescindID)?.environment == "sandbox")
            let (future, futureID) = try signed("SOMETHING_APPLE_ADDS", "data")
            #expect(try await service.postNotification(future).status == 200)
            #expect(try await stored(futureID)?.type == "SOMETHING_APPLE_ADDS")
            let (shape, shapeID) = try signed("ANOTHER_SHAPE", "partsUnknownToPier")
            let refused = try await service.postNotification(shape)
            #expect(refused.status == 422 && refused.problem?.errors?.map(\.field) == ["signedPayload"], "\(refused.text)")
            #expect(try await stored(shapeID) == nil)
            // Still refused: another app's, and anything not signed through Apple's chain.
            let (other, otherID) = try signed("RESCIND_CONSENT", "appData", bundle: "com.example.other")
            #expect(try await service.postNotification(other).status == 422)
            #expect(try await stored(otherID) == nil)
            #expect(try await service.postNotification(rescind + "x").status == 422)
        }
    }

    /// Sandbox and production are two worlds, even where Apple's identifiers meet: a sandbox
    /// renewal info never switches a production subscription's renewal, and a sandbox purchase
    /// (App Review's, on the production build) gives access to the account that made it alone,
    /// marked `sandbox`, without touching the production subscription of the same id.
    @Test func sandboxFactsNeverTouchProductionOnes() async throws {
        try await withService { service in
            let ca = service.ca
            let (customer, reviewer) = (UUID(), UUID())
            let now = Date()
            let production = try ca.sign(
                AppStorePayload.transaction(
                    id: "9101", original: "9100", purchased: now.addingTimeInterval(-Self.day),
                    expires: now.addingTimeInterval(29 * Self.day), user: customer, environment: "Production"))
            let renews = try ca.sign(AppStorePayload.renewal(original: "9100", autoRenew: true, environment: "Production"))
            #expect(
                try await service.postNotification(
                    try ca.sign(
                        AppStorePayload.notification(
                            "SUBSCRIBED", transaction: production, renewal: renews, environment: "Production"))
                ).status == 200)
            let before = try await service.status(customer)
            #expect(before.active && before.willRenew && before.environment == "production")

            // A sandbox renewal info for the same original id, signed later, says "off".
            let sandboxRenewal = try ca.sign(
                AppStorePayload.renewal(
                    original: "9100", autoRenew: false, signed: now.addingTimeInterval(60), environment: "Sandbox"))
            #expect(
                try await service.postNotification(
                    try ca.sign(
                        AppStorePayload.notification(
                            "DID_CHANGE_RENEWAL_STATUS", transaction: nil, renewal: sandboxRenewal, environment: "Sandbox"))
                ).status == 200)
            let after = try await service.status(customer)
            #expect(after.active && after.willRenew && after.environment == "production", "\(after)")

            // App Review buys in the sandbox, with an id that meets the production one.
            let review = try ca.sign(
                AppStorePayload.transaction(
                    id: "9101", original: "9100", purchased: now, expires: now.addingTimeInterval(5 * 60), user: reviewer,
                    environment: "Sandbox"))
            let reply = try await service.postTransaction(review, user: reviewer)
            #expect(reply.status == 200, "\(reply.text)")
            let reviewed = try await service.status(reviewer)
            #expect(reviewed.active && reviewed.environment == "sandbox")
            let unchanged = try await service.status(customer)
            #expect(unchanged.active && unchanged.willRenew && unchanged.environment == "production")
            let stored = try await service.pool.query(
                "SELECT environment, user_id FROM subscriptions.appstore_owners WHERE original_transaction_id = '9100' ORDER BY environment"
            ).map { (try $0.decode("environment", as: String.self), try $0.decode("user_id", as: UUID.self)) }
            #expect(stored.map(\.0) == ["production", "sandbox"] && stored.map(\.1) == [customer, reviewer])
        }
    }

    /// A paying customer who also buys in the sandbox (a tester's account on a production build),
    /// in the same subscription group, for longer: the paid subscription still decides the status
    /// (`environment: production`), the sandbox purchase adds only its own entitlements. With
    /// sandbox purchases turned off later, the stored sandbox facts stop counting.
    @Test func aSandboxPurchaseNeverHidesAPaidOne() async throws {
        try await withService { service in
            let (ca, customer) = (service.ca, UUID())
            let now = Date()
            let paid = AppStorePayload.transaction(
                id: "9301", original: "9300", purchased: now.addingTimeInterval(-Self.day),
                expires: now.addingTimeInterval(29 * Self.day), user: customer, environment: "Production")
            #expect(try await service.postTransaction(try ca.sign(paid), user: customer).status == 200)
            let tried = AppStorePayload.transaction(
                id: "9401", original: "9400", product: "pier.team.yearly", purchased: now,
                expires: now.addingTimeInterval(60 * Self.day), user: customer, environment: "Sandbox")
            let reply = try await service.postTransaction(try ca.sign(tried), user: customer)
            #expect(reply.status == 200, "\(reply.text)")
            let status = try await service.status(customer)
            #expect(status.active && status.environment == "production" && status.plan?.id == "pro-monthly", "\(status)")
            #expect(status.entitlements.map(\.key) == ["pro", "team"])
            #expect(
                status.currentPeriodEnd.map { abs($0.timeIntervalSince(now.addingTimeInterval(29 * Self.day))) < 2 } == true)

            // PIER_SUBSCRIPTIONS_APPSTORE_SANDBOX=false after a restart: what the status reads then.
            let strict = Subscriptions(database: service.pool, recheckSeconds: 3600, sandboxCounts: false)
            let production = try await strict.status(of: customer)
            #expect(production.environment == "production" && production.entitlements.map(\.key) == ["pro"], "\(production)")
            // A sandbox buyer alone has nothing then; the facts are kept for when it is on again.
            let tester = UUID()
            let own = AppStorePayload.transaction(
                id: "9501", original: "9500", purchased: now, expires: now.addingTimeInterval(Self.day), user: tester,
                environment: "Sandbox")
            #expect(try await service.postTransaction(try ca.sign(own), user: tester).status == 200)
            #expect(try await strict.status(of: tester).status == .none)
            #expect(try await service.status(tester).environment == "sandbox")
        }
    }

    /// Signed data holding U+0000 (which jsonb cannot store) is refused with 422, never a 500;
    /// another app's notification is refused even when it declares no environment.
    @Test func unstorableOrForeignSignedDataIsRefused() async throws {
        try await withService { service in
            let ca = service.ca
            let user = UUID()
            var payload = AppStorePayload.transaction(
                id: "9201", original: "9200", purchased: Date(), expires: Date().addingTimeInterval(Self.day), user: user)
            payload["storefront"] = "US\u{0}A"
            let reply = try await service.postTransaction(try ca.sign(payload), user: user)
            #expect(reply.status == 422 && reply.text.contains("U+0000"), "\(reply.status) \(reply.text)")
            var notification = AppStorePayload.notification("TEST", transaction: nil, renewal: nil)
            notification["data"] = ["bundleId": "dev.pier.tests", "note": "a\u{0}b"] as [String: Any]
            #expect(try await service.postNotification(try ca.sign(notification)).status == 422)

            var foreign = AppStorePayload.notification("TEST", transaction: nil, renewal: nil, bundle: "com.example.other")
            var data = foreign["data"] as? [String: Any] ?? [:]
            data["environment"] = nil
            foreign["data"] = data
            let uuid = try #require(foreign["notificationUUID"] as? String)
            #expect(try await service.postNotification(try ca.sign(foreign)).status == 422)
            let kept = try await service.pool.query(
                "SELECT count(*)::int AS n FROM subscriptions.appstore_notifications WHERE notification_uuid = \(UUID(uuidString: uuid)!)"
            )
            #expect(try kept[0].decode("n", as: Int.self) == 0)
        }
    }

    @Test func aLateOlderNotificationNeverOverwritesANewerState() async throws {
        try await withService { service in
            let user = UUID()
            let ca = service.ca
            let start = Date().addingTimeInterval(-40 * Self.day)
            // Renewed: the new period's transaction, signed today.
            let renewed = try ca.sign(
                AppStorePayload.transaction(
                    id: "7002", original: "7000", purchased: Date().addingTimeInterval(-Self.hour),
                    expires: Date().addingTimeInterval(30 * Self.day), signed: Date(), user: user))
            let newRenewal = try ca.sign(AppStorePayload.renewal(original: "7000", autoRenew: true, signed: Date()))
            #expect(
                try await service.postNotification(
                    try ca.sign(AppStorePayload.notification("DID_RENEW", transaction: renewed, renewal: newRenewal))
                ).status == 200)

            // Then, late, the notification from the first purchase 40 days ago, and an old renewal
            // info that said auto-renew was off.
            let first = try ca.sign(
                AppStorePayload.transaction(
                    id: "7001", original: "7000", purchased: start, expires: start.addingTimeInterval(30 * Self.day),
                    signed: start, user: user))
            let oldRenewal = try ca.sign(AppStorePayload.renewal(original: "7000", autoRenew: false, signed: start))
            #expect(
                try await service.postNotification(
                    try ca.sign(
                        AppStorePayload.notification("SUBSCRIBED", signed: start, transaction: first, renewal: oldRenewal))
                ).status == 200)
            let status = try await service.status(user)
            #expect(status.status == .active && status.willRenew)
            #expect((status.currentPeriodEnd ?? .distantPast) > Date().addingTimeInterval(29 * Self.day))

            // The same transaction re-signed earlier (an out-of-order copy) does not undo a refund.
            let refunded = try ca.sign(
                AppStorePayload.transaction(
                    id: "7002", original: "7000", purchased: Date().addingTimeInterval(-Self.hour),
                    expires: Date().addingTimeInterval(30 * Self.day), signed: Date().addingTimeInterval(5),
                    revoked: Date(), user: user))
            _ = try await service.postNotification(
                try ca.sign(AppStorePayload.notification("REFUND", transaction: refunded, renewal: nil)))
            _ = try await service.postTransaction(renewed, user: user)
            #expect(try await service.status(user).status == "revoked")
        }
    }

    @Test func failedRenewalsGoThroughGraceAndBillingRetry() async throws {
        try await withService { service in
            let user = UUID()
            let ca = service.ca
            let ended = Date().addingTimeInterval(-Self.hour)
            let transaction = try ca.sign(
                AppStorePayload.transaction(
                    id: "8001", original: "8000", purchased: ended.addingTimeInterval(-30 * Self.day), expires: ended,
                    signed: ended, user: user))
            let grace = try ca.sign(
                AppStorePayload.renewal(
                    original: "8000", signed: Date(), billingRetry: true, graceUntil: Date().addingTimeInterval(6 * Self.day)))
            #expect(
                try await service.postNotification(
                    try ca.sign(
                        AppStorePayload.notification(
                            "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", transaction: transaction, renewal: grace))
                ).status == 200)
            var status = try await service.status(user)
            #expect(status.status == .gracePeriod && status.active && status.graceUntil != nil)

            let graceOver = try ca.sign(
                AppStorePayload.renewal(
                    original: "8000", signed: Date().addingTimeInterval(1), billingRetry: true,
                    graceUntil: Date().addingTimeInterval(-1)))
            _ = try await service.postNotification(
                try ca.sign(AppStorePayload.notification("GRACE_PERIOD_EXPIRED", transaction: transaction, renewal: graceOver)))
            status = try await service.status(user)
            #expect(status.status == "billing_retry" && !status.active)

            let gaveUp = try ca.sign(
                AppStorePayload.renewal(original: "8000", autoRenew: false, signed: Date().addingTimeInterval(2)))
            _ = try await service.postNotification(
                try ca.sign(
                    AppStorePayload.notification("EXPIRED", subtype: "BILLING_RETRY", transaction: transaction, renewal: gaveUp)))
            status = try await service.status(user)
            #expect(status.status == "expired" && !status.active && !status.willRenew)

            // Apple extends the period (RENEWAL_EXTENDED re-signs the transaction with a later expiry).
            let extended = try ca.sign(
                AppStorePayload.transaction(
                    id: "8001", original: "8000", purchased: ended.addingTimeInterval(-30 * Self.day),
                    expires: Date().addingTimeInterval(7 * Self.day), signed: Date().addingTimeInterval(3), user: user))
            _ = try await service.postNotification(
                try ca.sign(AppStorePayload.notification("RENEWAL_EXTENDED", transaction: extended, renewal: nil)))
            #expect(try await service.status(user).status == .active)
        }
    }

    // MARK: - Accounts

    @Test func aDeletedAccountsFactsAreDetachedAndKept() async throws {
        try await withService { service in
            let user = UUID()
            let admin = try service.admin()
            _ = try await service.send(
                "POST", "/subscriptions/grants",
                json: #"{"userId":"\#(user)","planId":"pro-monthly","duration":"P1M","reason":"support"}"#, token: admin)
            let jws = try service.ca.sign(
                AppStorePayload.transaction(
                    id: "9001", original: "9000", purchased: Date(), expires: Date().addingTimeInterval(Self.day), user: user))
            #expect(try await service.postTransaction(jws, user: user).status == 200)

            try await service.pool.withTransaction { connection in
                try await EventLog.append("account.deleted", payload: AccountDeleted(userId: user), on: connection)
                try await EventLog.append("account.deleted", payload: AccountDeleted(userId: user), on: connection)
            }
            #expect(
                try await eventually {
                    try await service.pool.query(
                        """
                        SELECT (SELECT count(*) FROM subscriptions.grants WHERE user_id = \(user))
                            + (SELECT count(*) FROM subscriptions.appstore_owners WHERE user_id = \(user))
                            + (SELECT count(*) FROM subscriptions.appstore_transactions WHERE payload ? 'appAccountToken') AS n
                        """)[0].decode("n", as: Int.self) == 0
                })
            // The account's own tokens are refused now; its status, as an admin sees it, is none.
            #expect(
                try await eventually {
                    try await service.send("GET", "/subscriptions/me", token: try service.token(user)).status == 401
                })
            let history = try await service.send("GET", "/subscriptions/users/\(user)", token: admin).decode(
                SubscriptionHistory.self)
            #expect(history.subscription.status == .none)
            let kept = try await service.pool.query(
                "SELECT (SELECT count(*) FROM subscriptions.grants) + (SELECT count(*) FROM subscriptions.appstore_transactions) AS n"
            )
            #expect(try kept[0].decode("n", as: Int.self) == 2)

            // Apple renews the subscription later: the renewal still carries the appAccountToken
            // it was bought with. It is recorded, detached: the deleted account gets nothing back.
            let now = Date()
            let renewed = try service.ca.sign(
                AppStorePayload.transaction(
                    id: "9002", original: "9000", purchased: now, expires: now.addingTimeInterval(Self.day), signed: now,
                    user: user))
            var renewal = AppStorePayload.renewal(original: "9000", signed: now)
            renewal["appAccountToken"] = user.uuidString.lowercased()
            let notification = try service.ca.sign(
                AppStorePayload.notification(
                    "DID_RENEW", transaction: renewed, renewal: try service.ca.sign(renewal)))
            #expect(try await service.postNotification(notification).status == 200)
            let after = try await service.pool.query(
                """
                SELECT (SELECT count(*) FROM subscriptions.appstore_owners WHERE user_id = \(user))
                    + (SELECT count(*) FROM subscriptions.appstore_transactions WHERE payload ? 'appAccountToken')
                    + (SELECT count(*) FROM subscriptions.appstore_renewals WHERE payload ? 'appAccountToken') AS linked,
                    (SELECT count(*) FROM subscriptions.appstore_transactions WHERE transaction_id = '9002') AS recorded
                """)[0]
            #expect(try after.decode("linked", as: Int.self) == 0 && after.decode("recorded", as: Int.self) == 1)
            let again = try await service.send("GET", "/subscriptions/users/\(user)", token: admin).decode(
                SubscriptionHistory.self)
            #expect(again.subscription.status == .none)
        }
    }
}

/// Signed statuses: asked for with a nonce, bound to the caller, the installation and the
/// nonce, signed with the key the JWKS publishes; bad nonces and installations are named.
extension SubscriptionsEndpointTests {
    @Test func aStatusIsSignedForTheNonceAndTheInstallationThatAskedIt() async throws {
        try await withService { service in
            let keys = try await service.send("GET", "/subscriptions/.well-known/jwks.json")
            #expect(keys.status == 200 && keys.headers["Content-Type"] == "application/jwk-set+json")
            let jwk = try #require(try JSONDecoder().decode(JWKSet.self, from: Data(keys.text.utf8)).keys.first)
            let user = UUID()
            let token = try service.token(user)
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601

            // Without a nonce, no signature (an app that does not pin keys pays nothing).
            let plain = try await service.send("GET", "/subscriptions/me", token: token)
            #expect(plain.status == 200 && plain.headers[SignedStatusClaims.header] == nil)

            let nonce = "n0nce-of-the-app_0123456789"
            let asked: HTTPHeaders = [SignedStatusClaims.nonceHeader: nonce, "X-Installation-ID": "install-1"]
            let signed = try await service.send("GET", "/subscriptions/me", token: token, headers: asked)
            #expect(signed.status == 200)
            let jws = try JWS(compact: try #require(signed.headers[SignedStatusClaims.header]))
            try jws.verify(with: try jwk.publicKey())
            #expect(jws.header.kid == jwk.kid && jws.header.typ == SignedStatusClaims.type)
            let claims = try decoder.decode(SignedStatusClaims.self, from: Data(jws.payload))
            #expect(claims.sub == user && claims.ins == "install-1" && claims.nonce == nonce)
            #expect(claims.exp - claims.iat == 86_400)
            #expect(claims.status == (try signed.decode(SubscriptionStatus.self)))

            // Revalidated: the 304 carries a signature for the new nonce.
            var again = asked
            again.set(SignedStatusClaims.nonceHeader, "another-nonce-0123456789")
            again.set("If-None-Match", try #require(signed.headers["ETag"]))
            let unchanged = try await service.send("GET", "/subscriptions/me", token: token, headers: again)
            #expect(unchanged.status == 304)
            let renewed = try JWS(compact: try #require(unchanged.headers[SignedStatusClaims.header]))
            #expect(
                try decoder.decode(SignedStatusClaims.self, from: Data(renewed.payload)).nonce
                    == "another-nonce-0123456789")

            for (field, value) in [
                (SignedStatusClaims.nonceHeader, "short"), (SignedStatusClaims.nonceHeader, "not base64url: 0123456789"),
                ("X-Installation-ID", String(repeating: "i", count: 129)),
            ] {
                var bad = asked
                bad.set(field, value)
                let refused = try await service.send("GET", "/subscriptions/me", token: token, headers: bad)
                #expect(refused.status == 422 && refused.fields == [field], "\(field): \(refused.text)")
            }
        }
    }

    /// In production without `PIER_SUBSCRIPTIONS_SIGNING_KEY_FILE`, nothing is signed and no key
    /// is published: an app pinning keys refuses the unsigned status (PierClient's tests).
    @Test func withoutASigningKeyInProductionNothingIsSigned() async throws {
        let service = try await SubscriptionsHarness.start(database: "pier_test_subscriptions_unsigned", production: true)
        do {
            let keys = try await service.send("GET", "/subscriptions/.well-known/jwks.json")
            #expect(keys.status == 404 && keys.problem?.code == "not_found", "\(keys.text)")
            let asked: HTTPHeaders = [
                SignedStatusClaims.nonceHeader: "n0nce-of-the-app_0123456789", "X-Installation-ID": "install-1",
            ]
            let status = try await service.send("GET", "/subscriptions/me", token: try service.token(UUID()), headers: asked)
            #expect(status.status == 200 && status.headers[SignedStatusClaims.header] == nil)
            #expect(try status.decode(SubscriptionStatus.self).active == false)
        } catch {
            await service.stop()
            throw error
        }
        await service.stop()
    }
}
