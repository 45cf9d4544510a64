import PierAudit
import PierEvents
import PierExport
import PierHTTP
import PierJSON
import PierLive
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The subscriptions plugin: plans, one status answer merged from every source (App Store
/// purchases verified against Apple's certificates, grants by the team), computed from the
/// stored facts and the current time.
public struct SubscriptionsService: Service {
    public static let name = "subscriptions"
    public static let prefix = "/subscriptions"
    public static let schema = "subscriptions"
    public static let defaultPort = 8083
    public static let migrations = [
        Migration(
            version: 1, name: "create_subscriptions",
            sql: String(decoding: PackageResources._001_create_subscriptions_sql, as: UTF8.self)),
        Migration(
            version: 2, name: "deleted_accounts",
            sql: String(decoding: PackageResources._002_deleted_accounts_sql, as: UTF8.self)),
        Migration(
            version: 3, name: "environments",
            sql: String(decoding: PackageResources._003_environments_sql, as: UTF8.self)),
        AuditLog.migration(schema: schema, version: 4),
        Migration(
            version: 5, name: "notification_outcomes",
            sql: String(decoding: PackageResources._005_notification_outcomes_sql, as: UTF8.self)),
        Migration(
            version: 6, name: "daily_reports",
            sql: String(decoding: PackageResources._006_daily_reports_sql, as: UTF8.self)),
        EventConsumer.cursorMigration(table: "subscriptions.event_cursor", version: 7),
        Migration(
            version: 8, name: "merged_accounts",
            sql: String(decoding: PackageResources._008_merged_accounts_sql, as: UTF8.self)),
        Migration(
            version: 9, name: "google_play", sql: String(decoding: PackageResources._009_google_play_sql, as: UTF8.self)),
        Migration(
            version: 10, name: "google_unreadable",
            sql: String(decoding: PackageResources._010_google_unreadable_sql, as: UTF8.self)),
    ]

    let controller: SubscriptionsController
    let worker: SubscriptionsWorker
    let reconciler: AppStoreReconciler
    /// Google Play's acknowledgements and re-reads; nil when Google Play is off.
    let googleWorker: Periodic?
    let subscriptions: Subscriptions
    /// Who listens for their status (`GET /subscriptions/me/events`).
    let live: LiveFeed

    public static func make(context: ServiceContext) async throws -> SubscriptionsService {
        let configuration = try SubscriptionsConfiguration(
            environment: context.configuration.environment, production: context.configuration.production)
        return try make(context: context, configuration: configuration)
    }

    /// Builds the service with explicit settings (tests).
    public static func make(context: ServiceContext, configuration: SubscriptionsConfiguration) throws
        -> SubscriptionsService
    {
        let subscriptions = Subscriptions(
            database: context.database, recheckSeconds: configuration.recheckSeconds,
            sandboxCounts: configuration.acceptSandbox, googleTestsCount: configuration.google?.testPurchasesCount ?? true)
        let play = configuration.google.map {
            GooglePlay(api: GooglePlayAPI(settings: $0, http: context.http), subscriptions: subscriptions, logger: context.logger)
        }
        let worker = SubscriptionsWorker(
            database: context.database, subscriptions: subscriptions, events: context.events, logger: context.logger,
            pollSeconds: configuration.eventPollSeconds)
        let verifier = AppStoreVerifier(configuration: configuration, http: context.http, logger: context.logger)
        let api = configuration.apiCredentials.map {
            AppStoreServerAPI(
                credentials: $0, bundleID: configuration.bundleID, productionURL: configuration.apiURL,
                sandboxURL: configuration.sandboxAPIURL, http: context.http)
        }
        let reconciler = AppStoreReconciler(api: api, verifier: verifier, subscriptions: subscriptions, logger: context.logger)
        let live = LiveFeed(
            name: "live status", database: context.database, listener: context.events,
            revocations: context.authenticator.revocations,
            changes: [SubscriptionUpdated.type], snapshot: { JSON.write(try await subscriptions.status(of: $0)) },
            settings: context.configuration.live)
        return SubscriptionsService(
            controller: SubscriptionsController(
                subscriptions: subscriptions, live: live, verifier: verifier, reconciler: reconciler,
                signer: try StatusSigner.load(configuration, logger: context.logger),
                googlePlay: GooglePlayController(
                    play: play, database: context.database, http: context.http, logger: context.logger),
                authenticator: context.authenticator, logger: context.logger),
            worker: worker, reconciler: reconciler,
            googleWorker: play.map { play in
                let seconds = play.api.settings.reconcileSeconds
                return Periodic("google play", every: .seconds(seconds), wakeup: play.wakeup) {
                    await play.round(quiet: seconds)
                }
            }, subscriptions: subscriptions, live: live)
    }

    public func routes(into routes: inout Routes) {
        controller.routes(into: &routes)
        routes.merge(ExportRoute.routes(for: self, prefix: Self.prefix, authenticator: controller.authenticator))
        routes.merge(
            AuditLog.routes(
                service: Self.name, prefix: Self.prefix, schema: Self.schema, database: subscriptions.database,
                authenticator: controller.authenticator))
    }

    /// Detaching the facts of deleted accounts, the App Store reads asked for in the background,
    /// Google Play's acknowledgements and re-reads.
    public var background: [any LifecycleService] {
        [worker.consumer, reconciler, live] + (googleWorker.map { [$0] } ?? [])
    }

    public static var offers: [String] {
        [Capability<any DataExporter>.dataExport.name, Capability<any EntitlementsReader>.entitlements.name]
    }
    public func offer(into capabilities: inout Capabilities) {
        capabilities.offer(.dataExport, self)
        capabilities.offer(.entitlements, self)
    }
}

extension SubscriptionsService: EntitlementsReader {
    /// The keys of what the user's status gives access to now.
    public func entitlements(of user: UUID) async throws -> Set<String> {
        let status = try await subscriptions.status(of: user)
        return status.active ? Set(status.entitlements.filter { $0.expiresAt > Date() }.map(\.key)) : []
    }
}

extension SubscriptionsService: DataExporter {
    public var exportName: String { Self.name }

    /// The user's status and every fact behind it (App Store transactions, renewal infos,
    /// grants), as `GET /subscriptions/users/{userId}` shows them to the team, and what the team
    /// did about them (`audit`).
    public func exportData(of user: UUID) async throws -> JSONValue {
        guard case .object(var parts) = try JSONValue.encoded(try await subscriptions.history(of: user)) else {
            throw PostgresError(.decoding, message: "a subscription history that is not an object")
        }
        parts["audit"] = try .encoded(
            try await AuditLog.about(user, service: Self.name, schema: Self.schema, on: subscriptions.database))
        return .object(parts)
    }
}
