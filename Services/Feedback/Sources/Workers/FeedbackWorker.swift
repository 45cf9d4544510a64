import PierEvents
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Background work: anonymizes the feedback of deleted accounts, moves that of merged ones and
/// keeps the team's list (from the shared event log),
/// forgets expired idempotency keys, rolls up the reports' daily counts.
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
            name: "feedback", cursorTable: "feedback.event_cursor",
            types: [AccountDeleted.type, AccountMerged.type, UserCreated.type, UserUpdated.type],
            database: database, listener: events, logger: logger, pollInterval: .seconds(configuration.eventPollSeconds)
        ) { event, connection in
            switch event.type {
            case AccountMerged.type:
                let merged = try event.decode(AccountMerged.self)
                try await FeedbackItems(connection).move(from: merged.userId, to: merged.intoUserId)
                try await IdempotencyKeys(connection).forget(scope: merged.userId.text())
            case UserCreated.type:
                // A new account is on the team only when made so (an admin by the command line).
                let created = try event.decode(UserCreated.self)
                if AccountRole(rawValue: created.role)?.isStaff == true {
                    try await TeamMembers(connection).follow(created.userId, role: created.role)
                }
            case UserUpdated.type:
                let updated = try event.decode(UserUpdated.self)
                if let role = updated.role { try await TeamMembers(connection).follow(updated.userId, role: role) }
            default:
                let deleted = try event.decode(AccountDeleted.self).userId
                try await FeedbackWorker.anonymize(deleted, on: connection)
                try await TeamMembers(connection).forget(deleted)
            }
        }
    }

    /// The sender's feedback stays (the team still needs it) but no longer points to them; their
    /// idempotency keys go.
    static func anonymize(_ userID: UUID, on connection: PostgresConnection) async throws {
        try await FeedbackItems(connection).anonymize(userID)
        try await IdempotencyKeys(connection).forget(scope: userID.text())
    }

    /// Its parts, run by the host: the event consumer, and a sweep every ten minutes.
    var background: [any LifecycleService] {
        let (hours, database, logger) = (idempotencyHours, database, logger)
        let sweep = Periodic("feedback sweep", every: .seconds(600)) {
            do {
                try await IdempotencyKeys(database).expire(olderThan: hours)
                try await QuotaCounters(database).expire()
            } catch {
                logger.warning("idempotency key sweep will retry", [("error", .string("\(error)"))])
            }
        }
        // The reports' daily counts: days that ended, and days triaged since (at start, then
        // every minute; a first run on a year of feedback takes a few batches).
        let daily = DailyRollup(database: database)
        let rollup = Periodic("feedback rollup", every: .seconds(60)) {
            do {
                try await daily.run()
            } catch {
                logger.warning("feedback rollup will retry", [("error", .string("\(error)"))])
            }
        }
        return [consumer, sweep, rollup]
    }
}
