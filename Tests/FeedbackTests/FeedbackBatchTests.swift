import Foundation
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierTestSupport
import Testing

@testable import FeedbackService

/// Submissions that arrive while every lane is busy are stored as one batch, and each keeps
/// what it would have had alone: a key's retries replay, a reused key is refused, a taken id
/// is not stored over, two senders racing for one id both get an item, each item has its event.
@Suite struct FeedbackBatchTests {
    @Test func submissionsWaitingTogetherAreStoredTogetherEachAsAlone() async throws {
        let feedback = try await FeedbackHarness.start(database: "pier_test_feedback_batch")
        defer { Task { await feedback.stop() } }
        let run = UUID().uuidString.prefix(8)
        let owner = UUID()
        let taken = try await feedback.post(
            #"{"id":"\#(UUID().uuidString)","message":"owner \#(run)"}"#, token: feedback.token(owner))

        // Inserts wait behind a lock on the table until the whole batch has queued.
        let release = Locked(false)
        let holding = Locked(false)
        let holder = Task {
            try await feedback.pool.withTransaction { connection in
                try await connection.execute("LOCK TABLE feedback.items IN SHARE ROW EXCLUSIVE MODE")
                holding.withLock { $0 = true }
                while !release.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
            }
        }
        #expect(await eventually { holding.withLock { $0 } })

        let racedID = UUID()
        let (retryKey, reusedKey) = (UUID().uuidString, UUID().uuidString)
        enum Kind: Sendable { case plain, retry, reused(Int), probe, racer(Int) }
        var kinds: [Kind] = Array(repeating: .plain, count: 8)
        kinds += Array(repeating: .retry, count: 4)
        kinds += [.reused(0), .reused(1), .probe, .probe, .racer(0), .racer(1)]
        let requests = kinds
        let intake = feedback.service.controller.intake.intake
        let answers = Task {
            try await concurrently(requests.count) { index -> (Kind, Reply) in
                let kind = requests[index]
                let sender = try feedback.token(UUID())
                let reply: Reply
                switch kind {
                case .plain:
                    reply = try await feedback.send(
                        "POST", "/feedback", json: #"{"message":"plain \#(run) \#(index)"}"#, token: sender)
                case .retry:
                    reply = try await feedback.send(
                        "POST", "/feedback", json: #"{"message":"retried \#(run)"}"#, headers: ["Idempotency-Key": retryKey])
                case .reused(let variant):
                    reply = try await feedback.send(
                        "POST", "/feedback", json: #"{"message":"reused \#(run) \#(variant)"}"#,
                        headers: ["Idempotency-Key": reusedKey])
                case .probe:
                    reply = try await feedback.send(
                        "POST", "/feedback", json: #"{"id":"\#(taken.id.uuidString)","message":"probe \#(run)"}"#, token: sender)
                case .racer(let number):
                    reply = try await feedback.send(
                        "POST", "/feedback", json: #"{"id":"\#(racedID.uuidString)","message":"racer \#(run) \#(number)"}"#,
                        token: sender)
                }
                return (kind, reply)
            }
        }
        // Every lane holds a batch waiting on the lock; all the others queue behind them.
        let queued = await eventually { intake.batches.waiting == requests.count - intake.batches.lanes }
        #expect(queued)
        release.withLock { $0 = true }
        try await holder.value
        let replies = try await answers.value

        var retried = Set<UUID>()
        var reused: [Int] = []
        var racers = Set<UUID>()
        for (kind, reply) in replies {
            switch kind {
            case .plain:
                #expect(reply.status == 201)
            case .retry:
                #expect(reply.status == 201)
                retried.insert(try reply.decode(FeedbackItem.self).id)
            case .reused:
                reused.append(reply.status)
            case .probe:
                #expect(reply.status == 201)
                let item = try reply.decode(FeedbackItem.self)
                #expect(item.id != taken.id && item.message == "probe \(run)")
            case .racer:
                #expect(reply.status == 201)
                racers.insert(try reply.decode(FeedbackItem.self).id)
            }
        }
        #expect(retried.count == 1)
        #expect(reused.sorted() == [201, 422])
        #expect(racers.count == 2 && racers.contains(racedID))

        // 8 plain, one retried, one of the reused key, 2 probes, 2 racers; each with its event.
        let stored = try await feedback.pool.query(
            """
            SELECT count(*)::int AS items,
                (SELECT count(*)::int FROM events.events e
                 WHERE e.type = 'feedback.created' AND (e.payload->>'feedbackId')::uuid = ANY (array_agg(i.id))) AS events
            FROM feedback.items i WHERE i.message LIKE '%' || \(String(run)) || '%' AND i.id <> \(taken.id)
            """)
        #expect(try stored[0].decode("items", as: Int.self) == 14)
        #expect(try stored[0].decode("events", as: Int.self) == 14)
        let owners = try await feedback.pool.query("SELECT message FROM feedback.items WHERE id = \(taken.id)")
        #expect(try owners[0].decode("message", as: String.self) == "owner \(run)")
    }
}
