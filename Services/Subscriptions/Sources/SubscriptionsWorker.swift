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
            try await SubscriptionsWorker.detach(try event.decode(AccountDeleted.self).userId, on: connection)
        }
    }

    /// Idempotent: a second run finds nothing left that points to the user. The account is
    /// remembered as deleted, so that facts Apple signs later for it (a renewal still carries the
    /// appAccountToken) are kept detached too.
    static func detach(_ userID: UUID, on connection: PostgresConnection) async throws {
        let token = userID.text()
        try await connection.execute(
            "INSERT INTO subscriptions.deleted_users (user_id) VALUES (\(userID)) ON CONFLICT DO NOTHING")
        try await connection.execute(
            """
            UPDATE subscriptions.appstore_renewals SET payload = payload - 'appAccountToken', updated_at = now()
            WHERE (original_transaction_id, environment) IN (
                SELECT original_transaction_id, environment FROM subscriptions.appstore_owners WHERE user_id = \(userID))
                OR lower(payload ->> 'appAccountToken') = \(token)
            """)
        try await connection.execute(
            """
            UPDATE subscriptions.appstore_transactions SET payload = payload - 'appAccountToken', updated_at = now()
            WHERE (original_transaction_id, environment) IN (
                SELECT original_transaction_id, environment FROM subscriptions.appstore_owners WHERE user_id = \(userID))
                OR lower(payload ->> 'appAccountToken') = \(token)
            """)
        try await connection.execute("UPDATE subscriptions.appstore_owners SET user_id = NULL WHERE user_id = \(userID)")
        try await connection.execute("UPDATE subscriptions.grants SET user_id = NULL WHERE user_id = \(userID)")
    }

}
