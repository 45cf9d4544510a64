import PierHTTP
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

/// Taking in one item of feedback, once: the unit of work of `POST /feedback`. It opens the
/// transaction and, on its connection, replays a retry from its key, counts the attempt against
/// the sender's quota once a replay is ruled out, stores the item and keeps the answer for the
/// key's retries. Once stored, the item's event is announced (``EventAnnouncer``): the
/// notification is not part of the transaction.
struct FeedbackIntake: Sendable {
    /// An item to store, with the idempotency key that guards it.
    struct Submission: Sendable {
        struct Idempotency: Sendable {
            /// Whose keys these are: a user's, an installation's or an address's.
            let scope: String
            let key: String
            let requestHash: PostgresBytes
        }

        var id: UUID
        let userID: UUID?
        let feedback: ValidFeedback
        let moderation: Moderation
        let clientAddress: String
        let idempotency: Idempotency?
        /// Who the quota counts this against (`user:…`, `address:…`).
        let sender: String
    }

    enum Stored: Sendable {
        /// Stored now; the body answered (and kept for replays).
        case created([UInt8], UUID)
        /// The key's earlier answer.
        case replayed([UInt8], UUID)
        case keyReused
        /// Over the sender's quota: retry after, limit, window (seconds).
        case overQuota(Int, Int, Int)
    }

    let database: PostgresPool
    let quota: SenderQuota
    let announcer: EventAnnouncer

    /// Stores `submission` once: a retry with its key answers what the first attempt answered,
    /// a reuse of the key with another body is refused.
    ///
    /// A client id that an item already has (another sender's: the sender's own retry is
    /// answered from its key first) meets the primary key; the transaction then stored nothing,
    /// and the item is stored again under a fresh id, so the answer is a 201 either way and says
    /// nothing of the other item.
    func submit(_ submission: Submission, clientChoseID: Bool) async throws -> Stored {
        let stored = try await storeOnce(submission, clientChoseID: clientChoseID)
        if case .created = stored { announcer.announce(FeedbackCreated.type) }
        return stored
    }

    private func storeOnce(_ submission: Submission, clientChoseID: Bool) async throws -> Stored {
        try await quota.prepare(submission.sender)
        do {
            return try await attempt(submission, count: true)
        } catch let error as PostgresError where clientChoseID && error.isUniqueViolation && error.constraint == "items_pkey" {
            // The same sender sending its id again under another key: the first answer again.
            if let scope = submission.idempotency?.scope,
                let response = try await IdempotencyKeys(database).response(scope: scope, item: submission.id)
            {
                return .replayed(response, submission.id)
            }
            // Another sender's id: theirs stays theirs, this one gets a new id.
            var fresh = submission
            fresh.id = UUID.random()
            // Counted already: the failed statement stored nothing.
            return try await attempt(fresh, count: false)
        }
    }

    private func attempt(_ submission: Submission, count: Bool) async throws -> Stored {
        let quota = quota
        @Sendable func store(_ connection: PostgresConnection) async throws -> Stored {
            if count, case .refused(let seconds, let limit, let window) = quota.count(submission.sender) {
                return .overQuota(seconds, limit, window)
            }
            let item = try await FeedbackItems(connection).insert(submission)
            return .created(try JSON.encode(item), submission.id)
        }
        guard let idempotency = submission.idempotency else { return try await database.withConnection(store) }
        let (scope, key) = (idempotency.scope, idempotency.key)
        return try await database.withTransaction { connection in
            let keys = IdempotencyKeys(connection)
            // Concurrent requests with one key take turns: the first stores, the others replay.
            try await keys.lock(scope: scope, key: key)
            if let entry = try await keys.entry(scope: scope, key: key) {
                guard entry.requestHash == idempotency.requestHash else { return .keyReused }
                return .replayed(entry.response, entry.itemID)
            }
            let result = try await store(connection)
            if case .created(let response, let id) = result {
                try await keys.record(
                    scope: scope, key: key, .init(requestHash: idempotency.requestHash, response: response, itemID: id))
            }
            return result
        }
    }
}
