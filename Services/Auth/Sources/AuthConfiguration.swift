import PierAppAssociation
import PierCrypto
import PierIdentity
import PierJSON
import PierModels
import PierRuntime
import PierService

/// The auth service's own settings, from `PIER_AUTH_*`.
///
/// The variables and their defaults are declared in ``AuthService/settings`` (docs/settings.md).
public struct AuthConfiguration: Sendable {
    public var signingKeyFile: String?
    public var previousKeyFiles: [String]
    public var dataDirectory: String
    public var production: Bool
    public var accessTokenTTL: Int
    public var refreshTokenTTLDays: Int
    public var refreshGraceSeconds: Int
    public var passwordMinimumLength: Int
    public var hasher: Argon2idHasher
    public var hashThreads: Int
    public var hashQueueLimit: Int
    public var accountFailureLimit: Int
    public var hashesPerAddress: Int
    public var loginsPerAddressPerMinute: Int
    public var appName: String
    public var publicURL: String
    public var smtpURL: String?
    public var smtpUser: String?
    public var smtpPassword: String?
    public var smtpCAFile: String?
    public var mailFrom: String
    public var requireVerifiedEmail: Bool
    public var mailRetrySeconds: Int
    public var mailPollSeconds: Int
    public var forgotPerAddressPerHour: Int
    /// Anonymous accounts: sign-ups per installation a day and per client address an hour, and
    /// the days an unused one is kept.
    public var anonymous: AnonymousLimits
    /// App Attest for anonymous sign-ups (`PIER_AUTH_APP_ATTEST_*`).
    public var appAttest: AppAttestSettings
    /// Sign in with Apple and the OpenID Connect providers, by name (`apple` for Apple).
    var identityProviders: [String: IdentityProvider]
    public var exportURLs: [String]
    public var webhooks: WebhookOptions
    public var mfaKeyFile: String?
    /// Sign in with Apple's token exchange and revocation: team id, key id, key file, client id,
    /// endpoints' base; nil when off.
    public var appleTokens: (teamID: String, keyID: String, keyFile: String, clientID: String, baseURL: String)?
    public var appleRetrySeconds: Int
    /// The relying party passkeys are bound to: its id (a domain), name, and allowed origins.
    public var passkeyRPID: String
    public var passkeyRPName: String
    public var passkeyOrigins: [String]
    /// Roles that must sign in with a second factor before the team's routes answer them.
    public var requireMFAForRoles: Set<AccountRole>

    /// - Parameter serving: the address this process serves (`PIER_HOST`, `PIER_PORT`), the
    ///   default base of mailed links.
    public init(
        environment: Environment, production: Bool, serving: (host: String, port: Int)? = nil, events: [EventDeclaration] = []
    )
        throws(Environment.Failure)
    {
        self.production = production
        signingKeyFile = environment.string("PIER_AUTH_SIGNING_KEY_FILE")
        if production && signingKeyFile == nil {
            throw Environment.Failure(variable: "PIER_AUTH_SIGNING_KEY_FILE", problem: "is required in production")
        }
        previousKeyFiles = environment.list("PIER_AUTH_PREVIOUS_KEY_FILES")
        dataDirectory = environment.string("PIER_DATA_DIR", default: ".pier")
        accessTokenTTL = try environment.int("PIER_AUTH_ACCESS_TTL_S", default: 900, in: 30...86_400)
        refreshTokenTTLDays = try environment.int("PIER_AUTH_REFRESH_TTL_DAYS", default: 30, in: 1...365)
        refreshGraceSeconds = try environment.int("PIER_AUTH_REFRESH_GRACE_S", default: 30, in: 0...300)
        passwordMinimumLength = try environment.int("PIER_AUTH_PASSWORD_MIN_LENGTH", default: 8, in: 8...128)
        hasher = Argon2idHasher(
            memoryKiB: UInt32(try environment.int("PIER_AUTH_ARGON2_MEMORY_KIB", default: 19_456, in: 8...4_194_304)),
            iterations: UInt32(try environment.int("PIER_AUTH_ARGON2_ITERATIONS", default: 2, in: 1...100)),
            parallelism: UInt32(try environment.int("PIER_AUTH_ARGON2_PARALLELISM", default: 1, in: 1...64)))
        hashThreads = try environment.int("PIER_AUTH_HASH_THREADS", default: System.coreCount, in: 1...256)
        hashQueueLimit = try environment.int("PIER_AUTH_HASH_QUEUE", default: 64, in: 0...100_000)
        accountFailureLimit = try environment.int("PIER_AUTH_THROTTLE_ACCOUNT", default: 5, in: 1...1000)
        hashesPerAddress = try environment.int("PIER_AUTH_HASHES_PER_ADDRESS", default: 2, in: 1...10_000)
        loginsPerAddressPerMinute = try environment.int(
            "PIER_AUTH_LOGINS_PER_ADDRESS_PER_MINUTE", default: 60, in: 1...1_000_000_000)
        appName = environment.string("PIER_APP_NAME", default: "Pier")
        publicURL = environment.string(
            "PIER_AUTH_PUBLIC_URL", default: Self.url(serving: serving ?? (host: "127.0.0.1", port: 8080)))
        while publicURL.hasSuffix("/") { publicURL.removeLast() }
        guard publicURL.hasPrefix("https://") || publicURL.hasPrefix("http://") else {
            throw Environment.Failure(variable: "PIER_AUTH_PUBLIC_URL", problem: "must start with https:// or http://")
        }
        smtpURL = environment.string("PIER_AUTH_SMTP_URL")
        if let smtpURL, !(smtpURL.hasPrefix("smtp://") || smtpURL.hasPrefix("smtps://")) {
            throw Environment.Failure(variable: "PIER_AUTH_SMTP_URL", problem: "must start with smtp:// or smtps://")
        }
        smtpUser = environment.string("PIER_AUTH_SMTP_USER")
        smtpPassword = try Self.secret(environment, "PIER_AUTH_SMTP_PASSWORD_FILE")
        smtpCAFile = environment.string("PIER_AUTH_SMTP_CA_FILE")
        mailFrom = environment.string("PIER_AUTH_MAIL_FROM", default: "\(appName) <no-reply@localhost>")
        requireVerifiedEmail = try environment.bool("PIER_AUTH_REQUIRE_VERIFIED_EMAIL", default: false)
        mailRetrySeconds = try environment.int("PIER_AUTH_MAIL_RETRY_S", default: 30, in: 1...3600)
        mailPollSeconds = try environment.int("PIER_AUTH_MAIL_POLL_S", default: 5, in: 1...3600)
        forgotPerAddressPerHour = try environment.int("PIER_AUTH_FORGOT_PER_ADDRESS_PER_HOUR", default: 10, in: 1...1_000_000)
        anonymous = try AnonymousLimits(environment)
        appAttest = try AppAttestSettings(environment)
        identityProviders = try Self.identityProviders(environment)
        appleTokens = try Self.appleTokens(environment)
        appleRetrySeconds = try environment.int("PIER_AUTH_APPLE_RETRY_S", default: 60, in: 1...3600)
        webhooks = try WebhookOptions(environment, known: WebhookEvents.builtIn.adding(events))
        let authority = publicURL.split(separator: "/", omittingEmptySubsequences: false).dropFirst(2).first ?? ""
        let origin = publicURL.prefix { $0 != ":" } + "://" + authority
        let host =
            authority.hasPrefix("[") ? String(authority.prefix { $0 != "]" }.dropFirst()) : String(authority.prefix { $0 != ":" })
        passkeyRPID = environment.string("PIER_AUTH_PASSKEY_RP_ID", default: host).lowercased()
        passkeyRPName = environment.string("PIER_AUTH_PASSKEY_RP_NAME", default: appName)
        let originList = environment.list("PIER_AUTH_PASSKEY_ORIGINS")
        passkeyOrigins = originList.isEmpty ? [String(origin)] : originList
        passkeyOrigins += try AppAssociation(environment: environment).androidOrigins
        if let bad = passkeyOrigins.first(where: {
            !($0.hasPrefix("https://") || $0.hasPrefix("http://") || $0.hasPrefix("android:apk-key-hash:"))
        }) {
            throw Environment.Failure(
                variable: "PIER_AUTH_PASSKEY_ORIGINS", problem: "\"\(bad)\" is not an https:// origin or android:apk-key-hash:")
        }
        guard !passkeyRPID.isEmpty, !passkeyRPID.contains("/") else {
            throw Environment.Failure(variable: "PIER_AUTH_PASSKEY_RP_ID", problem: "must be a domain such as example.com")
        }
        mfaKeyFile = environment.string("PIER_AUTH_MFA_KEY_FILE")
        if production && mfaKeyFile == nil {
            throw Environment.Failure(variable: "PIER_AUTH_MFA_KEY_FILE", problem: "is required in production")
        }
        requireMFAForRoles = try Self.rolesNeedingMFA(environment)
        exportURLs = environment.list("PIER_AUTH_EXPORT_URLS")
        if let bad = exportURLs.first(where: { !($0.hasPrefix("http://") || $0.hasPrefix("https://")) }) {
            throw Environment.Failure(variable: "PIER_AUTH_EXPORT_URLS", problem: "\"\(bad)\" is not an http(s) URL")
        }
    }

    /// `PIER_AUTH_OIDC_PROVIDERS` and Sign in with Apple (`PIER_AUTH_APPLE_AUDIENCES`), by name.
    static func identityProviders(_ environment: Environment) throws(Environment.Failure) -> [String: IdentityProvider] {
        var providers: [String: IdentityProvider] = [:]
        if let text = environment.string("PIER_AUTH_OIDC_PROVIDERS") {
            let listed: [IdentityProvider]
            do {
                listed = try WireDecoder.decode([IdentityProvider].self, from: Array(text.utf8))
            } catch {
                throw Environment.Failure(
                    variable: "PIER_AUTH_OIDC_PROVIDERS",
                    problem: "must be a JSON array of {name, issuer, jwksURL, audiences, nonce?}: \(error)")
            }
            for provider in listed {
                let valid =
                    !provider.name.isEmpty && provider.name != "apple"
                    && provider.name.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }
                    && !provider.audiences.isEmpty && ["plain", "hashed", nil].contains(provider.nonce)
                    && Self.isKeySetURL(provider.jwksURL) && provider.issuer.hasPrefix("http")
                guard valid else {
                    throw Environment.Failure(
                        variable: "PIER_AUTH_OIDC_PROVIDERS",
                        problem:
                            "provider \"\(provider.name)\": a lowercase name other than apple, an http(s) issuer, an https jwksURL (http only to the loopback), audiences, nonce plain or hashed"
                    )
                }
                providers[provider.name] = provider
            }
        }
        let appleAudiences = environment.list("PIER_AUTH_APPLE_AUDIENCES")
        if !appleAudiences.isEmpty {
            let jwksURL = environment.string("PIER_AUTH_APPLE_JWKS_URL", default: IdentityProvider.appleJWKS)
            guard Self.isKeySetURL(jwksURL) else {
                throw Environment.Failure(
                    variable: "PIER_AUTH_APPLE_JWKS_URL", problem: "must be an https URL (http only to the loopback)")
            }
            providers["apple"] = IdentityProvider(
                name: "apple", issuer: IdentityProvider.appleIssuer,
                jwksURL: jwksURL,
                audiences: appleAudiences, nonce: "hashed")
        }
        return providers
    }

    /// What Apple's token endpoint is called with to revoke a user's tokens, or nil when the key
    /// is not configured.
    static func appleTokens(_ environment: Environment) throws(Environment.Failure)
        -> (teamID: String, keyID: String, keyFile: String, clientID: String, baseURL: String)?
    {
        let appleAudiences = environment.list("PIER_AUTH_APPLE_AUDIENCES")
        let appleKey = ["PIER_AUTH_APPLE_TEAM_ID", "PIER_AUTH_APPLE_KEY_ID", "PIER_AUTH_APPLE_KEY_FILE"].map {
            environment.string($0)
        }
        // A deployment mounts the key's folder whether or not a key is in it (an optional secret):
        // the key file named but absent (or empty: systemd's default), with neither id set, is the
        // feature off.
        let onlyMounted =
            appleKey[0] == nil && appleKey[1] == nil
            && appleKey[2].map { ((try? readFile($0)) ?? "").trimmingWhitespace().isEmpty } ?? true
        if onlyMounted {
            return nil
        } else {
            guard case let (team?, key?, file?) = (appleKey[0], appleKey[1], appleKey[2]),
                let client = environment.string(
                    "PIER_AUTH_APPLE_CLIENT_ID") ?? appleAudiences.first
            else {
                throw Environment.Failure(
                    variable: "PIER_AUTH_APPLE_KEY_FILE",
                    problem:
                        "PIER_AUTH_APPLE_TEAM_ID, PIER_AUTH_APPLE_KEY_ID and PIER_AUTH_APPLE_KEY_FILE go together, with PIER_AUTH_APPLE_AUDIENCES (or PIER_AUTH_APPLE_CLIENT_ID)"
                )
            }
            let base = environment.string("PIER_AUTH_APPLE_URL", default: "https://appleid.apple.com")
            guard Self.isKeySetURL(base) else {
                throw Environment.Failure(
                    variable: "PIER_AUTH_APPLE_URL", problem: "must be an https URL (http only to the loopback)")
            }
            return (team, key, file, client, String(base.reversed().drop { $0 == "/" }.reversed()))
        }
    }

    /// The roles whose accounts need a second factor (`PIER_AUTH_REQUIRE_MFA_FOR_ROLES`).
    static func rolesNeedingMFA(_ environment: Environment) throws(Environment.Failure) -> Set<AccountRole> {
        if environment.string("PIER_AUTH_REQUIRE_MFA_FOR_ROLES", default: "admin,support") != "none" {
            var roles: Set<AccountRole> = []
            let names =
                environment.string("PIER_AUTH_REQUIRE_MFA_FOR_ROLES") == nil
                ? ["admin", "support"] : environment.list("PIER_AUTH_REQUIRE_MFA_FOR_ROLES")
            for name in names {
                guard let role = AccountRole.allCases.first(where: { $0.rawValue == name }) else {
                    throw Environment.Failure(
                        variable: "PIER_AUTH_REQUIRE_MFA_FOR_ROLES",
                        problem: "\"\(name)\" is not a role (admin, support, user) or none")
                }
                roles.insert(role)
            }
            return roles
        }
        return []
    }

    /// The secret in the file a variable names (whitespace around it trimmed), or nil without one.
    static func secret(_ environment: Environment, _ variable: String) throws(Environment.Failure) -> String? {
        guard let file = environment.string(variable) else { return nil }
        do {
            return try readFile(file).trimmingWhitespace()
        } catch {
            throw Environment.Failure(variable: variable, problem: "cannot be read: \(error)")
        }
    }

    /// A key set is fetched over https: whoever can answer for it decides who signs in. Plain
    /// http only to the loopback, for a provider played in development or tests.
    static func isKeySetURL(_ url: String) -> Bool {
        if url.hasPrefix("https://") { return url.count > "https://".count }
        guard url.hasPrefix("http://") else { return false }
        let rest = url.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let host: Substring
        if authority.hasPrefix("[") {
            host = authority.dropFirst().prefix { $0 != "]" }
        } else {
            host = authority.prefix { $0 != ":" }
        }
        return host == "localhost" || host == "::1"
            || host.hasPrefix("127.")
                && host.split(separator: ".").count == 4 && host.split(separator: ".").allSatisfy { UInt8($0) != nil }
    }

    /// `http://host:port` for the address a server listens on; a wildcard address is reached
    /// on the loopback.
    static func url(serving: (host: String, port: Int)) -> String {
        var host = serving.host
        if host == "0.0.0.0" || host.isEmpty { host = "127.0.0.1" }
        if host == "::" { host = "::1" }
        if host.contains(":") { host = "[" + host + "]" }
        return "http://\(host):\(serving.port)"
    }
}

/// Anonymous accounts' limits and lifetime (`PIER_AUTH_ANONYMOUS_*`).
public struct AnonymousLimits: Sendable {
    /// Sign-ups an installation may make in a day.
    public var perInstallationPerDay: Int
    /// Sign-ups a client address (an IPv6 /64) may make in an hour.
    public var perAddressPerHour: Int
    /// Days an anonymous account no session used is kept.
    public var ttlDays: Int

    init(_ environment: Environment) throws(Environment.Failure) {
        perInstallationPerDay = try environment.int(
            "PIER_AUTH_ANONYMOUS_PER_INSTALLATION_PER_DAY", default: 5, in: 1...1_000_000)
        perAddressPerHour = try environment.int("PIER_AUTH_ANONYMOUS_PER_ADDRESS_PER_HOUR", default: 30, in: 1...1_000_000)
        ttlDays = try environment.int("PIER_AUTH_ANONYMOUS_TTL_DAYS", default: 90, in: 1...3650)
    }
}

/// App Attest (`PIER_AUTH_APP_ATTEST=off|optional|required`): whether an anonymous sign-up must
/// carry an assertion by a key the installation attested, for which apps and environment, and
/// the root the attestations chain to.
public struct AppAttestSettings: Sendable {
    /// Apple App Attestation Root CA (apple.com/certificateauthority; SHA-256 fingerprint
    /// 1C:B9:82:3B:…:62:42:C9:32, valid until 2045): what attestations chain to unless
    /// `PIER_AUTH_APP_ATTEST_ROOTS` names others.
    public static let appleRoot = String(decoding: PackageResources.AppleAppAttestationRootCA_pem, as: UTF8.self)

    public enum Mode: String, Sendable { case off, optional, required }
    public var mode: Mode
    public var appIDs: [String]
    public var environment: String
    public var roots: [Certificate]
    /// Keys one client network may attest in a day: what bounds new installations from one
    /// network, since a genuine device can make keys without limit.
    public var keysPerAddressPerDay: Int

    init(_ environment: Environment) throws(Environment.Failure) {
        keysPerAddressPerDay = try environment.int(
            "PIER_AUTH_APP_ATTEST_KEYS_PER_ADDRESS_PER_DAY", default: 20, in: 1...1_000_000)
        let variable = "PIER_AUTH_APP_ATTEST"
        guard let mode = Mode(rawValue: environment.string(variable, default: "off")) else {
            throw Environment.Failure(variable: variable, problem: "must be off, optional or required")
        }
        self.mode = mode
        appIDs = environment.list("PIER_AUTH_APP_ATTEST_APP_IDS")
        self.environment = environment.string("PIER_AUTH_APP_ATTEST_ENVIRONMENT", default: "production")
        guard ["production", "development"].contains(self.environment) else {
            throw Environment.Failure(variable: "PIER_AUTH_APP_ATTEST_ENVIRONMENT", problem: "must be production or development")
        }
        roots = []
        guard mode != .off else { return }
        if appIDs.isEmpty || !appIDs.allSatisfy({ $0.split(separator: ".").count >= 3 && !$0.contains(" ") }) {
            throw Environment.Failure(
                variable: "PIER_AUTH_APP_ATTEST_APP_IDS", problem: "must list App IDs such as ABCDE12345.com.example.app")
        }
        let files = environment.list("PIER_AUTH_APP_ATTEST_ROOTS")
        do {
            roots =
                files.isEmpty
                ? [try Certificate(pem: Self.appleRoot)] : try files.flatMap { try Certificate.all(pem: try readFile($0)) }
        } catch {
            throw Environment.Failure(variable: "PIER_AUTH_APP_ATTEST_ROOTS", problem: "\(error)")
        }
        if roots.isEmpty {
            throw Environment.Failure(variable: "PIER_AUTH_APP_ATTEST_ROOTS", problem: "names files that hold no certificate")
        }
    }
}
