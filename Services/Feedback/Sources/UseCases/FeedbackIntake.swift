import PierEvents
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

/// Taking in items of feedback, each once: the unit of work of `POST /feedback`. Items that
/// arrive together are stored together (``Coalescer``): one transaction replays the retries among
/// them from their keys, counts the others against their senders' quotas once a replay is ruled
/// out, stores the items and their events in one statement and keeps the answers for the keys'
/// retries. Under a light load a batch is one item; under load, one commit serves many. Once
/// stored, the items' event is announced (``EventAnnouncer``): the notification is not part of
/// the transaction.
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
        /// Whether the client chose `id` (then another sender's item may have it already).
        let clientChoseID: Bool
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
    /// The submissions stored together (tests read how many wait).
    let batches: Coalescer<Submission, Stored>

    /// - Parameter lanes: batches stored at once, at most (each holds a connection meanwhile).
    init(database: PostgresPool, quota: SenderQuota, announcer: EventAnnouncer, lanes: Int) {
        self.database = database
        self.quota = quota
        self.announcer = announcer
        let store = Store(database: database, quota: quota)
        batches = Coalescer(lanes: lanes, limit: 64) { await store.batch($0) }
    }

    /// Stores `submission` once: a retry with its key answers what the first attempt answered,
    /// a reuse of the key with another body is refused.
    ///
    /// A client id that an item already has (another sender's: the sender's own retry is
    /// answered from its key first) meets the primary key; the transaction then stored nothing,
    /// and the item is stored again under a fresh id, so the answer is a 201 either way and says
    /// nothing of the other item.
    func submit(_ submission: Submission) async throws -> Stored {
        try await quota.prepare(submission.sender)
        let stored = try await batches.run(submission)
        if case .created = stored { announcer.announce(FeedbackCreated.type) }
        return stored
    }
}

/// The statements of a batch of submissions.
private struct Store: Sendable {
    typealias Submission = FeedbackIntake.Submission
    typealias Stored = FeedbackIntake.Stored

    let database: PostgresPool
    let quota: SenderQuota

    /// A submission the batch left without an outcome: a defect of this type, answered as a 500
    /// rather than as some other sender's outcome.
    struct Unanswered: Error {}

    static func answered(_ outcome: Stored?) throws -> Stored {
        guard let outcome else { throw Unanswered() }
        return outcome
    }

    /// Each submission's outcome, in order. A key or a client-chosen id that comes twice waits
    /// for a later round of the batch, as a second request with a key waits for the first's
    /// transaction.
    func batch(_ submissions: [Submission]) async -> [Result<Stored, any Error>] {
        var results = [Result<Stored, any Error>](repeating: .failure(Unanswered()), count: submissions.count)
        var remaining = Array(submissions.indices)
        while !remaining.isEmpty {
            var seen = Set<String>()
            var round: [Int] = []
            var later: [Int] = []
            for index in remaining {
                let submission = submissions[index]
                let key = submission.idempotency.map { "key:" + $0.scope + "\u{0}" + $0.key }
                if seen.insert("id:" + submission.id.text()).inserted && (key.map { seen.insert($0).inserted } ?? true) {
                    round.append(index)
                } else {
                    later.append(index)
                }
            }
            let outcomes: [Result<Stored, any Error>]
            do {
                outcomes = try await attempt(round.map { submissions[$0] }).map { .success($0) }
            } catch {
                outcomes = Array(repeating: .failure(error), count: round.count)
            }
            for (index, outcome) in zip(round, outcomes) { results[index] = outcome }
            remaining = later
        }
        return results
    }

    /// A round (no key, no id twice): replays, counts and stores in one transaction, or in one
    /// statement when no submission has a key.
    private func attempt(_ round: [Submission]) async throws -> [Stored] {
        guard round.contains(where: { $0.idempotency != nil }) else { return try await store(round, on: database) }
        return try await database.withTransaction { connection in
            let keys = IdempotencyKeys(connection)
            // Concurrent requests with one key take turns: the first stores, the others replay.
            let entries = try await keys.lockAndRead(round.compactMap(\.idempotency).map { .init(scope: $0.scope, key: $0.key) })
            var outcomes: [Stored?] = round.map { submission in
                guard let idempotency = submission.idempotency,
                    let entry = entries[.init(scope: idempotency.scope, key: idempotency.key)]
                else { return nil }
                return entry.requestHash == idempotency.requestHash ? .replayed(entry.response, entry.itemID) : .keyReused
            }
            let fresh = round.indices.filter { outcomes[$0] == nil }
            let stored = try await store(fresh.map { round[$0] }, on: connection)
            var records: [IdempotencyKeys.Record] = []
            for (index, outcome) in zip(fresh, stored) {
                outcomes[index] = outcome
                if let idempotency = round[index].idempotency, case .created(let response, let id) = outcome {
                    records.append(
                        .init(
                            key: .init(scope: idempotency.scope, key: idempotency.key),
                            entry: .init(requestHash: idempotency.requestHash, response: response, itemID: id)))
                }
            }
            try await keys.record(records)
            return try outcomes.map { try Self.answered($0) }
        }
    }

    /// Counts each submission against its sender's quota and stores those within it.
    ///
    /// A client id that an item already has (another sender's: the sender's own retry is
    /// answered from its key first) is not stored over: the sender's earlier answer under
    /// another key of its scope is replayed, or else the item is stored under a fresh id, so the
    /// answer is a 201 either way and says nothing of the other item.
    private func store(_ submissions: [Submission], on executor: any PostgresExecutor) async throws -> [Stored] {
        var outcomes: [Stored?] = submissions.map { submission in
            guard case .refused(let seconds, let limit, let window) = quota.count(submission.sender) else { return nil }
            return .overQuota(seconds, limit, window)
        }
        var pending = submissions.indices.filter { outcomes[$0] == nil }
        var ids = submissions.map(\.id)
        while !pending.isEmpty {
            let items = try await FeedbackItems(executor).insert(
                pending.map { index in
                    var submission = submissions[index]
                    submission.id = ids[index]
                    return submission
                })
            var again: [Int] = []
            for index in pending {
                if let item = items[ids[index]] {
                    outcomes[index] = .created(try JSON.encode(item), ids[index])
                    continue
                }
                let submission = submissions[index]
                if submission.clientChoseID, ids[index] == submission.id, let scope = submission.idempotency?.scope,
                    let response = try await IdempotencyKeys(executor).response(scope: scope, item: submission.id)
                {
                    outcomes[index] = .replayed(response, submission.id)
                } else {
                    ids[index] = UUID.random()
                    again.append(index)
                }
            }
            pending = again
        }
        return try outcomes.map { try Self.answered($0) }
    }
}
