import Foundation
import PierEvents
import PierHTTP
import PierLive
import PierModels
import PierPostgres
import PierService
import PierTestSupport
import Testing

@testable import SubscriptionsService

/// `GET /subscriptions/me/events`: the status pushed as it changes, over a real connection.
@Suite(.serialized) struct LiveStatusTests {
    /// Heartbeats every second; `perUser` streams of one account at most.
    func withService(perUser: Int = 8, _ body: (SubscriptionsHarness) async throws -> Void) async throws {
        try await SubscriptionsHarness.with(
            database: "pier_test_subscriptions_live",
            settings: ["PIER_LIVE_HEARTBEAT_S": "1", "PIER_LIVE_STREAMS_PER_USER": String(perUser)], body)
    }

    func status(_ message: EventStream.Message?) throws -> SubscriptionStatus {
        let message = try #require(message)
        #expect(message.event == "status" && message.id?.count == 24)
        return try Self.decode(SubscriptionStatus.self, Array(try #require(message.data).utf8))
    }

    static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(type, from: Data(bytes))
    }

    func grant(_ user: UUID, on service: SubscriptionsHarness) async throws -> Grant {
        let reply = try await service.send(
            "POST", "/subscriptions/grants",
            json: #"{"userId":"\#(user)","planId":"team-yearly","duration":"P14D","reason":"live"}"#, token: try service.admin())
        #expect(reply.status == 201)
        return try reply.decode(Grant.self)
    }

    @Test func aGrantAndItsRevocationArePushedToTheUsersStream() async throws {
        try await withService { service in
            let user = UUID()
            let url = service.live.base + "/subscriptions/me/events"
            let stream = try await EventStream.open(url, token: try service.token(user))
            #expect(stream.status == 200)
            #expect(stream.headers["Content-Type"] == "text/event-stream; charset=utf-8")
            #expect(stream.headers["Cache-Control"] == "no-store")
            // The state now, first, with the reconnection delay.
            let first = try await stream.next()
            #expect(first?.retry == ServerSentEvents.retryMilliseconds)
            #expect(try status(first).status == .none)

            // Another user's grant sends nothing here; this user's does.
            _ = try await grant(UUID(), on: service)
            let granted = try await grant(user, on: service)
            let active = try await stream.nextEvent()
            #expect(try status(active).active && status(active).source == .grant)
            #expect(try status(active).entitlements.map(\.key) == ["pro", "team"])

            let revoked = try await service.send("DELETE", "/subscriptions/grants/\(granted.id)", token: try service.admin())
            #expect(revoked.status == 200)
            let ended = try await stream.nextEvent()
            #expect(try !status(ended).active)
            // Idle: heartbeats, nothing else.
            #expect(try await stream.next()?.isHeartbeat == true)
            await stream.close()

            // A client that reconnects with the last id it got is not sent the same state again
            // (a heartbeat comes first); with an older id it gets the state now.
            let resumed = try await EventStream.open(url, token: try service.token(user), lastEventID: ended?.id)
            #expect(try await resumed.next()?.data == nil)
            #expect(try await resumed.next()?.isHeartbeat == true)
            await resumed.close()
            let behind = try await EventStream.open(url, token: try service.token(user), lastEventID: active?.id)
            #expect(try status(try await behind.nextEvent()).active == false)
            await behind.close()
        }
    }

    @Test func streamsAreBoundedPerAccountAndNeedAToken() async throws {
        try await withService(perUser: 2) { service in
            let user = UUID()
            let url = service.live.base + "/subscriptions/me/events"
            #expect(try await EventStream.open(url).status == 401)
            #expect(try await EventStream.open(url, token: try service.token(user) + "x").status == 401)

            let one = try await EventStream.open(url, token: try service.token(user))
            let two = try await EventStream.open(url, token: try service.token(user))
            #expect(one.status == 200 && two.status == 200)
            let third = try await EventStream.open(url, token: try service.token(user))
            #expect(third.status == 429)
            let problem = try Self.decode(Problem.self, try #require(third.problem))
            #expect(problem.code == .tooManyStreams)
            // Another account is not counted with this one.
            let other = try await EventStream.open(url, token: try service.token(UUID()))
            #expect(other.status == 200)
            await other.close()

            // A session at the bound: its new stream pushes out its own oldest, so a copy of its
            // token held elsewhere cannot keep its app from streaming; another session's new
            // stream is refused, and pushes out nothing.
            let owner = UUID()
            let session = UUID()
            let stolen = try await EventStream.open(url, token: try service.tokens.token(owner, session: session))
            let stolenToo = try await EventStream.open(url, token: try service.tokens.token(owner, session: session))
            #expect(stolen.status == 200 && stolenToo.status == 200)
            let elsewhere = try await EventStream.open(url, token: try service.tokens.token(owner, session: UUID()))
            #expect(elsewhere.status == 429)
            let app = try await EventStream.open(url, token: try service.tokens.token(owner, session: session))
            #expect(app.status == 200)
            _ = try await app.nextEvent()
            // The oldest was ended: its stream finishes (no more heartbeats), the others go on.
            #expect(await eventually { (try? await stolen.next()) == nil })
            #expect(try await stolenToo.next() != nil)
            for stream in [stolen, stolenToo, elsewhere, app] { await stream.close() }

            // A stream closed by its client is noticed at once: room again.
            await one.close()
            #expect(
                try await eventually {
                    let again = try await EventStream.open(url, token: try service.token(user))
                    await again.close()
                    return again.status == 200
                })
            await two.close()
        }
    }

    /// A stream lives no longer than the token it was opened with; a server holds at most
    /// `PIER_LIVE_STREAMS`, of anyone, and says when to try again.
    @Test func aStreamEndsWithItsTokenAndAServerHoldsAtMostItsLimit() async throws {
        try await SubscriptionsHarness.with(
            database: "pier_test_subscriptions_live_limits",
            settings: ["PIER_LIVE_HEARTBEAT_S": "1", "PIER_LIVE_STREAMS": "2"]
        ) { service in
            let url = service.live.base + "/subscriptions/me/events"
            // A third stream is refused while the short one lives: an answer given after the
            // short token expired is no verdict (a machine busy with other work), and the test
            // goes again with a longer one, once both streams have gone.
            var opened: (short: EventStream, long: EventStream)?
            for lifetime in [2, 10, 30] where opened == nil {
                let expires = ContinuousClock.now + .seconds(lifetime - 1)  // the token's exp is in whole seconds
                let short = try await EventStream.open(url, token: try service.tokens.token(UUID(), lifetime: lifetime))
                let long = try await EventStream.open(url, token: try service.token(UUID()))
                #expect(long.status == 200)
                #expect(try await long.nextEvent()?.event == "status")
                let full = try await EventStream.open(url, token: try service.token(UUID()))
                await full.close()
                guard ContinuousClock.now < expires else {
                    for stream in [short, long] { await stream.close() }
                    #expect(await eventually { service.live.service.live.count == 0 })
                    continue
                }
                #expect(short.status == 200)
                #expect(full.status == 503 && full.headers["Retry-After"] == "5")
                #expect(try Self.decode(Problem.self, try #require(full.problem)).code == .unavailable)
                opened = (short, long)
            }
            let (short, long) = try #require(opened, "every short token expired before the third stream was answered")

            // The short token expires: its stream ends (at the next heartbeat); the other goes on.
            while let message = try await short.next() { #expect(message.data == nil || message.event == "status") }
            #expect(try await long.next()?.isHeartbeat == true)
            // Room again for one more.
            #expect(
                try await eventually {
                    let again = try await EventStream.open(url, token: try service.token(UUID()))
                    await again.close()
                    return again.status == 200
                })
            await long.close()
        }
    }

    @Test func aDeletedAccountsStreamEnds() async throws {
        try await withService { service in
            let user = UUID()
            let stream = try await EventStream.open(
                service.live.base + "/subscriptions/me/events", token: try service.token(user))
            #expect(try status(try await stream.next()).status == .none)
            try await service.pool.withTransaction { connection in
                try await EventLog.append(AccountDeleted.type, payload: AccountDeleted(userId: user), on: connection)
            }
            while let message = try await stream.next() { #expect(message.data == nil) }
        }
    }

    /// The database goes away under an open stream: the stream lives on (heartbeats, no error,
    /// no end), new streams are refused with a 503 while it is away, and once it is back a
    /// change reaches the same stream.
    @Test func aStreamOutlivesTheDatabaseGoingAway() async throws {
        let database = "pier_test_subscriptions_live_outage"
        try await SubscriptionsHarness.with(database: database, settings: ["PIER_LIVE_HEARTBEAT_S": "1"]) { service in
            let user = UUID()
            let url = service.live.base + "/subscriptions/me/events"
            let stream = try await EventStream.open(url, token: try service.token(user))
            #expect(try status(try await stream.next()).status == .none)

            try await TestDatabase.away(database) { () async throws in
                // Away: the open stream beats on; a new one cannot read the status and is refused.
                for _ in 0..<3 { #expect(try await stream.next()?.isHeartbeat == true) }
                #expect(
                    try await eventually {
                        let refused = try await EventStream.open(url, token: try service.token(UUID()))
                        await refused.close()
                        return refused.status == 503 && refused.headers["Retry-After"] != nil
                    })
            }

            // Back: a grant made now reaches the stream that lived through it.
            #expect(
                try await eventually {
                    try await service.send(
                        "POST", "/subscriptions/grants",
                        json: #"{"userId":"\#(user)","planId":"team-yearly","duration":"P14D","reason":"after"}"#,
                        token: try service.admin()
                    ).status == 201
                })
            #expect(try status(try await stream.nextEvent()).active)
            await stream.close()
        }
    }
}
