import PierAudit
import PierEvents
import PierExport
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The feedback plugin: intake from apps (anonymous or signed in, safe to retry), and triage
/// for the app's team.
public struct FeedbackService: Service {
    public static let name = "feedback"
    public static let prefix = "/feedback"
    public static let schema = "feedback"
    public static let defaultPort = 8082
    public static let migrations = [
        Migration(
            version: 1, name: "create_feedback", sql: String(decoding: PackageResources._001_create_feedback_sql, as: UTF8.self)),
        Migration(
            version: 2, name: "quota_counters", sql: String(decoding: PackageResources._002_quota_counters_sql, as: UTF8.self)),
        Migration(version: 3, name: "sender_name", sql: String(decoding: PackageResources._003_sender_name_sql, as: UTF8.self)),
        AuditLog.migration(schema: schema, version: 4),
        Migration(version: 5, name: "replies", sql: String(decoding: PackageResources._005_replies_sql, as: UTF8.self)),
        Migration(version: 6, name: "daily", sql: String(decoding: PackageResources._006_daily_sql, as: UTF8.self)),
        EventConsumer.cursorMigration(table: "feedback.event_cursor", version: 7),
        Migration(
            version: 8, name: "search_and_assignment",
            sql: String(decoding: PackageResources._008_search_and_assignment_sql, as: UTF8.self)),
        Migration(version: 9, name: "team", sql: String(decoding: PackageResources._009_team_sql, as: UTF8.self)),
    ]

    let controller: FeedbackController
    let worker: FeedbackWorker
    let quota: SenderQuota
    let database: PostgresPool

    public static func make(context: ServiceContext) async throws -> FeedbackService {
        let configuration = try FeedbackConfiguration(environment: context.configuration.environment)
        return make(context: context, configuration: configuration)
    }

    /// Builds the service with explicit settings (tests).
    public static func make(context: ServiceContext, configuration: FeedbackConfiguration) -> FeedbackService {
        make(context: context, configuration: configuration, clock: { Date().timeIntervalSince1970 })
    }

    /// With the clock that quota windows are judged by (tests move it).
    static func make(
        context: ServiceContext, configuration: FeedbackConfiguration, clock: @escaping @Sendable () -> Double
    ) -> FeedbackService {
        let worker = FeedbackWorker(
            database: context.database, events: context.events, logger: context.logger, configuration: configuration)
        let quota = SenderQuota(
            perMinute: configuration.quotaPerMinute, perDay: configuration.quotaPerDay, database: context.database,
            logger: context.logger, interval: .milliseconds(configuration.quotaFlushMilliseconds), now: clock)
        let announcer = EventAnnouncer(database: context.database, listener: context.events)
        return FeedbackService(
            controller: FeedbackController(
                database: context.database, configuration: configuration, authenticator: context.authenticator, quota: quota,
                announcer: announcer, logger: context.logger,
                catchUp: { [consumer = worker.consumer] in _ = try await consumer.consumeBatch() }),
            worker: worker, quota: quota, database: context.database)
    }

    public func routes(into routes: inout Routes) {
        controller.routes(into: &routes)
        routes.merge(ExportRoute.routes(for: self, prefix: Self.prefix, authenticator: controller.authenticator))
        routes.merge(
            AuditLog.routes(
                service: Self.name, prefix: Self.prefix, schema: Self.schema, database: database,
                authenticator: controller.authenticator))
    }

    /// Anonymizing the feedback of deleted accounts, expiring idempotency keys, sharing quota
    /// counts with other replicas.
    public var background: [any LifecycleService] { worker.background + [quota.flusher] }

    public static var offers: [String] { [Capability<any DataExporter>.dataExport.name] }
    public func offer(into capabilities: inout Capabilities) { capabilities.offer(.dataExport, self) }
}

extension FeedbackService: DataExporter {
    public var exportName: String { Self.name }

    /// The user's feedback, as `GET /feedback/mine` shows it, and what the team did to it.
    public func exportData(of user: UUID) async throws -> JSONValue {
        .object([
            "items": try .encoded(
                try await FeedbackReplies(database).attach(to: try await FeedbackItems(database).all(of: user), staff: false)),
            "audit": try .encoded(try await AuditLog.about(user, service: Self.name, schema: Self.schema, on: database)),
        ])
    }
}
