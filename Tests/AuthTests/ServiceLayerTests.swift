import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierTestSupport
import Testing

@testable import AuthService
@testable import PierService

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

    /// Every line logged while a request is answered carries its id, once, whoever logs it (the
    /// handler's "login failed", the access log, the error mapping), with nothing passed by hand.
    @Test func everyLogLineOfARequestCarriesItsID() async throws {
        try await AuthHarness.with(database: "pier_test_request_ids") { auth in
            let id = "trace-\(UUID().uuidString.prefix(8))"
            let reply = try await auth.send(
                "POST", "/auth/login", json: #"{"email":"nobody@example.com","password":"wrong password"}"#,
                headers: ["X-Request-ID": id])
            #expect(reply.status == 401 && reply.headers["X-Request-ID"] == id)
            let lines = auth.logs.all.filter { $0.contains(id) }
            let messages = lines.compactMap { line -> String? in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
                return object["request_id"] as? String == id ? object["msg"] as? String : nil
            }
            #expect(messages.count == lines.count, "every line with the id is JSON with it under request_id: \(lines)")
            #expect(Set(messages).isSuperset(of: ["login failed", "request"]), "\(messages)")
            #expect(lines.allSatisfy { $0.components(separatedBy: "\"request_id\"").count == 2 })
            // Lines of the process that no request caused carry none.
            #expect(auth.logs.all.contains { $0.contains("\"msg\":\"migrated\"") && !$0.contains("request_id") })
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
        #expect {
            _ = try AuthConfiguration(environment: Environment(["PIER_DATABASE_URL": "x"]), production: true)
        } throws: { ($0 as? Environment.Failure)?.variable == "PIER_AUTH_SIGNING_KEY_FILE" }
        #expect {
            _ = try AuthConfiguration(environment: Environment(["PIER_AUTH_PASSWORD_MIN_LENGTH": "4"]), production: false)
        } throws: { ($0 as? Environment.Failure)?.variable == "PIER_AUTH_PASSWORD_MIN_LENGTH" }
        let defaults = try ServiceConfiguration(environment: Environment([:]), defaultPort: 8081, applicationName: "t")
        #expect(defaults.http.port == 8081 && defaults.database.poolSize == 10 && !defaults.production)
        #expect(defaults.databaseStartupWaitSeconds == 60)
        let noWait = try ServiceConfiguration(
            environment: Environment(["PIER_DB_STARTUP_WAIT_S": "0"]), defaultPort: 8081, applicationName: "t")
        #expect(noWait.databaseStartupWaitSeconds == 0)
    }

    @Test func everyMigrationFileIsListedInOrder() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Services/Auth/Migrations").standardized
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(files.count == AuthService.migrations.count)
        for (file, migration) in zip(files, AuthService.migrations) {
            #expect(file == String(format: "%04d_%@.sql", migration.version, migration.name))
            #expect(try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8) == migration.sql)
        }
    }

    @Test func theBlocklistIsLoaded() {
        #expect(PasswordPolicy.common.count > 10_000)
        #expect(PasswordPolicy.common.contains("password"))
        #expect(PasswordPolicy.common.allSatisfy { $0.count >= 8 })
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

    /// Names land in mails and lists other people read: no line breaks, controls, bidirectional
    /// overrides or markup; the field is named.
    @Test func namesAreRefusedWhenTheyCouldForgeWhatAReaderSees() {
        for bad in [
            "Anna\r\nBcc: x@y.z", "Anna\nSmith", "a\u{0}b", "\u{202E}enohPi s'annA", "Ann\u{2066}a", "<b>Anna</b>",
            "Anna\u{2028}Smith", String(repeating: "n", count: 101),
        ] {
            var errors: [Problem.FieldError] = []
            _ = Names.clean(bad, field: "displayName", into: &errors)
            #expect(errors.map(\.field) == ["displayName"], "\(bad.debugDescription)")
        }
        for good in ["Anna", "  Anna Smith ", "O'Brien & Sons", "Zoë", "محمد", "李小龙", "Anna 🌱"] {
            var errors: [Problem.FieldError] = []
            #expect(Names.clean(good, field: "displayName", into: &errors) == good.trimmingCharacters(in: .whitespaces))
            #expect(errors.isEmpty, "\(good)")
        }
    }

    /// Key sets are fetched over https; http only from the loopback (a provider played locally).
    @Test func keySetsAreFetchedOverHTTPS() {
        for good in [
            "https://appleid.apple.com/auth/keys", "http://127.0.0.1:9000/keys", "http://localhost/k", "http://[::1]:80/k",
        ] {
            #expect(AuthConfiguration.isKeySetURL(good), "\(good)")
        }
        for bad in [
            "http://appleid.apple.com/auth/keys", "http://127.0.0.1.evil.example/k", "http://10.0.0.1/k", "ftp://x/k",
            "https://", "http://localhost.evil.example/k",
        ] {
            #expect(!AuthConfiguration.isKeySetURL(bad), "\(bad)")
        }
        #expect(throws: Environment.Failure.self) {
            _ = try AuthConfiguration(
                environment: Environment([
                    "PIER_AUTH_APPLE_AUDIENCES": "dev.pier.seeds", "PIER_AUTH_APPLE_JWKS_URL": "http://keys.example/keys",
                ]), production: false)
        }
        let oidc = #"[{"name":"corp","issuer":"https://id.example","jwksURL":"http://id.example/keys","audiences":["a"]}]"#
        #expect(throws: Environment.Failure.self) {
            _ = try AuthConfiguration(environment: Environment(["PIER_AUTH_OIDC_PROVIDERS": oidc]), production: false)
        }
    }

    /// A service started on a database nobody migrated says so: a warning at start that names
    /// the command, and 503 `schema_not_migrated` (never a 500) for every request that reaches
    /// the database, in a transaction or not.
    @Test func anUnmigratedDatabaseAnswers503AndSaysWhatToRun() async throws {
        let auth = try await AuthHarness.start(database: "pier_test_auth_unmigrated", migrate: false)
        #expect(auth.logs.all.contains { $0.contains("schema auth is not migrated: run pier-auth migrate") })
        for (path, json) in [
            ("/auth/register", #"{"email":"a@example.com","password":"a long enough passphrase"}"#),
            ("/auth/login", #"{"email":"a@example.com","password":"a long enough passphrase"}"#),
        ] {
            let reply = try await auth.send("POST", path, json: json)
            #expect(reply.status == 503 && reply.headers["Retry-After"] != nil, "\(path): \(reply.status)")
            #expect(reply.problem?.code == .schemaNotMigrated, "\(path): \(reply.text)")
        }
        let ready = try await auth.send("GET", "/readyz")
        #expect(ready.status == 503 && ready.text.contains(#""auth.migrations":false"#))
        await auth.stop()
    }

    /// The deployments' roles: a service's role reads the event log but may not create in its
    /// schema. Its migrate job waits for the log's owner to have migrated it (and says so), and
    /// fails naming the command to run when the owner never does.
    @Test func aReaderOfTheEventLogWaitsForItsOwnerToMigrateIt() async throws {
        let url = try await TestDatabase.create("pier_test_events_roles")
        let admin = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 1))
        defer { admin.close() }
        for role in ["pier_test_events_owner", "pier_test_events_reader"] {
            try await admin.execute(
                PostgresQuery(
                    unsafeSQL: """
                        DO $$ BEGIN
                            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '\(role)') THEN CREATE ROLE \(role) LOGIN; END IF;
                        END $$
                        """))
        }
        for statement in [
            "REVOKE CREATE ON DATABASE pier_test_events_roles FROM PUBLIC", "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
            "CREATE SCHEMA events AUTHORIZATION pier_test_events_owner",
            "CREATE SCHEMA auth AUTHORIZATION pier_test_events_reader",
            "GRANT USAGE ON SCHEMA events TO pier_test_events_reader",
            "ALTER DEFAULT PRIVILEGES FOR ROLE pier_test_events_owner IN SCHEMA events GRANT SELECT ON TABLES TO pier_test_events_reader",
        ] {
            try await admin.execute(PostgresQuery(unsafeSQL: statement))
        }
        func pool(_ role: String) -> PostgresPool {
            PostgresPool(
                configuration: PostgresConfiguration(
                    url: url.replacingOccurrences(of: "postgres@", with: role + "@"), poolSize: 2))
        }
        let (owner, reader) = (pool("pier_test_events_owner"), pool("pier_test_events_reader"))
        defer {
            owner.close()
            reader.close()
        }
        let logs = LogLines()
        let logger = Logger(service: "auth", level: .info, sink: { logs.append($0) })
        #expect(try await !Migrator.mayCreate(in: "events", pool: reader))
        #expect(try await Migrator.mayCreate(in: "events", pool: owner))
        do {
            try await Plugin(AuthService.self).migrate(pool: reader, logger: logger, eventsWait: 0)
            Issue.record("migrated without the event log")
        } catch let error as HostFailure {
            #expect(error.description.contains("run pier-auth migrate first"))
        }
        async let migrated: Void = Plugin(AuthService.self).migrate(pool: reader, logger: logger, eventsWait: 60)
        #expect(
            await eventually(timeout: .seconds(30)) { logs.all.contains { $0.contains("waiting for the event log's owner") } })
        #expect(try await Migrator.migrate(owner, schema: EventLog.schema, migrations: EventLog.migrations).isEmpty == false)
        try await migrated
        #expect(try await Migrator.pending(reader, schema: "auth", migrations: AuthService.migrations).isEmpty)
    }

    /// Mailed links point at the address the service serves unless PIER_AUTH_PUBLIC_URL says otherwise.
    @Test func mailedLinksDefaultToTheServedAddress() throws {
        let served = try AuthConfiguration(environment: Environment([:]), production: false, serving: ("127.0.0.1", 9123))
        #expect(served.publicURL == "http://127.0.0.1:9123")
        let wildcard = try AuthConfiguration(environment: Environment([:]), production: false, serving: ("0.0.0.0", 8081))
        #expect(wildcard.publicURL == "http://127.0.0.1:8081")
        let six = try AuthConfiguration(environment: Environment([:]), production: false, serving: ("::", 8081))
        #expect(six.publicURL == "http://[::1]:8081")
        let set = try AuthConfiguration(
            environment: Environment(["PIER_AUTH_PUBLIC_URL": "https://seeds.example/"]), production: false,
            serving: ("127.0.0.1", 9123))
        #expect(set.publicURL == "https://seeds.example")
    }
}

@Suite struct TokenDistributionTests {
    @Test func servicesVerifyTokensWithKeysFetchedFromTheJWKS() async throws {
        let auth = try await AuthEndpointTests.harness.value
        let (session, _) = try await auth.register()
        let provider = JWKSKeyProvider(
            url: auth.base + "/auth/.well-known/jwks.json", client: HTTPClient(), refreshInterval: .seconds(60))
        let verifier = AccessTokenVerifier(keys: provider, issuer: "pier", audience: "pier")
        let claims = try await verifier.verify(session.accessToken)
        #expect(UUID(uuidString: claims.sub) == session.user.id)
        // Requests arriving together before the first fetch all wait for it: none is refused.
        let fresh = AccessTokenVerifier(
            keys: JWKSKeyProvider(url: auth.base + "/auth/.well-known/jwks.json", client: HTTPClient()),
            issuer: "pier", audience: "pier")
        let verified = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<20 { group.addTask { (try? await fresh.verify(session.accessToken)) != nil } }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(verified.count == 20 && verified.allSatisfy { $0 })
        // An unknown kid triggers one refetch, then is refused without fetching again.
        #expect(try await provider.key(for: "unknown-kid") == nil)
    }

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
            try server.start()
            return server
        }
        // Nothing listens on this port until the JWKS starts there below (see PortHolder).
        let held = try PortHolder()
        defer { withExtendedLifetime(held) {} }
        let port = held.port
        let provider = JWKSKeyProvider(
            url: "http://127.0.0.1:\(port)/jwks.json", client: HTTPClient(timeoutSeconds: 2),
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

    @Test func logsNeverCarrySecrets() async throws {
        let auth = try await AuthEndpointTests.harness.value
        let password = "secret-passphrase-\(UUID())"
        let (session, email) = try await auth.register(password: password)
        let login = try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"\#(password)"}"#)
        let refreshed = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#)
        _ = try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"wrong \#(password)"}"#)
        _ = try await auth.send("GET", "/auth/me", token: session.accessToken)
        let secrets = [
            password, session.accessToken, session.refreshToken,
            try login.decode(AuthSession.self).refreshToken, try refreshed.decode(AuthSession.self).refreshToken, "$argon2id$",
        ]
        let lines = auth.logs.all
        #expect(lines.contains { $0.contains("/auth/login") })
        for secret in secrets {
            #expect(!lines.contains { $0.contains(secret) })
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
        #expect(list.verdict(for: claims(sid: live, sub: user, iat: now)) == .valid)
        try await pool.withTransaction { connection in
            try await EventLog.append(
                SessionRevoked.type, payload: SessionRevoked(sessionId: ended, userId: user, until: now + 600), on: connection)
            try await EventLog.append(
                SessionRevoked.type, payload: SessionRevoked(sessionId: expired, userId: user, until: now - 1), on: connection)
            try await EventLog.append(AccountDeleted.type, payload: AccountDeleted(userId: deletedUser), on: connection)
        }
        try await list.sync()
        #expect(list.verdict(for: claims(sid: ended, sub: user, iat: now)) == .revoked)
        var lowercased = claims(sid: nil, sub: user, iat: now)
        lowercased.sid = ended.uuidString.lowercased()  // as the auth service writes ids
        #expect(list.verdict(for: lowercased) == .revoked)
        #expect(list.verdict(for: claims(sid: live, sub: user, iat: now)) == .valid)
        // Every token of the deleted account is refused, whatever its iat (another host's clock).
        #expect(list.verdict(for: claims(sid: UUID(), sub: deletedUser, iat: now - 60)) == .revoked)
        #expect(list.verdict(for: claims(sid: nil, sub: deletedUser, iat: now + 5)) == .revoked)
        // An entry whose tokens have all expired is not kept.
        #expect(list.verdict(for: claims(sid: expired, sub: user, iat: now)) == .valid)
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
/// forever, and a monitor nobody asks stops checking.
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
    }
}
