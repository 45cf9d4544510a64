import Foundation
import PierAudit
import PierCrypto
import PierEvents
import PierHTTP
import PierIdentity
import PierModels
import PierPostgres
import PierRuntime
import PierTestSupport
import Testing

@testable import AuthService
@testable import PierService

@Suite struct ServiceLayerTests {
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

    @Test func authConfigurationNamesTheVariableThatIsWrong() throws {
        #expect {
            _ = try AuthConfiguration(environment: Environment(["PIER_DATABASE_URL": "x"]), production: true)
        } throws: { ($0 as? Environment.Failure)?.variable == "PIER_AUTH_SIGNING_KEY_FILE" }
        #expect {
            _ = try AuthConfiguration(environment: Environment(["PIER_AUTH_PASSWORD_MIN_LENGTH": "4"]), production: false)
        } throws: { ($0 as? Environment.Failure)?.variable == "PIER_AUTH_PASSWORD_MIN_LENGTH" }
    }

    /// Every file is a migration, in order; the shared ones (the audit log) are the only others.
    @Test func everyMigrationFileIsListedInOrder() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Services/Auth/Migrations").standardized
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        let audit = AuditLog.migration(schema: AuthService.schema, version: 5)
        #expect(AuthService.migrations.map(\.version) == Array(1...AuthService.migrations.count))
        #expect(AuthService.migrations.contains { $0.version == audit.version && $0.sql == audit.sql })
        // The audit log's and the event cursor's migrations are shared ones, written in code.
        let cursor = EventConsumer.cursorMigration(table: "auth.event_cursor", version: 10)
        #expect(AuthService.migrations.contains { $0.version == cursor.version && $0.sql == cursor.sql })
        let fromFiles = AuthService.migrations.filter { $0.version != audit.version && $0.version != cursor.version }
        #expect(files.count == fromFiles.count)
        for (file, migration) in zip(files, fromFiles) {
            #expect(file == String(format: "%04d_%@.sql", migration.version, migration.name))
            #expect(try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8) == migration.sql)
        }
    }

    @Test func theBlocklistIsLoaded() {
        #expect(PasswordPolicy.common.count > 10_000)
        #expect(PasswordPolicy.common.contains("password"))
        #expect(PasswordPolicy.common.allSatisfy { $0.count >= 8 })
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
            // The reader here is auth's migrations, which append to the log (as feedback and
            // subscriptions may): it reads and appends, and creates nothing there.
            "ALTER DEFAULT PRIVILEGES FOR ROLE pier_test_events_owner IN SCHEMA events GRANT SELECT, INSERT ON TABLES TO pier_test_events_reader",
            "ALTER DEFAULT PRIVILEGES FOR ROLE pier_test_events_owner IN SCHEMA events GRANT USAGE ON SEQUENCES TO pier_test_events_reader",
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
            url: auth.base + "/auth/.well-known/jwks.json", client: TestHTTP.client, refreshInterval: .seconds(60))
        let verifier = AccessTokenVerifier(keys: provider, issuer: "pier", audience: "pier")
        let claims = try await verifier.verify(session.accessToken)
        #expect(UUID(uuidString: claims.sub) == session.user.id)
        // Requests arriving together before the first fetch all wait for it: none is refused.
        let fresh = AccessTokenVerifier(
            keys: JWKSKeyProvider(url: auth.base + "/auth/.well-known/jwks.json", client: TestHTTP.client),
            issuer: "pier", audience: "pier")
        let verified = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<20 { group.addTask { (try? await fresh.verify(session.accessToken)) != nil } }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(verified.count == 20 && verified.allSatisfy { $0 })
        // An unknown kid triggers one refetch, then is refused without fetching again.
        #expect(try await provider.key(for: "unknown-kid") == nil)
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
