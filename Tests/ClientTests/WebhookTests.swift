import Foundation
import PierCrypto
import PierEvents
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierServiceTestSupport
import PierTestSupport
import Synchronization
import Testing

@testable import AuthService
@testable import Gateway
@testable import PierClient

/// Webhooks as the app's backend receives them: a receiver of its own that checks each
/// signature as Standard Webhooks says, with the one secret it holds.
@Suite(.serialized) struct WebhookTests {
    /// One POST as the receiver saw it.
    struct Received: Sendable {
        let id: String
        let timestamp: Int
        let type: String
        let subject: String
        let data: [String: JSONValue]
        let signed: Bool
        let accepted: Bool
    }

    /// The app's backend: verifies each message with `secret` and answers 500 to the first
    /// attempt of every message when `refuseFirst`.
    final class Receiver: Sendable {
        let received = Mutex<[Received]>([])
        let key: [UInt8]
        let refuseFirst: Bool

        init(secret: String, refuseFirst: Bool) {
            key = Base64.decoded(secret.dropFirst("whsec_".count))!
            self.refuseFirst = refuseFirst
        }

        func start(port: Int = 0) throws -> HTTPServer {
            let router = Router<BasicRequestContext>()
            router.post("/hooks") { [self] request, _ in
                let id = request.headers["webhook-id"] ?? ""
                let timestamp = Int(request.headers["webhook-timestamp"] ?? "") ?? 0
                let expected =
                    "v1," + Base64.encoded(HMACSHA256.authenticate(Array("\(id).\(timestamp).".utf8) + request.body, key: key))
                let signatures = (request.headers["webhook-signature"] ?? "").split(separator: " ").map(String.init)
                let message = try JSONDecoder().decode([String: JSONValue].self, from: Data(request.body))
                let data = message["data"]?.objectValue ?? [:]
                let subject =
                    data["feedbackId"].flatMap { if case .string(let id) = $0 { "feedback:" + id } else { nil } }
                    ?? data["userId"].flatMap { if case .string(let id) = $0 { "user:" + id } else { nil } } ?? ""
                let accepted = received.withLock { all in
                    let first = !all.contains { $0.id == id }
                    let accept = !(refuseFirst && first)
                    var type = ""
                    if case .string(let value) = message["type"] { type = value }
                    all.append(
                        Received(
                            id: id, timestamp: timestamp, type: type, subject: subject, data: data,
                            signed: signatures.contains(expected), accepted: accept))
                    return accept
                }
                return accepted ? Response(status: 204) : Response(status: 500)
            }
            return try HTTPServer.started(router, name: "receiver", port: port)
        }

        /// The accepted messages of `subject`, by type, in the order they were accepted.
        func accepted(_ subject: String) -> [String] {
            received.withLock { $0.filter { $0.accepted && $0.subject == subject }.map(\.type) }
        }

        /// Waits up to 20 s for `subject`'s accepted messages to be `types`.
        func wait(for types: [String], of subject: String) async throws {
            for _ in 0..<1000 {
                if accepted(subject) == types { return }
                try await Task.sleep(for: .milliseconds(20))
            }
            Issue.record("\(subject): \(accepted(subject)), not \(types)")
        }
    }

    static let current = "whsec_" + Base64.encoded(SecureRandom.bytes(32))
    static let previous = "whsec_" + Base64.encoded(SecureRandom.bytes(32))

    static func settings(receiverPort: Int) -> [String: String] {
        [
            "PIER_WEBHOOKS":
                #"[{"name":"backend","url":"http://127.0.0.1:\#(receiverPort)/hooks","secret":"\#(current) \#(previous)"}]"#,
            "PIER_WEBHOOK_RETRY_MS": "50", "PIER_WEBHOOK_POLL_MS": "50", "PIER_WEBHOOK_TIMEOUT_S": "2", "PIER_DB_POOL_SIZE": "3",
            "PIER_AUTH_REQUIRE_MFA_FOR_ROLES": "none", "PIER_AUTH_HASHES_PER_ADDRESS": "1000",
            "PIER_AUTH_LOGINS_PER_ADDRESS_PER_MINUTE": "100000",
        ]
    }

    static func admin(_ base: URL, databaseURL: String) async throws -> PierClient {
        let pool = PostgresPool(configuration: PostgresConfiguration(url: databaseURL, poolSize: 1))
        defer { pool.close() }
        let pier = PierClient(baseURL: base)
        let email = "admin-\(UUID().uuidString.prefix(8).lowercased())@example.com"
        try await pier.auth.register(email: email, password: "an admin passphrase")
        try await pool.execute("UPDATE auth.users SET role = 'admin' WHERE email = \(email)")
        try await pier.auth.login(email: email, password: "an admin passphrase")
        return pier
    }

    @Test func everyEventReachesTheAppsBackendSignedAndInOrderPerSubject() async throws {
        let url = try await TestDatabase.create("pier_test_webhooks")
        let receiver = Receiver(secret: Self.current, refuseFirst: true)
        let server = try receiver.start()
        let stack = try await EmbeddedStack.start(databaseURL: url, settings: Self.settings(receiverPort: server.port))
        let base = URL(string: "http://127.0.0.1:\(stack.server.port)")!
        let admin = try await Self.admin(base, databaseURL: url)

        let app = PierClient(baseURL: base)
        let user = try await app.auth.register(
            email: "hooked-\(UUID().uuidString.prefix(8).lowercased())@example.com", password: "a long passphrase")
        let sent = try await app.feedback.send(NewFeedback(message: "The export button does nothing", category: "bug"))
        try await admin.admin.updateFeedback(sent.id, UpdateFeedback(status: "triaged"))
        try await admin.admin.updateFeedback(sent.id, UpdateFeedback(status: "planned"))
        let plan = "hooks-\(UUID().uuidString.prefix(8).lowercased())"
        try await admin.admin.createPlan(
            CreatePlan(id: plan, name: "Hooks", price: 299, currency: "USD", billingPeriod: "P1M", entitlements: [plan]))
        let grant = try await admin.admin.grant(
            CreateGrant(userId: user.id, planId: plan, until: Date().addingTimeInterval(86_400), reason: "webhook test"))
        try await admin.admin.revokeGrant(grant.id)
        try await app.auth.deleteAccount(password: "a long passphrase")

        let userSubject = "user:" + user.id.uuidString.lowercased()
        let feedbackSubject = "feedback:" + sent.id.uuidString.lowercased()
        try await receiver.wait(
            for: ["user.created", "subscription.updated", "subscription.updated", "user.deleted"], of: userSubject)
        try await receiver.wait(for: ["feedback.created", "feedback.updated", "feedback.updated"], of: feedbackSubject)

        let mine = receiver.received.withLock { $0.filter { $0.subject == userSubject || $0.subject == feedbackSubject } }
        // Each message twice: refused once, then accepted; one id per message on both attempts.
        #expect(Set(mine.map(\.id)).count == 7)
        for id in Set(mine.map(\.id)) {
            #expect(mine.filter { $0.id == id }.map(\.accepted) == [false, true])
        }
        // Signed with both secrets: the receiver, holding the newer alone, verifies each.
        #expect(mine.allSatisfy { $0.signed })
        let now = Int(Date().timeIntervalSince1970)
        #expect(mine.allSatisfy { abs($0.timestamp - now) < 60 })
        let created = try #require(mine.first { $0.type == "feedback.created" })
        #expect(created.data["message"] == .string("The export button does nothing"))
        #expect(created.data["userId"] == .string(user.id.uuidString.lowercased()))
        let grants = mine.filter { $0.type == "subscription.updated" && $0.accepted }
        #expect(grants.map { $0.data["reason"] } == [.string("grant"), .string("grant_revoked")])
        #expect(grants.first?.data["status"]?.objectValue?["entitlements"] != nil)
        let moves = mine.filter { $0.type == "feedback.updated" && $0.accepted }.map {
            $0.data["changes"]?.objectValue?["status"]
        }
        #expect(moves.map { $0?.objectValue?["to"] } == [.string("triaged"), .string("planned")])

        // The admins see every delivery and replay one: the same message again, signed afresh.
        // The receiver answers before Pier records the answer: wait for the records.
        var page = try await admin.admin.webhookDeliveries(.init(endpoint: "backend", subject: userSubject))
        for _ in 0..<500 where !page.items.allSatisfy({ $0.state == .delivered }) {
            try await Task.sleep(for: .milliseconds(20))
            page = try await admin.admin.webhookDeliveries(.init(endpoint: "backend", subject: userSubject))
        }
        #expect(page.items.count == 4)
        #expect(page.items.allSatisfy { $0.state == .delivered && $0.attempts == 2 && $0.lastStatus == 204 })
        let deleted = try #require(page.items.first { $0.type == "user.deleted" })
        let detail = try await admin.admin.webhookDelivery(deleted.id)
        #expect(detail.payload?.objectValue?["type"] == .string("user.deleted"))
        let replay = try await admin.admin.replayWebhook(deleted.id)
        #expect(replay.messageId == deleted.messageId && replay.replayOf == deleted.id && replay.state == .pending)
        try await receiver.wait(
            for: ["user.created", "subscription.updated", "subscription.updated", "user.deleted", "user.deleted"],
            of: userSubject)
        #expect(receiver.received.withLock { $0.last { $0.subject == userSubject }?.id } == deleted.messageId)
        let endpoints = try await admin.admin.webhookEndpoints()
        // Every event Pier's plugins send, remote config's among them.
        #expect(endpoints.map(\.name) == ["backend"] && endpoints.first?.secrets == 2 && endpoints.first?.events.count == 7)
        #expect(endpoints.first?.events.contains("config.published") == true)

        // An anonymous account merged into another: `user.merged`, in order after its `user.created`.
        let (intoEmail, password) = ("merged-into-\(UUID().uuidString.prefix(8).lowercased())@example.com", "a long passphrase")
        let into = try await PierClient(baseURL: base).auth.register(email: intoEmail, password: password)
        let guest = PierClient(baseURL: base)
        let anonymous = try await guest.auth.signInAnonymously()
        try await guest.auth.merge { () async throws(PierError) in
            _ = try await guest.auth.login(email: intoEmail, password: password)
        }
        let guestSubject = "user:" + anonymous.id.uuidString.lowercased()
        try await receiver.wait(for: ["user.created", "user.merged"], of: guestSubject)
        let merged = receiver.received.withLock { $0.last { $0.subject == guestSubject && $0.type == "user.merged" } }
        #expect(merged?.data["intoUserId"] == .string(into.id.uuidString.lowercased()))

        // Bad filters name their field; an unknown delivery is a 404, and so is its replay.
        for (query, field) in [
            ("state", "bogus"), ("type", "user.renamed"), ("cursor", "abc"), ("endpoint", "elsewhere"), ("limit", "0"),
        ] {
            do {
                _ = try await admin.call("GET", "/auth/webhooks/deliveries", query: [URLQueryItem(name: query, value: field)])
                Issue.record("\(query)=\(field) was accepted")
            } catch {
                #expect(error.status == 422 && error.fieldErrors.map(\.field) == [query], "\(query): \(error)")
            }
        }
        for path in ["/auth/webhooks/deliveries/99999999", "/auth/webhooks/deliveries/not-an-id"] {
            do {
                _ = try await admin.call("GET", path)
                Issue.record("\(path) answered")
            } catch {
                #expect(error.status == 404, "\(path): \(error)")
            }
        }
        do {
            _ = try await admin.admin.replayWebhook(99_999_999)
            Issue.record("an unknown delivery was replayed")
        } catch {
            #expect(error.status == 404)
        }

        // Not for users, nor for staff who are not admins.
        do {
            _ = try await app.admin.webhookEndpoints()
            Issue.record("a deleted user's client listed webhooks")
        } catch {}
        await stack.shutdown()
        await server.shutdown()
    }

    @Test func nothingIsLostWhenTheReceiverAndPierRestart() async throws {
        let url = try await TestDatabase.create("pier_test_webhooks_restart")
        let receiver = Receiver(secret: Self.current, refuseFirst: false)
        var server = try receiver.start()
        let port = server.port
        // The receiver is down while the first events happen.
        await server.shutdown()
        var stack = try await EmbeddedStack.start(databaseURL: url, settings: Self.settings(receiverPort: port))
        var base = URL(string: "http://127.0.0.1:\(stack.server.port)")!
        let first = PierClient(baseURL: base)
        let firstUser = try await first.auth.register(
            email: "first-\(UUID().uuidString.prefix(8).lowercased())@example.com", password: "a long passphrase")
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 1))
        defer { pool.close() }
        // Attempted and failed at least once before Pier stops.
        var failed = 0
        for _ in 0..<500 where failed == 0 {
            failed = try await pool.query(
                "SELECT count(*)::int AS n FROM auth.webhook_deliveries WHERE last_error IS NOT NULL")[0].decode(
                    "n", as: Int.self)
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(failed == 1)
        await stack.shutdown()

        // Pier comes back; more events; then the receiver comes back on its address.
        stack = try await EmbeddedStack.start(databaseURL: url, settings: Self.settings(receiverPort: port))
        base = URL(string: "http://127.0.0.1:\(stack.server.port)")!
        let second = PierClient(baseURL: base)
        try await second.auth.login(email: firstUser.handle, password: "a long passphrase")
        let sent = try await second.feedback.send(NewFeedback(message: "Sent while the backend was away", category: "idea"))
        try await second.auth.deleteAccount(password: "a long passphrase")
        server = try receiver.start(port: port)

        try await receiver.wait(for: ["user.created", "user.deleted"], of: "user:" + firstUser.id.uuidString.lowercased())
        try await receiver.wait(for: ["feedback.created"], of: "feedback:" + sent.id.uuidString.lowercased())
        let ids = receiver.received.withLock { $0.map(\.id) }
        #expect(Set(ids).count == 3 && ids.count == 3)
        #expect(receiver.received.withLock { $0.allSatisfy { $0.signed } })
        await stack.shutdown()
        await server.shutdown()

        // The endpoint taken out of the settings: its deliveries stay listed, and a replay is
        // refused (409) rather than queued for nobody to send.
        var without = Self.settings(receiverPort: port)
        without["PIER_WEBHOOKS"] = #"[{"name":"other","url":"http://127.0.0.1:9/hooks","secret":"\#(Self.current)"}]"#
        stack = try await EmbeddedStack.start(databaseURL: url, settings: without)
        let admin = try await Self.admin(URL(string: "http://127.0.0.1:\(stack.server.port)")!, databaseURL: url)
        let listed = try await admin.admin.webhookDeliveries()
        let delivered = try #require(listed.items.first { $0.endpoint == "backend" })
        do {
            _ = try await admin.admin.replayWebhook(delivered.id)
            Issue.record("a delivery to an endpoint no longer configured was replayed")
        } catch {
            #expect(error.status == 409 && error.detail.contains("backend"), "\(error)")
        }
        let after = try await pool.query("SELECT count(*)::int AS n FROM auth.webhook_deliveries WHERE replay_of IS NOT NULL")
        #expect(try after[0].decode("n", as: Int.self) == 0)
        await stack.shutdown()
    }

    @Test func signaturesFollowTheStandardAndSettingsAreChecked() throws {
        // The example of the Standard Webhooks specification.
        let key = Base64.decoded("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")!
        #expect(
            WebhookSignature.header(
                id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: Array(#"{"test": 2432232314}"#.utf8),
                keys: [key]) == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        func problem(_ json: String) -> String? {
            do {
                _ = try WebhookEndpointSetting.all(Environment(["PIER_WEBHOOKS": json]))
                return nil
            } catch { return error.description }
        }
        let secret = Self.current
        #expect(problem(#"[{"name":"a","url":"https://example.com/h","secret":"\#(secret)"}]"#) == nil)
        #expect(problem(#"[{"name":"A b","url":"https://example.com/h","secret":"\#(secret)"}]"#)?.contains("lowercase") == true)
        #expect(problem(#"[{"name":"a","url":"ftp://example.com","secret":"\#(secret)"}]"#)?.contains("http(s)") == true)
        #expect(problem(#"[{"name":"a","url":"https://example.com/h","secret":"whsec_c2hvcnQ="}]"#)?.contains("24 to 64") == true)
        #expect(problem(#"[{"name":"a","url":"https://example.com/h"}]"#)?.contains("secret or secretFile") == true)
        #expect(
            problem(#"[{"name":"a","url":"https://example.com/h","secret":"\#(secret)","events":["user.renamed"]}]"#)?
                .contains("unknown event \"user.renamed\"") == true)
        #expect(
            problem(
                #"[{"name":"a","url":"https://example.com/h","secret":"\#(secret)"},{"name":"a","url":"https://example.com/i","secret":"\#(secret)"}]"#
            )?.contains("listed twice") == true)
        #expect(problem("{}")?.contains("JSON array") == true)
        // A secret never appears in what is said about the settings.
        #expect(problem(#"[{"name":"a","url":"ftp://x","secret":"\#(secret)"}]"#)?.contains(secret) == false)
    }

    /// A plugin's declared events join Pier's: an endpoint may subscribe to them only where the
    /// executable was built with the plugin, every endpoint without a list gets them, and each
    /// is ordered by the field the plugin names (or as one sequence).
    @Test func pluginEventsJoinTheWebhooks() throws {
        let known = WebhookEvents.builtIn.adding([
            EventDeclaration("config.published", summary: "a version"),
            EventDeclaration("score.posted", summary: "a score", orderedBy: "userId"),
            // Pier's own type again changes nothing.
            EventDeclaration("user.created", summary: "again", orderedBy: "nothing"),
        ])
        let json = #"[{"name":"a","url":"https://example.com/h","secret":"\#(Self.current)","events":["config.published"]}]"#
        #expect(throws: Environment.Failure.self) { try WebhookEndpointSetting.all(Environment(["PIER_WEBHOOKS": json])) }
        let endpoints = try WebhookEndpointSetting.all(Environment(["PIER_WEBHOOKS": json]), known: known)
        #expect(endpoints.first?.events == ["config.published"])
        let every = try WebhookEndpointSetting.all(
            Environment(["PIER_WEBHOOKS": #"[{"name":"b","url":"https://example.com/h","secret":"\#(Self.current)"}]"#]),
            known: known)
        #expect(every.first?.events == WebhookEvents.builtIn.types + ["config.published", "score.posted"])
        #expect(known.logTypes["config.published"] == "config.published" && known.logTypes[AccountDeleted.type] == "user.deleted")
        #expect(try known.subject(of: #"{"version":3,"changed":["a"]}"#, type: "config.published") == "config.published")
        #expect(try known.subject(of: #"{"userId":"u-1","points":3}"#, type: "score.posted") == "score.posted:u-1")
        #expect(try known.subject(of: #"{"points":3}"#, type: "score.posted") == "score.posted")
        #expect(try known.subject(of: #"{"userId":"u-2"}"#, type: "user.created") == "user:u-2")
    }
}
