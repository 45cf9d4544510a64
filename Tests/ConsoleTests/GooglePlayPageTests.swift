import Foundation
import PierModels
import PierServiceTestSupport
import PierTestSupport
import Testing

/// What support sees of a customer who pays on Android: the plan's Google products, the
/// purchase on the user page with its state as Google said it, "From: Google Play", and
/// reading it again from Google with one button (against ``TestGooglePlay``).
@Suite(.serialized) struct GooglePlayPageTests {
    @Test func supportSeesAGooglePlayPurchaseAndReadsItAgain() async throws {
        let google = try TestGooglePlay()
        do {
            try await run(google)
        } catch {
            await google.stop()
            throw error
        }
        await google.stop()
    }

    func run(_ google: TestGooglePlay) async throws {
        try await ConsoleTests().withStack(database: "pier_test_console_google", settings: google.settings) { stack in
            let console = ConsoleTests()
            let (_, adminEmail) = try await console.account(stack, .admin)
            let admin = try await stack.api.send(
                "POST", "/auth/login", json: #"{"email":"\#(adminEmail)","password":"\#(ConsoleTests.password)"}"#
            ).decode(AuthSession.self)
            let (_, supportEmail) = try await console.account(stack, .support)
            let (customer, customerEmail) = try await console.account(stack, .user, name: "Dana Droid")
            let plan = try await stack.api.send(
                "POST", "/subscriptions/plans",
                json:
                    #"{"id":"pro","name":"Pro","price":499,"currency":"USD","billingPeriod":"P1M","entitlements":["pro"],"googleProductIds":["seeds_pro"]}"#,
                token: admin.accessToken)
            #expect(plan.status == 201, "\(plan.text)")
            google.set("tok-dana", TestGooglePlay.purchase(account: customer.user.id))
            let bought = try await stack.api.send(
                "POST", "/subscriptions/google/purchases", json: #"{"purchaseToken":"tok-dana","productId":"seeds_pro"}"#,
                token: customer.accessToken)
            #expect(bought.status == 200, "\(bought.text)")

            let browser = Browser(base: stack.base)
            #expect(try await browser.signIn(supportEmail, ConsoleTests.password).status == 303)
            let plans = try await browser.get("/console/plans")
            #expect(plans.text.contains("seeds_pro") && plans.text.contains("data-google=\"pro\">1<"), "the plans page")
            let renewed = try TestGooglePlay.pushBody(TestGooglePlay.subscription(2, token: "tok-dana"))
            let pushed = try await stack.api.send(
                "POST", "/subscriptions/google/notifications", json: renewed,
                headers: ["Authorization": "Bearer " + (try google.pushToken())])
            #expect(pushed.status == 204, "\(pushed.text)")
            let notices = try await browser.get("/console/plans")
            #expect(notices.text.contains("<td>Subscription renewed</td>"), "the recent Google Play notifications")
            let found = try await browser.get("/console/users?q=\(customerEmail)")
            #expect(found.text.contains(customerEmail))
            let path = "/console/users/\(customer.user.id.uuidString.lowercased())"
            let page = try await browser.get(path)
            #expect(page.text.contains("<dd>Google Play</dd>"), "From: Google Play")
            #expect(page.text.contains("Google Play purchase (as Google last said) <span class=\"badge\">active</span>"))
            #expect(page.text.contains("GPA."), "the order id support gives Google")
            // The customer cancelled in the Play Store and no notification came: support reads it again.
            google.set(
                "tok-dana",
                TestGooglePlay.purchase(state: "SUBSCRIPTION_STATE_CANCELED", autoRenew: false, account: customer.user.id))
            let csrf = try #require(page.field("csrf"))
            let refreshed = try await browser.post(path + "/google-refresh", [("csrf", csrf)])
            #expect(refreshed.status == 303 && refreshed.location?.contains("done=google") == true, "\(refreshed.text)")
            let after = try await browser.get(refreshed.location!)
            #expect(after.text.contains("Read again from Google Play."))
            #expect(after.text.contains("<span class=\"badge\">cancelled, not expired</span>"), "the state now")
        }
    }
}
