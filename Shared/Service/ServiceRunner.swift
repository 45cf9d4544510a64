import Dispatch
import PierCrypto
import PierHTTP
import PierPostgres
import PierRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// The command line every service executable shares:
///
///     pier-<name> [serve] [--migrate]   run the service (default), optionally migrating first
///     pier-<name> migrate               apply pending migrations and exit
///     pier-<name> <command> …           a service's own commands (pier-auth create-admin)
///     pier-<name> healthcheck           exit 0 when this process's server answers /healthz (containers)
///     pier-<name> --help | --version
public enum ServiceRunner {
    /// Runs `S` according to the process's arguments and environment; returns the exit status.
    public static func main<S: Service>(
        _ service: S.Type, version: String,
        arguments: [String] = CommandLine.arguments
    ) async -> Int32 {
        System.limitMallocArenas()
        let status = await run(S.self, version: version, arguments: arguments)
        Logger.flush()
        return status
    }

    static func run<S: Service>(_ service: S.Type, version: String, arguments: [String]) async -> Int32 {
        let started = MonotonicClock.seconds()
        let executable = "pier-\(S.name)"
        let invocation: Invocation
        switch Invocation.parse(arguments, executable: executable, version: version, usage: usage(S.self, executable: executable))
        {
        case .exit(let status): return status
        case .run(let parsed): invocation = parsed
        }
        let (command, migrateFirst, words) = (invocation.command, invocation.migrateFirst, invocation.words)
        if command == "healthcheck" { return await healthcheck(environment: .process, defaultPort: S.defaultPort) }

        let configuration: ServiceConfiguration
        do {
            configuration = try ServiceConfiguration(
                environment: .process, defaultPort: S.defaultPort,
                applicationName: executable)
        } catch {
            printError("\(executable): configuration error: \(error)")
            return 2
        }
        let logger = Logger(service: S.name, level: configuration.logLevel)
        let pool = PostgresPool(configuration: configuration.database)
        defer { pool.close() }
        // Commands that are not `serve` follow no events: the listener is never started.
        let context = ServiceContext(
            configuration: configuration, database: pool, logger: logger,
            authenticator: makeAuthenticator(configuration),
            events: PostgresListener(configuration: configuration.database, channel: EventLog.channel))
        do {
            switch command {
            case "migrate":
                try await migrate(
                    S.self, pool: pool, logger: logger, waitingUpTo: configuration.databaseStartupWaitSeconds)
                return 0
            case "serve":
                if migrateFirst {
                    try await migrate(
                        S.self, pool: pool, logger: logger, waitingUpTo: configuration.databaseStartupWaitSeconds)
                }
                try await serve(S.self, context: context, startedAt: started)
                return 0
            default:
                guard let extra = S.commands.first(where: { $0.name == command }) else {
                    printError("\(executable): unknown command \(command)\n\n" + usage(S.self, executable: executable))
                    return 2
                }
                try await extra.run(words, context)
                return 0
            }
        } catch let error as Environment.Failure {
            printError("\(executable): configuration error: \(error)")
            return 2
        } catch {
            logger.error("\(command) failed", [("error", .string(String(describing: error)))])
            printError("\(executable): \(error)")
            return 1
        }
    }

    /// Applies the service's migrations and the shared event log's, first waiting up to `wait`
    /// seconds for a database that cannot be reached yet (a migrate job started with its database,
    /// as an orchestrator that does not order them starts it). Only failures to connect are
    /// waited on, each logged with its reason (a wrong password shows there); a statement the
    /// server refuses fails at once.
    static func migrate<S: Service>(
        _ service: S.Type, pool: PostgresPool, logger: Logger, waitingUpTo wait: Int
    ) async throws {
        let deadline = MonotonicClock.seconds() + Double(wait)
        var attempt = 0
        while true {
            do {
                try await pool.withConnection { _ in }
                break
            } catch let error as PostgresError where error.kind == .connection && MonotonicClock.seconds() < deadline {
                attempt += 1
                // The first failure and then one line every ten: a started database is quiet.
                if attempt % 10 == 1 {
                    logger.info("waiting for the database", [("error", .string(error.message)), ("up_to_s", .int(wait))])
                }
                try await Task.sleep(for: .seconds(1))
            }
        }
        try await migrate(service, pool: pool, logger: logger, eventsWait: max(0, deadline - MonotonicClock.seconds()))
    }

    /// Applies the service's migrations and the shared event log's. The event log belongs to
    /// its producer (auth): a role that may not create in its schema (a reader, as the roles of
    /// the deployments are) does not migrate it but waits up to `eventsWait` seconds for its
    /// owner to have done so.
    public static func migrate<S: Service>(
        _ service: S.Type, pool: PostgresPool, logger: Logger, eventsWait: Double = 60
    ) async throws {
        var events: [Int] = []
        if try await Migrator.mayCreate(in: EventLog.schema, pool: pool) {
            events = try await Migrator.migrate(pool, schema: EventLog.schema, migrations: EventLog.migrations)
        } else {
            let deadline = MonotonicClock.seconds() + eventsWait
            var waited = false
            while try await !Migrator.pending(pool, schema: EventLog.schema, migrations: EventLog.migrations).isEmpty {
                guard MonotonicClock.seconds() < deadline else {
                    throw ServiceFailure(
                        description:
                            "the event log (schema \(EventLog.schema)) is not migrated, and this role may not: run pier-auth migrate first"
                    )
                }
                if !waited {
                    logger.info("waiting for the event log's owner (pier-auth migrate) to migrate it", [])
                    waited = true
                }
                try await Task.sleep(for: .milliseconds(500))
            }
        }
        let own = try await Migrator.migrate(pool, schema: S.schema, migrations: S.migrations)
        logger.info("migrated", [("schema", .string(S.schema)), ("applied", .int(own.count + events.count))])
    }

    static func serve<S: Service>(_ service: S.Type, context base: ServiceContext, startedAt: Double) async throws {
        // Revoked tokens, learned from the event log, refused by this process's authenticator.
        let context = await ServiceContext.following(
            configuration: base.configuration, database: base.database, logger: base.logger,
            authenticator: base.authenticator)
        await warnIfNotMigrated(S.self, pool: context.database, logger: context.logger)
        let instance = try await S.make(context: context)
        let host = ServiceHost(
            mounted: [
                .init(
                    name: S.name, schema: S.schema, migrations: S.migrations,
                    database: context.database, service: instance)
            ],
            metricsName: S.name)
        let listeners = try makeListeners(
            host: host, routes: host.routes(operatorEndpoints: context.configuration.admin == nil),
            configuration: context.configuration, logger: context.logger)
        try listeners.start()
        let server = listeners.main
        let milliseconds = Int((MonotonicClock.seconds() - startedAt) * 1000)
        context.logger.info(
            "listening",
            [
                ("host", .string(context.configuration.http.host)), ("port", .int(server.port)),
                ("admin_port", .int(listeners.admin?.port ?? 0)), ("startup_ms", .int(milliseconds)),
            ])
        let reason = try await ServiceGroup(
            [
                Lifecycle("events", stop: { await context.stopFollowing() }),
                Lifecycle(S.name, stop: { await instance.shutdown() }),
            ] + listeners.all,
            logger: context.logger
        ).run()
        context.logger.info("stopped", [("reason", .string("\(reason)"))])
    }

    /// Says at start, in one line that names the command to run, when the schema is behind the
    /// service: requests then answer 503 `schema_not_migrated` (and `/readyz` is not ready)
    /// until it is migrated.
    public static func warnIfNotMigrated<S: Service>(_ service: S.Type, pool: PostgresPool, logger: Logger) async {
        guard let pending = try? await Migrator.pending(pool, schema: S.schema, migrations: S.migrations), !pending.isEmpty
        else { return }
        logger.warning(
            "schema \(S.schema) is not migrated: run pier-\(S.name) migrate (or start with --migrate)",
            [("schema", .string(S.schema)), ("pending", .int(pending.count))])
    }

    /// The main listener, and the admin one when `PIER_ADMIN_PORT` is set.
    public struct Listeners: Sendable {
        public let main: HTTPServer
        public let admin: HTTPServer?

        public func start() throws {
            try main.start()
            try admin?.start()
        }

        /// The servers as parts of a ``ServiceGroup``: the admin listener stops last.
        public var all: [any LifecycleService] { (admin.map { [$0] } ?? []) + [main] }
    }

    /// The main server over `routes`, and with `PIER_ADMIN_PORT` an admin server with the
    /// operator endpoints (not counted in the request metrics, not access-logged).
    public static func makeListeners(
        host: ServiceHost, routes: Routes, configuration: ServiceConfiguration, logger: Logger,
        middleware: [any RouterMiddleware<BasicRequestContext>] = []
    ) throws -> Listeners {
        let main = HTTPServer(
            configuration: configuration.http,
            pipeline: pipeline(routes: routes, metrics: host.metrics, configuration: configuration, logger: logger, middleware),
            logger: logger)
        let admin = configuration.admin.map { admin in
            HTTPServer(
                configuration: admin,
                pipeline: HTTPPipeline(
                    routes: host.operatorRoutes(), middleware: [ErrorMiddleware(logger: logger, map: ErrorMapping.map)],
                    logger: logger),
                logger: logger)
        }
        return Listeners(main: main, admin: admin)
    }

    /// The services' pipeline: access log (when on), metrics, opt-in CORS, the error mapping,
    /// then `extra` (the gateway's rate limit), outermost first.
    public static func pipeline(
        routes: Routes, metrics: Metrics, configuration: ServiceConfiguration, logger: Logger,
        _ extra: [any RouterMiddleware<BasicRequestContext>] = []
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

    /// Keys from `PIER_TOKEN_PUBLIC_KEY_FILE` (PEM, several keys concatenated; `kid` is the
    /// key's thumbprint) or, by default, from the auth service's JWKS.
    public static func makeAuthenticator(_ configuration: ServiceConfiguration) -> Authenticator {
        let provider: any VerificationKeyProvider = JWKSKeyProvider(url: configuration.jwksURL, client: HTTPClient())
        return Authenticator(
            verifier: AccessTokenVerifier(
                keys: provider, issuer: configuration.tokenIssuer,
                audience: configuration.tokenAudience))
    }

    /// `healthcheck`: GET /healthz from the server on PIER_HOST:PIER_PORT (the loopback when it
    /// listens on every address), 2 s at most; 0 on a 200, else 1 with the reason on stderr. What a
    /// container's HEALTHCHECK runs: no shell and no curl in the image.
    public static func healthcheck(environment: Environment, defaultPort: Int) async -> Int32 {
        let port: Int
        do {
            port = try environment.int("PIER_PORT", default: defaultPort, in: 1...65_535)
        } catch {
            printError("healthcheck: \(error)")
            return 1
        }
        var host = environment.string("PIER_HOST", default: "127.0.0.1")
        if host == "0.0.0.0" || host == "::" || host.isEmpty { host = "127.0.0.1" }
        if host.contains(":") { host = "[\(host)]" }
        let client = HTTPClient(threads: 1, timeoutSeconds: 2)
        do {
            let response = try await client.get("http://\(host):\(port)/healthz")
            guard response.status == 200 else {
                printError("healthcheck: /healthz answered \(response.status)")
                return 1
            }
            return 0
        } catch {
            printError("healthcheck: \(error)")
            return 1
        }
    }

    static func usage<S: Service>(_ service: S.Type, executable: String) -> String {
        var text = """
            usage: \(executable) [serve] [--migrate]   run the service on PIER_HOST:PIER_PORT (default port \(S.defaultPort))
                   \(executable) migrate               apply pending migrations to schema \(S.schema) and exit
                   \(executable) healthcheck           exit 0 when the server answers /healthz (a container's HEALTHCHECK)
            """
        for command in S.commands { text += "\n       \(executable) \(command.usage)" }
        text +=
            "\n       \(executable) --help | --version\n\nConfiguration comes from PIER_* environment variables; see README.md."
        return text
    }

    public static func printError(_ text: String) {
        var line = text + "\n"
        line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }
}

/// The command line every Pier executable shares, services and gateway alike:
///
///     <executable> [serve | migrate | <command>] [--migrate] [--<option> <value>]… [words]
///     <executable> --help | --version
public struct Invocation: Sendable {
    /// `serve` unless another command is named first.
    public var command: String
    /// `--migrate`: apply migrations before serving.
    public var migrateFirst: Bool
    /// The values of the valued options, in order (`--route` may repeat).
    public var options: [String: [String]]
    /// The words after the command (a service command's own arguments).
    public var words: [String]

    public enum Outcome: Sendable {
        case run(Invocation)
        /// Help or version printed, or a usage error reported: exit with this status.
        case exit(Int32)
    }

    /// Parses `arguments` (the first is the executable); `valued` options take the next word.
    public static func parse(
        _ arguments: [String], executable: String, version: String, usage: String, valued: Set<String> = []
    ) -> Outcome {
        var words = Array(arguments.dropFirst())
        if words.contains("--help") || words.contains("-h") {
            print(usage)
            return .exit(0)
        }
        if words.contains("--version") {
            print("\(executable) \(version)")
            return .exit(0)
        }
        var options: [String: [String]] = [:]
        var index = 0
        while index < words.count {
            guard valued.contains(words[index]) else {
                index += 1
                continue
            }
            guard index + 1 < words.count else {
                ServiceRunner.printError("\(executable): \(words[index]) needs a value\n\n" + usage)
                return .exit(2)
            }
            options[words[index], default: []].append(words[index + 1])
            words.removeSubrange(index...(index + 1))
        }
        let migrateFirst = words.contains("--migrate")
        words.removeAll { $0 == "--migrate" }
        return .run(
            Invocation(
                command: words.first ?? "serve", migrateFirst: migrateFirst, options: options,
                words: Array(words.dropFirst())))
    }
}

/// A failure of a runner's step, said as it is printed.
struct ServiceFailure: Error, CustomStringConvertible {
    let description: String
}
