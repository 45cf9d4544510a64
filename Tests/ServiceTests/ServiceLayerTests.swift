import Foundation
import PierCrypto
import PierEvents
import PierHTTP
import PierIdentity
import PierJSON
import PierModels
import PierPostgres
import PierRuntime
import PierTestSupport
import Testing

@testable import PierService

/// What every executable and plugin shares: the command line, the configuration, addresses.
@Suite struct ServiceLayerTests {
    /// Services and the gateway read their command line the same way.
    @Test func theCommandLineIsReadOneWayForEveryExecutable() {
        func parse(_ words: [String], valued: Set<String> = ["--embed", "--route"]) -> Invocation? {
            if case .run(let invocation) = Invocation.parse(
                words, executable: "pier-x", version: "1", usage: "usage", valued: valued)
            {
                return invocation
            }
            return nil
        }
        let plain = parse(["pier-x"])
        #expect(plain?.command == "serve" && plain?.migrateFirst == false && plain?.words == [])
        let gateway = parse([
            "pier-gateway", "--embed", "auth,feedback", "--route", "/a=http://x", "--migrate", "--route", "/b=http://y",
        ])
        #expect(gateway?.command == "serve" && gateway?.migrateFirst == true)
        #expect(gateway?.options["--embed"] == ["auth,feedback"])
        #expect(gateway?.options["--route"] == ["/a=http://x", "/b=http://y"])
        let admin = parse(["pier-auth", "create-admin", "--email", "a@example.com"], valued: [])
        #expect(admin?.command == "create-admin" && admin?.words == ["--email", "a@example.com"])
        guard
            case .exit(.usage) = Invocation.parse(
                ["pier-gateway", "--embed"], executable: "pier-gateway", version: "1", usage: "u", valued: ["--embed"])
        else {
            Issue.record("an option without its value was accepted")
            return
        }
    }

    @Test func configurationNamesTheVariableThatIsWrong() throws {
        let cases: [([String: String], String)] = [
            (["PIER_PORT": "eighty"], "PIER_PORT"),
            (["PIER_PORT": "70000"], "PIER_PORT"),
            (["PIER_DB_POOL_SIZE": "0"], "PIER_DB_POOL_SIZE"),
            (["PIER_DB_STARTUP_WAIT_S": "-1"], "PIER_DB_STARTUP_WAIT_S"),
            (["PIER_DB_STARTUP_WAIT_S": "a minute"], "PIER_DB_STARTUP_WAIT_S"),
            (["PIER_DB_STARTUP_WAIT_S": "3601"], "PIER_DB_STARTUP_WAIT_S"),
            (["PIER_LOG_LEVEL": "loud"], "PIER_LOG_LEVEL"),
            (["PIER_HTTP_ACCESS_LOG": "maybe"], "PIER_HTTP_ACCESS_LOG"),
            (["PIER_ENV": "staging"], "PIER_ENV"),
            (["PIER_ENV": "production"], "PIER_DATABASE_URL"),
        ]
        for (values, variable) in cases {
            #expect {
                _ = try ServiceConfiguration(environment: Environment(values), defaultPort: 8081, applicationName: "t")
            } throws: { ($0 as? Environment.Failure)?.variable == variable }
        }
        let defaults = try ServiceConfiguration(environment: Environment([:]), defaultPort: 8081, applicationName: "t")
        #expect(defaults.http.port == 8081 && defaults.database.poolSize == 10 && !defaults.production)
        #expect(defaults.databaseStartupWaitSeconds == 60)
        let noWait = try ServiceConfiguration(
            environment: Environment(["PIER_DB_STARTUP_WAIT_S": "0"]), defaultPort: 8081, applicationName: "t")
        #expect(noWait.databaseStartupWaitSeconds == 0)
    }

    @Test func emailAddresses() {
        #expect(EmailAddress(" Ada@Example.COM ")?.key == "ada@example.com")
        #expect(EmailAddress(" Ada@Example.COM ")?.address == "Ada@Example.COM")
        for bad in [
            "", "ada", "@example.com", "ada@", "ada@example", "ada@.com", "ada@example.com.", "a da@example.com",
            "ada@@example.com", String(repeating: "a", count: 65) + "@example.com", "ada\u{0}@example.com",
            // What a mail system reads as another address, or as a name and an address.
            "foo<x@y.z>", "a<b>@example.com", "Ada <ada@example.com>", "ada@example.com>", "a,b@example.com",
            "a;b@example.com", "\"a@b\"@example.com", "a\\b@example.com", "(c)ada@example.com", "ada@[127.0.0.1]",
            "ada@exa_mple.com", "ada@-example.com", "ada@example-.com", ".ada@example.com", "ada.@example.com",
            "a..da@example.com", "ada@example..com", "ada@exa mple.com", "ada:x@example.com",
            "ada\u{202E}moc@example.com",
        ] {
            #expect(EmailAddress(bad) == nil, "\(bad)")
        }
        for good in [
            "ada@example.com", "ada.lovelace+pier@mail.example.co.uk", "o'brien@example.ie", "x@a-b.io",
            "ünïcode@exämple.de", "a!#$%&'*+/=?^_`{|}~-z@example.com",
        ] {
            #expect(EmailAddress(good)?.address == good, "\(good)")
        }
    }
}

/// Tokens verified with keys fetched from the JWKS.
@Suite struct TokenDistributionTests {
    /// A JWKS that cannot be reached is an outage: 503 with `Retry-After` for every token whose
    /// key is not known yet — on the first call and every one after — never a 401 that would
    /// sign the user out; keys already fetched keep working; it recovers by itself.
    @Test func anUnreachableJWKSIsA503NeverA401() async throws {
        let signing = try P256PrivateKey.generate(), other = try P256PrivateKey.generate()
        let set = try JSON.encode(JWKSet(keys: [JWK(key: try signing.publicKey, kid: "current")]))
        func jwks(port: Int) throws -> HTTPServer {
            let router = Router<BasicRequestContext>()
            router.get("/jwks.json") { _, _ in
                Response(status: 200, headers: ["Content-Type": "application/json"], body: set)
            }
            let server = HTTPServer(
                configuration: HTTPServer.Configuration(port: port, threads: 1, accessLog: false), routes: router.routes,
                logger: Logger(service: "jwks", level: .error))
            try server.listen()
            return server
        }
        // Nothing listens on this port until the JWKS starts there below (see PortHolder).
        let held = try PortHolder()
        defer { withExtendedLifetime(held) {} }
        let port = held.port
        let provider = JWKSKeyProvider(
            url: "http://127.0.0.1:\(port)/jwks.json", client: TestHTTP.client,
            refreshInterval: .milliseconds(200), retryInterval: .milliseconds(100))
        let authenticator = Authenticator(verifier: AccessTokenVerifier(keys: provider, issuer: "pier", audience: "pier"))
        func request(_ key: P256PrivateKey, kid: String) throws -> Request {
            let now = Int(Date().timeIntervalSince1970)
            let token = try AccessTokenSigner(key: key, kid: kid).sign(
                AccessClaims(
                    iss: "pier", sub: UUID().uuidString, aud: "pier", iat: now, nbf: now, exp: now + 600, jti: "j", sid: nil,
                    role: "user"))
            return Request(method: "GET", path: "/", headers: ["Authorization": "Bearer \(token)"])
        }
        func status(_ request: Request) async -> Int {
            do {
                _ = try await authenticator.principal(request)
                return 200
            } catch {
                #expect(error.status != 503 || error.headers["Retry-After"] != nil)
                return error.status
            }
        }
        let current = try request(signing, kid: "current")
        // Down from the start: 503 now, and for every call after, however soon or late.
        for _ in 0..<5 {
            #expect(await status(current) == 503)
            try await Task.sleep(for: .milliseconds(60))
        }
        // Back: the same token verifies, with no restart.
        let server = try jwks(port: port)
        #expect(await eventually { await status(current) == 200 })
        // Down again: the known key goes on verifying; a key the cache does not know is an
        // outage again, not a bad token.
        await server.shutdown()
        try await Task.sleep(for: .milliseconds(250))  // past refreshInterval: an unknown kid is looked up
        let unknown = try request(other, kid: "rotated")
        for _ in 0..<5 {
            #expect(await status(current) == 200)
            #expect(await status(unknown) == 503)
            try await Task.sleep(for: .milliseconds(60))
        }
    }
}

/// The list every service checks tokens against: what the event log says is revoked is refused,
/// forgotten once its tokens have expired, and while the log cannot be read the answer is
/// "unknown" (a 503), never "valid".
@Suite struct RevocationListTests {
    func claims(sid: UUID?, sub: UUID, iat: Int) -> AccessClaims {
        AccessClaims(
            iss: "pier", sub: sub.uuidString, aud: "pier", iat: iat, nbf: iat, exp: iat + 900, jti: "j",
            sid: sid?.uuidString, role: "user")
    }

    @Test func revocationsAreLearnedRefusedForgottenAndNeverGuessed() async throws {
        let url = try await TestDatabase.create("pier_test_revocations")
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 2))
        _ = try await Migrator.migrate(pool, schema: EventLog.schema, migrations: EventLog.migrations)
        let list = RevocationList(
            database: pool, listener: PostgresListener(configuration: pool.configuration, channel: EventLog.channel),
            staleAfter: .milliseconds(500), pollInterval: .milliseconds(50))
        let now = Int(Date().timeIntervalSince1970)
        let (ended, expired, live, deletedUser, user) = (UUID(), UUID(), UUID(), UUID(), UUID())
        // Nothing read yet: nothing can be vouched for.
        #expect(list.verdict(for: claims(sid: live, sub: user, iat: now)) == .unknown)
        try await list.sync()
        // Asked as a request asks: a read that began more than staleAfter ago (a busy machine) is
        // made again first, so what is checked is what the log says, not how fast it was read.
        #expect(await list.currentVerdict(for: claims(sid: live, sub: user, iat: now)) == .valid)
        try await pool.withTransaction { connection in
            try await EventLog.append(
                SessionRevoked.type, payload: SessionRevoked(sessionId: ended, userId: user, until: now + 600), on: connection)
            try await EventLog.append(
                SessionRevoked.type, payload: SessionRevoked(sessionId: expired, userId: user, until: now - 1), on: connection)
            try await EventLog.append(AccountDeleted.type, payload: AccountDeleted(userId: deletedUser), on: connection)
        }
        try await list.sync()
        #expect(await list.currentVerdict(for: claims(sid: ended, sub: user, iat: now)) == .revoked)
        var lowercased = claims(sid: nil, sub: user, iat: now)
        lowercased.sid = ended.uuidString.lowercased()  // as the auth service writes ids
        #expect(await list.currentVerdict(for: lowercased) == .revoked)
        #expect(await list.currentVerdict(for: claims(sid: live, sub: user, iat: now)) == .valid)
        // Every token of the deleted account is refused, whatever its iat (another host's clock).
        #expect(await list.currentVerdict(for: claims(sid: UUID(), sub: deletedUser, iat: now - 60)) == .revoked)
        #expect(await list.currentVerdict(for: claims(sid: nil, sub: deletedUser, iat: now + 5)) == .revoked)
        // An entry whose tokens have all expired is not kept.
        #expect(await list.currentVerdict(for: claims(sid: expired, sub: user, iat: now)) == .valid)
        #expect(list.count == (1, 1))
        // Read again: nothing twice.
        try await list.sync()
        #expect(list.count == (1, 1))
        // The database goes away: within staleAfter the list still answers; after it, unknown.
        pool.close()
        await #expect(throws: (any Error).self) { try await list.sync() }
        #expect(await eventually { list.verdict(for: claims(sid: live, sub: user, iat: now)) == .unknown })
        // Which an authenticator answers with 503 and Retry-After, not with access.
        let key = try P256PrivateKey.generate()
        let authenticator = Authenticator(
            verifier: AccessTokenVerifier(
                keys: StaticKeyProvider(keys: ["k": try key.publicKey]), issuer: "pier", audience: "pier"),
            revocations: list)
        let token = try AccessTokenSigner(key: key, kid: "k").sign(claims(sid: live, sub: user, iat: now))
        do {
            _ = try await authenticator.principal(
                Request(method: "GET", path: "/", headers: ["Authorization": "Bearer \(token)"]))
            Issue.record("a token was accepted while revocations could not be read")
        } catch {
            #expect(error.status == 503 && error.headers["Retry-After"] != nil)
        }
    }
}

extension RevocationListTests {
    /// A machine so busy that the background read fell behind `staleAfter` (a fresh-clone CI
    /// beside two CPU-bound processes answered 503 to a signed-in test): the request reads the
    /// log itself and is answered from it; only when the database cannot be read is it 503.
    @Test func aStaleListIsReadAgainByTheRequestBeforeItSaysUnknown() async throws {
        let url = try await TestDatabase.create("pier_test_revocations_stale")
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 2))
        _ = try await Migrator.migrate(pool, schema: EventLog.schema, migrations: EventLog.migrations)
        let silent = PostgresListener(configuration: pool.configuration, channel: EventLog.channel)  // never started
        // No background loop runs: every read is one a request asked for.
        let list = RevocationList(database: pool, listener: silent, staleAfter: .milliseconds(1), pollInterval: .seconds(3600))
        let (session, user) = (UUID(), UUID())
        let now = Int(Date().timeIntervalSince1970)
        let token = claims(sid: session, sub: user, iat: now)
        #expect(list.verdict(for: token) == .unknown)
        #expect(await list.currentVerdict(for: token) == .valid)
        try await pool.withTransaction { connection in
            try await EventLog.append(
                SessionRevoked.type, payload: SessionRevoked(sessionId: session, userId: user, until: now + 600), on: connection)
        }
        #expect(await eventually { list.verdict(for: token) == .unknown })
        #expect(await list.currentVerdict(for: token) == .revoked)
        // Many requests at once share one read; each is answered from it.
        let verdicts = await withTaskGroup(of: RevocationList.Verdict.self) { group in
            for _ in 0..<50 { group.addTask { await list.currentVerdict(for: token) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(verdicts.count == 50 && verdicts.allSatisfy { $0 == .revoked })
        // The database gone: nothing can be read, nothing is vouched for.
        pool.close()
        #expect(await eventually { list.verdict(for: token) == .unknown })
        #expect(await list.currentVerdict(for: claims(sid: UUID(), sub: user, iat: now)) == .unknown)
    }

    /// Without NOTIFY (the listening connection lost, or never made), revocations still arrive
    /// by the poll: within `pollInterval`, not never.
    @Test func revocationsArriveByPollingWhenNotificationsDoNot() async throws {
        let url = try await TestDatabase.create("pier_test_revocations_poll")
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 2))
        defer { pool.close() }
        _ = try await Migrator.migrate(pool, schema: EventLog.schema, migrations: EventLog.migrations)
        let silent = PostgresListener(configuration: pool.configuration, channel: EventLog.channel)  // never started
        let list = RevocationList(database: pool, listener: silent, pollInterval: .milliseconds(100))
        try await list.sync()
        let following = Task { await list.run() }
        let (session, user) = (UUID(), UUID())
        let now = Int(Date().timeIntervalSince1970)
        #expect(list.verdict(for: claims(sid: session, sub: user, iat: now)) == .valid)
        try await pool.withTransaction { connection in
            try await EventLog.append(
                SessionRevoked.type, payload: SessionRevoked(sessionId: session, userId: user, until: now + 600), on: connection)
        }
        #expect(await eventually { list.verdict(for: claims(sid: session, sub: user, iat: now)) == .revoked })
        following.cancel()
        await following.value
    }
}

/// Readiness answered from background checks: a check that hangs is not an old "ready" kept
/// forever, a monitor nobody asks pauses, and one stopped with its host answers at once.
@Suite struct ReadinessMonitorTests {
    @Test func aHangingCheckTurnsStaleAndAnIdleMonitorStops() async throws {
        let hang = Locked(false)
        let rounds = Locked(0)
        let monitor = ReadinessMonitor(
            mounted: [],
            extraChecks: {
                rounds.withLock { $0 += 1 }
                // A check that hangs until released (a database that accepts and never answers).
                while hang.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(10)) }
                return ["upstream": true]
            }, interval: .milliseconds(50), staleAfter: .milliseconds(300), idleAfter: .milliseconds(400))
        let running = Task { await monitor.run() }
        // The first round answers; on a loaded machine the caller may wake after it turned stale.
        #expect(await eventually { await monitor.current() == ["upstream": true] })
        hang.withLock { $0 = true }
        // Answered at once meanwhile, and not ready once the last round is older than staleAfter.
        #expect(await eventually { await monitor.current() == ["upstream": false, "readiness.fresh": false] })
        hang.withLock { $0 = false }
        #expect(await eventually { await monitor.current() == ["upstream": true] })
        // Nobody asks: the loop stops (no more rounds) after idleAfter.
        try await Task.sleep(for: .milliseconds(300))
        let stopped = await eventually {
            let before = rounds.withLock { $0 }
            try? await Task.sleep(for: .milliseconds(200))
            return rounds.withLock { $0 } == before
        }
        #expect(stopped)
        // The next probe starts it again and waits for a fresh round.
        let before = rounds.withLock { $0 }
        #expect(await monitor.current() == ["upstream": true])
        #expect(rounds.withLock { $0 } > before)
        // Stopped with its host (here while paused or between rounds): run() returns, and a late
        // probe is answered at once, as not ready.
        running.cancel()
        await running.value
        #expect(await monitor.current()["readiness.fresh"] == false)
    }
}

/// The log's readers meet events in the order of their transactions: an event whose id was
/// taken before an older transaction's is read once its transaction commits, never passed over
/// (going by id, a consumer and the revocation list passed it for good).
extension RevocationListTests {
    /// A pool of `poolSize` on a fresh database `name` that has the event log.
    static func eventLog(_ name: String, poolSize: Int) async throws -> PostgresPool {
        let pool = PostgresPool(
            configuration: PostgresConfiguration(url: try await TestDatabase.create(name), poolSize: poolSize))
        _ = try await Migrator.migrate(pool, schema: EventLog.schema, migrations: EventLog.migrations)
        return pool
    }

    @Test func anEventIsNotSkippedWhenIdsAndTransactionsCross() async throws {
        let pool = try await Self.eventLog("pier_test_event_order", poolSize: 3)
        defer { pool.close() }
        try await pool.execute(
            "CREATE TABLE public.order_cursor (consumer text PRIMARY KEY, last_event_id bigint NOT NULL, last_txid xid8 NOT NULL DEFAULT '0')"
        )
        let applied = Locked<[UUID]>([])
        let listener = PostgresListener(configuration: pool.configuration, channel: EventLog.channel)  // never started
        let consumer = EventConsumer(
            name: "order", cursorTable: "public.order_cursor", types: [SessionRevoked.type], database: pool,
            listener: listener, logger: Logger(service: "test", level: .error)
        ) { event, _ in
            let session = try event.decode(SessionRevoked.self).sessionId
            applied.withLock { $0.append(session) }
        }
        let list = RevocationList(database: pool, listener: listener, pollInterval: .seconds(60))
        let (first, second, user) = (UUID(), UUID(), UUID())
        let now = Int(Date().timeIntervalSince1970)
        // The older transaction has its id first; the newer one then appends (the lower event
        // id) and stays open while the older appends (the higher id) and commits. Both on the
        // pool's connections (three: the two transactions and the readers).
        let (opened, newerOpened) = AsyncStream.makeStream(of: Void.self)
        let (release, commitNewer) = AsyncStream.makeStream(of: Void.self)
        let newer = Locked<Task<Void, any Error>?>(nil)
        try await pool.withTransaction { older in
            _ = try await older.query("SELECT pg_current_xact_id()")
            newer.withLock {
                $0 = Task {
                    try await pool.withTransaction { connection in
                        try await EventLog.append(
                            SessionRevoked.type, payload: SessionRevoked(sessionId: second, userId: user, until: now + 600),
                            on: connection)
                        newerOpened.yield()
                        for await _ in release { break }
                    }
                }
            }
            for await _ in opened { break }
            try await EventLog.append(
                SessionRevoked.type, payload: SessionRevoked(sessionId: first, userId: user, until: now + 600), on: older)
        }
        // Events settle once every older transaction of the cluster has ended (other suites'
        // included): the readers are asked until they have read the older's.
        #expect(
            try await eventually {
                while try await consumer.consumeBatch() > 0 {}
                try await list.sync()
                return list.verdict(for: claims(sid: first, sub: user, iat: now)) == .revoked
                    && !applied.withLock { $0 }.isEmpty
            })
        #expect(applied.withLock { $0 } == [first])
        commitNewer.yield()
        try await newer.withLock { $0 }?.value
        #expect(
            try await eventually {
                while try await consumer.consumeBatch() > 0 {}
                return applied.withLock { $0 }.count == 2
            })
        #expect(applied.withLock { $0 } == [first, second])
        // The list read the newer's event at once (it takes events before they settle), and
        // keeps it.
        try await list.sync()
        #expect(list.verdict(for: claims(sid: second, sub: user, iat: now)) == .revoked)
    }
}

/// A consumer passes every event of the log, thousands at its poll under load, and applies
/// only its own types': it reads only their payloads.
extension RevocationListTests {
    @Test func aReaderPassingOthersEventsReadsOnlyItsOwnPayloads() async throws {
        let pool = try await Self.eventLog("pier_test_event_payloads", poolSize: 1)
        defer { pool.close() }
        let (mine, theirs) = (UUID(), UUID())
        try await pool.withTransaction { connection in
            try await EventLog.append(AccountDeleted.type, payload: AccountDeleted(userId: mine), on: connection)
            try await EventLog.append("test.other", payload: AccountDeleted(userId: theirs), on: connection)
        }
        let passing = try await EventLog.read(
            after: .start, types: nil, payloadsOf: [AccountDeleted.type], limit: 10, on: pool)
        #expect(passing.map(\.type) == [AccountDeleted.type, "test.other"])
        #expect(try passing[0].decode(AccountDeleted.self).userId == mine)
        #expect(passing[1].payload.isEmpty)
        let everything = try await EventLog.read(after: .start, types: nil, limit: 10, on: pool)
        #expect(try everything[1].decode(AccountDeleted.self).userId == theirs)
    }
}
