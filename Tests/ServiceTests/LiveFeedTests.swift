import Foundation
import PierEvents
import PierIdentity
import PierLive
import PierPostgres
import PierTestSupport
import Testing

@testable import PierService

/// A live stream ends with what let it be opened, in every order an attacker can choose: a
/// session ended before its stream is registered (its token still verifies until the list has
/// read the end) is refused; one ended after finishes the stream; a deleted account's streams
/// all end. The list reads only when told to here, so each order is made, not waited for.
@Suite struct LiveFeedRevocationTests {
    struct Setup {
        let pool: PostgresPool
        let list: RevocationList
        let feed: LiveFeed

        func revoke(session: UUID, of user: UUID) async throws {
            let until = Int(Date().timeIntervalSince1970) + 600
            try await pool.withTransaction { connection in
                try await EventLog.append(
                    SessionRevoked.type, payload: SessionRevoked(sessionId: session, userId: user, until: until),
                    on: connection)
            }
        }

        func delete(_ user: UUID) async throws {
            try await pool.withTransaction { connection in
                try await EventLog.append(AccountDeleted.type, payload: AccountDeleted(userId: user), on: connection)
            }
        }
    }

    func withFeed(_ name: String, _ body: (Setup) async throws -> Void) async throws {
        let url = try await TestDatabase.create(name)
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 2))
        defer { pool.close() }
        _ = try await Migrator.migrate(pool, schema: EventLog.schema, migrations: EventLog.migrations)
        let silent = PostgresListener(configuration: pool.configuration, channel: EventLog.channel)  // never started
        let list = RevocationList(database: pool, listener: silent, pollInterval: .seconds(3600))
        try await list.sync()
        let feed = LiveFeed(
            name: "live test", database: pool, listener: silent, revocations: list, changes: ["test.changed"],
            snapshot: { _ in [] }, settings: LiveSettings(heartbeat: .seconds(3600), limit: 100, limitPerUser: 10))
        try await body(Setup(pool: pool, list: list, feed: feed))
    }

    @Test func aSessionEndedBeforeItsStreamIsRegisteredIsRefused() async throws {
        try await withFeed("pier_test_live_revoked_first") { setup in
            let (user, thief, owner) = (UUID(), UUID(), UUID())
            // The thief's token was checked while the list had not read the end: the feed asks again.
            try await setup.revoke(session: thief, of: user)
            try await setup.list.sync()
            #expect(throws: LiveFeed.Refusal.revoked) { try setup.feed.subscribe(user, session: thief) }
            #expect(setup.feed.count == 0)
            // The owner's other session is not concerned.
            let stream = try setup.feed.subscribe(user, session: owner)
            #expect(setup.feed.count == 1)
            withExtendedLifetime(stream) {}
        }
    }

    @Test func aSessionEndedAfterItsStreamIsRegisteredEndsIt() async throws {
        try await withFeed("pier_test_live_revoked_after") { setup in
            let (user, thief, owner) = (UUID(), UUID(), UUID())
            let stolen = Ended(try setup.feed.subscribe(user, session: thief))
            let kept = Ended(try setup.feed.subscribe(user, session: owner))
            try await setup.revoke(session: thief, of: user)
            try await setup.list.sync()
            #expect(await eventually { stolen.value })
            #expect(!kept.value && setup.feed.count == 1)

            // The account deleted: every stream of it ends, and none opens again.
            try await setup.delete(user)
            try await setup.list.sync()
            #expect(await eventually { kept.value })
            #expect(setup.feed.count == 0)
            #expect(throws: LiveFeed.Refusal.revoked) { try setup.feed.subscribe(user, session: UUID()) }
        }
    }
}

/// Whether a stream of signals has ended, drained in the background.
final class Ended: Sendable {
    private let ended: Locked<Bool>
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<LiveFeed.Signal>) {
        let ended = Locked(false)
        self.ended = ended
        task = Task {
            for await _ in stream {}
            ended.withLock { $0 = true }
        }
    }

    var value: Bool { ended.withLock { $0 } }

    deinit { task.cancel() }
}
