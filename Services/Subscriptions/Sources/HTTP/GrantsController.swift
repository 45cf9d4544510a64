import PierAudit
import PierCrypto
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

/// `/subscriptions/grants`: access given by the app's team, and taken back.
struct GrantsController: Sendable {
    let subscriptions: Subscriptions
    let logger: Logger

    func grant(_ request: Request, _ context: ServiceRequestContext, _ body: CreateGrant) async throws -> JSONResponse<Grant> {
        let actor = try context.auditActor()
        var errors: [Problem.FieldError] = []
        let reason = body.reason.trimmingWhitespace()
        if reason.isEmpty || reason.unicodeScalars.count > 500 {
            errors.append(.init(field: "reason", message: "must be 1 to 500 characters"))
        }
        switch (body.duration, body.until) {
        case (nil, nil), (.some, .some):
            errors.append(.init(field: "duration", message: "give either duration (ISO 8601, such as P1M) or until, not both"))
        case (let duration?, nil) where !ValidPlan.isDuration(duration):
            errors.append(.init(field: "duration", message: "must be an ISO 8601 duration such as P1M or P14D"))
        case (nil, let until?) where until <= Date():
            errors.append(.init(field: "until", message: "must be in the future"))
        case (nil, let until?) where until > Date().addingTimeInterval(100 * 366 * 86_400):
            errors.append(.init(field: "until", message: "must be within 100 years"))
        default: break
        }
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        guard let grant = try await subscriptions.grant(body, reason: reason, by: actor) else {
            throw HTTPError.invalid("planId", "names no plan")
        }
        logger.info(
            "grant created",
            [
                ("grant_id", .string(grant.id.text())), ("plan_id", .string(body.planId)),
            ])
        return JSONResponse(grant, status: 201, headers: ["Location": SubscriptionsAPI.revokeGrant.path(PathID(grant.id))])
    }

    func grants(_ context: ServiceRequestContext, _ user: UUID) async throws -> JSONResponse<ItemList<Grant>> {
        JSONResponse(ItemList(try await subscriptions.grants.list(of: user)))
    }

    /// Ends a grant at once; it stays in the history.
    func revokeGrant(_ context: ServiceRequestContext, _ id: UUID) async throws -> JSONResponse<Grant> {
        let actor = try context.auditActor()
        guard let grant = try await subscriptions.revokeGrant(id, by: actor)
        else { throw HTTPError.notFound("No such grant.") }
        logger.info("grant revoked", [("grant_id", .string(id.text()))])
        return JSONResponse(grant)
    }
}
