import PierCrypto
import PierHTTP
import PierPostgres
import PierRuntime
import PierService
import PierTestSupport

/// A service running for real in the test process, hosted as `pier-<name>` hosts it: its own
/// fresh database (migrated), a pool, its background work, and its routes with the operator
/// endpoints on an ephemeral port.
public struct LiveService<S: Service>: Sendable {
    public let service: S
    public let running: Hosted
    public let pool: PostgresPool
    public let configuration: ServiceConfiguration
    /// In-process, into the same pipeline the server runs.
    public let http: ServiceClient
    /// Over a socket to the server, for what is about HTTP itself.
    public let socket: ServiceClient
    public var server: HTTPServer { running.server }
    public var base: String { "http://127.0.0.1:\(server.port)" }
    public var port: Int { server.port }

    /// Stops it all, as a signal stops the process: the server, the service's work, the event
    /// listener, the pool (so that a suite starting many services does not run the database
    /// out of connections).
    public func stop() async { await running.shutdown() }

    /// - Parameters:
    ///   - settings: environment variables on top of the test defaults (port 0, no access log).
    ///   - keys: what tokens are verified with (a test's signer's), unless the service offers its own.
    ///   - migrate: false to serve a database left as it is (an operator who forgot to migrate).
    ///   - make: builds the service from its context.
    public static func start(
        database: String, settings: [String: String], logger: Logger, keys: (any VerificationKeyProvider)? = nil,
        migrate: Bool = true, make: @escaping @Sendable (ServiceContext) async throws -> S
    ) async throws -> LiveService {
        var environment = [
            "PIER_DATABASE_URL": try await TestDatabase.create(database), "PIER_PORT": "0", "PIER_HTTP_ACCESS_LOG": "false",
        ]
        environment.merge(settings) { $1 }
        let configuration = try ServiceConfiguration(
            environment: Environment(environment), defaultPort: 0, applicationName: "\(S.name)-tests")
        let running = Hosted(
            try await PluginHost.start(
                [Plugin(S.self, make: make)], configuration: configuration, logger: logger, migrate: migrate, keys: keys))
        guard let service = running.services.first as? S, let pool = running.pools[S.name] else {
            fatalError("the host did not build \(S.name)")
        }
        return LiveService(
            service: service, running: running, pool: pool, configuration: configuration,
            http: ServiceClient(pipeline: running.pipeline, trusted: configuration.http.trustedProxies),
            socket: ServiceClient(base: "http://127.0.0.1:\(running.server.port)"))
    }
}
