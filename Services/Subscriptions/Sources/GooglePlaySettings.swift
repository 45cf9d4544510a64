import PierCrypto
import PierJSON
import PierRuntime
import PierService

/// Google Play's settings, from `PIER_SUBSCRIPTIONS_GOOGLE_*`: off unless the package is named.
///
/// The variables and their defaults are declared in `SubscriptionsService.settings` (docs/settings.md).
public struct GooglePlaySettings: Sendable {
    /// A service account's JSON key, as the Cloud console downloads it.
    public struct ServiceAccount: Sendable {
        public var email: String
        public var key: RSAPrivateKey
        public var keyID: String?
        public var tokenURL: String
    }

    public var package: String
    public var account: ServiceAccount
    public var apiURL: String
    public var pushAudience: String?
    public var pushServiceAccount: String?
    public var jwksURL: String
    public var testPurchasesCount: Bool
    public var reconcileSeconds: Int
    public var postsPerAccountPerMinute: Int
    public var postsPerAddressPerMinute: Int

    public static let apiURL = "https://androidpublisher.googleapis.com"
    public static let jwksURL = "https://www.googleapis.com/oauth2/v3/certs"
    public static let tokenURL = "https://oauth2.googleapis.com/token"

    /// Nil when `PIER_SUBSCRIPTIONS_GOOGLE_PACKAGE` is not set.
    public init?(environment: Environment) throws(Environment.Failure) {
        guard let package = environment.string("PIER_SUBSCRIPTIONS_GOOGLE_PACKAGE") else { return nil }
        guard Self.isPackage(package) else {
            throw Environment.Failure(
                variable: "PIER_SUBSCRIPTIONS_GOOGLE_PACKAGE", problem: "must be a package name such as com.example.app")
        }
        self.package = package
        let keyFile = try environment.required("PIER_SUBSCRIPTIONS_GOOGLE_KEY_FILE")
        do {
            account = try Self.serviceAccount(try readFile(keyFile))
        } catch {
            throw Environment.Failure(
                variable: "PIER_SUBSCRIPTIONS_GOOGLE_KEY_FILE", problem: "holds no service account key (JSON): \(error)")
        }
        apiURL = environment.string("PIER_SUBSCRIPTIONS_GOOGLE_API_URL", default: Self.apiURL)
        pushAudience = environment.string("PIER_SUBSCRIPTIONS_GOOGLE_PUSH_AUDIENCE")
        pushServiceAccount = environment.string("PIER_SUBSCRIPTIONS_GOOGLE_PUSH_SERVICE_ACCOUNT")
        if pushAudience != nil, pushServiceAccount == nil {
            throw Environment.Failure(
                variable: "PIER_SUBSCRIPTIONS_GOOGLE_PUSH_SERVICE_ACCOUNT", problem: "is required with the push audience")
        }
        jwksURL = environment.string("PIER_SUBSCRIPTIONS_GOOGLE_JWKS_URL", default: Self.jwksURL)
        testPurchasesCount = try environment.bool("PIER_SUBSCRIPTIONS_GOOGLE_TEST_PURCHASES", default: true)
        reconcileSeconds = try environment.int("PIER_SUBSCRIPTIONS_GOOGLE_RECONCILE_S", default: 600, in: 10...86_400)
        postsPerAccountPerMinute = try environment.int(
            "PIER_SUBSCRIPTIONS_GOOGLE_POSTS_PER_ACCOUNT_PER_MINUTE", default: 10, in: 1...10_000)
        postsPerAddressPerMinute = try environment.int(
            "PIER_SUBSCRIPTIONS_GOOGLE_POSTS_PER_ADDRESS_PER_MINUTE", default: 30, in: 1...100_000)
    }

    /// Reads a service account's JSON key: `client_email`, `private_key` (PEM), `private_key_id`, `token_uri`.
    static func serviceAccount(_ text: String) throws -> ServiceAccount {
        struct Key: Decodable {
            var client_email: String
            var private_key: String
            var private_key_id: String?
            var token_uri: String?
        }
        let key = try WireDecoder.decode(Key.self, from: Array(text.utf8))
        return ServiceAccount(
            email: key.client_email, key: try RSAPrivateKey(pem: key.private_key), keyID: key.private_key_id,
            tokenURL: key.token_uri ?? tokenURL)
    }

    /// Android's package names: two or more dot-separated parts, each a letter then letters,
    /// digits and `_`.
    static func isPackage(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count >= 2 && text.utf8.count <= 255
            && parts.allSatisfy { part in
                guard let first = part.first, first.isASCII, first.isLetter else { return false }
                return part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
            }
    }
}
