import PierCrypto
import PierEvents
import PierHTTP
import PierIdentity
import PierPostgres
import PierRuntime
import Synchronization

/// What a host serves beside its plugins: the gateway's proxy and its OpenAPI document.
public protocol HostExtension: Sendable {
    /// The path prefixes it answers (a plugin's prefix may not be among them).
    var prefixes: [String] { get }
    /// Its routes, given the process's token verifier.
    func routes(into routes: inout Routes, authenticator: Authenticator)
    /// Middleware in front of every route (after the error mapping).
    var middleware: [any RouterMiddleware<BasicRequestContext>] { get }
    /// Its background work, run and stopped like the plugins'.
    var background: [any LifecycleService] { get }
    /// More `/readyz` entries.
    func readiness() -> [String: Bool]
    /// More Prometheus text for `/metrics`.
    func metrics() -> String
}

extension HostExtension {
    public var prefixes: [String] { [] }
    public var middleware: [any RouterMiddleware<BasicRequestContext>] { [] }
    public var background: [any LifecycleService] { [] }
    public func readiness() -> [String: Bool] { [:] }
    public func metrics() -> String { "" }
}

/// The one composition root: builds the parts of a process that hosts plugins (one for
/// `pier-auth`, several for the gateway) and runs them as one ``ServiceGroup``.
///
/// In order: a pool per plugin (migrated, or a warning when it is not), the process's listener
/// on `pier_events` and the ``RevocationList`` that follows it, one ``Authenticator``, the
/// plugins (built, then given what the others offer), the extensions, the listeners. The group
/// starts them in that order and stops them in reverse: servers finish their requests before
/// the plugins' work stops, and that before the pools close.
public enum PluginHost {
    /// The parts that run, and the group that runs them.
    public struct Running: Sendable {
        public let server: HTTPServer
        /// The operator listener, with `PIER_ADMIN_PORT`.
        public let admin: HTTPServer?
        public let services: [any Service]
        /// Each plugin's pool, by plugin name.
        public let pools: [String: PostgresPool]
        /// What the server runs each request through (tests call it in-process).
        public let pipeline: HTTPPipeline
        /// The process's token verifier.
        public let authenticator: Authenticator
        /// The listener on `pier_events`, when a plugin is hosted.
        public let events: PostgresListener?
        let group: ServiceGroup

        /// Runs the parts (in the caller's task) until a signal (when the group listens to
        /// signals), a part fails or ends, or ``stop()``; returns once every part has stopped.
        public func run() async throws -> ServiceGroup.Reason { try await group.run() }

        /// Ends ``run()``: stops accepting, finishes in-flight requests, stops the plugins' work,
        /// closes the pools.
        public func stop() { group.stop() }
    }

    /// Builds the parts and starts them in order (the listeners last, so the returned servers'
    /// ports are bound); ``Running/run()`` runs them.
    /// - Parameters:
    ///   - migrate: apply pending migrations first (waiting up to `PIER_DB_STARTUP_WAIT_S` for a
    ///     database that is starting); otherwise a plugin behind its schema is served with a
    ///     warning (its requests answer 503 until it is migrated).
    ///   - keys: the keys tokens are verified with when no hosted plugin offers
    ///     ``Capability/tokenKeys`` (by default the JWKS at `PIER_JWKS_URL`).
    ///   - signals: the signals that stop the group (none in tests).
    ///   - http: the process's outbound client, when extensions were built with it (by default the
    ///     host makes one). The host closes it last.
    ///   - catalog: every plugin the executable knows (``ServiceContext/plugins``); by default
    ///     those hosted.
    public static func start(
        _ plugins: [Plugin], extensions: [any HostExtension] = [], configuration: ServiceConfiguration, logger: Logger,
        migrate: Bool, keys: (any VerificationKeyProvider)? = nil, signals: [Int32] = [], http: HTTPClient? = nil,
        catalog: [Plugin]? = nil
    ) async throws -> Running {
        try await start(
            plugins, extensions: extensions, configuration: configuration, logger: logger, migrate: migrate, keys: keys,
            signals: signals, metricsName: plugins.count == 1 && extensions.isEmpty ? plugins[0].name : "gateway",
            http: http, catalog: catalog)
    }

    /// Builds the parts and starts them, with its metrics named `metricsName` (`pier_<name>_…`).
    public static func start(
        _ plugins: [Plugin], extensions: [any HostExtension], configuration: ServiceConfiguration, logger: Logger,
        migrate: Bool, keys: (any VerificationKeyProvider)?, signals: [Int32], metricsName: String,
        http given: HTTPClient? = nil, catalog: [Plugin]? = nil
    ) async throws -> Running {
        let http = given ?? HTTPClient()
        // Whatever fails before the group runs closes what was opened; the client stops last:
        // every part that sends through it has stopped before.
        var opened = Opened(parts: [Lifecycle("http client", stop: { http.close() })])
        var started = false
        defer {
            if !started {
                opened.pools.forEach { $0.close() }
                http.close()
            }
        }
        guard !plugins.isEmpty || !extensions.isEmpty else {
            throw Environment.Failure(variable: "--embed", problem: "names no plugin and no route is proxied")
        }
        if let twice = Plugin.repeated(in: plugins) { throw Environment.Failure(variable: "plugins", problem: twice) }
        let pools = try await openPools(plugins, configuration: configuration, logger: logger, migrate: migrate, &opened)
        let (events, revocations) = followEvents(pools.first?.1, &opened)
        let chosen = HostKeys(fallback: keys ?? JWKSKeyProvider(url: configuration.jwksURL, client: http))
        let authenticator = Authenticator(
            verifier: AccessTokenVerifier(
                keys: chosen, issuer: configuration.tokenIssuer, audience: configuration.tokenAudience),
            revocations: revocations)
        let local = LocalAPI()
        let (mounted, capabilities) = try await build(
            pools, local: local,
            context: { plugin, pool, offered in
                ServiceContext(
                    configuration: configuration, database: pool, logger: logger.named(plugin.name),
                    authenticator: authenticator,
                    events: events ?? PostgresListener(configuration: pool.configuration, channel: EventLog.channel),
                    http: http, capabilities: offered, plugins: catalog ?? plugins)
            })
        if let offered = capabilities.first(.tokenKeys) { chosen.use(offered) }
        for entry in mounted { opened.parts += entry.service.background }
        for item in extensions { opened.parts += item.background }

        let host = ServiceHost(
            mounted: mounted, metricsName: metricsName,
            extraChecks: { extensions.reduce(into: [:]) { $0.merge($1.readiness()) { $1 } } },
            extraMetrics: { extensions.map { $0.metrics() }.joined() })
        opened.parts.append(host.readiness)
        var routes = host.routes(operatorEndpoints: configuration.admin == nil)
        for item in extensions { item.routes(into: &routes, authenticator: authenticator) }
        let listeners = try makeListeners(
            host: host, routes: routes, configuration: configuration, logger: logger,
            middleware: extensions.flatMap(\.middleware))
        local.serve(listeners.pipeline)
        opened.parts += listeners.all
        let group = ServiceGroup(opened.parts, logger: logger, signals: signals)
        // From here the group stops what it started, whatever fails.
        started = true
        try await group.start()
        return Running(
            server: listeners.main, admin: listeners.admin, services: mounted.map(\.service),
            pools: Dictionary(uniqueKeysWithValues: pools.map { ($0.0.name, $0.1) }), pipeline: listeners.pipeline,
            authenticator: authenticator, events: events, group: group)
    }

    /// What ``start(_:extensions:configuration:logger:migrate:keys:signals:metricsName:http:)``
    /// has opened so far (closed if it fails before the group takes over), and the parts of the
    /// group, in order.
    struct Opened {
        var pools: [PostgresPool] = []
        var parts: [any LifecycleService]
    }

    /// A pool per plugin, migrated (or a warning when it is not).
    static func openPools(
        _ plugins: [Plugin], configuration: ServiceConfiguration, logger: Logger, migrate: Bool, _ opened: inout Opened
    ) async throws -> [(Plugin, PostgresPool)] {
        var pools: [(Plugin, PostgresPool)] = []
        for plugin in plugins {
            let pool = PostgresPool(configuration: try database(for: plugin, configuration, alone: plugins.count == 1))
            pools.append((plugin, pool))
            opened.pools.append(pool)
            opened.parts.append(Lifecycle("pool \(plugin.name)", stop: { pool.close() }))
            let pluginLogger = logger.named(plugin.name)
            if migrate {
                try await plugin.migrate(
                    pool: pool, logger: pluginLogger, waitingUpTo: configuration.databaseStartupWaitSeconds)
            } else {
                await plugin.warnIfNotMigrated(pool: pool, logger: pluginLogger)
            }
        }
        return pools
    }

    /// One listener and revocation list for the process, with the first plugin's role (every
    /// role reads the shared events schema); none without a plugin. The list reads on a
    /// connection of its own: were it to wait behind the requests for the plugins' pools, a
    /// busy process would find it stale and answer every signed-in request 503. It is read once
    /// before the listeners start (its ``RevocationList/start()``).
    static func followEvents(_ first: PostgresPool?, _ opened: inout Opened) -> (PostgresListener?, RevocationList?) {
        guard let first else { return (nil, nil) }
        let events = PostgresListener(configuration: first.configuration, channel: EventLog.channel)
        var own = first.configuration
        own.poolSize = 1
        own.applicationName += " revocations"
        let pool = PostgresPool(configuration: own)
        opened.pools.append(pool)
        opened.parts.append(Lifecycle("pool revocations", stop: { pool.close() }))
        let revocations = RevocationList(database: pool, listener: events)
        opened.parts.append(Lifecycle("events", start: { events.start() }, stop: { events.stop() }))
        opened.parts.append(revocations)
        return (events, revocations)
    }

    /// Each plugin built after those that offer what it needs, with what they offered (and the
    /// process's own API); mounted in the order they were given, with every offer.
    static func build(
        _ pools: [(Plugin, PostgresPool)], local: LocalAPI,
        context: (Plugin, PostgresPool, Capabilities) -> ServiceContext
    ) async throws -> ([ServiceHost.Mounted], Capabilities) {
        var capabilities = Capabilities()
        capabilities.offer(.localAPI, local)
        var built: [String: ServiceHost.Mounted] = [:]
        let poolOf = Dictionary(uniqueKeysWithValues: pools.map { ($0.0.name, $0.1) })
        for plugin in try buildingOrder(pools.map(\.0)) {
            guard let pool = poolOf[plugin.name] else { continue }
            let service = try await plugin.make(context(plugin, pool, capabilities))
            service.offer(into: &capabilities)
            built[plugin.name] = .init(
                name: plugin.name, schema: plugin.schema, migrations: plugin.migrations, database: pool, service: service)
        }
        return (pools.compactMap { built[$0.0.name] }, capabilities)
    }

    /// `plugins` in an order where each plugin comes after every plugin that offers a capability
    /// it needs (the given order otherwise); a cycle of needs is refused at start.
    public static func buildingOrder(_ plugins: [Plugin]) throws -> [Plugin] {
        var remaining = plugins
        var ordered: [Plugin] = []
        while !remaining.isEmpty {
            let ready = remaining.firstIndex { plugin in
                !remaining.contains { other in
                    other.name != plugin.name && !Set(other.offers).isDisjoint(with: plugin.needs)
                }
            }
            guard let ready else {
                throw HostFailure(
                    description: "the plugins \(remaining.map(\.name).joined(separator: ", ")) need what each other offers")
            }
            ordered.append(remaining.remove(at: ready))
        }
        return ordered
    }

    /// A plugin's database: `PIER_<NAME>_DATABASE_URL` (its own role, with its password in
    /// `PIER_<NAME>_DATABASE_PASSWORD_FILE` when the URL has none) or the shared URL, named
    /// after the process and, when it hosts several, the plugin.
    public static func database(for plugin: Plugin, _ configuration: ServiceConfiguration, alone: Bool)
        throws(Environment.Failure) -> PostgresConfiguration
    {
        var database = configuration.database
        let variable = "PIER_\(plugin.name.uppercased())_DATABASE_"
        if let url = configuration.environment.string(variable + "URL") {
            database.url = url
            // The shared password is the shared role's, never another's.
            database.password = nil
            if let file = configuration.environment.string(variable + "PASSWORD_FILE") {
                do {
                    database.password = try readFile(file).trimmingWhitespace()
                } catch {
                    throw Environment.Failure(variable: variable + "PASSWORD_FILE", problem: "\(error)")
                }
            }
        }
        if !alone { database.applicationName += "/\(plugin.name)" }
        return database
    }

    /// The main listener, and the admin one when `PIER_ADMIN_PORT` is set.
    struct Listeners: Sendable {
        let main: HTTPServer
        let admin: HTTPServer?
        let pipeline: HTTPPipeline

        /// The servers as parts of a ``ServiceGroup``: the admin listener starts first and stops last.
        var all: [any LifecycleService] { (admin.map { [$0] } ?? []) + [main] }
    }

    /// The main server over `routes`, and with `PIER_ADMIN_PORT` an admin server with the
    /// operator endpoints (not counted in the request metrics, not access-logged).
    static func makeListeners(
        host: ServiceHost, routes: Routes, configuration: ServiceConfiguration, logger: Logger,
        middleware: [any RouterMiddleware<BasicRequestContext>]
    ) throws -> Listeners {
        let pipeline = pipeline(
            routes: routes, metrics: host.metrics, configuration: configuration, logger: logger, middleware)
        let main = HTTPServer(configuration: configuration.http, pipeline: pipeline, logger: logger)
        let admin = configuration.admin.map { admin in
            HTTPServer(
                configuration: admin,
                pipeline: HTTPPipeline(
                    routes: host.operatorRoutes(), middleware: [ErrorMiddleware(logger: logger, map: ErrorMapping.map)],
                    logger: logger),
                logger: logger)
        }
        return Listeners(main: main, admin: admin, pipeline: pipeline)
    }

    /// The pipeline: access log (when on), metrics, opt-in CORS, the error mapping, then
    /// `extra` (the gateway's rate limit), outermost first.
    static func pipeline(
        routes: Routes, metrics: Metrics, configuration: ServiceConfiguration, logger: Logger,
        _ extra: [any RouterMiddleware<BasicRequestContext>]
    ) -> HTTPPipeline {
        var middleware: [any RouterMiddleware<BasicRequestContext>] = []
        if configuration.http.accessLog { middleware.append(AccessLogMiddleware(logger: logger)) }
        middleware.append(metrics)
        if !configuration.corsOrigins.isEmpty {
            middleware.append(CORSMiddleware(allowedOrigins: configuration.corsOrigins))
        }
        middleware.append(ErrorMiddleware(logger: logger, map: ErrorMapping.map))
        return HTTPPipeline(routes: routes, middleware: middleware + extra, logger: logger)
    }
}

/// The keys of the process's token verifier: those a hosted plugin offers (auth's own, no
/// round trip to itself), else the fallback (the JWKS over HTTP, or a test's).
final class HostKeys: VerificationKeyProvider {
    private let provider: Mutex<any VerificationKeyProvider>

    init(fallback: any VerificationKeyProvider) { provider = Mutex(fallback) }

    func use(_ offered: any VerificationKeyProvider) { provider.withLock { $0 = offered } }

    func key(for kid: String) async throws -> P256PublicKey? {
        try await provider.withLock { $0 }.key(for: kid)
    }
}
