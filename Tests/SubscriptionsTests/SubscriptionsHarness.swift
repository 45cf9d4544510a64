import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierServiceTestSupport
import PierTestSupport

@testable import SubscriptionsService

/// A live subscriptions service on an ephemeral port and its own database, trusting a test CA
/// (shaped like Apple's) and a test token key.
final class SubscriptionsHarness: Sendable {
    let live: LiveService<SubscriptionsService>
    let tokens: TestTokens
    let ca: TestCA
    var pool: PostgresPool { live.pool }

    static let bundleID = AppStorePayload.bundleID
    static let appAppleID = AppStorePayload.appAppleID

    /// - Parameters:
    ///   - roots: the trusted roots (default: the test CA's root only).
    ///   - production: the service configured as in production (the rest of the host is not).
    static func start(
        database: String, ca: TestCA? = nil, roots: [Certificate]? = nil, settings: [String: String] = [:],
        production: Bool = false
    ) async throws -> SubscriptionsHarness {
        let ca = try ca ?? TestCA()
        let tokens = try TestTokens()
        var environment = [
            "PIER_LOG_LEVEL": "error", "PIER_SUBSCRIPTIONS_APPSTORE_BUNDLE_ID": bundleID,
            "PIER_SUBSCRIPTIONS_APPSTORE_APP_APPLE_ID": String(appAppleID), "PIER_SUBSCRIPTIONS_EVENT_POLL_S": "1",
        ]
        environment.merge(settings) { $1 }
        let live = try await LiveService<SubscriptionsService>.start(
            database: database, settings: environment, logger: Logger(service: "subscriptions", level: .error),
            keys: tokens.keys
        ) { context in
            var configuration = try SubscriptionsConfiguration(
                environment: context.configuration.environment, production: production)
            configuration.roots = roots ?? [ca.root.certificate]
            return try SubscriptionsService.make(context: context, configuration: configuration)
        }
        return SubscriptionsHarness(live: live, tokens: tokens, ca: ca)
    }

    /// Runs `body` against a fresh service (on a fresh database) with the two plans of
    /// ``createPlans()``, and stops it whatever happens.
    static func with(
        database: String, settings: [String: String] = [:], _ body: (SubscriptionsHarness) async throws -> Void
    ) async throws {
        let harness = try await start(database: database, settings: settings)
        do {
            try await harness.createPlans()
            try await body(harness)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    private init(live: LiveService<SubscriptionsService>, tokens: TestTokens, ca: TestCA) {
        self.live = live
        self.tokens = tokens
        self.ca = ca
    }

    func stop() async { await live.stop() }

    func token(_ user: UUID, role: String = "user") throws -> String { try tokens.token(user, role: role) }

    func admin() throws -> String { try tokens.admin() }

    func send(_ method: String, _ path: String, json: String? = nil, token: String? = nil, headers: HTTPHeaders = [:])
        async throws -> Reply
    {
        try await live.http.send(method, path, json: json, token: token, headers: headers)
    }

    /// Creates the plan `pro-monthly` (entitlement `pro`, product `pier.pro.monthly`) and
    /// `team-yearly` (entitlements `pro`, `team`).
    func createPlans() async throws {
        let admin = try admin()
        for body in [
            #"{"id":"pro-monthly","name":"Pro","price":499,"currency":"USD","billingPeriod":"P1M","trialPeriod":"P7D","entitlements":["pro"],"appStoreProductIds":["pier.pro.monthly"],"googleProductIds":["seeds_pro"]}"#,
            #"{"id":"team-yearly","name":"Team","price":9900,"currency":"EUR","billingPeriod":"P1Y","entitlements":["pro","team"],"appStoreProductIds":["pier.team.yearly"],"googleProductIds":["seeds_team:yearly"]}"#,
        ] {
            let reply = try await send("POST", "/subscriptions/plans", json: body, token: admin)
            guard reply.status == 201 else { throw TestCAError("plan creation answered \(reply.status): \(reply.text)") }
        }
    }

    func status(_ user: UUID) async throws -> SubscriptionStatus {
        try await send("GET", "/subscriptions/me", token: try token(user)).decode(SubscriptionStatus.self)
    }

    func postTransaction(_ jws: String, user: UUID) async throws -> Reply {
        try await send(
            "POST", "/subscriptions/appstore/transactions", json: #"{"signedTransaction":"\#(jws)"}"#, token: try token(user))
    }

    func postNotification(_ jws: String) async throws -> Reply {
        try await send("POST", "/subscriptions/appstore/notifications", json: #"{"signedPayload":"\#(jws)"}"#)
    }
}
