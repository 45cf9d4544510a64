import PierAudit
import PierModels
import PierPostgres
import PierService

/// A webhook delivery sent again: the new delivery (the same message, the same `webhook-id`,
/// after what is pending for its subject) and its audit entry, in one transaction.
struct WebhookReplays: Sendable {
    let database: PostgresPool

    /// The new delivery; nil when there is no delivery `id`.
    func replay(_ id: Int, endpoint: String, by actor: AuditActor) async throws -> WebhookDelivery? {
        try await database.withTransaction { connection in
            guard let replayed = try await WebhookDeliveries(connection).replay(id) else { return nil as WebhookDelivery? }
            try await AuditLog.append(
                .init(
                    .webhookReplayed, target: ("webhook_delivery", String(id)), subject: nil,
                    after: .object(["delivery": .number(Double(replayed.id)), "endpoint": .string(endpoint)])),
                by: actor, schema: AuthService.schema, on: connection)
            return replayed
        }
    }
}
