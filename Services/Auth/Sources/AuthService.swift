import PierAudit
import PierCrypto
import PierEvents
import PierExport
import PierHTTP
import PierIdentity
import PierMail
import PierPostgres
import PierRuntime
import PierService

/// The auth plugin: accounts, password login, access and refresh tokens, and the JWKS that
/// every other service verifies tokens with.
public struct AuthService: Service {
    public static let name = "auth"
    public static let prefix = "/auth"
    public static let schema = "auth"
    public static let defaultPort = 8081
    public static let migrations = [
        Migration(version: 1, name: "create_auth", sql: String(decoding: PackageResources._001_create_auth_sql, as: UTF8.self)),
        Migration(version: 2, name: "accounts", sql: String(decoding: PackageResources._002_accounts_sql, as: UTF8.self)),
        Migration(
            version: 3, name: "account_hardening",
            sql: String(decoding: PackageResources._003_account_hardening_sql, as: UTF8.self)),
        Migration(
            version: 4, name: "user_lookup", sql: String(decoding: PackageResources._004_user_lookup_sql, as: UTF8.self)),
        AuditLog.migration(schema: schema, version: 5),
        Migration(version: 6, name: "staff", sql: String(decoding: PackageResources._006_staff_sql, as: UTF8.self)),
        Migration(
            version: 7, name: "event_cursor", sql: String(decoding: PackageResources._007_event_cursor_sql, as: UTF8.self)),
        Migration(
            version: 8, name: "users_created", sql: String(decoding: PackageResources._008_users_created_sql, as: UTF8.self)),
        Migration(version: 9, name: "webhooks", sql: String(decoding: PackageResources._009_webhooks_sql, as: UTF8.self)),
        EventConsumer.cursorMigration(table: "auth.event_cursor", version: 10),
        Migration(
            version: 11, name: "user_updated", sql: String(decoding: PackageResources._011_user_updated_sql, as: UTF8.self)),
        Migration(
            version: 12, name: "second_factor",
            sql: String(decoding: PackageResources._012_second_factor_sql, as: UTF8.self)),
        Migration(version: 13, name: "passkeys", sql: String(decoding: PackageResources._013_passkeys_sql, as: UTF8.self)),
        Migration(
            version: 14, name: "passkey_second_factor",
            sql: String(decoding: PackageResources._014_passkey_second_factor_sql, as: UTF8.self)),
        Migration(
            version: 15, name: "apple_tokens", sql: String(decoding: PackageResources._015_apple_tokens_sql, as: UTF8.self)),
        Migration(
            version: 16, name: "enrolment_approvals",
            sql: String(decoding: PackageResources._016_enrolment_approvals_sql, as: UTF8.self)),
        Migration(version: 17, name: "user_words", sql: String(decoding: PackageResources._017_user_words_sql, as: UTF8.self)),
        Migration(version: 18, name: "anonymous", sql: String(decoding: PackageResources._018_anonymous_sql, as: UTF8.self)),
        Migration(version: 19, name: "merges", sql: String(decoding: PackageResources._019_merges_sql, as: UTF8.self)),
        Migration(
            version: 20, name: "app_attest", sql: String(decoding: PackageResources._020_app_attest_sql, as: UTF8.self)),
        Migration(
            version: 21, name: "user_updated_role",
            sql: String(decoding: PackageResources._021_user_updated_role_sql, as: UTF8.self)),
        Migration(
            version: 22, name: "app_attest_keys_per_network",
            sql: String(decoding: PackageResources._022_app_attest_keys_per_network_sql, as: UTF8.self)),
    ]
    public static let commands = [AdminCommand.createAdmin, AdminCommand.setRole]

    let controller: AuthController
    let outbox: MailOutbox
    /// Mails the team's replies to feedback.
    let replies: EventConsumer
    /// Sends the events of the log to the app's backend.
    let webhooks: Webhooks
    /// The other services' parts of "download my data": those hosted beside it are added.
    let exports: ExportSources
    /// Its verification keys, offered to the plugins hosted beside it.
    let keys: StaticKeyProvider
    /// Revokes Sign in with Apple's refresh tokens of identities that went (when configured).
    let appleRevocations: AppleRevocations?
    /// Deletes anonymous accounts left unused (`PIER_AUTH_ANONYMOUS_TTL_DAYS`), hourly.
    let anonymousSweep: Periodic

    public static func make(context: ServiceContext) async throws -> AuthService {
        let configuration = try AuthConfiguration(
            environment: context.configuration.environment,
            production: context.configuration.production,
            serving: (host: context.configuration.http.host, port: context.configuration.http.port),
            events: context.plugins.flatMap(\.events))
        let keys = try SigningKeys.load(configuration, logger: context.logger)
        return try await make(context: context, configuration: configuration, keys: keys)
    }

    /// Builds the service with explicit settings and keys (tests, the gateway).
    public static func make(context: ServiceContext, configuration: AuthConfiguration, keys: SigningKeys) async throws
        -> AuthService
    {
        let tokens = TokenIssuer(
            keys: keys, issuer: context.configuration.tokenIssuer,
            audience: context.configuration.tokenAudience, accessTTL: configuration.accessTokenTTL,
            refreshDays: configuration.refreshTokenTTLDays, requireMFAForRoles: configuration.requireMFAForRoles)
        // The auth service verifies with its own keys: no JWKS round trip to itself.
        let ownKeys = StaticKeyProvider(keys: keys.verificationKeys)
        let authenticator = Authenticator(
            verifier: AccessTokenVerifier(
                keys: ownKeys, issuer: context.configuration.tokenIssuer,
                audience: context.configuration.tokenAudience),
            revocations: context.authenticator.revocations)
        let hasher = BoundedPasswordHasher(
            hasher: configuration.hasher, threads: configuration.hashThreads,
            queueLimit: configuration.hashQueueLimit)
        // Hashed on the hashing threads, whose working memory is reused by every later hash.
        let dummyHash = try await hasher.hash(Base64.urlEncoded(SecureRandom.bytes(16)))
        let mails = Mails(appName: configuration.appName, publicURL: configuration.publicURL, from: configuration.mailFrom)
        let transport: any MailTransport
        if let url = configuration.smtpURL {
            transport = SMTPTransport(
                url: url, user: configuration.smtpUser, password: configuration.smtpPassword, caFile: configuration.smtpCAFile)
        } else {
            let directory = configuration.dataDirectory + "/mail"
            transport = MailDirectory(path: directory)
            if configuration.production {
                context.logger.warning(
                    "no SMTP server configured (PIER_AUTH_SMTP_URL): mails are written as files",
                    [("directory", .string(directory))])
            }
        }
        let outbox = MailOutbox(
            database: context.database, transport: transport, sender: mails.senderAddress,
            retrySeconds: configuration.mailRetrySeconds, pollSeconds: configuration.mailPollSeconds, logger: context.logger)
        // Links reach the log only in development without SMTP, where no mail leaves the machine.
        let desk = MailDesk(
            mails: mails, outbox: outbox, logLinks: !configuration.production && configuration.smtpURL == nil,
            logger: context.logger)
        let exports = ExportSources(hosted: context.capabilities.all(.dataExport), remote: configuration.exportURLs)
        let secrets = try SigningKeys.secondFactorBox(configuration, logger: context.logger)
        let apple = try configuration.appleTokens.map { settings in
            AppleTokens(
                settings: .init(
                    teamID: settings.teamID, keyID: settings.keyID, clientID: settings.clientID,
                    key: try Self.appleKey(settings.keyFile), baseURL: settings.baseURL),
                http: context.http, box: secrets)
        }
        let controller = try AuthController(
            database: context.database, configuration: configuration, tokens: tokens, hasher: hasher,
            authenticator: authenticator, policy: PasswordPolicy(minimumLength: configuration.passwordMinimumLength),
            desk: desk, exports: exports, http: context.http, events: context.events, live: context.configuration.live,
            logger: context.logger, dummyHash: dummyHash, secondFactorBox: secrets, apple: apple)
        // Reset requests become tokens and mails on the mail worker, after their answers.
        let resets = controller.email
        outbox.prepare { await resets.issueRequestedResets() }
        let replies = FeedbackReplyMails.consumer(
            database: context.database, listener: context.events, mails: mails, outbox: outbox,
            pollSeconds: configuration.mailPollSeconds, logger: context.logger)
        let webhooks = Webhooks(
            options: configuration.webhooks, database: context.database, listener: context.events, http: context.http,
            logger: context.logger)
        let revocations = apple.map {
            AppleRevocations(
                database: context.database, tokens: $0, retrySeconds: configuration.appleRetrySeconds,
                pollSeconds: configuration.mailPollSeconds, logger: context.logger)
        }
        return AuthService(
            controller: controller, outbox: outbox, replies: replies,
            webhooks: webhooks, exports: exports, keys: ownKeys, appleRevocations: revocations,
            anonymousSweep: AnonymousSweep.periodic(
                accounts: Accounts(
                    database: context.database,
                    lifetimes: .init(refreshDays: configuration.refreshTokenTTLDays, accessTTL: tokens.accessTTL), mails: mails),
                days: configuration.anonymous.ttlDays, logger: context.logger),
            hooks: WebhooksController(webhooks: webhooks, database: context.database, logger: context.logger))
    }

    let hooks: WebhooksController

    public func routes(into routes: inout Routes) {
        controller.routes(into: &routes)
        let router = Router<ServiceRequestContext>()
        hooks.routes(into: EndpointRouter(router, authenticator: controller.authenticator))
        routes.merge(router.routes)
    }

    /// The mail outbox's worker, the mailer of replies to feedback, webhooks (the log's reader
    /// and the sender), the accounts' live streams, and the hashing threads (shut down once the
    /// servers stopped).
    public var background: [any LifecycleService] {
        let hasher = controller.hasher
        return [
            Lifecycle("password hasher", stop: { hasher.shutdown() }), outbox, replies, webhooks.consumer, webhooks,
            controller.live, anonymousSweep,
        ] + (appleRevocations.map { [$0] } ?? [])
    }

    /// The Sign in with Apple key (`PIER_AUTH_APPLE_KEY_FILE`, the `.p8` Apple gives: PKCS #8 PEM).
    static func appleKey(_ path: String) throws -> P256PrivateKey {
        do { return try P256PrivateKey(pem: try readFile(path)) } catch {
            throw Environment.Failure(variable: "PIER_AUTH_APPLE_KEY_FILE", problem: "must be the .p8 key Apple gives: \(error)")
        }
    }

    /// The others verify tokens with its keys, in-process.
    public func offer(into capabilities: inout Capabilities) { capabilities.offer(.tokenKeys, keys) }

    /// "Download my data" gathers the parts of the plugins hosted beside it in-process.
    /// The parts of "download my data" of the plugins hosted beside it.
    public static var needs: [String] { [Capability<any DataExporter>.dataExport.name] }
    public static var offers: [String] { [Capability<any VerificationKeyProvider>.tokenKeys.name] }
}
