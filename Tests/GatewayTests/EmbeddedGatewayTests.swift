import Foundation
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import Gateway

/// Auth, feedback and subscriptions hosted in one process answer exactly as they do apart.
@Suite struct EmbeddedGatewayTests {
    /// Auth, feedback, subscriptions and remote config in one gateway on a fresh database, and a
    /// client for it.
    static func embedAll(database: String) async throws -> (Hosted, ServiceClient) {
        let gateway = try await EmbeddedStack.start(
            databaseURL: try await TestDatabase.create(database), plugins: ["feedback", "auth", "subscriptions", "config"])
        return (gateway, ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)"))
    }

    @Test func theWholeFlowThroughOnePort() async throws {
        let (gateway, client) = try await Self.embedAll(database: "pier_test_gateway")

        let registered = try await client.send(
            "POST", "/auth/register", json: #"{"email":"gw@example.com","password":"gateway passphrase"}"#)
        #expect(registered.status == 201)
        let session = try registered.decode(AuthSession.self)
        let posted = try await client.send(
            "POST", "/feedback", json: #"{"message":"through the gateway"}"#, token: session.accessToken)
        #expect(posted.status == 201)
        let mine = try await client.send("GET", "/feedback/mine", token: session.accessToken).decode(FeedbackPage.self)
        #expect(mine.items.map(\.message) == ["through the gateway"])
        // Tokens are checked with auth's keys in-process: a forged one is refused by feedback too.
        #expect(try await client.send("GET", "/feedback/mine", token: session.accessToken + "x").status == 401)
        let status = try await client.send("GET", "/subscriptions/me", token: session.accessToken)
        #expect(try status.decode(SubscriptionStatus.self).status == .none)
        #expect(try await client.send("GET", "/subscriptions/plans").status == 200)

        let ready = try await client.send("GET", "/readyz")
        #expect(ready.status == 200)
        #expect(ready.text.contains("\"auth.migrations\":true") && ready.text.contains("\"feedback.migrations\":true"))
        let metrics = try await client.send("GET", "/metrics").text
        #expect(metrics.contains(#"pier_db_pool_connections{service="auth",state="idle"}"#))
        #expect(metrics.contains(#"pier_db_pool_connections{service="feedback",state="idle"}"#))
        #expect(metrics.contains(#"pier_db_pool_connections{service="subscriptions",state="idle"}"#))
        #expect(try await client.send("GET", "/nowhere").status == 404)

        // The OpenAPI document describes exactly the routes that exist.
        let document = try await client.send("GET", "/openapi.json")
        #expect(document.status == 200)
        #expect(document.body == Gateway.document)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(document.body)) as? [String: Any])
        let paths = try #require(object["paths"] as? [String: [String: Any]])
        let documented = Set(paths.flatMap { path, operations in operations.keys.map { "\($0.uppercased()) \(path)" } })
        let routed = Set(gateway.server.pipeline.routes.endpoints.map { "\($0.method) \($0.pattern)" })
        #expect(documented.subtracting(routed).isEmpty, "documented but not routed: \(documented.subtracting(routed).sorted())")
        #expect(routed.subtracting(documented).isEmpty, "routed but not documented: \(routed.subtracting(documented).sorted())")
        await gateway.shutdown()
    }

    /// Two plugins in one process, each with its own role and that role's password (a container
    /// secret each); a plugin named with no password file of its own never gets the shared one.
    @Test func eachPluginMayHaveItsOwnDatabase() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("passwords-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for (name, password) in [("shared", "shared secret"), ("config", "config secret")] {
            try (password + "\n").write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        let configuration = try ServiceConfiguration(
            environment: Environment([
                "PIER_DATABASE_URL": "postgresql://shared@db/pier", "PIER_FEEDBACK_DATABASE_URL": "postgresql://feedback@db/pier",
                "PIER_DATABASE_PASSWORD_FILE": folder.appendingPathComponent("shared").path,
                "PIER_CONFIG_DATABASE_URL": "postgresql://pier_config@db/pier",
                "PIER_CONFIG_DATABASE_PASSWORD_FILE": folder.appendingPathComponent("config").path,
            ]), defaultPort: 0, applicationName: "t")
        func database(_ name: String) throws -> PostgresConfiguration {
            try PluginHost.database(for: Gateway.plugins.first { $0.name == name }!, configuration, alone: false)
        }
        #expect(try database("feedback").url == "postgresql://feedback@db/pier")
        #expect(try database("feedback").password == nil)
        #expect(try database("config").url == "postgresql://pier_config@db/pier")
        #expect(try database("config").password == "config secret")
        #expect(try database("auth").url == "postgresql://shared@db/pier")
        #expect(try database("auth").password == "shared secret")
        #expect(try database("auth").applicationName == "t/auth")
        let missing = try ServiceConfiguration(
            environment: Environment([
                "PIER_CONFIG_DATABASE_URL": "postgresql://pier_config@db/pier",
                "PIER_CONFIG_DATABASE_PASSWORD_FILE": folder.appendingPathComponent("none").path,
            ]), defaultPort: 0, applicationName: "t")
        #expect {
            try PluginHost.database(for: Gateway.plugins.first { $0.name == "config" }!, missing, alone: true)
        } throws: { ($0 as? Environment.Failure)?.variable == "PIER_CONFIG_DATABASE_PASSWORD_FILE" }
    }

    /// Capabilities are offered in-process: remote config hosted without subscriptions says at
    /// start that its rules on entitlements need subscriptions beside it; hosted together, the
    /// log is silent about it.
    @Test func aPluginHostedWithoutWhatItNeedsSaysWhere() async throws {
        let url = try await TestDatabase.create("pier_test_gateway_needs")
        let configuration = try ServiceConfiguration(
            environment: Environment(["PIER_PORT": "0", "PIER_DATABASE_URL": url]), defaultPort: 0, applicationName: "t")
        for (names, warned) in [(["config"], true), (["subscriptions", "config"], false)] {
            let lines = Locked<[String]>([])
            let logger = Logger(service: "gateway", level: .info) { line in lines.withLock { $0.append(line) } }
            await Hosted(try await Gateway.start(names, configuration: configuration, logger: logger, migrate: true))
                .shutdown()
            let warnings = lines.withLock { $0 }.filter { $0.contains("offered by no plugin in this process") }
            #expect(warnings.count == (warned ? 1 : 0), "\(names): \(warnings)")
            if warned {
                #expect(warnings[0].contains(#""service":"config""#) && warnings[0].contains(#""capability":"entitlements""#))
                #expect(warnings[0].contains(#""offered_by":"subscriptions""#), "\(warnings[0])")
            }
        }
    }

    @Test func unknownPluginsAreRefused() async throws {
        let configuration = try ServiceConfiguration(
            environment: Environment(["PIER_PORT": "0"]), defaultPort: 0, applicationName: "t")
        await #expect(throws: Environment.Failure.self) {
            _ = try await Gateway.start(
                ["billing"], configuration: configuration, logger: Logger(service: "g", level: .error), migrate: false)
        }
    }

    /// Logout, a password change and account deletion take effect at once everywhere: the old
    /// access token is refused by every hosted service within a second of the answer, with no
    /// database lookup per request; the tokens of other sessions go on working.
    ///
    /// What is checked is the design's guarantee: a revoked token is served nowhere 5 s after the
    /// answer (after 5 s without reading the event log a process answers 503, never the token's
    /// owner), and is then refused with a 401 everywhere. The latency itself (one poll interval at worst, tens of ms usually)
    /// is printed here and measured with separate processes by scripts/separate-hosts.sh: on a
    /// busy machine a read may take longer, which is not a failure.
    @Test func revokedTokensAreRefusedEverywhere() async throws {
        let (gateway, client) = try await Self.embedAll(database: "pier_test_gateway_revocation")
        let credentials = #"{"email":"revoke@example.com","password":"revocation passphrase"}"#
        let first = try await client.send("POST", "/auth/register", json: credentials).decode(AuthSession.self)
        let second = try await client.send("POST", "/auth/login", json: credentials).decode(AuthSession.self)
        let third = try await client.send("POST", "/auth/login", json: credentials).decode(AuthSession.self)

        /// How long after `start` every service refused `token` with a 401 (nil: not within 30 s).
        /// Whatever the machine's load, no request sent more than 5 s after `start` is served:
        /// it is refused, or answered 503 while the event log could not be read in time.
        func refusedEverywhere(_ token: String, since start: ContinuousClock.Instant) async throws -> Duration? {
            var servedLate: [Int] = []
            let refused = try await eventually(interval: .milliseconds(10)) {
                let sent = ContinuousClock.now
                let statuses = [
                    try await client.send("GET", "/auth/me", token: token).status,
                    try await client.send("GET", "/feedback/mine", token: token).status,
                    try await client.send("GET", "/subscriptions/me", token: token).status,
                    // A revoked bearer is a 401 even where anonymous is allowed, never anonymous.
                    try await client.send("POST", "/feedback", json: #"{"message":"late"}"#, token: token).status,
                ]
                if sent - start > .seconds(5) { servedLate += statuses.filter { $0 < 400 } }
                return statuses.allSatisfy { $0 == 401 }
            }
            #expect(servedLate.isEmpty, "served \(servedLate) more than 5 s after the revocation")
            return refused ? ContinuousClock.now - start : nil
        }
        for token in [first.accessToken, second.accessToken, third.accessToken] {
            let mine = try await client.send("GET", "/feedback/mine", token: token)
            #expect(mine.status == 200, "\(mine.text)")
        }

        // Logout.
        #expect(
            try await client.send(
                "POST", "/auth/logout", json: #"{"refreshToken":"\#(first.refreshToken)"}"#, token: first.accessToken
            ).status == 204)
        var start = ContinuousClock.now
        let afterLogout = try await refusedEverywhere(first.accessToken, since: start)
        #expect(afterLogout != nil, "logout: not refused everywhere")
        #expect(try await client.send("GET", "/feedback/mine", token: second.accessToken).status == 200)

        // A password change ends the other sessions, not the one that changed it.
        #expect(
            try await client.send(
                "POST", "/auth/password",
                json: #"{"currentPassword":"revocation passphrase","newPassword":"another revocation passphrase"}"#,
                token: second.accessToken
            ).status == 204)
        start = ContinuousClock.now
        let afterChange = try await refusedEverywhere(third.accessToken, since: start)
        #expect(afterChange != nil, "password change: not refused everywhere")
        #expect(try await client.send("GET", "/subscriptions/me", token: second.accessToken).status == 200)

        // Account deletion: every token of the account, and nothing it sends is kept.
        #expect(try await client.send("DELETE", "/auth/me", token: second.accessToken).status == 204)
        start = ContinuousClock.now
        let afterDeletion = try await refusedEverywhere(second.accessToken, since: start)
        #expect(afterDeletion != nil, "deletion: not refused everywhere")
        print(
            "revocation: refused everywhere \(String(describing: afterLogout)) after logout, "
                + "\(String(describing: afterChange)) after a password change, \(String(describing: afterDeletion)) after deletion"
        )
        await gateway.shutdown()
    }
}
