import Foundation
import PierCrypto
import PierHTML
import PierHTTP
import PierIdentity
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierServiceTestSupport
import PierTestSupport
import Synchronization
import Testing

@testable import ConsoleService

/// A browser as the console sees one over a socket: it keeps cookies, sends forms with the
/// console's own Origin, and follows nothing by itself (each redirect is checked).
final class Browser: @unchecked Sendable {
    let base: String
    let client = HTTPClient()
    var cookies: [String: String] = [:]

    init(base: String) { self.base = base }

    deinit { client.close() }

    struct Page {
        let status: Int
        let headers: HTTPHeaders
        let text: String

        var location: String? { headers["Location"] }

        /// The value of the first hidden `name` field.
        func field(_ name: String) -> String? {
            guard let range = text.range(of: "name=\"\(name)\" value=\"") else { return nil }
            let rest = text[range.upperBound...]
            return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
        }
    }

    func get(_ path: String) async throws -> Page { try await send("GET", path) }

    /// Posts `fields` as a form, with the page's CSRF token unless `csrf` says otherwise.
    func post(_ path: String, _ fields: [(String, String)], origin: String? = nil) async throws -> Page {
        let body = fields.map { ConsolePath.encode($0.0) + "=" + ConsolePath.encode($0.1) }.joined(separator: "&")
        return try await send(
            "POST", path, body: Array(body.utf8),
            headers: ["Content-Type": "application/x-www-form-urlencoded", "Origin": origin ?? base])
    }

    func send(_ method: String, _ path: String, body: [UInt8]? = nil, headers extra: HTTPHeaders = [:]) async throws -> Page {
        var headers = extra
        if !cookies.isEmpty {
            headers.set("Cookie", cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; "))
        }
        headers.set("User-Agent", "Mozilla/5.0 Chrome/130 test")
        let response = try await client.send(method, base + path, headers: headers, body: body, timeout: .seconds(60))
        for cookie in response.headers.values("Set-Cookie") {
            let pair = cookie.split(separator: ";")[0].split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            if pair[1].isEmpty || cookie.contains("Max-Age=0") { cookies[pair[0]] = nil } else { cookies[pair[0]] = pair[1] }
        }
        return Page(status: response.status, headers: response.headers, text: String(decoding: response.body, as: UTF8.self))
    }

    /// Signs in through the form; the page it lands on.
    func signIn(_ email: String, _ password: String) async throws -> Page {
        let form = try await get("/console/sign-in")
        return try await post(
            "/console/sign-in", [("form", form.field("form") ?? ""), ("email", email), ("password", password), ("next", "")])
    }
}

/// The console over HTTP, hosted by the gateway beside the services on a real database: signing
/// in and out, the CSRF check, the headers of every page, what support may and may not do, and
/// hostile text shown as text.
@Suite(.serialized) struct ConsoleTests {
    static let password = "a long enough passphrase"

    struct Stack {
        let running: Hosted
        let api: ServiceClient
        let pool: PostgresPool
        let base: String
    }

    func withStack(
        database: String = "pier_test_console", settings: [String: String] = [:], _ body: (Stack) async throws -> Void
    ) async throws {
        let url = try await TestDatabase.create(database)
        let running = try await EmbeddedStack.start(
            databaseURL: url, settings: settings, plugins: ["auth", "feedback", "subscriptions", "console"])
        let base = "http://127.0.0.1:\(running.server.port)"
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 2))
        do {
            try await body(Stack(running: running, api: ServiceClient(base: base), pool: pool, base: base))
        } catch {
            pool.close()
            await running.shutdown()
            throw error
        }
        pool.close()
        await running.shutdown()
    }

    /// The token of the first link containing `fragment` mailed to `address` among the `.eml`
    /// files of `directory` (no SMTP server set), once written.
    static func mailedToken(in directory: String, to address: String, containing fragment: String) async throws -> String {
        var found: String?
        _ = await eventually(timeout: .seconds(10)) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            found = names.filter { $0.hasSuffix(".eml") }
                .compactMap { FileManager.default.contents(atPath: directory + "/" + $0).map { ReceivedMail(Array($0)) } }
                .filter { $0.headers["to"]?.contains(address) == true }
                .compactMap { $0.link(containing: fragment) }.first
                .map { String($0.split(separator: "=", maxSplits: 1)[1]) }
            return found != nil
        }
        return try #require(found, "no mail to \(address) with \(fragment)")
    }

    /// A registered account of `role`, its address verified; its address.
    func account(_ stack: Stack, _ role: AccountRole, name: String? = nil) async throws -> (AuthSession, String) {
        let email = "\(role.rawValue)-\(UUID().uuidString.prefix(8).lowercased())@example.com"
        let named = name.map { #","displayName":"\#($0)""# } ?? ""
        let reply = try await stack.api.send(
            "POST", "/auth/register", json: #"{"email":"\#(email)","password":"\#(Self.password)"\#(named)}"#)
        #expect(reply.status == 201, "\(reply.text)")
        try await stack.pool.execute(
            "UPDATE auth.users SET role = \(role.rawValue), email_verified_at = now() WHERE email = \(email)")
        return (try reply.decode(AuthSession.self), email)
    }

    static func expectSecurityHeaders(_ page: Browser.Page, _ what: String) {
        let csp = page.headers["Content-Security-Policy"] ?? ""
        #expect(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"), "\(what): \(csp)")
        #expect(!csp.contains("unsafe-inline"), "\(what)")
        #expect(page.headers["Cache-Control"] == "no-store", "\(what)")
        #expect(page.headers["X-Content-Type-Options"] == "nosniff", "\(what)")
        #expect(page.headers["X-Frame-Options"] == "DENY", "\(what)")
    }

    /// Support signs in, finds an item by search, triages it, finds a user by address and grants
    /// access (the app's status changes); admin-only actions are absent and refused; sign-out
    /// ends the session and its cookie replayed is signed out.
    @Test func supportWorksThroughTheConsole() async throws {
        try await withStack { stack in
            let (_, supportEmail) = try await account(stack, .support)
            let (customer, customerEmail) = try await account(stack, .user, name: "Casey Customer")
            let posted = try await stack.api.send(
                "POST", "/feedback",
                json: #"{"message":"The export button crashes on iPad","category":"bug","platform":"ipados"}"#,
                token: customer.accessToken)
            #expect(posted.status == 201)
            let item = try posted.decode(FeedbackItem.self)

            let browser = Browser(base: stack.base)
            // Signed out: every page leads to the sign-in form, which remembers where to go.
            let first = try await browser.get("/console/users?q=x")
            #expect(first.status == 303 && first.location?.hasPrefix("/console/sign-in?next=") == true, "\(first.location ?? "")")
            let wrong = try await browser.signIn(supportEmail, "not the password")
            #expect(wrong.status == 401 && wrong.text.contains("not correct"))
            let signedIn = try await browser.signIn(supportEmail, Self.password)
            #expect(signedIn.status == 303 && signedIn.location == "/console/inbox", "\(signedIn.status) \(signedIn.text)")
            #expect(browser.cookies["pier_console"] != nil)
            let cookie = try #require(signedIn.headers.values("Set-Cookie").first { $0.hasPrefix("pier_console=") })
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/"))

            let inbox = try await browser.get("/console/inbox?q=export")
            #expect(inbox.status == 200 && inbox.text.contains("The export button crashes on iPad"))
            Self.expectSecurityHeaders(inbox, "inbox")
            let page = try await browser.get("/console/feedback/\(item.id.uuidString.lowercased())")
            #expect(page.status == 200 && page.text.contains("Casey Customer"))
            Self.expectSecurityHeaders(page, "item")
            // Only the moves the workflow allows from `new` are offered.
            #expect(page.text.contains("<option value=\"triaged\">") && !page.text.contains("<option value=\"done\">"))
            let csrf = try #require(page.field("csrf"))
            let triaged = try await browser.post(
                "/console/feedback/\(item.id.uuidString.lowercased())",
                [("csrf", csrf), ("status", "triaged"), ("tags", "ipad, Export"), ("internalNote", "seen"), ("duplicateOf", "")])
            #expect(triaged.status == 303, "\(triaged.text)")
            let now = try await stack.api.send(
                "GET", "/feedback/\(item.id.uuidString.lowercased())", token: customer.accessToken
            ).decode(FeedbackItem.self)
            #expect(now.status == "triaged")
            // A reply: in the app's view of the item; the same form sent twice is one reply.
            let replyForm = try await browser.get("/console/feedback/\(item.id.uuidString.lowercased())")
            let replyID = try #require(replyForm.field("replyId"))
            for _ in 0..<2 {
                let replied = try await browser.post(
                    "/console/feedback/\(item.id.uuidString.lowercased())/reply",
                    [("csrf", csrf), ("replyId", replyID), ("message", "Fixed in 2.1 <b>soon</b>")])
                #expect(replied.status == 303, "\(replied.text)")
            }
            let empty = try await browser.post(
                "/console/feedback/\(item.id.uuidString.lowercased())/reply", [("csrf", csrf), ("message", " ")])
            #expect(empty.status == 422 && empty.text.contains("message"))
            let mine = try await stack.api.send("GET", "/feedback/mine", token: customer.accessToken).decode(FeedbackPage.self)
            #expect(mine.items.first?.replies?.map(\.message) == ["Fixed in 2.1 <b>soon</b>"])
            let shown = try await browser.get("/console/feedback/\(item.id.uuidString.lowercased())")
            #expect(
                shown.text.contains("Fixed in 2.1 &lt;b&gt;soon&lt;/b&gt;") && shown.text.contains("to the sender&#39;s account"))
            // Who triaged and who replied, by name (this account has none: its address).
            #expect(shown.text.contains(">\(supportEmail)</a>, to the sender"), "the reply's author")
            #expect(
                shown.text.components(separatedBy: ">\(supportEmail)</a><div>Internal note: none → seen</div>").count - 1 == 1,
                "the triage's author")

            let found = try await browser.get("/console/users?q=\(ConsolePath.encode(customerEmail.uppercased()))")
            #expect(found.status == 200 && found.text.contains(customerEmail))
            let userPath = "/console/users/\(customer.user.id.uuidString.lowercased())"
            let userPage = try await browser.get(userPath)
            #expect(userPage.status == 200 && userPage.text.contains("Casey Customer") && userPage.text.contains("Grant access"))
            Self.expectSecurityHeaders(userPage, "user")
            // The account's data, as a download.
            let download = try await browser.get(userPath + "/export")
            #expect(download.status == 200, "\(download.status) \(download.text.prefix(300))")
            #expect(download.headers["Content-Disposition"]?.contains("attachment") == true)
            #expect(download.text.contains(customerEmail))
            #expect(try await browser.get("/console/users/not-an-id/export").status == 404)
            #expect(!userPage.text.contains("data-admin-only"))
            let plans = try await stack.api.send("GET", "/subscriptions/plans").decode(ItemList<Plan>.self).items
            let adminToken = try await stack.api.send(
                "POST", "/auth/login", json: #"{"email":"\#(try await account(stack, .admin).1)","password":"\#(Self.password)"}"#
            ).decode(AuthSession.self).accessToken
            var planID = plans.first?.id
            if planID == nil {
                let made = try await stack.api.send(
                    "POST", "/subscriptions/plans",
                    json: #"{"id":"pro","name":"Pro","price":499,"currency":"USD","billingPeriod":"P1M","entitlements":["pro"]}"#,
                    token: adminToken)
                #expect(made.status == 201, "\(made.text)")
                planID = "pro"
            }
            let granted = try await browser.post(
                userPath + "/grant",
                [("csrf", csrf), ("plan", try #require(planID)), ("duration", "P1M"), ("reason", "sorry about the crash")])
            #expect(granted.status == 303 && granted.location?.contains("done=granted") == true, "\(granted.text)")
            let status = try await stack.api.send("GET", "/subscriptions/me", token: customer.accessToken)
                .decode(SubscriptionStatus.self)
            #expect(status.active && status.source == "grant")
            #expect(try await browser.get(granted.location!).text.contains("Access granted."))
            // No In-App Purchase key here: reading again from Apple says so, as Pier's problem.
            let apple = try await browser.post(userPath + "/appstore-refresh", [("csrf", csrf)])
            #expect(apple.status == 503 && apple.text.contains("appstore_api_unconfigured"), "\(apple.status)")
            // Nor Google Play: reading again from Google says it is off here.
            let google = try await browser.post(userPath + "/google-refresh", [("csrf", csrf)])
            #expect(google.status == 404 && google.text.contains("google_play_unconfigured"), "\(google.status)")

            // Admin-only actions, posted by hand, are refused by Pier.
            let role = try await browser.post(
                userPath + "/role", [("csrf", csrf), ("role", "admin"), ("password", Self.password)])
            #expect(role.status == 403, "\(role.status)")
            let delete = try await browser.post(userPath + "/delete", [("csrf", csrf), ("password", Self.password)])
            #expect(delete.status == 403)
            // The audit log in words, found by the account's id or its address alike; no action's
            // code shows.
            for subject in [customer.user.id.uuidString.lowercased(), customer.user.handle] {
                let audit = try await browser.get("/console/audit?subject=\(subject)")
                #expect(audit.status == 200, "\(audit.status)")
                #expect(audit.text.contains("<td>granted a plan</td>") && audit.text.contains("<td>changed a feedback item</td>"))
                // An action's code is only the filter's option value.
                #expect(audit.text.components(separatedBy: "grant.created").count == 2, "\(audit.text)")
                #expect(audit.text.contains("Status: New → "), "\(audit.text)")
            }
            let grants = try await browser.get("/console/audit?action=grant.created&since=2020-01-01")
            #expect(grants.text.contains("<td>granted a plan</td>") && !grants.text.contains("<td>changed a feedback item</td>"))
            // What names no account, or is not a date, is said beside its field, what was typed kept.
            for (query, words) in [
                ("subject=nobody-here@example.com", "No account matches"), ("actor=zz-no-such-name", "No account matches"),
                ("since=soon", "Not a date."),
            ] {
                let refused = try await browser.get("/console/audit?" + query)
                #expect(refused.status == 422 && refused.text.contains(words), "\(query): \(refused.status)")
                #expect(refused.text.contains("value=\"\(query.split(separator: "=")[1])\""))
            }
            // Hostile text typed into the filters comes back as text, in the field and the message.
            let hostile = "\"><script>alert(1)</script>"
            let injected = try await browser.get(
                "/console/audit?subject=" + (hostile.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
                    + "&action=%3Cb%3E&since=%3Cimg%3E")
            #expect(injected.status == 422 && !injected.text.contains("<script>alert") && !injected.text.contains("<img>"))
            #expect(injected.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "\(injected.text)")

            // Signed out: the same cookie, replayed, is signed out.
            let saved = browser.cookies
            let out = try await browser.post("/console/sign-out", [("csrf", csrf)])
            #expect(out.status == 303 && out.location == "/console/sign-in")
            browser.cookies = saved
            let replayed = try await browser.get("/console/inbox")
            #expect(replayed.status == 303 && replayed.location?.hasPrefix("/console/sign-in") == true)
        }
    }

    /// The dashboard draws what the API counts: feedback per day by category and platform, the
    /// backlog, sign-ups; the counting routes are the team's only.
    @Test func theDashboardDrawsTheFigures() async throws {
        try await withStack { stack in
            let (_, supportEmail) = try await account(stack, .support)
            let (customer, customerEmail) = try await account(stack, .user)
            // Before anything is sent, each empty chart says so and what would fill it.
            let early = Browser(base: stack.base)
            _ = try await early.signIn(supportEmail, Self.password)
            let empty = try await early.get("/console/dashboard")
            #expect(empty.text.components(separatedBy: "data-empty").count - 1 == 7, "\(empty.text)")
            #expect(empty.text.contains("No data yet: feedback sent from the app will show here."))
            for (message, category, platform, rating) in [
                ("One", "bug", "ios", 2), ("Two", "idea", "android", 5), ("Three", "bug", "ios", 4),
            ] {
                let posted = try await stack.api.send(
                    "POST", "/feedback",
                    json: #"{"message":"\#(message)","category":"\#(category)","platform":"\#(platform)","rating":\#(rating)}"#,
                    token: customer.accessToken)
                #expect(posted.status == 201)
            }
            // Three apps started without signing up; one of them was kept since, one merged into
            // the customer's account (proven by a sign-in after its merge token).
            var anonymous: [AuthSession] = []
            for installation in ["one", "two", "three"] {
                let made = try await stack.api.send("POST", "/auth/anonymous", json: #"{"installationId":"\#(installation)"}"#)
                #expect(made.status == 201, "\(made.text)")
                anonymous.append(try made.decode(AuthSession.self))
            }
            try await stack.pool.execute("UPDATE auth.users SET permanent_at = now() WHERE id = \(anonymous[0].user.id)")
            let ticket = try await stack.api.send("POST", "/auth/anonymous/merge/start", token: anonymous[2].accessToken)
                .decode(AnonymousMergeTicket.self)
            let second = Int(Date().timeIntervalSince1970)
            #expect(await eventually { Int(Date().timeIntervalSince1970) > second })
            let signedIn = try await stack.api.send(
                "POST", "/auth/login", json: #"{"email":"\#(customerEmail)","password":"\#(Self.password)"}"#
            ).decode(AuthSession.self)
            let merged = try await stack.api.send(
                "POST", "/auth/anonymous/merge", json: #"{"mergeToken":"\#(ticket.mergeToken)"}"#, token: signedIn.accessToken)
            #expect(merged.status == 200, "\(merged.text)")
            #expect(try await stack.api.send("GET", "/auth/users/stats", token: customer.accessToken).status == 403)
            #expect(try await stack.api.send("GET", "/feedback/stats/daily", token: customer.accessToken).status == 403)
            let supportToken = try await stack.api.send(
                "POST", "/auth/login", json: #"{"email":"\#(supportEmail)","password":"\#(Self.password)"}"#
            ).decode(AuthSession.self).accessToken
            for bad in ["days=0", "days=367", "days=week"] {
                let refused = try await stack.api.send("GET", "/auth/users/stats?\(bad)", token: supportToken)
                #expect(refused.status == 422 && refused.problem?.errors?.first?.field == "days", "\(bad): \(refused.text)")
            }
            // App Store facts as Apple signed them: one subscription converted from its free week
            // three days ago, another in its free week now.
            try await stack.pool.execute(
                """
                INSERT INTO subscriptions.plans (id, name, price, currency, billing_period, trial_period, entitlements,
                    appstore_product_ids)
                VALUES ('pro', 'Pro', 499, 'USD', 'P1M', 'P7D', ARRAY['pro'], ARRAY['pier.pro'])
                """)
            try await stack.pool.execute(
                """
                INSERT INTO subscriptions.appstore_transactions (transaction_id, original_transaction_id, product_id,
                    purchase_date, expires_date, offer_type, environment, signed_date, payload)
                VALUES ('1', '1', 'pier.pro', now() - interval '10 days', now() - interval '3 days', 1, 'production', now(), '{}'),
                    ('2', '1', 'pier.pro', now() - interval '3 days', now() + interval '27 days', NULL, 'production', now(), '{}'),
                    ('10', '10', 'pier.pro', now() - interval '1 day', now() + interval '6 days', 1, 'production', now(), '{}')
                """)
            // And one granted by the team: access from another source, counted and said.
            try await stack.pool.execute(
                """
                INSERT INTO subscriptions.grants (id, user_id, plan_id, starts_at, ends_at, reason, granted_by)
                VALUES (gen_random_uuid(), \(customer.user.id), 'pro', now() - interval '1 hour', now() + interval '1 day',
                    'a test', \(customer.user.id))
                """)
            let browser = Browser(base: stack.base)
            _ = try await browser.signIn(supportEmail, Self.password)
            let page = try await browser.get("/console/dashboard")
            #expect(page.status == 200, "\(page.text)")
            Self.expectSecurityHeaders(page, "dashboard")
            #expect(page.text.components(separatedBy: "<svg ").count - 1 == 8)
            #expect(page.text.contains(#"data-figure="subscriptions">3<"#) && page.text.contains(#"data-figure="trials">1<"#))
            #expect(!page.text.contains("data-empty"))
            #expect(page.text.contains("2 from the App Store, 1 granted by the team"), "\(page.text)")
            #expect(
                page.text.contains(#"data-figure="conversions">1<"#) && page.text.contains(#"data-figure="cancellations">0<"#))
            #expect(page.text.contains(": 2 pro (App Store)</title>") && page.text.contains(": 1 conversions</title>"))
            // The grant is drawn beside the App Store's subscriptions.
            #expect(page.text.contains(" (granted)</title>"), "\(page.text)")
            #expect(page.text.contains(#"data-figure="received">3<"#) && page.text.contains(#"data-figure="open">3<"#))
            #expect(page.text.contains(#"data-figure="rating">3.7<"#) && page.text.contains(#"data-figure="signups">4<"#))
            #expect(page.text.contains(#"data-figure="anonymous">3<"#) && page.text.contains(#"data-figure="kept">1<"#))
            #expect(page.text.contains(#"data-figure="merged">1<"#))
            #expect(page.text.contains(": 1 with an address or identity</title>") && page.text.contains(": 3 anonymous</title>"))
            #expect(page.text.contains(": 1 kept</title>") && page.text.contains(": 1 merged</title>"), "\(page.text)")
            // The user page says how each began; the account with no address is named without one.
            let still = try await browser.get("/console/users/\(anonymous[1].user.id.uuidString.lowercased())")
            #expect(still.status == 200 && still.text.contains("no address, password or passkey yet"), "\(still.text)")
            #expect(still.text.contains(anonymous[1].user.handle))
            let kept = try await browser.get("/console/users/\(anonymous[0].user.id.uuidString.lowercased())")
            #expect(kept.text.contains("; kept on <span class=\"when\">"), "\(kept.text)")
            let customerPage = try await browser.get("/console/users/\(customer.user.id.uuidString.lowercased())")
            #expect(customerPage.text.contains("<dd data-began>signed up</dd>"))
            #expect(customerPage.text.contains(#"<input type="hidden" name="mail" value="password-reset">"#))
            #expect(!customerPage.text.contains("&lt;form") && !still.text.contains("&lt;"), "\(customerPage.text)")
            #expect(still.text.contains("No address to mail.") && !still.text.contains("Mail a password reset"))
            #expect(page.text.contains(": 2 Bug</title>") && page.text.contains(": 1 Android</title>"))
            // The inbox counts its items per status.
            let inbox = try await browser.get("/console/inbox")
            #expect(inbox.text.contains(#"data-count="new">3<"#) && inbox.text.contains(#"data-count="done">0<"#))
            let year = try await browser.get("/console/dashboard?days=365")
            #expect(year.status == 200 && year.text.contains("<strong>365 days</strong>"))
            // A year is drawn a week a bar (53), the last week ending today.
            let today = ISO8601DateFormatter().string(from: Date()).prefix(10)
            #expect(year.text.contains("items per week") && year.text.contains(" to \(today): 2 Bug</title>"))
            // A span it does not offer is the default one.
            #expect(try await browser.get("/console/dashboard?days=9999").text.contains("<strong>30 days</strong>"))
        }
    }

    /// A form without its token, with another's token, or from another origin changes nothing:
    /// 403. The sign-in form has its own double-submitted token.
    @Test func formsWithoutTheirTokenAreRefused() async throws {
        try await withStack { stack in
            let (_, email) = try await account(stack, .support)
            let (customer, _) = try await account(stack, .user)
            let browser = Browser(base: stack.base)
            let noForm = try await browser.post("/console/sign-in", [("email", email), ("password", Self.password)])
            #expect(noForm.status == 403 && browser.cookies["pier_console"] == nil)
            _ = try await browser.signIn(email, Self.password)
            let path = "/console/users/\(customer.user.id.uuidString.lowercased())"
            let csrf = try #require(try await browser.get(path).field("csrf"))
            for (fields, origin) in [
                ([("x", "y")], nil), ([("csrf", "forged")], nil), ([("csrf", csrf)], "https://evil.example"),
            ] as [([(String, String)], String?)] {
                let refused = try await browser.post(path + "/disable", fields, origin: origin)
                #expect(refused.status == 403, "\(fields) \(origin ?? "")")
                Self.expectSecurityHeaders(refused, "refusal")
            }
            let user = try await stack.api.send(
                "POST", "/auth/login", json: #"{"email":"\#(customer.user.handle)","password":"\#(Self.password)"}"#)
            #expect(user.status == 200, "the account was disabled by a refused form")
            #expect(try await browser.post(path + "/disable", [("csrf", csrf)]).status == 303)
            let disabled = try await stack.api.send(
                "POST", "/auth/login", json: #"{"email":"\#(customer.user.handle)","password":"\#(Self.password)"}"#)
            #expect(disabled.problem?.code == .accountDisabled)
        }
    }

    /// A console session ends with the account's own: disabled, or its role taken away, the
    /// next page is the sign-in form. An account without a team role gets no console session,
    /// and the Pier session the sign-in opened is ended.
    @Test func theConsoleSessionEndsWithTheAccounts() async throws {
        try await withStack { stack in
            let (_, adminEmail) = try await account(stack, .admin)
            let admin = try await stack.api.send(
                "POST", "/auth/login", json: #"{"email":"\#(adminEmail)","password":"\#(Self.password)"}"#
            ).decode(AuthSession.self)
            let (support, supportEmail) = try await account(stack, .support)
            let browser = Browser(base: stack.base)
            #expect(try await browser.signIn(supportEmail, Self.password).status == 303)
            #expect(try await browser.get("/console/inbox").status == 200)
            let disabled = try await stack.api.send(
                "POST", "/auth/users/\(support.user.id.uuidString.lowercased())/disable", token: admin.accessToken)
            #expect(disabled.status == 200)
            #expect(try await eventually { try await browser.get("/console/inbox").status == 303 })
            let again = try await browser.signIn(supportEmail, Self.password)
            #expect(again.status == 403 && again.text.contains("disabled"), "\(again.status)")

            let (_, userEmail) = try await account(stack, .user)
            let refused = try await browser.signIn(userEmail, Self.password)
            #expect(refused.status == 403 && refused.text.contains("no team role"))
            let sessions = try await stack.pool.query(
                """
                SELECT count(*)::int AS n FROM auth.sessions s JOIN auth.users u ON u.id = s.user_id
                WHERE u.email = \(userEmail) AND s.revoked_at IS NULL
                """)
            #expect(try sessions[0].decode("n", as: Int.self) == 1, "only the registration's session is live")
        }
    }

    /// A team member whose role needs a second factor and who has none is brought from any page
    /// to set one up: the link mailed to them approves it first, then the QR code drawn inline,
    /// the key as text, a wrong code said so, the recovery codes shown once, and the console
    /// answering at once after.
    @Test func staffWithoutASecondFactorSetOneUpInTheConsole() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("pier-console-\(UUID())").path
        try await withStack(settings: ["PIER_AUTH_REQUIRE_MFA_FOR_ROLES": "support,admin", "PIER_DATA_DIR": data]) { stack in
            let (_, email) = try await account(stack, .support)
            let browser = Browser(base: stack.base)
            #expect(try await browser.signIn(email, Self.password).status == 303)
            let inbox = try await browser.get("/console/inbox")
            #expect(inbox.status == 303 && inbox.location == "/console/two-step", "\(inbox.status) \(inbox.text.prefix(200))")
            let start = try await browser.get("/console/two-step")
            #expect(start.status == 200 && start.text.contains("Set up an authenticator app"))
            let waiting = try await browser.post("/console/two-step", [("csrf", start.field("csrf") ?? ""), ("password", "")])
            #expect(waiting.status == 403 && waiting.text.contains("Check your mail"), "\(waiting.text.prefix(300))")
            let link = try await Self.mailedToken(in: data + "/mail", to: email, containing: "/auth/mfa/approve")
            let approved = try await stack.api.send("POST", "/auth/mfa/approve", json: #"{"token":"\#(link)"}"#)
            #expect(approved.status == 204, "\(approved.text)")
            let shown = try await browser.post("/console/two-step", [("csrf", waiting.field("csrf") ?? ""), ("password", "")])
            #expect(shown.status == 200, "\(shown.text.prefix(300))")
            #expect(shown.text.contains("<div class=\"qr\"><svg xmlns=\"http://www.w3.org/2000/svg\""))
            let secret = try #require(shown.field("secret"))
            let totp = TOTP(secret: try #require(Base32.decode(secret)))
            let now = TOTP.step(at: Int(Date().timeIntervalSince1970))
            let csrf = shown.field("csrf") ?? ""
            let wrong = try await browser.post(
                "/console/two-step/confirm",
                [("csrf", csrf), ("secret", secret), ("uri", shown.field("uri") ?? ""), ("code", "000000")])
            #expect(wrong.status == 422 && wrong.text.contains("not the app&#39;s current code"), "\(wrong.text.prefix(300))")
            let on = try await browser.post(
                "/console/two-step/confirm",
                [("csrf", csrf), ("secret", secret), ("uri", shown.field("uri") ?? ""), ("code", totp.code(step: now))])
            #expect(on.status == 200 && on.text.contains("Two-step sign-in is on"), "\(on.text.prefix(300))")
            #expect(on.text.components(separatedBy: "<li><code>").count - 1 == 10)
            let after = try await browser.get("/console/inbox")
            #expect(after.status == 200, "\(after.status) \(after.text.prefix(300))")
        }
    }

    @Test func theQRCodeIsInlinedOnlyWhenItIsShapesAlone() {
        let drawn =
            ##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 29 29" shape-rendering="crispEdges"><rect width="29" height="29" fill="#fff"/><path fill="#000" d="M4 4h7v1h-7z"/></svg>"##
        #expect(HTML.qrCode(drawn).text == drawn)
        for hostile in [
            drawn.replacingOccurrences(of: "<path", with: "<script"),
            drawn.replacingOccurrences(of: "fill=\"#000\"", with: "onload=\"alert(1)\""),
            drawn.replacingOccurrences(of: "<rect", with: "<a href=\"javascript:x\"><rect"),
            drawn.replacingOccurrences(of: "crispEdges", with: "crisp'Edges"), "<b>x</b>", "",
        ] {
            #expect(HTML.qrCode(hostile).text.isEmpty, "\(hostile)")
        }
    }

    /// A team member with two-step sign-in: the password leads to the code form, a wrong code
    /// keeps it, the right one opens the console; the MFA token never reaches a cookie.
    @Test func aTeamMemberWithTwoStepSignInGivesTheCode() async throws {
        try await withStack(settings: ["PIER_AUTH_REQUIRE_MFA_FOR_ROLES": "support,admin"]) { stack in
            // Set up while a user's account (a team member's first needs approval), then support.
            let (session, email) = try await account(stack, .user)
            let enrolment = try await stack.api.send("POST", "/auth/mfa/totp", token: session.accessToken)
                .decode(TOTPEnrolment.self)
            let totp = TOTP(secret: try #require(Base32.decode(enrolment.secret)))
            let now = TOTP.step(at: Int(Date().timeIntervalSince1970))
            let confirmed = try await stack.api.send(
                "POST", "/auth/mfa/totp/confirm", json: #"{"code":"\#(totp.code(step: now))"}"#, token: session.accessToken)
            #expect(confirmed.status == 200, "\(confirmed.text)")
            try await stack.pool.execute("UPDATE auth.users SET role = 'support' WHERE email = \(email)")
            let browser = Browser(base: stack.base)
            let asked = try await browser.signIn(email, Self.password)
            #expect(asked.status == 200 && asked.text.contains("Two-step sign-in"), "\(asked.status)")
            let token = try #require(asked.field("mfaToken"))
            #expect(!browser.cookies.values.contains(token))
            #expect(try await browser.get("/console/inbox").status == 303, "no console session yet")
            let wrong = try await browser.post(
                "/console/sign-in/code",
                [("form", asked.field("form") ?? ""), ("mfaToken", token), ("code", "000000"), ("next", "")])
            #expect(wrong.status == 401 && wrong.text.contains("not correct"))
            let right = try await browser.post(
                "/console/sign-in/code",
                [("form", wrong.field("form") ?? ""), ("mfaToken", token), ("code", totp.code(step: now + 1)), ("next", "")])
            #expect(right.status == 303 && right.location == "/console/inbox", "\(right.status) \(right.text.prefix(300))")
            let inbox = try await browser.get("/console/inbox")
            #expect(inbox.status == 200, "\(inbox.text.prefix(300))")
            // Without its form value, or with a spent token, the code form starts over.
            let replayed = try await browser.post(
                "/console/sign-in/code", [("form", "x"), ("mfaToken", token), ("code", totp.code(step: now + 1))])
            #expect(replayed.status == 403)
        }
    }

    /// A user lost their authenticator app: support sees on the user's page that two-step
    /// sign-in is on (and the passkeys, their names shown as text), and removes it with a code of
    /// their own; a wrong code removes nothing. The owner is mailed, the audit log says who.
    @Test func supportRemovesALostSecondFactorInTheConsole() async throws {
        try await withStack(settings: ["PIER_AUTH_REQUIRE_MFA_FOR_ROLES": "support,admin"]) { stack in
            func turnOn(_ session: AuthSession) async throws -> (TOTP, [String]) {
                let enrolment = try await stack.api.send("POST", "/auth/mfa/totp", token: session.accessToken)
                    .decode(TOTPEnrolment.self)
                let totp = TOTP(secret: try #require(Base32.decode(enrolment.secret)))
                let confirmed = try await stack.api.send(
                    "POST", "/auth/mfa/totp/confirm",
                    json: #"{"code":"\#(totp.code(step: TOTP.step(at: Int(Date().timeIntervalSince1970))))"}"#,
                    token: session.accessToken)
                #expect(confirmed.status == 200, "\(confirmed.text)")
                return (totp, try confirmed.decode(RecoveryCodes.self).codes)
            }
            let (customer, customerEmail) = try await account(stack, .user)
            _ = try await turnOn(customer)
            try await stack.pool.execute(
                """
                INSERT INTO auth.passkeys (id, user_id, credential_id, public_key, algorithm, sign_count, backup_eligible,
                    backed_up, name, suspended_at)
                VALUES (\(UUID()), \(customer.user.id), '\\x0102'::bytea, '\\x03'::bytea, -7, 0, true, true,
                    '<script>alert(1)</script>', now())
                """)
            let (support, supportEmail) = try await account(stack, .user)
            let (totp, recovery) = try await turnOn(support)
            try await stack.pool.execute("UPDATE auth.users SET role = 'support' WHERE email = \(supportEmail)")
            let browser = Browser(base: stack.base)
            let asked = try await browser.signIn(supportEmail, Self.password)
            let now = TOTP.step(at: Int(Date().timeIntervalSince1970))
            let signedIn = try await browser.post(
                "/console/sign-in/code",
                [
                    ("form", asked.field("form") ?? ""), ("mfaToken", asked.field("mfaToken") ?? ""),
                    ("code", totp.code(step: now + 1)), ("next", ""),
                ])
            #expect(signedIn.status == 303, "\(signedIn.text.prefix(300))")

            let path = "/console/users/\(customer.user.id.uuidString.lowercased())"
            let page = try await browser.get(path)
            #expect(page.status == 200 && page.text.contains("Two-step sign-in: <span class=\"badge\">on</span>"))
            #expect(page.text.contains("10 recovery codes left"))
            #expect(page.text.contains("&lt;script&gt;alert(1)&lt;/script&gt; <span class=\"badge\">synced</span>"))
            #expect(page.text.contains("badge bad\">suspended") && !page.text.contains("<script>alert"))
            #expect(
                page.text.contains("name=\"code\"") && !page.text.contains("name=\"password\""), "support confirms with a code")
            let csrf = try #require(page.field("csrf"))
            let wrong = try await browser.post(path + "/remove-mfa", [("csrf", csrf), ("code", "000000")])
            #expect(wrong.status == 401, "\(wrong.status) \(wrong.text.prefix(300))")
            #expect(
                try await stack.pool.query("SELECT 1 FROM auth.totp_factors WHERE user_id = \(customer.user.id)").count == 1,
                "a wrong code removes nothing")
            let removed = try await browser.post(path + "/remove-mfa", [("csrf", csrf), ("code", recovery[0])])
            #expect(removed.status == 303 && removed.location?.contains("done=mfa") == true, "\(removed.status)")
            let after = try await browser.get(removed.location ?? path)
            #expect(after.text.contains("Two-step sign-in removed") && after.text.contains("Two-step sign-in: off"))
            #expect(
                try await stack.api.send(
                    "POST", "/auth/login", json: #"{"email":"\#(customerEmail)","password":"\#(Self.password)"}"#
                ).status == 200)
            let audit = try await browser.get("/console/audit")
            #expect(audit.text.contains("<td>removed an account&#39;s two-step sign-in</td>"))
        }
    }

    /// What the app's users typed reaches the pages as text: markup, attribute breakers,
    /// `javascript:` and bidirectional overrides, in the message, the name, the metadata, the
    /// tags and the display name.
    @Test func hostileTextIsShownAsText() async throws {
        try await withStack { stack in
            let payloads = [
                "<script>alert(1)</script>", "\"><img src=x onerror=alert(2)>", "javascript:alert(3)",
                "'><svg onload=alert(4)>", "abc\u{202E}fdp.exe",
            ]
            let joined = payloads.joined(separator: " ")
            let escapedJSON = joined.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            let (customer, _) = try await account(stack, .user, name: "Eve")
            try await stack.pool.execute(
                "UPDATE auth.users SET display_name = \(payloads[1]) WHERE id = \(customer.user.id)")
            let posted = try await stack.api.send(
                "POST", "/feedback",
                json:
                    #"{"message":"\#(escapedJSON)","metadata":{"build":"\#(payloads[1].replacingOccurrences(of: "\"", with: "\\\""))"}}"#,
                token: customer.accessToken)
            #expect(posted.status == 201, "\(posted.text)")
            let item = try posted.decode(FeedbackItem.self)
            let (_, supportEmail) = try await account(stack, .support)
            let browser = Browser(base: stack.base)
            _ = try await browser.signIn(supportEmail, Self.password)
            let itemPage = try await browser.get("/console/feedback/\(item.id.uuidString.lowercased())")
            let csrf = try #require(itemPage.field("csrf"))
            _ = try await browser.post(
                "/console/feedback/\(item.id.uuidString.lowercased())", [("csrf", csrf), ("tags", "<b>bold</b>")])
            for path in [
                "/console/inbox", "/console/feedback/\(item.id.uuidString.lowercased())",
                "/console/users/\(customer.user.id.uuidString.lowercased())",
                "/console/users?q=\(ConsolePath.encode(customer.user.handle))",
                "/console/audit",
            ] {
                let page = try await browser.get(path)
                #expect(page.status == 200, "\(path)")
                for raw in ["<script>alert", "<img src=x", "<svg onload", "<b>bold", "href=\"javascript:", "\u{202E}"] {
                    #expect(!page.text.contains(raw), "\(path) holds \(raw)")
                }
                Self.expectSecurityHeaders(page, path)
            }
            let shown = try await browser.get("/console/feedback/\(item.id.uuidString.lowercased())")
            #expect(shown.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
            #expect(shown.text.contains("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"))
            #expect(shown.text.contains("abc[U+202E]fdp.exe"))
        }
    }

    /// The access token is renewed once it is about to expire, once for the session however
    /// many requests ask at the same moment (no refresh-token reuse, which would end the Pier
    /// session); idle and absolute timeouts sign the browser out.
    @Test func tokensAreRenewedOnceAndTimeoutsSignOut() async throws {
        try await withStack { stack in
            let (support, email) = try await account(stack, .support)
            let browser = Browser(base: stack.base)
            _ = try await browser.signIn(email, Self.password)
            try await stack.pool.execute(
                "UPDATE console.sessions SET access_expires_at = now() WHERE user_id = \(support.user.id)")
            let pages = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<6 { group.addTask { try await browser.get("/console/inbox").status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(pages == Array(repeating: 200, count: 6), "\(pages)")
            let rows = try await stack.pool.query(
                "SELECT seal_counter, access_expires_at > now() + interval '5 minutes' AS fresh FROM console.sessions WHERE user_id = \(support.user.id)"
            )
            #expect(rows.count == 1)
            #expect(try rows[0].decode("seal_counter", as: Int64.self) == 1, "renewed exactly once")
            #expect(try rows[0].decode("fresh", as: Bool.self))
            // The Pier session behind it is still the one signed in: nothing was revoked as reuse.
            let revoked = try await stack.pool.query(
                "SELECT count(*)::int AS n FROM auth.sessions WHERE user_id = \(support.user.id) AND revoked_at IS NOT NULL")
            #expect(try revoked[0].decode("n", as: Int.self) == 0)
            #expect(try await browser.get("/console/inbox").status == 200)

            // Idle for 31 minutes: signed out.
            try await stack.pool.execute(
                "UPDATE console.sessions SET last_seen_at = now() - interval '31 minutes' WHERE user_id = \(support.user.id)")
            #expect(try await browser.get("/console/inbox").status == 303)
            // Signed in 13 hours ago, used a second ago: signed out too.
            _ = try await browser.signIn(email, Self.password)
            #expect(try await browser.get("/console/inbox").status == 200)
            try await stack.pool.execute(
                "UPDATE console.sessions SET created_at = now() - interval '13 hours' WHERE user_id = \(support.user.id)")
            #expect(try await browser.get("/console/inbox").status == 303)
            let left = try await stack.pool.query(
                "SELECT count(*)::int AS n FROM console.sessions WHERE user_id = \(support.user.id)")
            #expect(try left[0].decode("n", as: Int.self) == 0, "timed-out sessions are gone")
        }
    }

    /// An admin changes a role and deletes an account from the console, each confirmed by the
    /// admin's password (a wrong one changes nothing); the account whose role changed is signed
    /// out of its own console session.
    @Test func anAdminsDestructiveActionsNeedThePassword() async throws {
        try await withStack { stack in
            let (_, adminEmail) = try await account(stack, .admin)
            let (support, supportEmail) = try await account(stack, .support)
            let (doomed, _) = try await account(stack, .user)
            let admin = Browser(base: stack.base)
            _ = try await admin.signIn(adminEmail, Self.password)
            let helper = Browser(base: stack.base)
            _ = try await helper.signIn(supportEmail, Self.password)
            #expect(try await helper.get("/console/inbox").status == 200)

            let path = "/console/users/\(support.user.id.uuidString.lowercased())"
            let page = try await admin.get(path)
            #expect(page.text.contains("data-admin-only"))
            // Support on a team member's page (here, their own colleague's view of an admin's
            // account): no button for what the server refuses them, and a forced form is refused.
            let adminID = try await stack.pool.query("SELECT id FROM auth.users WHERE email = \(adminEmail)")[0]
                .decode("id", as: UUID.self).uuidString.lowercased()
            let teamPage = try await helper.get("/console/users/\(adminID)")
            #expect(teamPage.status == 200 && teamPage.text.contains("data-team-member"), "\(teamPage.status)")
            for form in ["/disable", "/end-sessions", "/remove-mfa"] {
                #expect(!teamPage.text.contains("/console/users/\(adminID)\(form)\""), "support sees \(form)")
            }
            let helperCSRF = try #require(teamPage.field("csrf"))
            let forced = try await helper.post("/console/users/\(adminID)/disable", [("csrf", helperCSRF)])
            #expect(forced.status == 403, "\(forced.status): \(forced.text.prefix(300))")
            #expect(try await admin.get("/console/inbox").status == 200, "the admin is still signed in")
            let csrf = try #require(page.field("csrf"))
            // A role the form never offers is refused, not read as "user": support stays support.
            for odd in ["owner", "", "USER"] {
                let unknown = try await admin.post(path + "/role", [("csrf", csrf), ("role", odd), ("password", Self.password)])
                #expect(unknown.status == 422 && unknown.text.contains("nothing was changed"), "\(odd): \(unknown.status)")
            }
            #expect(try await helper.get("/console/inbox").status == 200, "an unknown role changes nothing")
            let wrong = try await admin.post(path + "/role", [("csrf", csrf), ("role", "user"), ("password", "not it")])
            #expect(wrong.status == 401 && wrong.text.contains("password"), "\(wrong.status)")
            #expect(try await helper.get("/console/inbox").status == 200, "a refused change ends nothing")
            let changed = try await admin.post(path + "/role", [("csrf", csrf), ("role", "user"), ("password", Self.password)])
            #expect(changed.status == 303 && changed.location?.contains("done=role") == true, "\(changed.text)")
            #expect(try await eventually { try await helper.get("/console/inbox").status == 303 })

            let doomedPath = "/console/users/\(doomed.user.id.uuidString.lowercased())"
            #expect(try await admin.post(doomedPath + "/delete", [("csrf", csrf), ("password", "not it")]).status == 401)
            let deleted = try await admin.post(doomedPath + "/delete", [("csrf", csrf), ("password", Self.password)])
            #expect(deleted.status == 303 && deleted.location == "/console/users")
            #expect(try await admin.get(doomedPath).status == 404)
        }
    }

    /// A team member without mail at hand asks an admin: the admin sees on the member's page the
    /// session that asks to set up two-step sign-in (its device and address) and approves it;
    /// support sees the ask but no button. The member then sets it up.
    @Test func anAdminApprovesATeamMembersFirstSecondFactor() async throws {
        try await withStack { stack in
            let (_, adminEmail) = try await account(stack, .admin)
            let (member, memberEmail) = try await account(stack, .support)
            let (_, colleagueEmail) = try await account(stack, .support)
            let admin = Browser(base: stack.base)
            _ = try await admin.signIn(adminEmail, Self.password)
            let asking = Browser(base: stack.base)
            _ = try await asking.signIn(memberEmail, Self.password)
            let start = try await asking.get("/console/two-step")
            let waiting = try await asking.post("/console/two-step", [("csrf", start.field("csrf") ?? ""), ("password", "")])
            #expect(waiting.status == 403 && waiting.text.contains("data-approval"), "\(waiting.text.prefix(300))")

            let path = "/console/users/\(member.user.id.uuidString.lowercased())"
            let colleague = Browser(base: stack.base)
            _ = try await colleague.signIn(colleagueEmail, Self.password)
            let seen = try await colleague.get(path)
            #expect(seen.text.contains("data-approval-asked") && !seen.text.contains(path + "/approve-mfa"), "\(seen.status)")
            let page = try await admin.get(path)
            #expect(page.text.contains("data-approval-asked") && page.text.contains(path + "/approve-mfa"))
            // The session named in the approval's own form (the sessions table has forms too).
            let form = try #require(page.text.range(of: path + "/approve-mfa"))
            let session = try #require(
                page.text[form.upperBound...].split(separator: "name=\"session\" value=\"", maxSplits: 1).dropFirst().first?
                    .prefix { $0 != "\"" })
            let csrf = try #require(page.field("csrf"))
            let forced = try await colleague.post(
                path + "/approve-mfa", [("csrf", seen.field("csrf") ?? ""), ("session", String(session))])
            #expect(forced.status == 403, "\(forced.status)")
            let approved = try await admin.post(path + "/approve-mfa", [("csrf", csrf), ("session", String(session))])
            #expect(
                approved.status == 303 && approved.location?.contains("done=approved") == true, "\(approved.text.prefix(300))")
            #expect(try await admin.get(path).text.contains("data-approval-asked") == false)
            let shown = try await asking.post("/console/two-step", [("csrf", waiting.field("csrf") ?? ""), ("password", "")])
            #expect(shown.status == 200 && shown.field("secret") != nil, "\(shown.text.prefix(300))")
        }
    }

    /// Bulk triage moves every selected item (each through the workflow) and adds tags; a move
    /// the workflow refuses for one item is reported, the others done. The inbox pages by cursor.
    @Test func bulkTriageAndPaging() async throws {
        try await withStack { stack in
            let (_, email) = try await account(stack, .support)
            let (customer, _) = try await account(stack, .user)
            // More than a sender's quota allows in a minute: written as the service stores them.
            let ids = (0..<55).map { _ in UUID() }
            for (index, id) in ids.enumerated() {
                try await stack.pool.execute(
                    """
                    INSERT INTO feedback.items (id, user_id, message, category, created_at)
                    VALUES (\(id), \(customer.user.id), \("item number \(index)"), 'other', now() - make_interval(secs => \(index)))
                    """)
            }
            try await stack.pool.execute("UPDATE feedback.items SET status = 'done' WHERE id = \(ids[0])")
            let browser = Browser(base: stack.base)
            _ = try await browser.signIn(email, Self.password)
            let first = try await browser.get("/console/inbox")
            #expect(first.text.components(separatedBy: "<tr data-href=").count - 1 == 50)
            let next = try #require(
                first.text.range(of: "rel=\"next\" href=\"").map { range -> String in
                    let rest = first.text[range.upperBound...]
                    return String(rest[..<rest.firstIndex(of: "\"")!]).replacingOccurrences(of: "&amp;", with: "&")
                })
            let second = try await browser.get(next)
            #expect(second.text.components(separatedBy: "<tr data-href=").count - 1 == 5)
            #expect(second.text.contains("item number 54<") && !first.text.contains("item number 54<"))

            let csrf = try #require(first.field("csrf"))
            let chosen = [ids[0], ids[1], ids[2]]
            let bulk = try await browser.post(
                "/console/inbox",
                [("csrf", csrf), ("status", "triaged"), ("tags", "Batch")] + chosen.map { ("id", $0.uuidString) })
            #expect(bulk.status == 409 && bulk.text.contains(ids[0].uuidString.lowercased()), "\(bulk.status)")
            for id in chosen.dropFirst() {
                let item = try await stack.api.send("GET", "/feedback/\(id.uuidString.lowercased())", token: customer.accessToken)
                    .decode(FeedbackItem.self)
                #expect(item.status == "triaged")
            }
            let tagged = try await stack.pool.query("SELECT count(*)::int AS n FROM feedback.items WHERE 'batch' = ANY(tags)")
            #expect(try tagged[0].decode("n", as: Int.self) == 2)
            let nothing = try await browser.post("/console/inbox", [("csrf", csrf), ("status", "triaged")])
            #expect(nothing.status == 422)
        }
    }

    /// Plans: the team sees every one; admins create, change and take them off sale; a new
    /// price goes with the password (Pier's step-up), and only what changed is sent.
    @Test func adminsManagePlans() async throws {
        try await withStack { stack in
            let (_, adminEmail) = try await account(stack, .admin)
            let (_, supportEmail) = try await account(stack, .support)
            let admin = Browser(base: stack.base)
            _ = try await admin.signIn(adminEmail, Self.password)
            let list = try await admin.get("/console/plans")
            let csrf = try #require(list.field("csrf"))
            #expect(list.text.contains("data-admin-only"))
            // A price the console cannot read: the form again, as typed, the message beside the
            // price; nothing sent to Pier.
            let bad = try await admin.post(
                "/console/plans",
                [("csrf", csrf), ("id", "Bad Id"), ("name", "Pro <b>"), ("price", "cheap"), ("currency", "usd")])
            #expect(bad.status == 422 && bad.text.contains(#"data-error-for="price""#), "\(bad.text)")
            #expect(bad.text.contains(#"value="Bad Id""#) && bad.text.contains(#"value="Pro &lt;b&gt;""#))
            #expect(bad.text.contains(#"value="cheap" aria-invalid="true""#))
            // Pier's refusal of a field: beside that field, in the team's words, input kept.
            let refusedID = try await admin.post(
                "/console/plans",
                [
                    ("csrf", csrf), ("id", "Bad Id"), ("name", "Pro"), ("price", "4.99"), ("currency", "usd"),
                    ("billingPeriod", "P1M"), ("trialPeriod", ""), ("entitlements", "pro"),
                ])
            #expect(refusedID.status == 422 && refusedID.text.contains(#"data-error-for="id""#), "\(refusedID.text)")
            #expect(refusedID.text.contains(#"name="price" value="4.99""#))
            for page in [bad, refusedID] {
                #expect(!page.text.contains("validation_failed") && !page.text.contains("Request <code>"))
            }
            // A comma is no decimal point here: refused beside the field, as typed, nothing made.
            let comma = try await admin.post(
                "/console/plans",
                [
                    ("csrf", csrf), ("id", "pro-monthly"), ("name", "Pro"), ("price", "4,99"), ("currency", "USD"),
                    ("billingPeriod", "P1M"), ("entitlements", "pro"),
                ])
            #expect(comma.status == 422 && comma.text.contains(#"data-error-for="price""#), "\(comma.text)")
            #expect(comma.text.contains(#"name="price" value="4,99""#) && comma.text.contains("a point before the decimals"))
            let made = try await admin.post(
                "/console/plans",
                [
                    ("csrf", csrf), ("id", "pro-monthly"), ("name", "Pro"), ("price", "4.99"), ("currency", "USD"),
                    ("billingPeriod", "P1M"), ("trialPeriod", "P1W"), ("entitlements", "pro, sync"),
                    ("appStoreProductIds", "pier.pro.monthly"),
                ])
            #expect(made.status == 303 && made.location == "/console/plans/pro-monthly?done=saved", "\(made.text)")
            let taken = try await admin.post(
                "/console/plans",
                [
                    ("csrf", csrf), ("id", "pro-monthly"), ("name", "Again"), ("price", "1"), ("currency", "USD"),
                    ("billingPeriod", "P1M"), ("entitlements", "pro"),
                ])
            #expect(taken.status == 422 && taken.text.contains(#"data-error-for="id""#), "\(taken.text)")
            let page = try await admin.get("/console/plans/pro-monthly?done=saved")
            #expect(page.text.contains("4.99 USD") && page.text.contains("pro, sync") && page.text.contains(">Saved.<"))
            #expect(page.text.contains(#"name="price" value="4.99""#), "the form shows the price as typed")
            // Periods in words: billed every month, a week's free trial.
            #expect(page.text.contains("4.99 USD every month") && page.text.contains("<dd>1 week</dd>"), "\(page.text)")
            // Yen have no minor unit: 500 is ¥500, never 5.00.
            let yen = try await admin.post(
                "/console/plans",
                [
                    ("csrf", csrf), ("id", "pro-japan"), ("name", "Pro"), ("price", "500"), ("currency", "JPY"),
                    ("billingPeriod", "P1M"), ("entitlements", "pro"),
                ])
            #expect(yen.status == 303)
            let plans = try await admin.get("/console/plans")
            #expect(plans.text.contains("500 JPY") && !plans.text.contains("5.00 JPY"))
            #expect(plans.text.contains("<td>every month</td>") && !plans.text.contains("<td>P1M</td>"))
            #expect(try await admin.post("/console/plans/pro-japan/active", [("csrf", csrf), ("active", "false")]).status == 303)

            func save(_ changes: [(String, String)]) async throws -> Browser.Page {
                var fields: [String: String] = [
                    "name": "Pro", "description": "", "price": "4.99", "currency": "USD", "billingPeriod": "P1M",
                    "trialPeriod": "P1W", "entitlements": "pro, sync", "appStoreProductIds": "pier.pro.monthly",
                ]
                for (name, value) in changes { fields[name] = value }
                return try await admin.post("/console/plans/pro-monthly", [("csrf", csrf)] + fields.sorted { $0.key < $1.key })
            }
            #expect(try await save([("name", "Pro+")]).status == 303)
            let wrong = try await save([("name", "Pro+"), ("price", "5.99"), ("password", "not it")])
            // A wrong password: the form again as typed, the message beside the password.
            #expect(wrong.status == 422 && wrong.text.contains(#"data-error-for="password""#), "\(wrong.status)")
            #expect(wrong.text.contains(#"name="price" value="5.99""#) && wrong.text.contains(#"name="name" value="Pro+""#))
            #expect(try await save([("name", "Pro+"), ("price", "5.99"), ("password", Self.password)]).status == 303)
            let plan = try await stack.api.send("GET", "/subscriptions/plans").decode(ItemList<Plan>.self).items.first
            #expect(plan?.name == "Pro+" && plan?.price == 599, "\(String(describing: plan))")
            #expect(
                try await admin.post("/console/plans/pro-monthly/active", [("csrf", csrf), ("active", "false")]).status == 303)
            #expect(try await stack.api.send("GET", "/subscriptions/plans").decode(ItemList<Plan>.self).items.isEmpty)

            let support = Browser(base: stack.base)
            _ = try await support.signIn(supportEmail, Self.password)
            let seen = try await support.get("/console/plans")
            #expect(seen.text.contains("pro-monthly") && seen.text.contains("off sale") && !seen.text.contains("data-admin-only"))
            // Its subscribers (none yet), and what became of the App Store's notifications: one
            // that did not verify is listed as refused.
            #expect(seen.text.contains(#"data-subscribers="pro-monthly">0<"#) && seen.text.contains("None received yet."))
            let forged = try await stack.api.send(
                "POST", "/subscriptions/appstore/notifications", json: #"{"signedPayload":"e30.e30.c2ln"}"#)
            #expect(forged.status == 422)
            let after = try await support.get("/console/plans")
            #expect(after.text.contains(#"<span class="badge bad">refused</span>"#), "\(after.text)")
            let supportCSRF = try #require(seen.field("csrf"))
            let refused = try await support.post(
                "/console/plans/pro-monthly/active", [("csrf", supportCSRF), ("active", "true")])
            #expect(refused.status == 403)
            let audit = try await admin.get("/console/audit?service=subscriptions&target=pro-monthly")
            #expect(
                audit.text.components(separatedBy: "<td>changed a plan</td>").count - 1 == 3
                    && audit.text.contains("<td>created a plan</td>"))
        }
    }

    /// The console alone (as `pier-console` runs it beside a gateway): it calls Pier's API over
    /// HTTP at `PIER_CONSOLE_API_URL`, not its own routes; with the API away, its pages answer
    /// 503 pages with `Retry-After`, and come back with it.
    @Test func theConsoleAloneCallsTheAPIOverHTTP() async throws {
        try await withStack { stack in
            let (_, email) = try await account(stack, .support)
            let (customer, _) = try await account(stack, .user)
            let posted = try await stack.api.send(
                "POST", "/feedback", json: #"{"message":"Sent to the API the console calls"}"#, token: customer.accessToken)
            #expect(posted.status == 201)
            let url = try await TestDatabase.create("pier_test_console_alone")
            let alone = try await EmbeddedStack.start(
                databaseURL: url,
                settings: [
                    "PIER_CONSOLE_API_URL": stack.base + "/", "PIER_JWKS_URL": stack.base + "/auth/.well-known/jwks.json",
                ],
                plugins: ["console"])
            do {
                let browser = Browser(base: "http://127.0.0.1:\(alone.server.port)")
                let signedIn = try await browser.signIn(email, Self.password)
                #expect(signedIn.status == 303 && signedIn.location == "/console/inbox", "\(signedIn.status) \(signedIn.text)")
                let inbox = try await browser.get("/console/inbox")
                #expect(inbox.status == 200 && inbox.text.contains("Sent to the API the console calls"))
                // The API away (its listener stopped): a page that says so, 503, not a crash.
                await stack.running.shutdown()
                let away = try await browser.get("/console/inbox")
                #expect(away.status == 503 && away.headers["Retry-After"] != nil, "\(away.status)")
                #expect(away.text.contains("cannot be reached"))
                Self.expectSecurityHeaders(away, "the API away")
            } catch {
                await alone.shutdown()
                throw error
            }
            await alone.shutdown()
        }
    }

    /// Forms must come from the console's origin: the request's host, or the configured public
    /// origin when a proxy in front rewrites `Host`.
    @Test func theOriginCheckFollowsTheConfiguredOrigin() async throws {
        let pool = PostgresPool(configuration: PostgresConfiguration(url: "postgres://nobody@127.0.0.1:1/none", poolSize: 1))
        defer { pool.close() }
        let client = HTTPClient()
        defer { client.close() }
        func console(_ origin: String?) throws -> Console {
            Console(
                sessions: ConsoleSessions(database: pool, idleSeconds: 60, absoluteSeconds: 60),
                helpDesk: HelpDesk(database: pool),
                api: PierAPI(baseURL: "http://127.0.0.1:1", http: client, local: nil),
                authenticator: Authenticator(
                    verifier: AccessTokenVerifier(keys: StaticKeyProvider(keys: [:]), issuer: "pier", audience: "pier")),
                secureCookies: origin != nil, origin: origin, additions: try ConsoleAdditions(),
                logger: Logger(service: "t", level: .error, sink: { _ in }))
        }
        func request(_ headers: HTTPHeaders) -> Request { Request(method: "POST", path: "/console/x", headers: headers) }
        let plain = try console(nil)
        #expect(plain.sameOrigin(request(["Host": "127.0.0.1:8080", "Origin": "http://127.0.0.1:8080"])))
        #expect(plain.sameOrigin(request(["Host": "127.0.0.1:8080"])))
        #expect(!plain.sameOrigin(request(["Host": "127.0.0.1:8080", "Origin": "http://evil.example"])))
        #expect(!plain.sameOrigin(request(["Origin": "http://127.0.0.1:8080"])))
        // Another scheme is another origin: an https page posting to a plain-HTTP console.
        #expect(!plain.sameOrigin(request(["Host": "127.0.0.1:8080", "Origin": "https://127.0.0.1:8080"])))
        let proxied = try console("https://admin.example.com")
        #expect(proxied.sameOrigin(request(["Host": "10.0.0.5:8080", "Origin": "https://admin.example.com"])))
        #expect(!proxied.sameOrigin(request(["Host": "10.0.0.5:8080", "Origin": "http://10.0.0.5:8080"])))
        #expect(proxied.cookieName == "__Host-pier_console")
        // Every cookie of a __Host- name keeps the prefix's rules, or browsers drop it: the
        // sign-in form's, and the session's when it is set and ended.
        let signInPage = try await SignInScreens(console: proxied).form(request(["Host": "admin.example.com"]))
        let session = ConsoleSession(
            secret: Array(repeating: 1, count: 32), userID: UUID(), email: "a@example.com", role: .admin,
            accessToken: "", refreshToken: "", accessExpiresAt: Date(), csrf: "", createdAt: Date(), lastSeenAt: Date())
        let cookies =
            signInPage.headers.values("Set-Cookie") + [proxied.sessionCookie(session)]
            + proxied.redirect(ConsolePath("sign-in"), clearing: true).headers.values("Set-Cookie")
        #expect(cookies.count == 3)
        for cookie in cookies {
            let attributes = cookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(attributes[0].hasPrefix("__Host-"), "\(cookie)")
            #expect(attributes.contains("Path=/") && attributes.contains("Secure"), "\(cookie)")
            #expect(!attributes.contains { $0.lowercased().hasPrefix("domain=") }, "\(cookie)")
        }
        // Behind the gateway (a trusted proxy), the host the browser asked for is the one the
        // gateway forwards; from any other peer that header is the client's word and ignored.
        func received(from peer: String, _ headers: HTTPHeaders) throws -> Request {
            try Request.received(
                method: "POST", target: "/console/x", headers: headers, body: [], peerAddress: peer,
                trustedProxies: TrustedProxies(["10.201.17.10"]))
        }
        let forwarded: HTTPHeaders = [
            "Host": "console:8080", "X-Forwarded-Host": "localhost:8080", "Origin": "http://localhost:8080",
        ]
        #expect(plain.sameOrigin(try received(from: "10.201.17.10", forwarded)))
        #expect(!plain.sameOrigin(try received(from: "10.201.17.99", forwarded)))
        #expect(
            !plain.sameOrigin(
                try received(
                    from: "10.201.17.99",
                    ["Host": "console:8080", "X-Forwarded-Host": "evil.example", "Origin": "http://evil.example"])))
        #expect(try received(from: "10.201.17.99", forwarded).host == "console:8080")
        // The database away: the answer is still a page with the console's headers, 503.
        let cookie = "pier_console=" + Base64.urlEncoded(Array(repeating: UInt8(1), count: 32))
        let context = ServiceRequestContext(
            source: RequestSource(requestID: "r1", logger: Logger(service: "t", level: .error, sink: { _ in })))
        let away = try await plain.staff { _, _, _ in Response(status: 200) }(
            Request(method: "GET", path: "/console/inbox", headers: ["Cookie": cookie], requestID: "r1"), context)
        #expect(away.status == 503, "\(away.status)")
        #expect(away.headers["Content-Security-Policy"]?.contains("frame-ancestors 'none'") == true)
        #expect(away.headers["Content-Type"]?.hasPrefix("text/html") == true && away.headers["Retry-After"] != nil)
        for bad in ["admin.example.com", "https://admin.example.com/console", "ftp://x"] {
            #expect(throws: Environment.Failure.self) {
                _ = try ConsoleConfiguration(environment: Environment(["PIER_CONSOLE_ORIGIN": bad]))
            }
        }
        let good = try ConsoleConfiguration(environment: Environment(["PIER_CONSOLE_ORIGIN": "https://a.example/"]))
        #expect(good.origin == "https://a.example" && good.apiURL == nil)
        let alone = try ConsoleConfiguration(environment: Environment(["PIER_CONSOLE_API_URL": "http://gateway:8080/"]))
        #expect(alone.apiURL == "http://gateway:8080")
        #expect(throws: Environment.Failure.self) {
            _ = try ConsoleConfiguration(environment: Environment(["PIER_CONSOLE_API_URL": "gateway:8080"]))
        }
    }

    /// Up to 90 days a bar a day; a year a week a bar, the last week ending today; a series
    /// shorter than the days (another service's clock past midnight) is read within its length.
    @Test func adminsSeeAndReplayWebhooks() async throws {
        let received = Mutex<[String]>([])
        let router = Router<BasicRequestContext>()
        router.post("/hooks") { request, _ in
            received.withLock { $0.append(request.headers["webhook-id"] ?? "") }
            return Response(status: 204)
        }
        let receiver = try HTTPServer.started(router, name: "receiver")
        let secret = "whsec_" + Base64.encoded(SecureRandom.bytes(32))
        let settings = [
            "PIER_WEBHOOKS":
                #"[{"name":"crm","url":"http://127.0.0.1:\#(receiver.port)/hooks","secret":"\#(secret)","events":["user.created"]}]"#,
            "PIER_WEBHOOK_POLL_MS": "50",
        ]
        try await withStack(settings: settings) { stack in
            let (_, adminEmail) = try await account(stack, .admin)
            let (_, supportEmail) = try await account(stack, .support)
            #expect(await eventually { received.withLock { $0.count } == 2 })

            let browser = Browser(base: stack.base)
            _ = try await browser.signIn(adminEmail, Self.password)
            let list = try await browser.get("/console/webhooks")
            #expect(list.status == 200 && list.text.contains("<code>http://127.0.0.1:\(receiver.port)/hooks</code>"))
            #expect(list.text.contains("href=\"/console/webhooks\" aria-current=\"page\">Webhooks</a>"))
            #expect(!list.text.contains(secret))
            Self.expectSecurityHeaders(list, "webhooks")
            let token = try await adminToken(stack, adminEmail)
            @Sendable func deliveries() async throws -> WebhookDeliveryPage {
                try await stack.api.send("GET", "/auth/webhooks/deliveries?endpoint=crm", token: token)
                    .decode(WebhookDeliveryPage.self)
            }
            // The receiver answers before Pier records the answer.
            #expect(try await eventually { try await deliveries().items.allSatisfy { $0.state == .delivered } })
            let page = try await deliveries()
            #expect(page.items.count == 2)
            let first = try #require(page.items.last)
            #expect(list.text.contains("href=\"/console/webhooks/\(first.id)\""))
            let detail = try await browser.get("/console/webhooks/\(first.id)")
            #expect(detail.status == 200 && detail.text.contains(first.messageId) && detail.text.contains("user.created"))
            let csrf = try #require(detail.field("csrf"))
            let replayed = try await browser.post("/console/webhooks/\(first.id)/replay", [("csrf", csrf)])
            #expect(replayed.status == 303 && replayed.location?.hasPrefix("/console/webhooks/") == true, "\(replayed.text)")
            #expect(await eventually { received.withLock { $0.filter { $0 == first.messageId }.count } == 2 })
            // Without the token, the form is refused.
            let forged = try await browser.post("/console/webhooks/\(first.id)/replay", [("csrf", "forged")])
            #expect(forged.status == 403)

            // Support: neither the link nor the page.
            let support = Browser(base: stack.base)
            _ = try await support.signIn(supportEmail, Self.password)
            let refused = try await support.get("/console/webhooks")
            #expect(refused.status == 403 && refused.text.contains("admins only"))
            #expect(!refused.text.contains(">Webhooks</a>"))
            let tried = try await support.post(
                "/console/webhooks/\(first.id)/replay", [("csrf", try #require(refused.field("csrf")))])
            #expect(tried.status == 403)
        }
        await receiver.shutdown()
    }

    /// An access token of `email`'s account, signed in with the test password.
    func adminToken(_ stack: Stack, _ email: String) async throws -> String {
        try await stack.api.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"\#(Self.password)"}"#)
            .decode(AuthSession.self).accessToken
    }

    @Test func aYearIsDrawnAWeekABar() {
        let days = (0..<365).map { "d\($0)" }
        let year = DashboardScreens.Grouping(days: days)
        #expect(year.size == 7 && year.ranges.count == 53 && year.ranges.first == 0..<1 && year.ranges.last == 358..<365)
        #expect(year.labels.last == "d358 to d364" && year.labels.first == "d0 to d0")
        let ones = Array(repeating: 1, count: 365)
        #expect(year.sums(ones).reduce(0, +) == 365 && year.sums(ones).last == 7)
        #expect(year.lasts(Array(0..<365)).last == 364 && year.lasts(Array(0..<365)).first == 0)
        #expect(year.sums(Array(ones.prefix(360))).last == 2 && year.lasts([]).allSatisfy { $0 == 0 })
        let quarter = DashboardScreens.Grouping(days: Array(days.prefix(90)))
        #expect(quarter.size == 1 && quarter.ranges.count == 90 && quarter.labels[3] == "d3")
    }

    @Test func htmlEscapesValuesAndKeepsLiterals() {
        let name = "<a href=\"x\">'&'</a>"
        let html: HTML = "<p title=\"\(name)\">\(name)</p>"
        #expect(
            html.text
                == "<p title=\"&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;\">&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;</p>"
        )
        #expect(HTML.text("a\u{2067}b\u{0}").text == "a[U+2067]b\u{FFFD}")
        #expect(ConsolePath("users", "a/b?c", query: [("q", "x y&z")]).value == "/console/users/a%2Fb%3Fc?q=x%20y%26z")
        #expect(SignInScreens.next("//evil.example/") == "/console/inbox")
        #expect(SignInScreens.next("https://evil.example/console/") == "/console/inbox")
        #expect(SignInScreens.next("/console/users?q=a") == "/console/users?q=a")
        #expect(SignInScreens.next("/console/\\evil") == "/console/inbox")
        let secret = Array(repeating: UInt8(7), count: 32)
        let sealed = Seal.seal("token-value", secret: secret, label: "access", counter: 3)
        #expect(Array("token-value".utf8) != sealed)
        #expect(Seal.open(sealed, secret: secret, label: "access", counter: 3) == "token-value")
        #expect(Seal.open(sealed, secret: secret, label: "access", counter: 4) != "token-value")
    }
}
