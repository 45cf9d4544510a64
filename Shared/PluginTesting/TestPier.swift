import Gateway
import PierAudit
import PierClient
import PierEvents
import PierHTTP
import PierJSON
import PierModels
import PierPostgres
import PierRuntime
import PierService
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Pier for a plugin's tests: Pier's own plugins (`Gateway.builtIn`: auth, feedback,
/// subscriptions, the console, remote config) and yours hosted in one process, on a database of
/// its own (made on the PostgreSQL server that `PIER_TEST_DATABASE_URL` names, migrated,
/// dropped by ``stop()``), listening on a port of its own. Call your endpoints as an app does,
/// with `PierClient` and your `Endpoint` values, as whoever the test needs:
///
///     let pier = try await TestPier.start(Plugin(LeaderboardService.self))
///     let ana = try await pier.user(name: "Ana")
///     let score = try await ana.call(LeaderboardAPI.post, .init(game: "chess"), body: NewScore(points: 42))
///     let support = try await pier.staff(.support)
///     #expect(try await pier.events(ScoreRecorded.type, as: ScoreRecorded.self).count == 1)
///     await pier.stop()
///
/// Staff need no second factor here (`PIER_AUTH_REQUIRE_MFA_FOR_ROLES=none`) and passwords hash
/// cheaply; `settings` adds or overrides any variable (`PIER_<NAME>_*` for your plugin's own).
public final class TestPier: Sendable {
    /// The address the plugins answer at (`http://127.0.0.1:<port>`).
    public let url: URL
    /// The plugins' database: your schema, the event log (`events.events`).
    public let database: PostgresPool
    /// Every plugin hosted (Pier's and yours), in the host's order.
    public let plugins: [Plugin]
    /// The environment the plugins run with (what ``run(_:input:)`` gives a command too).
    public let settings: [String: String]
    private let running: PluginHost.Running
    private let task: Task<ServiceGroup.Reason, any Error>
    private let databaseName: String
    private let adminURL: String
    private let counter = Atomic<Int>(0)
    private let kitAdmin = Atomic<Bool>(false)
    private let http = HTTPClient()

    /// The password of every account the kit makes.
    public static let password = "a test passphrase for plugins"

    /// Hosts Pier's plugins and `plugins` on a fresh database, migrated, and serves them.
    public static func start(_ plugins: Plugin..., settings: [String: String] = [:]) async throws -> TestPier {
        guard let adminURL = ProcessInfo.processInfo.environment["PIER_TEST_DATABASE_URL"] else {
            throw TestPierError(
                "set PIER_TEST_DATABASE_URL to a PostgreSQL URL whose role may create databases (in Pier's checkout: scripts/postgres.sh url)"
            )
        }
        let name = "pier_plugin_test_" + UUID().uuidString.prefix(8).lowercased()
        let admin = PostgresPool(
            configuration: PostgresConfiguration(url: adminURL, poolSize: 1, statementTimeoutMilliseconds: 0))
        defer { admin.close() }
        try await admin.execute(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        var environment = [
            "PIER_DATABASE_URL": adminURL[..<adminURL.lastIndex(of: "/")!] + "/" + name, "PIER_PORT": "0",
            "PIER_LOG_LEVEL": "error", "PIER_HTTP_ACCESS_LOG": "false", "PIER_AUTH_ARGON2_MEMORY_KIB": "1024",
            "PIER_AUTH_ARGON2_ITERATIONS": "1", "PIER_AUTH_REQUIRE_MFA_FOR_ROLES": "none",
            "PIER_DATA_DIR": FileManager.default.temporaryDirectory.appendingPathComponent(name).path,
        ]
        environment.merge(settings) { $1 }
        let hosted = Gateway.builtIn + plugins
        let configuration = try ServiceConfiguration(
            environment: Environment(environment), defaultPort: 0, applicationName: "plugin-tests")
        let running = try await PluginHost.start(
            hosted, extensions: [], configuration: configuration,
            logger: Logger(service: "test-pier", level: configuration.logLevel), migrate: true, keys: nil, signals: [],
            metricsName: "test_pier")
        return TestPier(
            running: running, url: URL(string: "http://127.0.0.1:\(running.server.port)")!, plugins: hosted,
            settings: environment, databaseName: name, adminURL: adminURL)
    }

    private init(
        running: PluginHost.Running, url: URL, plugins: [Plugin], settings: [String: String], databaseName: String,
        adminURL: String
    ) {
        self.running = running
        self.url = url
        self.plugins = plugins
        self.settings = settings
        self.databaseName = databaseName
        self.adminURL = adminURL
        database = running.pools["auth"]!
        task = Task { try await running.run() }
    }

    /// Stops the plugins (as a signal does) and drops the database.
    public func stop() async {
        http.close()
        running.stop()
        _ = try? await task.value
        let admin = PostgresPool(
            configuration: PostgresConfiguration(url: adminURL, poolSize: 1, statementTimeoutMilliseconds: 0))
        defer { admin.close() }
        _ = try? await admin.execute(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(databaseName) WITH (FORCE)"))
    }

    // MARK: - Callers

    /// An app with nobody signed in.
    public func client(installationID: String? = nil) -> PierClient {
        PierClient(
            baseURL: url, sessionStore: MemorySessionStore(),
            options: .init(retry: RetryPolicy(maxAttempts: 1), installationID: installationID ?? UUID().uuidString))
    }

    /// An app signed in to a new account (`email`, or one made up), with ``password``.
    public func user(_ email: String? = nil, name: String? = nil) async throws -> PierClient {
        let app = client()
        try await app.auth.register(email: email ?? nextAddress("user"), password: Self.password, displayName: name)
        return app
    }

    /// An app signed in to a new anonymous account (`POST /auth/anonymous`).
    public func anonymousUser() async throws -> PierClient {
        let app = client()
        try await app.auth.signInAnonymously()
        return app
    }

    /// An app signed in as a new team member: an admin made as the operator makes one
    /// (`create-admin`), then given `role` (`set-role`) when it is another.
    public func staff(_ role: AccountRole = .admin, email: String? = nil, name: String? = nil) async throws -> PierClient {
        let address = email ?? nextAddress(role.rawValue)
        var command = ["create-admin", "--email", address]
        if let name { command += ["--name", name] }
        guard await run(command, settings: ["PIER_ADMIN_PASSWORD": Self.password]) == 0 else {
            throw TestPierError("create-admin --email \(address) failed (its reason is above)")
        }
        if role != .admin {
            // An admin of the kit's own first, once: the last admin stays one.
            if kitAdmin.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
                await run(["create-admin", "--email", "kit-admin@example.com"], settings: ["PIER_ADMIN_PASSWORD": Self.password])
            }
            guard await run(["set-role", "--email", address, "--role", role.rawValue]) == 0 else {
                throw TestPierError("set-role --email \(address) --role \(role.rawValue) failed (its reason is above)")
            }
        }
        let app = client()
        try await app.auth.login(email: address, password: Self.password)
        return app
    }

    /// The console in a browser signed in as the team member `member` (one of ``staff(_:email:name:)``).
    public func console(as member: PierClient) async throws -> ConsoleBrowser {
        guard let email = member.auth.currentUser?.email else { throw TestPierError("the console needs a signed-in team member") }
        let browser = ConsoleBrowser(base: url.absoluteString, client: http)
        try await browser.signIn(email: email, password: Self.password)
        return browser
    }

    /// Runs a plugin's command as the operator runs it beside the server (`pier-gateway
    /// create-admin …`), with the stack's settings and `settings`; its exit status.
    @discardableResult
    public func run(_ arguments: [String], settings extra: [String: String] = [:]) async -> Int32 {
        let executable = Executable(
            name: "test-pier", defaultPort: 0, plugins: plugins, embedVariable: "PIER_GATEWAY_EMBED", summary: "the test's Pier")
        return await executable.main(
            arguments: ["test-pier"] + arguments, environment: Environment(settings.merging(extra) { $1 }))
    }

    // MARK: - What happened

    /// The events of `type` in the shared log, oldest first, decoded as `T`.
    public func events<T: Decodable>(_ type: String, as: T.Type) async throws -> [T] {
        let rows = try await database.query("SELECT payload::text AS payload FROM events.events WHERE type = \(type) ORDER BY id")
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try rows.map { try decoder.decode(T.self, from: Data(try $0.decode("payload", as: String.self).utf8)) }
    }

    /// The entries of `service`'s audit log, newest first (its `GET <prefix>/audit`, read directly).
    public func audit<S: Service>(of service: S.Type, limit: Int = 200) async throws -> [AuditEntry] {
        try await AuditLog.list(.init(limit: limit), service: S.name, schema: S.schema, on: database).items
    }

    private func nextAddress(_ kind: String) -> String {
        "\(kind)-\(counter.add(1, ordering: .relaxed).newValue)-\(UUID().uuidString.prefix(6).lowercased())@example.com"
    }
}

/// What the kit could not do, in words.
public struct TestPierError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
