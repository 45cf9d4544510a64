import AuthService
import FeedbackService
import PierHTTP
import PierPostgres
import PierRuntime
import PierService
import SubscriptionsService

#if canImport(Glibc)
    import Glibc
#endif

/// Hosts several plugins in one process behind one port, with exactly the paths and behaviour
/// they have when run apart: each keeps its own pool (its own database role, when
/// `PIER_<NAME>_DATABASE_URL` is set), its own logger name and its own migrations.
public enum Gateway {
    /// The plugins this build can host, by name.
    public static let plugins: [String: any Service.Type] = [
        AuthService.name: AuthService.self,
        FeedbackService.name: FeedbackService.self,
        SubscriptionsService.name: SubscriptionsService.self,
    ]

    /// What runs: the server, the embedded plugins and the proxy, as one ``ServiceGroup``.
    public struct Embedded: Sendable {
        public let server: HTTPServer
        /// The operator listener, with `PIER_ADMIN_PORT`.
        public let admin: HTTPServer?
        public let services: [any Service]
        /// The group's task: it ends once every part stopped, in reverse order of starting
        /// (servers, proxy checks, plugins' work, the event log, pools).
        let group: Task<ServiceGroup.Reason, any Error>

        /// Runs until a signal (when the group listens to signals) or ``shutdown()``.
        public func wait() async throws -> ServiceGroup.Reason { try await group.value }

        /// Stops accepting, finishes in-flight requests, stops the plugins and health checks,
        /// closes the pools.
        public func shutdown() async {
            group.cancel()
            _ = try? await group.value
        }
    }

    /// Builds and starts the named plugins (auth first, so the others verify tokens with its
    /// keys in-process), and proxies the routes of `proxy` to their upstreams; either may be
    /// empty, not both. Embedded routes answer first; a proxied prefix takes the rest below it.
    public static func embed(
        _ names: [String], proxy settings: ProxySettings? = nil, configuration: ServiceConfiguration, logger: Logger,
        migrate: Bool, signals: [Int32] = []
    ) async throws -> Embedded {
        let ordered = names.sorted { ($0 == AuthService.name ? 0 : 1, $0) < ($1 == AuthService.name ? 0 : 1, $1) }
        var mounted: [ServiceHost.Mounted] = []
        var pools: [PostgresPool] = []
        var authenticator: Authenticator?
        var following: ServiceContext?
        for name in ordered {
            guard let type = plugins[name] else {
                throw Environment.Failure(variable: "--embed", problem: "unknown plugin \(name)")
            }
            let pool = PostgresPool(configuration: database(for: name, configuration))
            pools.append(pool)
            let serviceLogger = logger.named(name)
            if migrate { try await ServiceRunner.migrate(type, pool: pool, logger: serviceLogger) }
            // One listener and revocation list for the process, read through the first plugin's
            // pool (every role reads the shared events schema), once its migrations made it.
            let shared =
                if let following { following } else {
                    await ServiceContext.following(
                        configuration: configuration, database: pool, logger: logger,
                        authenticator: ServiceRunner.makeAuthenticator(configuration))
                }
            following = shared
            let context = ServiceContext(
                configuration: configuration, database: pool, logger: serviceLogger,
                authenticator: authenticator ?? shared.authenticator, events: shared.events)
            let service = try await make(type, context: context)
            if let auth = service as? AuthService { authenticator = auth.authenticator }
            mounted.append(.init(name: name, schema: type.schema, migrations: type.migrations, database: pool, service: service))
        }
        let routes = settings?.routes ?? []
        // Auth gathers "download my data" from the services hosted beside it, in-process.
        for case let auth as AuthService in mounted.map(\.service) {
            auth.exports.add(mounted.compactMap { $0.service as? any DataExporter })
        }
        guard !mounted.isEmpty || !routes.isEmpty else {
            throw Environment.Failure(variable: "--embed", problem: "names no plugin and no route is proxied")
        }
        let proxy = settings.flatMap { settings in
            settings.routes.isEmpty
                ? nil
                : Proxy(
                    settings: settings,
                    authenticator: authenticator ?? following?.authenticator ?? ServiceRunner.makeAuthenticator(configuration),
                    trusted: configuration.http.trustedProxies, logger: logger.named("proxy"))
        }
        let host = ServiceHost(
            mounted: mounted, metricsName: "gateway", extraChecks: { proxy?.readiness() ?? [:] },
            extraMetrics: { proxy?.renderMetrics() ?? "" })
        var table = host.routes(operatorEndpoints: configuration.admin == nil)
        proxy?.routes(into: &table)
        let document = PackageResources.openapi_json
        let router = Router<BasicRequestContext>()
        router.get("/openapi.json") { _, _ in
            Response(
                status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "public, max-age=300"], body: document
            )
        }
        table.merge(router.routes)
        var middleware: [any RouterMiddleware<BasicRequestContext>] = []
        if let settings, settings.rateLimit > 0 {
            middleware.append(RateLimiter(rate: settings.rateLimit, burst: settings.rateBurst))
        }
        let listeners = try ServiceRunner.makeListeners(
            host: host, routes: table, configuration: configuration, logger: logger, middleware: middleware)
        try listeners.start()
        var parts: [any LifecycleService] = pools.map { pool in Lifecycle("pool", stop: { pool.close() }) }
        if let following { parts.append(Lifecycle("events", stop: { await following.stopFollowing() })) }
        parts += mounted.map { entry in Lifecycle(entry.name, stop: { await entry.service.shutdown() }) }
        if let proxy { parts.append(Lifecycle("proxy", start: { proxy.startChecks() }, stop: { await proxy.stop() })) }
        parts += listeners.all
        let group = ServiceGroup(parts, logger: logger, signals: signals)
        return Embedded(
            server: listeners.main, admin: listeners.admin, services: mounted.map(\.service),
            group: Task { try await group.run() })
    }

    /// A plugin's database: `PIER_<NAME>_DATABASE_URL` (its own role) or the shared URL.
    static func database(for name: String, _ configuration: ServiceConfiguration) -> PostgresConfiguration {
        var database = configuration.database
        database.url = configuration.environment.string("PIER_\(name.uppercased())_DATABASE_URL") ?? database.url
        database.applicationName = "pier-gateway/\(name)"
        return database
    }

    private static func make<S: Service>(_ type: S.Type, context: ServiceContext) async throws -> any Service {
        try await S.make(context: context)
    }

    /// `pier-gateway [--embed auth,…] [--route /prefix=http://host:port …] [--migrate]`, or
    /// `pier-gateway migrate --embed …`.
    public static func main(arguments: [String] = CommandLine.arguments) async -> Int32 {
        System.limitMallocArenas()
        let started = MonotonicClock.seconds()
        let usage = """
            usage: pier-gateway [serve] [--embed <plugins>] [--route <route>]… [--migrate]
                       host plugins in this process and/or proxy routes to upstreams, on PIER_PORT (default 8080)
                   pier-gateway migrate --embed <plugins>   apply the embedded plugins' migrations and exit
                   pier-gateway healthcheck                 exit 0 when the server answers /healthz (a container's HEALTHCHECK)
                   pier-gateway --help | --version
            plugins: \(plugins.keys.sorted().joined(separator: ", ")) (comma-separated; or PIER_GATEWAY_EMBED)
            route:   /prefix=http://host:port[|http://host2:port…][;connect=ms;timeout=ms;retries=n;bearer=pass|verify|require;required=true|false]
                     (or PIER_GATEWAY_ROUTES, comma-separated)
            """
        let invocation: Invocation
        switch Invocation.parse(
            arguments, executable: "pier-gateway", version: PierVersion.current, usage: usage, valued: ["--embed", "--route"])
        {
        case .exit(let status): return status
        case .run(let parsed): invocation = parsed
        }
        let environment = Environment.process
        if invocation.command == "healthcheck" {
            return await ServiceRunner.healthcheck(environment: environment, defaultPort: 8080)
        }
        let embed =
            invocation.options["--embed"].map { $0.flatMap { $0.split(separator: ",").map(String.init) } }
            ?? environment.list("PIER_GATEWAY_EMBED")
        let routeSpecs = invocation.options["--route"] ?? []
        let (command, migrateFirst) = (invocation.command, invocation.migrateFirst)
        guard ["serve", "migrate"].contains(command), invocation.words.isEmpty else {
            ServiceRunner.printError(
                "pier-gateway: unknown arguments \(([command] + invocation.words).joined(separator: " "))\n\n" + usage)
            return 2
        }
        let configuration: ServiceConfiguration
        let proxy: ProxySettings
        do {
            configuration = try ServiceConfiguration(
                environment: environment, defaultPort: 8080, applicationName: "pier-gateway", needsDatabase: !embed.isEmpty)
            proxy = try ProxySettings(environment: environment, extraRoutes: routeSpecs)
        } catch {
            ServiceRunner.printError("pier-gateway: configuration error: \(error)")
            return 2
        }
        let unknown = embed.filter { plugins[$0] == nil }
        let proxied = Set(proxy.routes.map(\.prefix))
        let both = embed.filter { proxied.contains("/" + $0) }
        guard !embed.isEmpty || (!proxy.routes.isEmpty && command == "serve"), unknown.isEmpty, both.isEmpty else {
            ServiceRunner.printError(
                "pier-gateway: embed one or more of \(plugins.keys.sorted().joined(separator: ", ")), or proxy routes"
                    + (unknown.isEmpty ? "" : "; unknown: \(unknown.joined(separator: ", "))")
                    + (both.isEmpty ? "" : "; both embedded and proxied: \(both.joined(separator: ", "))") + "\n\n" + usage)
            return 2
        }
        let logger = Logger(service: "gateway", level: configuration.logLevel)
        defer { Logger.flush() }
        do {
            if command == "migrate" {
                for name in embed {
                    let pool = PostgresPool(configuration: database(for: name, configuration))
                    defer { pool.close() }
                    try await ServiceRunner.migrate(plugins[name]!, pool: pool, logger: logger.named(name))
                }
                return 0
            }
            let embedded = try await Gateway.embed(
                embed, proxy: proxy, configuration: configuration, logger: logger, migrate: migrateFirst,
                signals: [SIGTERM, SIGINT])
            logger.info(
                "listening",
                [
                    ("port", .int(embedded.server.port)), ("embedded", .string(embed.joined(separator: ","))),
                    (
                        "proxied",
                        .string(proxy.routes.map { $0.prefix + "=" + $0.upstreams.joined(separator: "|") }.joined(separator: ","))
                    ),
                    ("startup_ms", .int(Int((MonotonicClock.seconds() - started) * 1000))),
                ])
            let reason = try await embedded.wait()
            logger.info("stopped", [("reason", .string("\(reason)"))])
            return 0
        } catch let error as Environment.Failure {
            ServiceRunner.printError("pier-gateway: configuration error: \(error)")
            return 2
        } catch {
            logger.error("gateway failed", [("error", .string(String(describing: error)))])
            ServiceRunner.printError("pier-gateway: \(error)")
            return 1
        }
    }
}
