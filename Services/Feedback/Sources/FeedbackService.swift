import PierHTTP
import PierPostgres
import PierService

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
    ]

    let controller: FeedbackController
    let worker: FeedbackWorker

    public static func make(context: ServiceContext) async throws -> FeedbackService {
        let configuration = try FeedbackConfiguration(environment: context.configuration.environment)
        return make(context: context, configuration: configuration)
    }

    /// Builds the service with explicit settings (tests, the gateway) and starts its background
    /// work: anonymizing the feedback of deleted accounts, expiring idempotency keys.
    public static func make(context: ServiceContext, configuration: FeedbackConfiguration) -> FeedbackService {
        let worker = FeedbackWorker(
            database: context.database, events: context.events, logger: context.logger, configuration: configuration)
        worker.start()
        return FeedbackService(
            controller: FeedbackController(
                database: context.database, configuration: configuration,
                authenticator: context.authenticator, logger: context.logger),
            worker: worker)
    }

    public func routes(into routes: inout Routes) { controller.routes(into: &routes) }

    public func shutdown() async { await worker.stop() }
}
