import PierEvents
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Detaches the subscription facts of deleted accounts (from the shared event log): they stay
/// for accounting, pointing to nobody.
final class SubscriptionsWorker: Sendable {
    let consumer: EventConsumer

    init(database: PostgresPool, events: PostgresListener, logger: Logger, pollSeconds: Int) {
        consumer = EventConsumer(
            name: "subscriptions", cursorTable: "subscriptions.event_cursor", types: [AccountDeleted.type],
            database: database, listener: events, logger: logger, pollInterval: .seconds(pollSeconds)
        ) { event, connection in
            try await SubscriptionFacts.detach(try event.decode(AccountDeleted.self).userId, on: connection)
        }
    }
}
