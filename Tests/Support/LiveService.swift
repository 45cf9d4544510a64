import PierHTTP
import PierPostgres
import PierRuntime
import PierService

/// A service running for real in the test process: its own fresh database (migrated), a pool,
/// and its routes with the operator endpoints on an ephemeral port.
public struct LiveService<S: Service>: Sendable {
    public let service: S
    public let server: HTTPServer
    public let pool: PostgresPool
    public let configuration: ServiceConfiguration
    public let context: ServiceContext
    /// In-process, into the same pipeline the server runs.
    public let http: ServiceClient
    /// Over a socket to the server, for what is about HTTP itself.
    public let socket: ServiceClient
    public var base: String { "http://127.0.0.1:\(server.port)" }
    public var port: Int { server.port }

    /// Stops it all: the server, the service's workers, the event listener, the pool (so that a
    /// suite starting many services does not run the database out of connections).
    public func stop() async {
        await server.shutdown()
        await service.shutdown()
        await context.stopFollowing()
        pool.close()
    }

    /// - Parameters:
    ///   - settings: environment variables on top of the test defaults (port 0, no access log).
    ///   - migrate: false to serve a database left as it is (an operator who forgot to migrate).
    ///   - make: builds the service from its context.
    public static func start(
        database: String, settings: [String: String], logger: Logger, authenticator: Authenticator, migrate: Bool = true,
        make: (ServiceContext) async throws -> S
    ) async throws -> LiveService {
        var environment = [
            "PIER_DATABASE_URL": try await TestDatabase.create(database), "PIER_PORT": "0", "PIER_HTTP_ACCESS_LOG": "false",
        ]
        environment.merge(settings) { $1 }
        let configuration = try ServiceConfiguration(
            environment: Environment(environment), defaultPort: 0, applicationName: "\(S.name)-tests")
        let pool = PostgresPool(configuration: configuration.database)
        if migrate {
            try await ServiceRunner.migrate(S.self, pool: pool, logger: logger)
        } else {
            await ServiceRunner.warnIfNotMigrated(S.self, pool: pool, logger: logger)
        }
        // Events (revocations, consumers) are followed as in production.
        let context = await ServiceContext.following(
            configuration: configuration, database: pool, logger: logger, authenticator: authenticator)
        let service = try await make(context)
        let host = ServiceHost(
            mounted: [.init(name: S.name, schema: S.schema, migrations: S.migrations, database: pool, service: service)],
            metricsName: S.name)
        let pipeline = ServiceRunner.pipeline(
            routes: host.routes(), metrics: host.metrics, configuration: configuration, logger: logger)
        let server = HTTPServer(configuration: configuration.http, pipeline: pipeline, logger: logger)
        try server.start()
        return LiveService(
            service: service, server: server, pool: pool, configuration: configuration, context: context,
            http: ServiceClient(pipeline: pipeline, trusted: configuration.http.trustedProxies),
            socket: ServiceClient(base: "http://127.0.0.1:\(server.port)"))
    }
}
