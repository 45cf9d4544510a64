import PierPostgres
import PierRuntime
import PierService
import Synchronization

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
    private let sweeper = Mutex<Task<Void, Never>?>(nil)

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

    func start() {
        consumer.start()
        let hours = idempotencyHours
        let database = database
        let logger = logger
        let task = Task {
            while !Task.isCancelled {
                do {
                    try await database.execute(
                        """
                        DELETE FROM feedback.idempotency_keys WHERE created_at < now() - make_interval(hours => \(hours))
                        """)
                    try await database.execute("DELETE FROM feedback.quota WHERE day_start < now() - interval '2 days'")
                } catch {
                    logger.warning("idempotency key sweep will retry", [("error", .string("\(error)"))])
                }
                try? await Task.sleep(for: .seconds(600))
            }
        }
        sweeper.withLock { $0 = task }
    }

    func stop() async {
        await consumer.stop()
        let task = sweeper.withLock { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        task?.cancel()
        await task?.value
    }
}
