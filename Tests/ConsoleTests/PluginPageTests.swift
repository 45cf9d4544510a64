import Foundation
import Gateway
import PierHTML
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import ConsoleService

/// A plugin with console pages and nothing else: what the console hosts for it.
struct PagesPlugin: Service {
    static let name = "pages"
    static let prefix = "/pages"
    static let schema = "pages"
    static let defaultPort = 0
    static let migrations: [Migration] = []
    /// A log it declares but does not serve (as when the plugin is not running anywhere).
    static var auditLog: AuditLogDeclaration? { AuditLogDeclaration(title: "Pages", actions: [("page.done", "did a page")]) }

    static var consolePages: [ConsolePage] {
        [
            // Echoes what it was given: the path's segments, the form, who asked, and the
            // caller's own account read through the API as them.
            ConsolePage(path: "echo", title: "Echo <b>") { request in
                let me = try await request.fetch(AuthAPI.user, PathID(request.staff.userID))
                let form = request.form.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
                return .page(
                    title: "Echo",
                    content: """
                        <h1>Echo</h1><p data-segments>\(request.segments.joined(separator: "|"))</p>
                        <p data-form>\(form)</p><p data-me>\(me.email)</p>
                        <form method="post" action="/console/echo">\(request.csrfField)<input name="x"></form>
                        """)
            },
            ConsolePage(path: "secret", title: "Admins only", access: .admin) { _ in
                .page(title: "Secret", content: "<h1>Secret</h1>")
            },
            ConsolePage(path: "away", title: "Away") { request in
                request.segments == ["refused"]
                    ? .page(title: "x", content: "<h1>x</h1>", status: 200)
                    : .redirect(request.segments.isEmpty ? "https://elsewhere.example/" : "/console/echo/done")
            },
            ConsolePage(path: "refusing", title: "Refusing") { request in
                // No account has a random id: the API answers 404.
                _ = try await request.fetch(AuthAPI.user, PathID(UUID()))
                return .page(title: "never", content: "<h1>never</h1>")
            },
        ]
    }

    static func make(context: ServiceContext) async throws -> PagesPlugin { PagesPlugin() }
    func routes(into routes: inout Routes) {}
}

@Suite(.serialized) struct PluginPageTests {
    @Test func theConsoleHostsAPluginsPages() async throws {
        let url = try await TestDatabase.create("pier_test_console_plugins")
        let configuration = try ServiceConfiguration(
            environment: Environment([
                "PIER_DATABASE_URL": url, "PIER_PORT": "0", "PIER_LOG_LEVEL": "error", "PIER_HTTP_ACCESS_LOG": "false",
                "PIER_AUTH_ARGON2_MEMORY_KIB": "1024", "PIER_AUTH_ARGON2_ITERATIONS": "1",
                "PIER_AUTH_REQUIRE_MFA_FOR_ROLES": "none",
                "PIER_DATA_DIR": FileManager.default.temporaryDirectory.appendingPathComponent("pier-pages-\(UUID())").path,
            ]), defaultPort: 0, applicationName: "pages-tests")
        let plugins = Gateway.builtIn.filter { ["auth", "console"].contains($0.name) } + [Plugin(PagesPlugin.self)]
        let running = Hosted(
            try await PluginHost.start(
                plugins, configuration: configuration, logger: Logger(service: "t", level: .error), migrate: true))
        let base = "http://127.0.0.1:\(running.server.port)"
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 1))
        defer { pool.close() }
        do {
            try await check(base: base, pool: pool)
        } catch {
            await running.shutdown()
            throw error
        }
        await running.shutdown()
    }

    func staff(_ role: AccountRole, base: String, pool: PostgresPool) async throws -> Browser {
        let email = "\(role.rawValue)-\(UUID().uuidString.prefix(8).lowercased())@example.com"
        let reply = try await ServiceClient(base: base).send(
            "POST", "/auth/register", json: #"{"email":"\#(email)","password":"\#(ConsoleTests.password)"}"#)
        #expect(reply.status == 201)
        try await pool.execute("UPDATE auth.users SET role = \(role.rawValue), email_verified_at = now() WHERE email = \(email)")
        let browser = Browser(base: base)
        let signedIn = try await browser.signIn(email, ConsoleTests.password)
        #expect(signedIn.status == 303, "\(signedIn.text)")
        return browser
    }

    func check(base: String, pool: PostgresPool) async throws {
        let support = try await staff(.support, base: base, pool: pool)
        // The menu names the pages the role may open, their titles escaped.
        let inbox = try await support.get("/console/inbox")
        #expect(inbox.text.contains(#"<a href="/console/echo">Echo &lt;b&gt;</a>"#), "\(inbox.text)")
        #expect(!inbox.text.contains("/console/secret"), "support's menu has no admin page")
        // A page reads through the API as the team member; segments come decoded.
        let echo = try await support.get("/console/echo/a%20b/c")
        #expect(echo.status == 200)
        #expect(echo.text.contains("<p data-segments>a b|c</p>"), "\(echo.text)")
        #expect(echo.text.contains("<p data-me>support-"), "the page called the API as the team member")
        #expect(echo.text.contains(#"<a href="/console/echo" aria-current="page">Echo &lt;b&gt;</a>"#), "its entry is marked")
        #expect(inbox.text.contains(#"<a href="/console/inbox" aria-current="page">Inbox</a>"#))
        #expect(!echo.text.contains(#"<a href="/console/inbox" aria-current"#))
        ConsoleTests.expectSecurityHeaders(echo, "a plugin's page")
        // Forms: without the session's token refused before the page sees them; with it, the
        // fields without the token.
        let forged = try await support.post("/console/echo", [("x", "1")])
        #expect(forged.status == 403)
        let csrf = try #require(echo.field("csrf"))
        let posted = try await support.post("/console/echo", [("csrf", csrf), ("x", "<1>"), ("x", "2")])
        #expect(posted.status == 200 && posted.text.contains("<p data-form>x=&lt;1&gt;&amp;x=2</p>"), "\(posted.text)")
        let elsewhere = try await support.post("/console/echo", [("csrf", csrf)], origin: "http://evil.example")
        #expect(elsewhere.status == 403)
        // Admin pages: refused to support; deeper than three segments, nothing.
        #expect(try await support.get("/console/secret").status == 403)
        #expect(try await support.get("/console/echo/1/2/3/4").status == 404)
        // Redirects stay in the console; one elsewhere is the plugin's bug, a 500 page.
        #expect(try await support.get("/console/away/x").location == "/console/echo/done")
        let outside = try await support.get("/console/away")
        #expect(outside.status == 500 && outside.location == nil, "\(outside.status)")
        // A refusal the page does not draw becomes the console's page in words.
        let refused = try await support.get("/console/refusing")
        #expect(refused.status == 404 && refused.text.contains("Not found"), "\(refused.text)")
        // The audit log offers the plugin's actions, and shows the others while its log cannot
        // be read.
        let audit = try await support.get("/console/audit")
        #expect(audit.status == 200 && audit.text.contains(#"<option value="page.done">did a page</option>"#), "\(audit.text)")
        #expect(
            audit.text.contains("Not shown: what was done in Feedback, Subscriptions, Pages, which cannot be read right now."))
        let filtered = try await support.get("/console/audit?action=page.done")
        #expect(filtered.status == 200 && filtered.text.contains("Not shown: what was done in Pages"))
        // Signed out, the page leads to the sign-in form.
        let stranger = Browser(base: base)
        let door = try await stranger.get("/console/echo")
        #expect(door.status == 303 && door.location?.hasPrefix("/console/sign-in") == true)
        let admin = try await staff(.admin, base: base, pool: pool)
        let secret = try await admin.get("/console/secret")
        #expect(secret.status == 200 && secret.text.contains("<h1>Secret</h1>"))
        #expect(try await admin.get("/console/inbox").text.contains(#"<a href="/console/secret">Admins only</a>"#))
    }

    @Test func aPageCannotTakeTheConsolesOwnPaths() throws {
        func additions(_ paths: [String]) throws -> ConsoleAdditions {
            try ConsoleAdditions(
                pages: paths.map { path in ConsolePage(path: path, title: path) { _ in .redirect("/console/") } })
        }
        #expect(throws: Environment.Failure.self) { try additions(["inbox"]) }
        #expect(throws: Environment.Failure.self) { try additions(["static"]) }
        #expect(throws: Environment.Failure.self) { try additions(["Config"]) }
        #expect(throws: Environment.Failure.self) { try additions(["a/b"]) }
        #expect(throws: Environment.Failure.self) { try additions(["same", "same"]) }
        #expect(try additions(["config", "leaderboard-2"]).pages.map(\.path) == ["config", "leaderboard-2"])
    }
}
