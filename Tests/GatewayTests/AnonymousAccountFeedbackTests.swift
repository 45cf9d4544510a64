import Foundation
import PierModels
import PierPostgres
import PierServiceTestSupport
import PierTestSupport
import Testing

/// An anonymous account's feedback is anonymous feedback: the attack as it was run, six
/// anonymous accounts made from one address and ten posts with each bearer, meets each control
/// that guards anonymous feedback (App Attest, moderation, the address's quota).
@Suite(.serialized) struct AnonymousAccountFeedbackTests {
    static func accounts(_ client: ServiceClient, count: Int) async throws -> [String] {
        var tokens: [String] = []
        for _ in 0..<count {
            let reply = try await client.send("POST", "/auth/anonymous", json: #"{"installationId":"\#(UUID())"}"#)
            guard reply.status == 201 else { throw TestFailure("anonymous sign-in answered \(reply.status): \(reply.text)") }
            tokens.append(try reply.decode(AuthSession.self).accessToken)
        }
        return tokens
    }

    @Test func appAttestIsAskedOfAnonymousAccounts() async throws {
        let stack = try await EmbeddedStack.start(
            databaseURL: try await TestDatabase.create("pier_test_anonymous_account_attest"),
            settings: [
                "PIER_FEEDBACK_APP_ATTEST": "required", "PIER_FEEDBACK_MODERATE_ANONYMOUS": "true", "PIER_DB_POOL_SIZE": "3",
            ],
            plugins: ["auth", "feedback"])
        let client = ServiceClient(pipeline: stack.pipeline)
        for token in try await Self.accounts(client, count: 6) {
            let reply = try await client.send("POST", "/feedback", json: #"{"message":"spam"}"#, token: token)
            #expect(reply.status == 403 && reply.problem?.code == .attestationRequired, "\(reply.text)")
        }
        // A permanent account is not asked for an installation token.
        let registered = try await client.send(
            "POST", "/auth/register", json: #"{"email":"ada@example.com","password":"a long passphrase"}"#)
        let token = try registered.decode(AuthSession.self).accessToken
        #expect(try await client.send("POST", "/feedback", json: #"{"message":"real"}"#, token: token).status == 201)
        await stack.shutdown()
    }

    @Test func anonymousAccountsWaitForModerationAndShareTheAddressQuota() async throws {
        let url = try await TestDatabase.create("pier_test_anonymous_account_quota")
        let stack = try await EmbeddedStack.start(
            databaseURL: url,
            settings: [
                "PIER_FEEDBACK_MODERATE_ANONYMOUS": "true", "PIER_FEEDBACK_QUOTA_PER_MINUTE": "10", "PIER_DB_POOL_SIZE": "3",
            ],
            plugins: ["auth", "feedback"])
        let client = ServiceClient(pipeline: stack.pipeline)
        var statuses: [Int] = []
        var stored: [UUID] = []
        for token in try await Self.accounts(client, count: 6) {
            for index in 0..<10 {
                let reply = try await client.send(
                    "POST", "/feedback", json: #"{"message":"spam \#(index)","email":"x@example.com"}"#, token: token)
                statuses.append(reply.status)
                if reply.status == 201 { stored.append(try reply.decode(FeedbackItem.self).id) }
            }
        }
        // Ten from the address in a minute, whichever account sent them.
        #expect(statuses.filter { $0 == 201 }.count == 10)
        #expect(statuses.filter { $0 == 429 }.count == 50)
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 1))
        let rows = try await pool.query("SELECT id, moderation, email, user_id FROM feedback.items")
        #expect(Set(try rows.map { try $0.decode("id", as: UUID.self) }) == Set(stored))
        #expect(try rows.allSatisfy { try $0.decode("moderation", as: String.self) == "pending" })
        // The address given is kept (an anonymous account has none of its own to reply to), and
        // the item is still the account's own.
        #expect(try rows.allSatisfy { try $0.decode("email", as: String?.self) == "x@example.com" })
        #expect(try rows.allSatisfy { try $0.decode("user_id", as: UUID?.self) != nil })
        pool.close()
        await stack.shutdown()
    }
}
