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
/// through the process's one HTTP client, with a timeout.
///
/// Google's quota is the app's, and anyone with an account can make Pier call Google: a call
/// made for an app's post is made once (the app retries), a token Google called unknown is not
/// asked about again for ``unknownFor``, and after a 429 no call is made until Google's
/// `Retry-After` has passed. The worker's and the notifications' calls (Google's own schedule)
/// are tried again on no answer or a 5xx, a moment apart.
final class GooglePlayAPI: Sendable {
    /// Why Google gave no answer; the description is safe to log and to show to the team.
    enum Failure: Error, CustomStringConvertible, Equatable {
        /// Google knows no such purchase token (HTTP 404 or 410, or 400 "Invalid Value" for a
        /// token it cannot read): final.
        case notFound
        /// Google described a purchase Pier cannot hold (a number out of range): final.
        case unreadable(String)
        /// Google refused (a 4xx other than those), or answered something unreadable.
        case refused(String)
        /// Google could not be reached, or stayed unavailable through the retries.
        case unreachable(String)
        /// Google asked Pier to slow down (HTTP 429): no call until `retryAfter` seconds passed.
        case throttled(retryAfter: Int)

        var description: String {
            switch self {
            case .notFound: "Google knows no such purchase"
            case .unreadable(let why): why
            case .refused(let why): why
            case .unreachable(let why): "Google Play could not be reached: \(why)"
            case .throttled(let seconds): "Google Play asked to slow down (HTTP 429); calls resume in \(seconds) s"
            }
        }

        /// When to try again, for a 503's `Retry-After`.
        var retryAfter: Int {
            if case .throttled(let seconds) = self { return seconds }
            return 30
        }
    }

    static let scope = "https://www.googleapis.com/auth/androidpublisher"
    static let attempts = 3
    /// How long a token Google called unknown is answered as unknown without asking again.
    static let unknownFor: Double = 600

    let settings: GooglePlaySettings
    private let client: HTTPClient
    private let timeout: Duration
    private let pause: Duration
    private let now: @Sendable () -> Date
    private let token = Mutex<(value: String, until: Date)?>(nil)
    /// No call before this (Google's last 429 and its `Retry-After`).
    private let quietUntil = Mutex<Date>(.distantPast)
    /// Tokens Google called unknown, and until when that answer stands (bounded).
    private let unknown = Mutex<[String: Date]>([:])
    static let maximumUnknown = 10_000

    init(
        settings: GooglePlaySettings, http: HTTPClient, timeout: Duration = .seconds(10), pause: Duration = .milliseconds(300),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.settings = settings
        self.client = http
        self.timeout = timeout
        self.pause = pause
        self.now = now
    }

    /// `purchases.subscriptionsv2.get`: the purchase `purchaseToken` stands for.
    ///
    /// - Parameter once: one call at most, and a token Google called unknown lately is answered
    ///   unknown without a call (an app's post: the app retries, and anyone may post).
    func subscription(_ purchaseToken: String, once: Bool = false) async throws(Failure) -> GoogleSubscription {
        if once, unknown.withLock({ $0[purchaseToken].map { $0 > now() } ?? false }) { throw .notFound }
        let response: HTTPClient.Response
        do {
            response = try await call(
                "GET",
                "/androidpublisher/v3/applications/\(Self.segment(settings.package))/purchases/subscriptionsv2/tokens/"
                    + Self.segment(purchaseToken),
                attempts: once ? 1 : Self.attempts, invalidIsUnknown: true)
        } catch .notFound {
            remember(unknown: purchaseToken)
            throw .notFound
        }
        do {
            return try GoogleSubscription(json: response.body)
        } catch {
            if case .outOfRange = error { throw .unreadable(error.description) }
            throw .refused(error.description)
        }
    }

    /// `purchases.subscriptions.acknowledge`: tells Google the purchase was granted (else it is
    /// refunded after three days). Acknowledging twice is harmless.
    func acknowledge(product: String, purchaseToken: String) async throws(Failure) {
        _ = try await call(
            "POST",
            "/androidpublisher/v3/applications/\(Self.segment(settings.package))/purchases/subscriptions/"
                + "\(Self.segment(product))/tokens/\(Self.segment(purchaseToken)):acknowledge",
            body: Array("{}".utf8))
    }

    /// A path segment as Google's paths take it: unreserved characters kept, every other byte
    /// percent-encoded, so nothing from outside can add a segment; `.` and `..`, which a client
    /// would resolve into another path, are refused as unknown tokens.
    static func segment(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 == UInt8(ascii: ".") }) { return String(repeating: "%2E", count: text.utf8.count) }
        return PercentEncoding.component(text)
    }

    private func remember(unknown token: String) {
        let until = now().addingTimeInterval(Self.unknownFor)
        unknown.withLock { unknown in
            if unknown.count >= Self.maximumUnknown {
                let now = now()
                unknown = unknown.filter { $0.value > now }
                if unknown.count >= Self.maximumUnknown { unknown.removeAll() }
            }
            unknown[token] = until
        }
    }

    /// One authorized call, tried up to `attempts` times while Google gives no answer or a 5xx;
    /// a 401 gets a new access token once. A 429 stops every call until its `Retry-After`.
    private func call(
        _ method: String, _ path: String, body: [UInt8]? = nil, attempts: Int = GooglePlayAPI.attempts,
        invalidIsUnknown: Bool = false
    ) async throws(Failure) -> HTTPClient.Response {
        var last = Failure.unreachable("no attempt made")
        var renewed = false
        var attempt = 0
        while attempt < attempts {
            let waiting = quietUntil.withLock { $0 }.timeIntervalSince(now())
            if waiting > 0 { throw .throttled(retryAfter: Int(waiting.rounded(.up))) }
            if attempt > 0 { try? await Task.sleep(for: pause * attempt) }
            attempt += 1
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
                // A new access token is not another call for the purchase: tried once more.
                renewed = true
                attempt -= 1
                token.withLock { $0 = nil }
                last = .refused("Google refused the access token")
            case 404, 410: throw .notFound
            case 400 where invalidIsUnknown: throw .notFound
            case 429:
                let seconds = Self.retryAfter(response.headers["Retry-After"])
                let until = now().addingTimeInterval(Double(seconds))
                quietUntil.withLock { $0 = max($0, until) }
                throw .throttled(retryAfter: seconds)
            case 500...599: last = .unreachable("HTTP \(response.status)")
            default: throw .refused("Google answered HTTP \(response.status)\(Self.reason(response.body))")
            }
        }
        throw last
    }

    /// `Retry-After` in seconds (1 to 3600; 60 when absent or a date).
    static func retryAfter(_ header: String?) -> Int {
        guard let header, let seconds = Int(header.trimmingWhitespace()) else { return 60 }
        return min(max(seconds, 1), 3600)
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
