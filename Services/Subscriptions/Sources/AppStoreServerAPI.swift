import PierCrypto
import PierHTTP
import PierJSON
import PierModels
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The In-App Purchase key and the ids App Store Connect gives with it.
public struct AppStoreAPICredentials: Sendable {
    public var key: P256PrivateKey
    public var keyID: String
    public var issuerID: String

    public init(key: P256PrivateKey, keyID: String, issuerID: String) {
        self.key = key
        self.keyID = keyID
        self.issuerID = issuerID
    }
}

/// A client of Apple's App Store Server API: what Pier asks Apple itself, authenticated by a JWT
/// signed ES256 with the app's In-App Purchase key (Apple's "Generating JSON Web Tokens for API
/// requests"). Only the read Pier needs: Get All Subscription Statuses.
struct AppStoreServerAPI: Sendable {
    typealias Credentials = AppStoreAPICredentials

    /// Why Apple gave no statuses; the description is safe to log and to show to an admin.
    enum Failure: Error, CustomStringConvertible {
        /// Apple knows no such transaction (HTTP 404), in this environment.
        case notFound
        /// Apple asked to wait (HTTP 429).
        case rateLimited(retryAfter: Int)
        /// Apple answered with an error, or with something that is not a status response.
        case refused(String)
        /// Apple could not be reached.
        case unreachable(String)

        var description: String {
            switch self {
            case .notFound: "Apple knows no such transaction"
            case .rateLimited(let seconds): "Apple asked to wait \(seconds) s"
            case .refused(let why): why
            case .unreachable(let why): "Apple could not be reached: \(why)"
            }
        }
    }

    /// `StatusResponse`: every subscription of the customer in the app, by group.
    struct StatusResponse: Decodable, Sendable {
        struct Group: Decodable, Sendable {
            var subscriptionGroupIdentifier: String?
            var lastTransactions: [LastTransaction]
        }
        struct LastTransaction: Decodable, Sendable {
            var originalTransactionId: String
            var status: Int?
            var signedTransactionInfo: String
            var signedRenewalInfo: String?
        }
        var environment: String?
        var bundleId: String?
        var data: [Group]
    }

    static let productionURL = "https://api.storekit.itunes.apple.com"
    static let sandboxURL = "https://api.storekit-sandbox.itunes.apple.com"
    /// Apple accepts tokens that live up to an hour; Pier makes one per request, short-lived.
    static let tokenLifetime = 300

    let credentials: Credentials
    let bundleID: String
    let productionURL: String
    let sandboxURL: String
    let client: HTTPClient
    let timeout: Duration

    init(
        credentials: Credentials, bundleID: String, productionURL: String, sandboxURL: String, http: HTTPClient,
        timeout: Duration = .seconds(10)
    ) {
        self.credentials = credentials
        self.bundleID = bundleID
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.client = http
        self.timeout = timeout
    }

    private struct Claims: Encodable {
        var iss: String
        var iat: Int
        var exp: Int
        var aud: String
        var bid: String
    }

    /// The bearer token of one request.
    func token(now: Date = Date()) throws -> String {
        let issued = Int(now.timeIntervalSince1970)
        let claims = Claims(
            iss: credentials.issuerID, iat: issued, exp: issued + Self.tokenLifetime, aud: "appstoreconnect-v1", bid: bundleID)
        return try JWS.sign(
            payload: try JSON.encode(claims), header: JWSHeader(alg: "ES256", kid: credentials.keyID, typ: "JWT"),
            key: credentials.key)
    }

    /// `GET /inApps/v1/subscriptions/{transactionId}` in `environment` (`production` or `sandbox`).
    func subscriptionStatuses(transactionID: String, environment: String) async throws(Failure) -> StatusResponse {
        let base = environment == "sandbox" ? sandboxURL : productionURL
        // Apple's transaction ids are digits; nothing else goes into the path.
        guard !transactionID.isEmpty, transactionID.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { throw .refused("the transaction id \(transactionID) is not a number") }
        let id = transactionID
        let bearer: String
        do {
            bearer = try token()
        } catch {
            throw .refused("no token could be signed with the In-App Purchase key")
        }
        let response: HTTPClient.Response
        do {
            response = try await client.send(
                "GET", "\(base)/inApps/v1/subscriptions/\(id)", headers: ["Authorization": "Bearer \(bearer)"],
                timeout: timeout)
        } catch {
            throw .unreachable(error.description)
        }
        switch response.status {
        case 200:
            do {
                return try WireDecoder.decode(StatusResponse.self, from: response.body)
            } catch {
                throw .refused("Apple's answer is not a status response")
            }
        case 404: throw .notFound
        case 429: throw .rateLimited(retryAfter: Int(response.headers["Retry-After"] ?? "") ?? 60)
        default:
            // Apple's error body: {"errorCode": 4010000, "errorMessage": "…"}.
            struct AppleError: Decodable {
                var errorCode: Int?
                var errorMessage: String?
            }
            let error = try? WireDecoder.decode(AppleError.self, from: response.body)
            let detail = [error?.errorCode.map(String.init), error?.errorMessage].compactMap { $0 }.joined(separator: " ")
            throw .refused("Apple answered HTTP \(response.status)" + (detail.isEmpty ? "" : ": \(detail)"))
        }
    }
}
