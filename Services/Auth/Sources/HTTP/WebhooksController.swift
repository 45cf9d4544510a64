import PierAudit
import PierHTTP
import PierIdentity
import PierModels
import PierPostgres
import PierRuntime
import PierService

/// `/auth/webhooks…` (admins): the endpoints the settings configure and how their deliveries
/// stand, the deliveries with their attempts, and a replay of any of them. A replay sends the
/// same message (the same `webhook-id`) again, after what is pending for its subject; it is in
/// the audit log.
struct WebhooksController: Sendable {
    let webhooks: Webhooks
    let database: PostgresPool
    let logger: Logger

    func routes(into router: EndpointRouter<ServiceRequestContext>) {
        router.on(AuthAPI.webhookEndpoints) { try await endpoints($0, $1) }
        router.on(AuthAPI.webhookDeliveries) { try await deliveries($1, $2) }
        router.on(AuthAPI.webhookDelivery) { try await delivery($1, $2.id) }
        router.on(AuthAPI.replayWebhook) { try await replay($1, $2.id) }
    }

    /// `GET /auth/webhooks`.
    func endpoints(_ request: Request, _ context: ServiceRequestContext) async throws
        -> JSONResponse<ItemList<WebhookEndpoint>>
    {
        _ = try context.caller()
        let summaries = try await WebhookDeliveries(database).summaries()
        return JSONResponse(
            ItemList(
                webhooks.options.endpoints.map { endpoint in
                    let summary = summaries[endpoint.name]
                    return WebhookEndpoint(
                        name: endpoint.name, url: endpoint.url, events: endpoint.events, secrets: endpoint.secretCount,
                        pending: summary?.pending ?? 0, failed: summary?.failed ?? 0,
                        lastDeliveredAt: summary?.lastDeliveredAt)
                }))
    }

    /// `GET /auth/webhooks/deliveries?endpoint=&state=&type=&subject=&cursor=&limit=` (limit
    /// 1–100, 50 by default), newest first.
    func deliveries(_ context: ServiceRequestContext, _ query: WebhookDeliveryQuery) async throws
        -> JSONResponse<WebhookDeliveryPage>
    {
        _ = try context.caller()
        var errors: [Problem.FieldError] = []
        let endpoint = query.endpoint
        if let endpoint, webhooks.endpoints[endpoint] == nil {
            errors.append(.init(field: "endpoint", message: "is not a configured endpoint"))
        }
        let state = query.state?.rawValue
        let type = query.type
        let known = webhooks.options.known
        if let type, !known.types.contains(type) {
            errors.append(.init(field: "type", message: "must be one of \(known.types.joined(separator: ", "))"))
        }
        let subject = query.subject
        var before: Int?
        if let cursor = query.cursor {
            before = Int(cursor)
            if before == nil || before! < 1 {
                errors.append(.init(field: "cursor", message: "must be a nextCursor this endpoint answered"))
            }
        }
        let limit = query.limit ?? 50
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        let found = try await WebhookDeliveries(database).list(
            endpoint: endpoint, state: state, type: type, subject: subject, before: before, limit: limit)
        let page = Array(found.prefix(limit))
        return JSONResponse(
            WebhookDeliveryPage(items: page, nextCursor: found.count > limit ? page.last.map { String($0.id) } : nil))
    }

    /// `GET /auth/webhooks/deliveries/{id}`: with the body it sends.
    func delivery(_ context: ServiceRequestContext, _ id: Int) async throws -> JSONResponse<WebhookDelivery> {
        _ = try context.caller()
        guard let delivery = try await WebhookDeliveries(database).delivery(id) else {
            throw HTTPError.notFound("No such delivery.")
        }
        return JSONResponse(delivery)
    }

    /// `POST /auth/webhooks/deliveries/{id}/replay`: 201 with the new delivery.
    func replay(_ context: ServiceRequestContext, _ id: Int) async throws -> JSONResponse<WebhookDelivery> {
        let actor = try context.auditActor()
        let deliveries = WebhookDeliveries(database)
        guard let endpoint = try await deliveries.endpoint(of: id) else { throw HTTPError.notFound("No such delivery.") }
        guard webhooks.endpoints[endpoint] != nil else {
            throw HTTPError.conflict("The endpoint \(endpoint) is no longer configured (PIER_WEBHOOKS): nothing would send it.")
        }
        guard let replayed = try await WebhookReplays(database: database).replay(id, endpoint: endpoint, by: actor) else {
            throw HTTPError.notFound("No such delivery.")
        }
        webhooks.wake()
        logger.info(
            "webhook replayed",
            [("delivery_id", .int(id)), ("replay_id", .int(replayed.id)), ("staff_id", .string(actor.id?.text() ?? ""))])
        return JSONResponse(replayed, status: 201)
    }
}
