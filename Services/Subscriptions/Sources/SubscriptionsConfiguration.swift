import PierCrypto
import PierRuntime
import PierService

/// The subscriptions service's own settings, from `PIER_SUBSCRIPTIONS_*`.
///
/// The variables and their defaults are declared in `SubscriptionsService.settings` (docs/settings.md).
public struct SubscriptionsConfiguration: Sendable {
    public var bundleID: String
    public var appAppleID: Int?
    public var roots: [Certificate]
    public var acceptSandbox: Bool
    public var production: Bool
    public var revocation: RevocationMode
    public var ocspTimeoutSeconds: Int
    /// The App Store Server API's credentials; nil when it is not configured.
    public var apiCredentials: AppStoreAPICredentials?
    public var apiURL: String
    public var sandboxAPIURL: String
    public var recheckSeconds: Int
    public var eventPollSeconds: Int
    /// The key that signs statuses; nil: generated in `dataDirectory` in development.
    public var signingKeyFile: String?
    public var dataDirectory: String
    public var signedStatusSeconds: Int
    /// Google Play (``GooglePlaySettings``); nil when it is off.
    public var google: GooglePlaySettings?

    /// Apple Root CA - G3, the root App Store signed data chains to.
    public static let appleRootG3 = String(decoding: PackageResources.AppleRootCA_G3_pem, as: UTF8.self)

    public init(environment: Environment, production: Bool) throws(Environment.Failure) {
        self.production = production
        if production {
            bundleID = try environment.required("PIER_SUBSCRIPTIONS_APPSTORE_BUNDLE_ID")
            let appleID = try environment.required("PIER_SUBSCRIPTIONS_APPSTORE_APP_APPLE_ID")
            guard let number = Int(appleID), number > 0 else {
                throw Environment.Failure(
                    variable: "PIER_SUBSCRIPTIONS_APPSTORE_APP_APPLE_ID", problem: "must be a positive number, got \"\(appleID)\""
                )
            }
            appAppleID = number
        } else {
            bundleID = environment.string("PIER_SUBSCRIPTIONS_APPSTORE_BUNDLE_ID", default: "dev.pier.app")
            let appleID = try environment.int("PIER_SUBSCRIPTIONS_APPSTORE_APP_APPLE_ID", default: 0, in: 0...Int.max)
            appAppleID = appleID == 0 ? nil : appleID
        }
        // Apple's guidance: a production server must cope with App Review, which tests the
        // production build with sandbox accounts. Sandbox facts never touch production's.
        acceptSandbox = try environment.bool("PIER_SUBSCRIPTIONS_APPSTORE_SANDBOX", default: true)
        revocation = try environment.choice("PIER_SUBSCRIPTIONS_APPSTORE_OCSP", default: .soft)
        ocspTimeoutSeconds = try environment.int("PIER_SUBSCRIPTIONS_APPSTORE_OCSP_TIMEOUT_S", default: 5, in: 1...60)
        apiURL = environment.string("PIER_SUBSCRIPTIONS_APPSTORE_API_URL", default: AppStoreServerAPI.productionURL)
        sandboxAPIURL = environment.string("PIER_SUBSCRIPTIONS_APPSTORE_SANDBOX_API_URL", default: AppStoreServerAPI.sandboxURL)
        let keyFile = environment.string("PIER_SUBSCRIPTIONS_APPSTORE_KEY_FILE")
        let keyID = environment.string("PIER_SUBSCRIPTIONS_APPSTORE_KEY_ID")
        let issuerID = environment.string("PIER_SUBSCRIPTIONS_APPSTORE_ISSUER_ID")
        if let keyFile, let keyID, let issuerID {
            do {
                apiCredentials = AppStoreAPICredentials(
                    key: try P256PrivateKey(pem: try readFile(keyFile)), keyID: keyID, issuerID: issuerID)
            } catch {
                throw Environment.Failure(
                    variable: "PIER_SUBSCRIPTIONS_APPSTORE_KEY_FILE", problem: "holds no P-256 private key (PEM): \(error)")
            }
        } else if keyFile != nil || keyID != nil || issuerID != nil {
            let missing =
                [
                    ("PIER_SUBSCRIPTIONS_APPSTORE_KEY_FILE", keyFile), ("PIER_SUBSCRIPTIONS_APPSTORE_KEY_ID", keyID),
                    ("PIER_SUBSCRIPTIONS_APPSTORE_ISSUER_ID", issuerID),
                ].first { $0.1 == nil }?.0 ?? "PIER_SUBSCRIPTIONS_APPSTORE_KEY_FILE"
            throw Environment.Failure(variable: missing, problem: "is required with the other App Store Server API settings")
        } else {
            apiCredentials = nil
        }
        recheckSeconds = try environment.int("PIER_SUBSCRIPTIONS_RECHECK_S", default: 300, in: 1...86_400)
        eventPollSeconds = try environment.int("PIER_SUBSCRIPTIONS_EVENT_POLL_S", default: 5, in: 1...3600)
        signingKeyFile = environment.string("PIER_SUBSCRIPTIONS_SIGNING_KEY_FILE")
        dataDirectory = environment.string("PIER_DATA_DIR", default: ".pier")
        signedStatusSeconds = try environment.int("PIER_SUBSCRIPTIONS_SIGNED_STATUS_S", default: 86_400, in: 60...604_800)
        google = try GooglePlaySettings(environment: environment)
        let files = environment.list("PIER_SUBSCRIPTIONS_APPSTORE_ROOTS")
        do {
            roots =
                files.isEmpty
                ? [try Certificate(pem: Self.appleRootG3)]
                : try files.flatMap { try Certificate.all(pem: try readFile($0)) }
        } catch {
            throw Environment.Failure(variable: "PIER_SUBSCRIPTIONS_APPSTORE_ROOTS", problem: "\(error)")
        }
        if roots.isEmpty {
            throw Environment.Failure(variable: "PIER_SUBSCRIPTIONS_APPSTORE_ROOTS", problem: "holds no PEM certificate")
        }
    }
}
