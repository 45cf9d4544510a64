import PierCrypto
import PierHTTP
import PierJSON
import PierModels
import PierRuntime
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A client of Google's Play Developer API, authenticated as the app's service account (OAuth
/// 2.0's JWT bearer grant, RFC 7523: an RS256 assertion signed with the account's key, exchanged
/// for an access token that is kept until a minute before it expires). Only what Pier needs:
/// `purchases.subscriptionsv2.get` and `purchases.subscriptions.acknowledge`. Every exchange goes
/// through the process's one HTTP client, with a timeout; transient failures (no answer, 5xx,
/// 429) are tried again twice, a moment apart.
final class GooglePlayAPI: Sendable {
    /// Why Google gave no answer; the description is safe to log and to show to the team.
    enum Failure: Error, CustomStringConvertible, Equatable {
        /// Google knows no such purchase token (HTTP 404 or 410).
        case notFound
        /// Google refused (a 4xx other than those), or answered something unreadable.
        case refused(String)
        /// Google could not be reached, or stayed unavailable through the retries.
        case unreachable(String)

        var description: String {
            switch self {
            case .notFound: "Google knows no such purchase"
            case .refused(let why): why
            case .unreachable(let why): "Google Play could not be reached: \(why)"
            }
        }
    }

    static let scope = "https://www.googleapis.com/auth/androidpublisher"
    static let attempts = 3

    let settings: GooglePlaySettings
    private let client: HTTPClient
    private let timeout: Duration
    private let pause: Duration
    private let token = Mutex<(value: String, until: Date)?>(nil)

    init(settings: GooglePlaySettings, http: HTTPClient, timeout: Duration = .seconds(10), pause: Duration = .milliseconds(300)) {
        self.settings = settings
        self.client = http
        self.timeout = timeout
        self.pause = pause
    }

    /// `purchases.subscriptionsv2.get`: the purchase `purchaseToken` stands for.
    func subscription(_ purchaseToken: String) async throws(Failure) -> GoogleSubscription {
        let response = try await call(
            "GET", "/androidpublisher/v3/applications/\(settings.package)/purchases/subscriptionsv2/tokens/\(purchaseToken)")
        do {
            return try GoogleSubscription(json: response.body)
        } catch {
            throw .refused(error.description)
        }
    }

    /// `purchases.subscriptions.acknowledge`: tells Google the purchase was granted (else it is
    /// refunded after three days). Acknowledging twice is harmless.
    func acknowledge(product: String, purchaseToken: String) async throws(Failure) {
        _ = try await call(
            "POST",
            "/androidpublisher/v3/applications/\(settings.package)/purchases/subscriptions/\(product)/tokens/\(purchaseToken):acknowledge",
            body: Array("{}".utf8))
    }

    /// One authorized call, retried while transient; a 401 gets a new access token once.
    private func call(_ method: String, _ path: String, body: [UInt8]? = nil) async throws(Failure) -> HTTPClient.Response {
        var last = Failure.unreachable("no attempt made")
        var renewed = false
        for attempt in 1...Self.attempts {
            if attempt > 1 { try? await Task.sleep(for: pause * (attempt - 1)) }
            let bearer = try await accessToken()
            let response: HTTPClient.Response
            do {
                var headers: HTTPHeaders = ["Authorization": "Bearer \(bearer)"]
                if body != nil { headers.set("Content-Type", "application/json") }
                response = try await client.send(method, settings.apiURL + path, headers: headers, body: body, timeout: timeout)
            } catch {
                last = .unreachable(error.description)
                continue
            }
            switch response.status {
            case 200..<300: return response
            case 401 where !renewed:
                renewed = true
                token.withLock { $0 = nil }
                last = .refused("Google refused the access token")
            case 404, 410: throw .notFound
            case 429, 500...599: last = .unreachable("HTTP \(response.status)")
            default: throw .refused("Google answered HTTP \(response.status)\(Self.reason(response.body))")
            }
        }
        throw last
    }

    /// The access token kept, or a new one from the token endpoint.
    func accessToken(now: Date = Date()) async throws(Failure) -> String {
        if let kept = token.withLock({ $0 }), kept.until > now { return kept.value }
        let assertion: String
        do { assertion = try self.assertion(now: now) } catch {
            throw .refused("no assertion could be signed with the service account's key")
        }
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion
        let response: HTTPClient.Response
        do {
            response = try await client.send(
                "POST", settings.account.tokenURL, headers: ["Content-Type": "application/x-www-form-urlencoded"],
                body: Array(form.utf8), timeout: timeout)
        } catch {
            throw .unreachable(error.description)
        }
        guard response.status == 200 else {
            if response.status >= 500 || response.status == 429 {
                throw .unreachable("the token endpoint answered HTTP \(response.status)")
            }
            throw .refused("the token endpoint refused the service account: HTTP \(response.status)\(Self.reason(response.body))")
        }
        struct Granted: Decodable {
            var access_token: String
            var expires_in: Int?
        }
        guard let granted = try? WireDecoder.decode(Granted.self, from: response.body), !granted.access_token.isEmpty else {
            throw .refused("the token endpoint's answer holds no access_token")
        }
        let lifetime = min(max(granted.expires_in ?? 3600, 0), 3600)
        token.withLock { $0 = (granted.access_token, now.addingTimeInterval(Double(lifetime - 60))) }
        return granted.access_token
    }

    /// The JWT bearer assertion: the service account as `iss`, the scope, the token endpoint as
    /// `aud`, an hour of life.
    func assertion(now: Date = Date()) throws -> String {
        struct Claims: Encodable {
            var iss: String
            var scope: String
            var aud: String
            var iat: Int
            var exp: Int
        }
        let issued = Int(now.timeIntervalSince1970)
        let claims = Claims(
            iss: settings.account.email, scope: Self.scope, aud: settings.account.tokenURL, iat: issued, exp: issued + 3600)
        return try JWS.sign(
            payload: try JSON.encode(claims), header: JWSHeader(alg: "RS256", kid: settings.account.keyID, typ: "JWT"),
            key: settings.account.key)
    }

    /// Google's error body (`{"error": {"message": …}}` or `{"error": "…", "error_description": …}`), briefly.
    private static func reason(_ body: [UInt8]) -> String {
        let object = (try? WireDecoder.decode(JSONValue.self, from: body))?.objectValue
        let error = object?["error"]
        let text =
            error?.objectValue?["message"]?.stringValue ?? object?["error_description"]?.stringValue ?? error?.stringValue ?? ""
        return text.isEmpty ? "" : ": " + String(text.prefix(200))
    }
}
