import PierCrypto
import PierEvents
import PierHTTP
import PierIdentity
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The feedback endpoints of the HTTP contract (``FeedbackAPI``, which says who may call each),
/// one controller per resource.
struct FeedbackController: Sendable {
    let intake: IntakeController
    let items: ItemsController
    let reports: ReportsController
    let authenticator: Authenticator

    init(
        database: PostgresPool, configuration: FeedbackConfiguration, authenticator: Authenticator,
        quota: SenderQuota, announcer: EventAnnouncer, logger: Logger, catchUp: @escaping @Sendable () async throws -> Void = {}
    ) {
        intake = IntakeController(
            intake: FeedbackIntake(
                database: database, quota: quota, announcer: announcer, lanes: configuration.intakeLanes),
            configuration: configuration, installations: authenticator.verifier,
            logger: logger)
        items = ItemsController(database: database, replyMovesNewTo: configuration.replyMovesNewTo, catchUp: catchUp)
        reports = ReportsController(database: database)
        self.authenticator = authenticator
    }

    func routes(into routes: inout Routes) {
        let router = Router<ServiceRequestContext>()
        let endpoints = EndpointRouter(router, authenticator: authenticator)
        let (intake, items, reports) = (intake, items, reports)
        endpoints.on(FeedbackAPI.create) { try await intake.create($0, $1, $2, $3) }
        endpoints.on(FeedbackAPI.mine) { try await items.mine($1, $2) }
        endpoints.on(FeedbackAPI.item) { try await items.item($1, $2.id) }
        endpoints.on(FeedbackAPI.list) { try await items.list($1, $2) }
        endpoints.on(FeedbackAPI.update) { try await items.update($1, $2.id, $3) }
        endpoints.on(FeedbackAPI.reply) { try await items.reply($1, $2.id, $3) }
        endpoints.on(FeedbackAPI.stats) { try await reports.stats($1, $2) }
        endpoints.on(FeedbackAPI.daily) { try await reports.daily($1, $2) }
        endpoints.on(FeedbackAPI.export) { try await reports.export($0, $1, $2) }
        routes.merge(router.routes)
    }
}
