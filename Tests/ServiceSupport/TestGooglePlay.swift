import Foundation
import PierCrypto
import PierHTTP
import PierTestSupport

/// A stand-in for Google's endpoints, shaped from Google's reference documentation: the OAuth 2.0
/// token endpoint (which checks the JWT bearer assertion as Google does: RS256 by the service
/// account's key, `iss`, `scope`, `aud`, `iat`/`exp`), `purchases.subscriptionsv2.get` answering
/// per token, `purchases.subscriptions.acknowledge`, and a push identity (a JWKS and OIDC tokens
/// for Pub/Sub pushes, played by ``TestIdentityProvider``).
public final class TestGooglePlay: Sendable {
    public static let package = "com.example.seeds"
    public static let email = "pier-reader@seeds-project.iam.gserviceaccount.com"
    public static let pushAccount = "pubsub-push@seeds-project.iam.gserviceaccount.com"
    public static let audience = "https://api.example.com/subscriptions/google/notifications"

    public let server: HTTPServer
    public let key: RSAPrivateKey
    public let keyFile: URL
    public let push: TestIdentityProvider
    /// Purchases by token, as `subscriptionsv2.get` answers them.
    public let purchases = Locked<[String: Data]>([:])
    /// Access tokens given, and the assertions refused (why).
    public let issued = Locked<Set<String>>([])
    public let refusals = Locked<[String]>([])
    public let reads = Locked<[String]>([])
    public let acknowledgements = Locked<[String]>([])
    /// While true, every API call answers 503 (Google unreachable, for what the service sees).
    public let down = Locked(false)
    /// Every call of the API that reached the stand-in, answered or not.
    public let calls = Locked(0)
    /// While set, every API call answers 429 with this `Retry-After` (the app's quota spent).
    public let throttled = Locked<Int?>(nil)
    /// While true, an unknown token is answered as Google answers a token it cannot read:
    /// 400 "Invalid Value" (else 404).
    public let invalidValue = Locked(false)

    public var url: String { "http://127.0.0.1:\(server.port)" }

    public var settings: [String: String] {
        [
            "PIER_SUBSCRIPTIONS_GOOGLE_PACKAGE": Self.package, "PIER_SUBSCRIPTIONS_GOOGLE_KEY_FILE": keyFile.path,
            "PIER_SUBSCRIPTIONS_GOOGLE_API_URL": url, "PIER_SUBSCRIPTIONS_GOOGLE_PUSH_AUDIENCE": Self.audience,
            "PIER_SUBSCRIPTIONS_GOOGLE_PUSH_SERVICE_ACCOUNT": Self.pushAccount,
            "PIER_SUBSCRIPTIONS_GOOGLE_JWKS_URL": push.jwksURL,
        ]
    }

    public init() throws {
        key = try RSAPrivateKey.generate()
        push = try TestIdentityProvider()
        let router = Router<BasicRequestContext>()
        let publicKey = try key.publicKey
        let tokenPath = "/token"
        let (purchases, issued, refusals, reads, acknowledgements, down, throttled, invalidValue, calls) = (
            purchases, issued, refusals, reads, acknowledgements, down, throttled, invalidValue, calls
        )
        let port = Locked(0)
        router.post(tokenPath) { request, _ in
            let form = Self.form(request.body)
            let audience = "http://127.0.0.1:\(port.withLock { $0 })" + tokenPath
            if let problem = Self.assertionProblem(form, key: publicKey, audience: audience) {
                refusals.withLock { $0.append(problem) }
                return Self.json(400, ["error": "invalid_grant", "error_description": problem])
            }
            let token = "ya29." + UUID().uuidString
            issued.withLock { _ = $0.insert(token) }
            return Self.json(200, ["access_token": token, "expires_in": 3599, "token_type": "Bearer"])
        }
        @Sendable func authorized(_ request: Request) -> Response? {
            calls.withLock { $0 += 1 }
            if down.withLock({ $0 }) { return Self.json(503, ["error": ["code": 503, "message": "Backend Error"]]) }
            if let seconds = throttled.withLock({ $0 }) {
                var response = Self.json(
                    429, ["error": ["code": 429, "message": "Rate Limit Exceeded", "status": "RESOURCE_EXHAUSTED"]])
                response.headers.set("Retry-After", String(seconds))
                return response
            }
            let bearer = request.headers["Authorization"].map { String($0.dropFirst("Bearer ".count)) } ?? ""
            guard issued.withLock({ $0.contains(bearer) }) else {
                return Self.json(401, ["error": ["code": 401, "message": "Invalid Credentials"]])
            }
            return nil
        }
        let base = "/androidpublisher/v3/applications/{package}/purchases"
        router.get(base + "/subscriptionsv2/tokens/{token}") { request, context in
            if let refused = authorized(request) { return refused }
            let token = context.parameters["token"] ?? ""
            reads.withLock { $0.append(token) }
            guard context.parameters["package"] == Self.package, let purchase = purchases.withLock({ $0[token] }) else {
                if invalidValue.withLock({ $0 }) {
                    return Self.json(
                        400,
                        [
                            "error": [
                                "code": 400, "message": "Invalid Value",
                                "errors": [["message": "Invalid Value", "domain": "global", "reason": "invalid"]],
                            ]
                        ])
                }
                return Self.json(404, ["error": ["code": 404, "message": "The purchase token was not found."]])
            }
            return Response(status: 200, headers: ["Content-Type": "application/json"], body: Array(purchase))
        }
        router.post(base + "/subscriptions/{product}/tokens/{action}") { request, context in
            if let refused = authorized(request) { return refused }
            let action = context.parameters["action"] ?? ""
            guard action.hasSuffix(":acknowledge") else { return Self.json(404, [:]) }
            let token = String(action.dropLast(":acknowledge".count))
            let known = purchases.withLock { all -> Bool in
                guard let data = all[token], var purchase = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
                else { return false }
                purchase["acknowledgementState"] = "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
                all[token] = try? JSONSerialization.data(withJSONObject: purchase)
                return true
            }
            guard known else { return Self.json(404, ["error": ["code": 404, "message": "not found"]]) }
            acknowledgements.withLock { $0.append(token) }
            return Self.json(200, [:])
        }
        let server = try HTTPServer.started(router, name: "fake-google")
        self.server = server
        port.withLock { $0 = server.port }
        keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("pier-google-\(UUID()).json")
        let account: [String: Any] = [
            "type": "service_account", "project_id": "seeds-project", "private_key_id": "k-1",
            "private_key": try key.pemRepresentation(), "client_email": Self.email,
            "token_uri": "http://127.0.0.1:\(server.port)" + tokenPath,
        ]
        try JSONSerialization.data(withJSONObject: account).write(to: keyFile)
    }

    public func stop() async {
        await server.shutdown()
        await push.server.shutdown()
        try? FileManager.default.removeItem(at: keyFile)
    }

    /// Sets what `subscriptionsv2.get` answers for `token`.
    public func set(_ token: String, _ purchase: [String: Any]) {
        let data = try? JSONSerialization.data(withJSONObject: purchase)
        purchases.withLock { $0[token] = data }
    }

    /// A `SubscriptionPurchaseV2` as Google writes it.
    public static func purchase(
        state: String = "SUBSCRIPTION_STATE_ACTIVE", product: String = "seeds_pro", basePlan: String = "monthly",
        expires: Date = Date().addingTimeInterval(30 * 86_400), autoRenew: Bool = true, account: UUID? = nil,
        test: Bool = false, linked: String? = nil, trial: Bool = false, acknowledged: Bool = false,
        price: (units: String, nanos: Int, currency: String) = ("4", 990_000_000, "USD"), pausedUntil: Date? = nil,
        order: String? = nil
    ) -> [String: Any] {
        var item: [String: Any] = [
            "productId": product, "expiryTime": time(expires),
            "autoRenewingPlan": [
                "autoRenewEnabled": autoRenew,
                "recurringPrice": ["currencyCode": price.currency, "units": price.units, "nanos": price.nanos],
            ],
            "offerDetails": ["basePlanId": basePlan, "offerTags": []],
            "latestSuccessfulOrderId": order ?? "GPA.3301-\(Int.random(in: 1000...9999))",
        ]
        if trial {
            item["offerDetails"] = ["basePlanId": basePlan, "offerId": "free-week", "offerTags": ["trial"]]
            item["offerPhase"] = ["freeTrial": [:]]
        }
        var purchase: [String: Any] = [
            "kind": "androidpublisher#subscriptionPurchaseV2", "regionCode": "US", "lineItems": [item],
            "startTime": time(Date().addingTimeInterval(-86_400)), "subscriptionState": state,
            "acknowledgementState": acknowledged ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING",
        ]
        if let account { purchase["externalAccountIdentifiers"] = ["obfuscatedExternalAccountId": account.uuidString] }
        if test { purchase["testPurchase"] = [:] }
        if let linked { purchase["linkedPurchaseToken"] = linked }
        if let pausedUntil { purchase["pausedStateContext"] = ["autoResumeTime": time(pausedUntil)] }
        return purchase
    }

    /// A Pub/Sub push body carrying `notification` (a developer notification's inner object).
    public static func pushBody(_ notification: [String: Any], messageID: String = UUID().uuidString, package: String = package)
        throws -> String
    {
        var developer: [String: Any] = ["version": "1.0", "packageName": package, "eventTimeMillis": "1733480000000"]
        developer.merge(notification) { $1 }
        let data = try JSONSerialization.data(withJSONObject: developer).base64EncodedString()
        let body: [String: Any] = [
            "message": ["data": data, "messageId": messageID, "message_id": messageID, "publishTime": time(Date())],
            "subscription": "projects/seeds-project/subscriptions/play-rtdn",
        ]
        return String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
    }

    public static func subscription(_ type: Int, token: String, product: String = "seeds_pro") -> [String: Any] {
        [
            "subscriptionNotification": [
                "version": "1.0", "notificationType": type, "purchaseToken": token, "subscriptionId": product,
            ]
        ]
    }

    /// The OIDC token Pub/Sub puts on a push: Google's claims, signed by the push identity's key.
    public func pushToken(_ overrides: [String: Any] = [:]) throws -> String {
        var claims: [String: Any] = [
            "iss": "https://accounts.google.com", "aud": Self.audience, "email": Self.pushAccount, "email_verified": true,
            "sub": "1134567890", "azp": "1134567890",
        ]
        claims.merge(overrides) { $1 }
        return try push.token(claims, removing: ["nonce", "nonce_supported", "c_hash", "is_private_email"])
    }

    public static func time(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    private static func json(_ status: Int, _ body: [String: Any]) -> Response {
        Response(
            status: status, headers: ["Content-Type": "application/json"],
            body: Array((try? JSONSerialization.data(withJSONObject: body)) ?? Data()))
    }

    private static func form(_ body: [UInt8]) -> [String: String] {
        var form: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        return form
    }

    /// Google's checks of a JWT bearer assertion; nil when it passes.
    static func assertionProblem(_ form: [String: String], key: RSAPublicKey, audience: String) -> String? {
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else { return "grant_type" }
        guard let assertion = form["assertion"], let jws = try? JWS(compact: assertion) else { return "no assertion" }
        guard jws.header.alg == "RS256", key.isValidRS256Signature(jws.signature, for: jws.signingInput) else {
            return "signature"
        }
        guard let claims = try? JSONSerialization.jsonObject(with: Data(jws.payload)) as? [String: Any] else { return "claims" }
        let now = Int(Date().timeIntervalSince1970)
        guard claims["iss"] as? String == email else { return "iss" }
        guard
            (claims["scope"] as? String)?.split(separator: " ").contains("https://www.googleapis.com/auth/androidpublisher")
                == true
        else { return "scope" }
        guard claims["aud"] as? String == audience else { return "aud" }
        guard let iat = claims["iat"] as? Int, let exp = claims["exp"] as? Int, iat <= now + 60, exp > now, exp - iat <= 3600
        else { return "iat/exp" }
        return nil
    }
}
