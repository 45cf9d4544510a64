import Foundation
import PierModels
import PierPostgres
import PierService
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import PierClient

/// `subscriptions.updates` as an app meets it in production: through a gateway in proxy mode,
/// in front of the services in another server, which is killed and started again mid-stream.
@Suite(.serialized) struct LiveThroughProxyTests {
    /// The services (one process), trusting a test CA shaped like Apple's, on `port` (0: any).
    static func services(_ url: String, port: Int, ca: TestCA, data: String) async throws -> Hosted {
        let roots = data + "/roots.pem"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        try ca.rootPEM.write(toFile: roots, atomically: true, encoding: .utf8)
        return try await EmbeddedStack.start(
            databaseURL: url, port: port,
            settings: [
                "PIER_DATA_DIR": data, "PIER_SUBSCRIPTIONS_APPSTORE_ROOTS": roots,
                "PIER_SUBSCRIPTIONS_APPSTORE_BUNDLE_ID": AppStorePayload.bundleID,
                "PIER_SUBSCRIPTIONS_APPSTORE_APP_APPLE_ID": String(AppStorePayload.appAppleID),
                "PIER_AUTH_REQUIRE_MFA_FOR_ROLES": "none", "PIER_AUTH_HASHES_PER_ADDRESS": "1000",
                "PIER_AUTH_LOGINS_PER_ADDRESS_PER_MINUTE": "100000",
            ])
    }

    @Test func grantsRevocationsAndRefundsArriveThroughTheProxyAndAcrossARestart() async throws {
        let ca = try TestCA()
        let url = try await TestDatabase.create("pier_test_live_proxy")
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("pier-live-proxy-\(UUID())").path
        var services = try await Self.services(url, port: 0, ca: ca, data: data)
        let port = services.server.port
        let upstream = "http://127.0.0.1:\(port)"
        let gateway = try await EmbeddedStack.proxy(
            ["/auth=\(upstream);timeout=30000", "/subscriptions=\(upstream);timeout=30000"])
        let base = URL(string: "http://127.0.0.1:\(gateway.server.port)")!
        let options = PierClient.Options(retry: RetryPolicy(maxAttempts: 3, baseDelay: 0.05, maxDelay: 0.2))

        let admin = PierClient(baseURL: base, options: options)
        let adminEmail = "admin-\(UUID().uuidString.prefix(8).lowercased())@example.com"
        try await admin.auth.register(email: adminEmail, password: "an admin passphrase")
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 1))
        defer { pool.close() }
        try await pool.execute("UPDATE auth.users SET role = 'admin' WHERE email = \(adminEmail)")
        try await admin.auth.login(email: adminEmail, password: "an admin passphrase")
        try await admin.admin.createPlan(
            CreatePlan(
                id: "pro", name: "Pro", price: 499, currency: "USD", billingPeriod: "P1M", entitlements: ["pro"],
                appStoreProductIds: ["pier.pro.monthly"]))

        let pier = PierClient(baseURL: base, options: options)
        let user = try await pier.auth.register(
            email: "app-\(UUID().uuidString.prefix(8).lowercased())@example.com", password: "a long enough passphrase")
        let received = PierClientTests.Received()
        let listening = PierClientTests.listen(pier, into: received)
        #expect(await eventually { received.all.count == 1 })
        /// Waits for the status `expected` says, and tells how long it took from `started`.
        func seen(_ what: String, since started: ContinuousClock.Instant, _ expected: @escaping (SubscriptionStatus) -> Bool)
            async -> Bool
        {
            let arrived = await eventually { received.all.last.map(expected) ?? false }
            print("subscriptions.updates through the proxy: \(what) seen after \(ContinuousClock.now - started)")
            return arrived
        }

        // A grant by the team, and its revocation.
        var started = ContinuousClock.now
        let grant = try await admin.admin.grant(CreateGrant(userId: user.id, planId: "pro", duration: "P7D", reason: "proxy"))
        #expect(await seen("a grant", since: started) { $0.active && $0.source == "grant" })
        started = .now
        _ = try await admin.admin.revokeGrant(grant.id)
        #expect(await seen("a revocation", since: started) { !$0.active })

        // A purchase the app sends, then Apple's refund notification (Apple calls the services' URL).
        let now = Date()
        let purchase = try ca.sign(
            AppStorePayload.transaction(
                id: "7001", original: "7000", purchased: now, expires: now.addingTimeInterval(30 * 86_400), user: user.id))
        started = .now
        _ = try await pier.subscriptions.submit(signedTransaction: purchase)
        #expect(await seen("a purchase", since: started) { $0.active })
        let refunded = try ca.sign(
            AppStorePayload.transaction(
                id: "7001", original: "7000", purchased: now, expires: now.addingTimeInterval(30 * 86_400),
                signed: now.addingTimeInterval(2), revoked: now.addingTimeInterval(2), user: user.id))
        let notification = try ca.sign(AppStorePayload.notification("REFUND", transaction: refunded, renewal: nil))
        started = .now
        _ = try await admin.call(
            "POST", "/subscriptions/appstore/notifications", json: Data(#"{"signedPayload":"\#(notification)"}"#.utf8),
            signedIn: false)
        #expect(await seen("a refund", since: started) { $0.status == "revoked" && !$0.active })
        #expect(await !pier.subscriptions.isEntitled("pro"))

        // The services killed mid-stream and started again: the stream comes back by itself
        // (through the gateway's 502s meanwhile), and the next change arrives.
        await services.shutdown()
        services = try await Self.services(url, port: port, ca: ca, data: data)
        started = .now
        _ = try await admin.admin.grant(CreateGrant(userId: user.id, planId: "pro", duration: "P7D", reason: "after"))
        #expect(await seen("a grant after a restart", since: started) { $0.active && $0.source == "grant" })
        #expect(await pier.subscriptions.isEntitled("pro"))

        await pier.auth.logout()
        await listening.value
        await gateway.shutdown()
        await services.shutdown()
    }
}
