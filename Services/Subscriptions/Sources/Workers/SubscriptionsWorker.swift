import PierEvents
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Follows the accounts in the shared event log: the subscription facts of deleted accounts are
/// detached (they stay for accounting, pointing to nobody); those of an account merged into
/// another become that account's, with its status published.
final class SubscriptionsWorker: Sendable {
    let consumer: EventConsumer

    init(database: PostgresPool, subscriptions: Subscriptions, events: PostgresListener, logger: Logger, pollSeconds: Int) {
        consumer = EventConsumer(
            name: "subscriptions", cursorTable: "subscriptions.event_cursor",
            types: [AccountDeleted.type, AccountMerged.type], database: database, listener: events, logger: logger,
            pollInterval: .seconds(pollSeconds)
        ) { event, connection in
            if event.type == AccountMerged.type {
                try await subscriptions.merge(try event.decode(AccountMerged.self), on: connection)
            } else {
                try await SubscriptionFacts.detach(try event.decode(AccountDeleted.self).userId, on: connection)
            }
        }
    }
}
