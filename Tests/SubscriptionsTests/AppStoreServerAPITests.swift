import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierRuntime
import PierService
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import SubscriptionsService

/// Apple's App Store Server API played by a local server that checks every request's JWT as
/// Apple documents it and answers with payloads the test signs (shapes of `StatusResponse`).
final class FakeAppStoreAPI: Sendable {
    enum Answer: Sendable {
        /// `StatusResponse` with these (transaction JWS, renewal JWS?) items, in one group.
        case statuses([(transaction: String, renewal: String?)])
        case status(Int, headers: HTTPHeaders, body: String)
    }

    struct Call: Sendable {
        var path: String
        /// Nil when the JWT was as Apple requires; else what was wrong.
        var tokenProblem: String?
    }

    let server: HTTPServer
    let key: P256PrivateKey
    let keyFile: URL
    let calls = PierTestSupport.Locked<[Call]>([])
    let answers = PierTestSupport.Locked<[String: Answer]>([:])
    static let keyID = "2X9R4HXF34"
    static let issuerID = "57246542-96fe-1a63-e053-0824d011072a"

    var url: String { "http://127.0.0.1:\(server.port)" }

    /// The settings that point the service at this server (both environments).
    var settings: [String: String] {
        [
            "PIER_SUBSCRIPTIONS_APPSTORE_KEY_FILE": keyFile.path, "PIER_SUBSCRIPTIONS_APPSTORE_KEY_ID": Self.keyID,
            "PIER_SUBSCRIPTIONS_APPSTORE_ISSUER_ID": Self.issuerID, "PIER_SUBSCRIPTIONS_APPSTORE_API_URL": url,
            "PIER_SUBSCRIPTIONS_APPSTORE_SANDBOX_API_URL": url + "/sandbox",
        ]
    }

    init() throws {
        key = try P256PrivateKey.generate()
        keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("pier-iap-\(UUID()).p8")
        try key.pemRepresentation().write(to: keyFile, atomically: true, encoding: .utf8)
        let publicKey = try key.publicKey
        let (calls, answers) = (calls, answers)
        let router = Router<BasicRequestContext>()
        let handler: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, context in
            let problem = Self.tokenProblem(request.headers["Authorization"], key: publicKey)
            calls.withLock { $0.append(Call(path: request.path, tokenProblem: problem)) }
            guard problem == nil else {
                return Self.json(401, #"{"errorCode":4010000,"errorMessage":"Unauthenticated"}"#)
            }
            switch answers.withLock({ $0[context.parameters["transactionId"] ?? ""] }) {
            case .none:
                return Self.json(404, #"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#)
            case .status(let status, let headers, let body):
                var response = Self.json(status, body)
                for (name, value) in headers { response.headers.set(name, value) }
                return response
            case .statuses(let items):
                let last = try items.map { item -> [String: Any] in
                    let payload = try JSONSerialization.jsonObject(with: Data(try JWS(compact: item.transaction).payload))
                    let original = (payload as? [String: Any])?["originalTransactionId"] as? String ?? ""
                    var entry: [String: Any] = [
                        "originalTransactionId": original, "status": 1, "signedTransactionInfo": item.transaction,
                    ]
                    if let renewal = item.renewal { entry["signedRenewalInfo"] = renewal }
                    return entry
                }
                let body: [String: Any] = [
                    "environment": "Sandbox", "bundleId": SubscriptionsHarness.bundleID,
                    "appAppleId": SubscriptionsHarness.appAppleID,
                    "data": [["subscriptionGroupIdentifier": "21000000", "lastTransactions": last]],
                ]
                let data = try JSONSerialization.data(withJSONObject: body)
                return Self.json(200, String(decoding: data, as: UTF8.self))
            }
        }
        router.get("/inApps/v1/subscriptions/{transactionId}", handler)
        router.get("/sandbox/inApps/v1/subscriptions/{transactionId}", handler)
        server = try HTTPServer.started(router, name: "fake-apple")
    }

    func stop() async {
        await server.shutdown()
        try? FileManager.default.removeItem(at: keyFile)
    }

    private static func json(_ status: Int, _ body: String) -> Response {
        Response(status: status, headers: ["Content-Type": "application/json"], body: Array(body.utf8))
    }

    /// Apple's rules for the bearer token: ES256 signed by the key `kid` names, `typ` JWT, `iss`
    /// the issuer id, `aud` appstoreconnect-v1, `bid` the bundle id, issued now and expiring
    /// within an hour.
    static func tokenProblem(_ authorization: String?, key: P256PublicKey) -> String? {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return "no bearer token" }
        guard let jws = try? JWS(compact: authorization.dropFirst(7)) else { return "not a JWS" }
        guard jws.header.alg == "ES256", jws.header.kid == keyID, jws.header.typ == "JWT" else { return "header \(jws.header)" }
        guard (try? jws.verify(with: key)) != nil else { return "signature" }
        guard let claims = try? JSONSerialization.jsonObject(with: Data(jws.payload)) as? [String: Any] else { return "claims" }
        let now = Int(Date().timeIntervalSince1970)
        guard claims["iss"] as? String == issuerID else { return "iss" }
        guard claims["aud"] as? String == "appstoreconnect-v1" else { return "aud" }
        guard claims["bid"] as? String == SubscriptionsHarness.bundleID else { return "bid" }
        guard let iat = claims["iat"] as? Int, let exp = claims["exp"] as? Int, abs(iat - now) < 60, exp > now,
            exp - iat <= 3600
        else { return "iat/exp" }
        return nil
    }
}

@Suite(.serialized) struct AppStoreServerAPITests {
    static let database = "pier_test_subscriptions_api"

    func withService(
        apple: FakeAppStoreAPI?, settings: [String: String] = [:], _ body: (SubscriptionsHarness) async throws -> Void
    ) async throws {
        try await SubscriptionsHarness.with(
            database: Self.database, settings: (apple?.settings ?? [:]).merging(settings) { $1 }, body)
    }

    static func transaction(_ ca: TestCA, id: String, original: String, user: UUID?, days: Double) throws -> String {
        try ca.sign(
            AppStorePayload.transaction(
                id: id, original: original, purchased: Date().addingTimeInterval(-3600),
                expires: Date().addingTimeInterval(days * 86_400), user: user))
    }

    /// A purchase whose renewal info Pier has never seen is completed from Apple, after the
    /// answer: here Apple says auto-renew is off, and the status says so.
    @Test func aPurchaseWithoutRenewalInfoIsCompletedFromApple() async throws {
        let apple = try FakeAppStoreAPI()
        try await withService(apple: apple) { service in
            let user = UUID()
            let jws = try Self.transaction(service.ca, id: "4000000001", original: "4000000000", user: user, days: 30)
            let renewal = try service.ca.sign(AppStorePayload.renewal(original: "4000000000", autoRenew: false))
            apple.answers.withLock { $0["4000000000"] = .statuses([(jws, renewal)]) }
            let reply = try await service.postTransaction(jws, user: user)
            #expect(reply.status == 200)
            #expect(try await eventually { try await service.status(user).willRenew == false })
            let calls = apple.calls.withLock { $0 }
            #expect(calls.map(\.path) == ["/sandbox/inApps/v1/subscriptions/4000000000"])
            #expect(calls.allSatisfy { $0.tokenProblem == nil }, "\(calls)")
            // Known now: the next purchase of that subscription does not ask again.
            let renewed = try Self.transaction(service.ca, id: "4000000002", original: "4000000000", user: user, days: 60)
            #expect(try await service.postTransaction(renewed, user: user).status == 200)
            try await Task.sleep(for: .milliseconds(200))
            #expect(apple.calls.withLock { $0.count } == 1)
        }
        await apple.stop()
    }

    /// An admin re-reads a user's subscriptions from Apple: what Apple signed is recorded (a
    /// renewal Pier missed), what does not verify is not; one answer covers one Apple account.
    @Test func anAdminRefreshReadsTheUsersStatusesFromApple() async throws {
        let apple = try FakeAppStoreAPI()
        try await withService(apple: apple) { service in
            let user = UUID()
            let first = try Self.transaction(service.ca, id: "5000000001", original: "5000000000", user: user, days: 1)
            let team = try Self.transaction(service.ca, id: "5100000001", original: "5100000000", user: user, days: 1)
            let known = try service.ca.sign(AppStorePayload.renewal(original: "5000000000"))
            let knownTeam = try service.ca.sign(AppStorePayload.renewal(original: "5100000000"))
            // Renewal infos known: the purchases themselves ask Apple nothing.
            #expect(
                try await service.postNotification(
                    try service.ca.sign(
                        AppStorePayload.notification("DID_RENEW", transaction: first, renewal: known))
                ).status == 200)
            #expect(
                try await service.postNotification(
                    try service.ca.sign(
                        AppStorePayload.notification("DID_RENEW", transaction: team, renewal: knownTeam))
                ).status == 200)
            #expect(apple.calls.withLock { $0.isEmpty })
            let before = try await service.status(user)

            // Apple knows of a renewal Pier missed, and carries an item from another CA.
            let renewed = try Self.transaction(service.ca, id: "5000000002", original: "5000000000", user: user, days: 31)
            let foreign = try Self.transaction(try TestCA(), id: "5200000001", original: "5200000000", user: user, days: 31)
            let statuses = FakeAppStoreAPI.Answer.statuses([(renewed, known), (team, knownTeam), (foreign, nil)])
            apple.answers.withLock {
                $0["5000000000"] = statuses
                $0["5100000000"] = statuses
            }
            let admin = try service.admin()
            let reply = try await service.send("POST", "/subscriptions/users/\(user.text())/appstore/refresh", token: admin)
            #expect(reply.status == 200, "\(reply.text)")
            let history = try reply.decode(SubscriptionHistory.self)
            #expect(history.userId == user)
            let after = try await service.status(user)
            #expect(
                (after.currentPeriodEnd ?? .distantPast)
                    > (before.currentPeriodEnd ?? .distantPast).addingTimeInterval(86_400 * 20))
            #expect(history.facts.contains { $0.kind == "appstore.transaction" && $0.reference == "5000000002" })
            #expect(!history.facts.contains { $0.reference == "5200000001" })
            // Both subscriptions were in one answer: Apple was asked once.
            #expect(apple.calls.withLock { $0.count } == 1)

            // Only admins; a user id must be a UUID; a user without App Store purchases has nothing to read.
            let mine = try await service.send(
                "POST", "/subscriptions/users/\(user.text())/appstore/refresh", token: try service.token(user))
            #expect(mine.status == 403)
            #expect(try await service.send("POST", "/subscriptions/users/nobody/appstore/refresh", token: admin).status == 404)
            #expect(
                try await service.send("POST", "/subscriptions/users/\(UUID().text())/appstore/refresh", token: admin).status
                    == 200)
            #expect(apple.calls.withLock { $0.count } == 1)
        }
        await apple.stop()
    }

    /// What Apple or the configuration can do wrong reaches the admin as a problem with a stable
    /// code; the purchase path never fails because of Apple.
    @Test func appleFailuresAreProblems() async throws {
        let apple = try FakeAppStoreAPI()
        let user = UUID()
        func refresh(_ service: SubscriptionsHarness) async throws -> Reply {
            try await service.send("POST", "/subscriptions/users/\(user.text())/appstore/refresh", token: try service.admin())
        }
        func purchase(_ service: SubscriptionsHarness, _ id: String) async throws {
            let jws = try Self.transaction(service.ca, id: id + "1", original: id + "0", user: user, days: 30)
            #expect(try await service.postTransaction(jws, user: user).status == 200)
        }
        // Not configured.
        try await withService(apple: nil) { service in
            try await purchase(service, "600000000")
            let reply = try await refresh(service)
            #expect(reply.status == 503)
            #expect(try reply.decode(Problem.self).code == .appStoreAPIUnconfigured)
        }
        try await withService(apple: apple) { service in
            try await purchase(service, "610000000")
            // Apple does not know it: nothing to read, not an error.
            #expect(try await refresh(service).status == 200)
            // Apple fails.
            apple.answers.withLock {
                $0["6100000000"] = .status(
                    500, headers: [:], body: #"{"errorCode":5000000,"errorMessage":"An unknown error occurred."}"#)
            }
            let refused = try await refresh(service)
            #expect(refused.status == 502)
            let problem = try refused.decode(Problem.self)
            #expect(problem.code == .appStoreAPIFailed && problem.detail?.contains("5000000") == true, "\(refused.text)")
            // An answer that is not a status response.
            apple.answers.withLock { $0["6100000000"] = .status(200, headers: [:], body: #"{"environment":"Sandbox"}"#) }
            let garbled = try await refresh(service)
            #expect(garbled.status == 502 && garbled.text.contains("not a status response"), "\(garbled.text)")
            // Apple rate-limits: the wait it asks for is passed on.
            apple.answers.withLock {
                $0["6100000000"] = .status(429, headers: ["Retry-After": "7"], body: #"{"errorCode":4290000}"#)
            }
            let limited = try await refresh(service)
            #expect(limited.status == 503 && limited.headers["Retry-After"] == "7")
        }
        // A wrong key id: Apple answers 401.
        try await withService(apple: apple, settings: ["PIER_SUBSCRIPTIONS_APPSTORE_KEY_ID": "WRONGKEY00"]) { service in
            try await purchase(service, "620000000")
            let reply = try await refresh(service)
            #expect(reply.status == 502 && reply.text.contains("401"), "\(reply.text)")
        }
        #expect(apple.calls.withLock { $0.contains { $0.tokenProblem != nil } })
        // Apple unreachable.
        let nowhere = try PortHolder()
        try await withService(
            apple: apple,
            settings: ["PIER_SUBSCRIPTIONS_APPSTORE_SANDBOX_API_URL": "http://127.0.0.1:\(nowhere.port)"]
        ) { service in
            try await purchase(service, "630000000")
            let reply = try await refresh(service)
            #expect(reply.status == 502 && reply.text.contains("could not be reached"), "\(reply.text)")
        }
        await apple.stop()
    }

    /// The three settings come together; a key file that holds no key is named.
    @Test func credentialsAreCheckedAtStart() throws {
        func failure(_ values: [String: String]) -> String? {
            do {
                _ = try SubscriptionsConfiguration(environment: Environment(values), production: false)
                return nil
            } catch {
                return error.description
            }
        }
        #expect(failure(["PIER_SUBSCRIPTIONS_APPSTORE_KEY_ID": "K"])?.contains("PIER_SUBSCRIPTIONS_APPSTORE_KEY_FILE") == true)
        let junk = FileManager.default.temporaryDirectory.appendingPathComponent("pier-junk-\(UUID()).p8")
        try "not a key".write(to: junk, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: junk) }
        let all = [
            "PIER_SUBSCRIPTIONS_APPSTORE_KEY_FILE": junk.path, "PIER_SUBSCRIPTIONS_APPSTORE_KEY_ID": "K",
            "PIER_SUBSCRIPTIONS_APPSTORE_ISSUER_ID": "I",
        ]
        #expect(failure(all)?.contains("holds no P-256 private key") == true)
        #expect(failure([:]) == nil)
    }
}
