import PierCrypto
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

/// The feedback endpoints of the HTTP contract, one controller per resource: the route table
/// and the authentication each route needs, in one place.
struct FeedbackController: Sendable {
    let intake: IntakeController
    let items: ItemsController
    let reports: ReportsController
    let authenticator: Authenticator

    init(
        database: PostgresPool, configuration: FeedbackConfiguration, authenticator: Authenticator,
        quota: SenderQuota, announcer: EventAnnouncer, logger: Logger
    ) {
        intake = IntakeController(
            intake: FeedbackIntake(
                database: database, quota: quota, announcer: announcer, lanes: configuration.intakeLanes),
            configuration: configuration,
            logger: logger)
        items = ItemsController(database: database)
        reports = ReportsController(database: database)
        self.authenticator = authenticator
    }

    func routes(into routes: inout Routes) {
        let router = Router<ServiceRequestContext>()
        let anyone = router.group(Authentication(authenticator, .optional))
        let signedIn = router.group(Authentication(authenticator, .required))
        let staff = router.group(Authentication(authenticator, .staff))
        let (intake, items, reports) = (intake, items, reports)
        anyone.post("/feedback", body: CreateFeedback.self) { try await intake.create($0, $1, $2) }
        signedIn.get("/feedback/mine") { try await items.mine($0, $1) }
        signedIn.get("/feedback/{id}") { try await items.item($0, $1) }
        staff.get("/feedback") { try await items.list($0, $1) }
        staff.patch("/feedback/{id}", body: UpdateFeedback.self) { try await items.update($0, $1, $2) }
        staff.post("/feedback/{id}/replies", body: CreateFeedbackReply.self) { try await items.reply($0, $1, $2) }
        staff.get("/feedback/stats") { try await reports.stats($0, $1) }
        staff.get("/feedback/stats/daily") { try await reports.daily($0, $1) }
        staff.get("/feedback/export") { try await reports.export($0, $1) }
        routes.merge(router.routes)
    }
}
