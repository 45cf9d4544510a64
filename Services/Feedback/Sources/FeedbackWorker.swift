import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Background work: anonymizes the feedback of deleted accounts (from the shared event log)
/// and forgets expired idempotency keys.
final class FeedbackWorker: Sendable {
    let consumer: EventConsumer
    private let database: PostgresPool
    private let logger: Logger
    private let idempotencyHours: Int

    init(database: PostgresPool, events: PostgresListener, logger: Logger, configuration: FeedbackConfiguration) {
        self.database = database
        self.logger = logger
        self.idempotencyHours = configuration.idempotencyHours
        consumer = EventConsumer(
            name: "feedback", cursorTable: "feedback.event_cursor", types: [AccountDeleted.type], database: database,
            listener: events, logger: logger, pollInterval: .seconds(configuration.eventPollSeconds)
        ) { event, connection in
            let deleted = try event.decode(AccountDeleted.self)
            try await FeedbackWorker.anonymize(deleted.userId, on: connection)
        }
    }

    /// The sender's feedback stays (the team still needs it) but no longer points to them.
    static func anonymize(_ userID: UUID, on connection: PostgresConnection) async throws {
        try await connection.execute(
            """
            UPDATE feedback.items SET user_id = NULL, email = NULL, updated_at = now() WHERE user_id = \(userID)
            """)
        try await connection.execute("DELETE FROM feedback.idempotency_keys WHERE scope = \(userID.text())")
    }

    /// Its parts, run by the host: the event consumer, and a sweep every ten minutes.
    var background: [any LifecycleService] {
        let (hours, database, logger) = (idempotencyHours, database, logger)
        let sweep = Periodic("feedback sweep", every: .seconds(600)) {
            do {
                try await database.execute(
                    """
                    DELETE FROM feedback.idempotency_keys WHERE created_at < now() - make_interval(hours => \(hours))
                    """)
                try await database.execute("DELETE FROM feedback.quota WHERE day_start < now() - interval '2 days'")
            } catch {
                logger.warning("idempotency key sweep will retry", [("error", .string("\(error)"))])
            }
        }
        return [consumer, sweep]
    }
}
