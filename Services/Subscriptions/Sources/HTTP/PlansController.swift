import PierAudit
import PierCrypto
import PierHTTP
import PierIdentity
import PierJSON
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `/subscriptions/plans`: the catalogue, listed for everyone and managed by admins.
struct PlansController: Sendable {
    let subscriptions: Subscriptions
    let logger: Logger

    /// Active plans for everyone; `?all=true` adds inactive ones for the team. Cacheable: a
    /// strong `ETag` over the body answers `If-None-Match` with 304.
    func plans(_ request: Request, _ query: PlansQuery) async throws -> EndpointReply<ItemList<Plan>> {
        let all = query.all
        let body = try JSON.encode(ItemList(try await subscriptions.plans.list(includingInactive: all)))
        return EndpointReply(
            promised: .conditionalJSON(
                body, for: request,
                headers: ["Cache-Control": all ? "private, no-cache" : "public, max-age=60", "Vary": "Authorization"]))
    }

    func createPlan(_ request: Request, _ context: ServiceRequestContext, _ body: CreatePlan) async throws
        -> JSONResponse<Plan>
    {
        let plan = try ValidPlan(creating: body).plan
        let change = try await subscriptions.create(plan, by: try context.auditActor())
        guard case .saved(let stored) = change else { throw Self.problem(change, id: plan.id) }
        logger.info("plan created", [("plan_id", .string(plan.id))])
        return JSONResponse(stored, status: 201, headers: ["Location": SubscriptionsAPI.updatePlan.path(PlanID(plan.id))])
    }

    func updatePlan(_ context: ServiceRequestContext, _ id: String, _ body: UpdatePlan) async throws -> JSONResponse<Plan> {
        // What subscribers pay is changed only after a recent sign-in (the console asks for the
        // password: `POST /auth/reauthenticate`).
        if body.price != nil || body.currency != nil || body.billingPeriod != nil {
            try context.caller().requireRecentSignIn("Confirm with your password to change what the plan costs.")
        }
        let change = try await subscriptions.updatePlan(id, with: body, by: try context.auditActor())
        guard case .saved(let updated) = change else { throw Self.problem(change, id: id) }
        logger.info("plan updated", [("plan_id", .string(id))])
        return JSONResponse(updated)
    }

    /// Only a plan nobody ever had can be deleted; one in use is deactivated instead.
    func deletePlan(_ context: ServiceRequestContext, _ id: String) async throws -> EndpointReply<NoContent> {
        let change = try await subscriptions.deletePlan(id, by: try context.auditActor())
        guard case .deleted = change else { throw Self.problem(change, id: id) }
        logger.info("plan deleted", [("plan_id", .string(id))])
        return .noContent()
    }

    /// The problem that stopped a change of plan `id`.
    private static func problem(_ change: Subscriptions.PlanChange, id: String) -> HTTPError {
        switch change {
        case .missing: .notFound("No such plan.")
        case .productTaken(let product, let plan): .conflict("The \(product) already belongs to plan \(plan).")
        case .inUse:
            .conflict(
                "Plan \(id) is in use by a grant or a purchase and cannot be deleted; deactivate it with PATCH {\"active\": false}."
            )
        case .idTaken, .saved, .deleted: .conflict("A plan with id \(id) already exists.")
        }
    }
}
