import PierCrypto
import PierEvents
import PierHTTP
import PierIdentity
import PierPostgres
import PierRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// An executable that hosts plugins: every `main.swift` is `exit(await <executable>.main())`.
/// They share one command line and one table of exit statuses:
///
///     <name> [serve] [--migrate] [--<option> <value>]…   run (the default), optionally migrating first
///     <name> migrate                                   apply pending migrations and exit
///     <name> <command> … [--migrate]                   a plugin's own commands (create-admin), its
///                                                      plugin's schema migrated first with --migrate
///     <name> healthcheck                               exit 0 when the server answers /healthz
///     <name> --help | --version
public struct Executable: Sendable {
    /// Exit statuses, the same for every executable.
    public enum Status: Int32, Sendable {
        case success = 0
        /// A step failed (the database refused, a command's work failed).
        case failure = 1
        /// The command line or the configuration is wrong: nothing was done.
        case usage = 2
    }

    /// A valued option beyond `--embed` (the gateway's `--route`).
    public struct Option: Sendable {
        public let name: String
        public let value: String
        public let help: String

        public init(_ name: String, value: String, help: String) {
            self.name = name
            self.value = value
            self.help = help
        }
    }

    /// The extensions built from the options' values and the configuration (the gateway's proxy).
    public typealias Extensions =
        @Sendable (
            _ options: [String: [String]], _ configuration: ServiceConfiguration, _ logger: Logger, _ http: HTTPClient
        ) throws -> [any HostExtension]

    public let name: String
    public let defaultPort: Int
    /// The plugins it can host.
    public let plugins: [Plugin]
    /// Where the plugins to host are named (`--embed`, and this variable): nil to host them all.
    /// Without either, every plugin is hosted unless the process proxies routes.
    public let embedVariable: String?
    public let options: [Option]
    public let extensions: Extensions
    /// What `serve` does, for the usage text.
    public let summary: String

    public init(
        name: String, defaultPort: Int, plugins: [Plugin], embedVariable: String? = nil, options: [Option] = [],
        summary: String, extensions: @escaping Extensions = { _, _, _, _ in [] }
    ) {
        self.name = name
        self.defaultPort = defaultPort
        self.plugins = plugins
        self.embedVariable = embedVariable
        self.options = options
        self.summary = summary
        self.extensions = extensions
    }

    /// `pier-<name>`: the plugin alone, on its own port.
    public static func standalone<S: Service>(_ type: S.Type) -> Executable {
        Executable(
            name: "pier-\(S.name)", defaultPort: S.defaultPort, plugins: [Plugin(S.self)],
            summary: "run the service on PIER_HOST:PIER_PORT (default port \(S.defaultPort))")
    }

    /// Runs according to the process's arguments and environment; returns the exit status.
    public func main(arguments: [String] = CommandLine.arguments, environment: Environment = .process) async -> Int32 {
        System.limitMallocArenas()
        let status = await run(arguments: arguments, environment: environment)
        Logger.flush()
        return status.rawValue
    }

    func run(arguments: [String], environment: Environment) async -> Status {
        let started = MonotonicClock.seconds()
        var valued = Set(options.map(\.name))
        if embedVariable != nil { valued.insert("--embed") }
        let invocation: Invocation
        switch Invocation.parse(arguments, executable: name, version: PierVersion.current, usage: usage, valued: valued) {
        case .exit(let status): return status
        case .run(let parsed): invocation = parsed
        }
        let command = invocation.command
        if command == "healthcheck" { return await Self.healthcheck(environment: environment, defaultPort: defaultPort) }
        if let twice = Plugin.repeated(in: plugins) {
            Self.printError("\(name): configuration error: \(twice)")
            return .usage
        }
        let choice = chosen(invocation, environment)
        guard choice.unknown.isEmpty else { return usageError("unknown plugin \(choice.unknown.joined(separator: ", "))") }
        // Nothing named: every plugin this build has, unless the process proxies (a front that
        // routes elsewhere hosts only what it is told to).
        var hosted = choice.named ?? plugins
        let everyByDefault = choice.named == nil
        let extra = hosted.flatMap(\.commands).first { $0.name == command }
        if let refused = Self.refusal(of: invocation, commandOfAPlugin: extra != nil) { return usageError(refused) }
        var configuration: ServiceConfiguration
        let logger: Logger
        var extensions: [any HostExtension] = []
        // The process's one outbound client (the host closes it; closing twice is harmless).
        let http = HTTPClient()
        defer { http.close() }
        do {
            configuration = try ServiceConfiguration(
                environment: environment, defaultPort: defaultPort, applicationName: name,
                needsDatabase: !hosted.isEmpty && !everyByDefault)
            logger = Logger(service: shortName, level: configuration.logLevel)
            if command == "serve" { extensions = try self.extensions(invocation.options, configuration, logger, http) }
            if everyByDefault, extensions.contains(where: { !$0.prefixes.isEmpty }) {
                hosted = []
            } else if everyByDefault {
                configuration = try ServiceConfiguration(
                    environment: environment, defaultPort: defaultPort, applicationName: name, needsDatabase: true)
            }
        } catch {
            printError("\(name): configuration error: \(error)")
            return .usage
        }
        let served = Set(extensions.flatMap(\.prefixes))
        let both = hosted.filter { served.contains($0.prefix) }
        guard !hosted.isEmpty || (!served.isEmpty && command == "serve"), both.isEmpty else {
            return usageError(
                "host one or more of \(plugins.map(\.name).joined(separator: ", "))"
                    + (embedVariable == nil ? "" : " (--embed or \(embedVariable!))")
                    + (both.isEmpty ? "" : "; both hosted and proxied: \(both.map(\.name).joined(separator: ", "))"))
        }
        do {
            switch command {
            case "migrate":
                try await Self.migrate(hosted, configuration: configuration, logger: logger)
            case "serve":
                try await serve(
                    hosted, extensions: extensions, configuration: configuration, logger: logger,
                    migrate: invocation.migrateFirst, http: http, startedAt: started)
            default:
                guard let extra else { return usageError("unknown command \(command)") }
                try await Self.run(
                    extra, invocation.words, of: hosted, catalog: plugins, configuration: configuration, logger: logger,
                    http: http, migrate: invocation.migrateFirst, executable: name)
            }
            return .success
        } catch let error as Environment.Failure {
            printError("\(name): configuration error: \(error)")
            return .usage
        } catch {
            logger.error("\(command) failed", [("error", .string(String(describing: error)))])
            printError("\(name): \(error)")
            return .failure
        }
    }

    /// Why the command line is wrong before anything is configured: a command neither the host's
    /// nor a hosted plugin's, or words after one that takes none.
    static func refusal(of invocation: Invocation, commandOfAPlugin: Bool) -> String? {
        let command = invocation.command
        guard ["serve", "migrate"].contains(command) || commandOfAPlugin else {
            return "unknown command \(([command] + invocation.words).joined(separator: " "))"
        }
        guard commandOfAPlugin || invocation.words.isEmpty else {
            return "unknown arguments \(invocation.words.joined(separator: " "))"
        }
        return nil
    }

    /// The plugins `--embed` (or the embed variable) names, nil when neither names any, and the
    /// names this build has no plugin for.
    private func chosen(_ invocation: Invocation, _ environment: Environment) -> (named: [Plugin]?, unknown: [String]) {
        guard let embedVariable else { return (nil, []) }
        let named =
            invocation.options["--embed"].map { $0.flatMap { $0.split(separator: ",").map(String.init) } }
            ?? (environment.string(embedVariable) == nil ? nil : environment.list(embedVariable))
        guard let names = named else { return (nil, []) }
        return (plugins.filter { names.contains($0.name) }, names.filter { name in !plugins.contains { $0.name == name } })
    }

    /// Applies each plugin's pending migrations.
    static func migrate(_ hosted: [Plugin], configuration: ServiceConfiguration, logger: Logger) async throws {
        for plugin in hosted {
            let pool = PostgresPool(configuration: try PluginHost.database(for: plugin, configuration, alone: hosted.count == 1))
            defer { pool.close() }
            try await plugin.migrate(
                pool: pool, logger: logger.named(plugin.name), waitingUpTo: configuration.databaseStartupWaitSeconds)
        }
    }

    /// Hosts the plugins until a signal.
    func serve(
        _ hosted: [Plugin], extensions: [any HostExtension], configuration: ServiceConfiguration, logger: Logger,
        migrate: Bool, http: HTTPClient, startedAt started: Double
    ) async throws {
        let running = try await PluginHost.start(
            hosted, extensions: extensions, configuration: configuration, logger: logger, migrate: migrate, keys: nil,
            signals: [SIGTERM, SIGINT], metricsName: String(shortName.map { $0 == "-" ? "_" : $0 }), http: http, catalog: plugins)
        logger.info(
            "listening",
            [
                ("host", .string(configuration.http.host)), ("port", .int(running.server.port)),
                ("admin_port", .int(running.admin?.port ?? 0)),
                ("plugins", .string(hosted.map(\.name).joined(separator: ","))),
                ("startup_ms", .int(Int((MonotonicClock.seconds() - started) * 1000))),
            ])
        let reason = try await running.run()
        logger.info("stopped", [("reason", .string("\(reason)"))])
    }

    /// A plugin's own command (`pier-auth admin …`), with a context of its own: its pool, tokens
    /// verified against the JWKS, and no events followed. Its plugin's schema migrated first with
    /// `--migrate`; a schema behind its migrations is refused in words before the command runs.
    static func run(
        _ command: ServiceCommand, _ words: [String], of hosted: [Plugin], catalog: [Plugin],
        configuration: ServiceConfiguration, logger: Logger, http: HTTPClient, migrate: Bool = false,
        executable: String = "pier"
    ) async throws {
        guard let owner = hosted.first(where: { $0.commands.contains { $0.name == command.name } }) else { return }
        let pool = PostgresPool(configuration: try PluginHost.database(for: owner, configuration, alone: true))
        defer { pool.close() }
        if migrate {
            try await owner.migrate(
                pool: pool, logger: logger.named(owner.name), waitingUpTo: configuration.databaseStartupWaitSeconds)
        } else if try await !Migrator.pending(pool, schema: owner.schema, migrations: owner.migrations).isEmpty {
            throw HostFailure(
                description:
                    "schema \(owner.schema) is not migrated: run \(executable) migrate first, or \(command.name) with --migrate")
        }
        let context = ServiceContext(
            configuration: configuration, database: pool, logger: logger.named(owner.name),
            authenticator: Authenticator(
                verifier: AccessTokenVerifier(
                    keys: JWKSKeyProvider(url: configuration.jwksURL, client: http), issuer: configuration.tokenIssuer,
                    audience: configuration.tokenAudience)),
            // Commands follow no events: the listener is never started.
            events: PostgresListener(configuration: pool.configuration, channel: EventLog.channel), http: http,
            plugins: catalog)
        try await command.run(words, context)
    }

    private func usageError(_ problem: String) -> Status {
        printError("\(name): \(problem)\n\n" + usage)
        return .usage
    }

    /// The name without `pier-` (`auth` for `pier-auth`; a team's `my-gateway` as it is): its
    /// logs' service and its metrics' prefix.
    var shortName: String { name.hasPrefix("pier-") ? String(name.dropFirst("pier-".count)) : name }

    public var usage: String {
        let embed = embedVariable == nil ? "" : " [--embed <plugins>]"
        let valued = options.map { " [\($0.name) <\($0.value)>]…" }.joined()
        let schemas = plugins.map(\.schema).joined(separator: ", ")
        var lines = [
            "usage: \(name) [serve]\(embed)\(valued) [--migrate]",
            "           \(summary)",
            "       \(name) migrate\(embed)   apply pending migrations (schema \(schemas)) and exit",
            "       \(name) healthcheck   exit 0 when the server answers /healthz (a container's HEALTHCHECK)",
        ]
        for command in plugins.flatMap(\.commands) { lines.append("       \(name) \(command.usage) [--migrate]") }
        lines.append("       \(name) --help | --version")
        var text = lines.joined(separator: "\n")
        if let embedVariable {
            text +=
                "\nplugins: \(plugins.map(\.name).joined(separator: ", ")) (comma-separated; or \(embedVariable);"
                + " every one of them when neither names any and no route is given)"
        }
        for option in options { text += "\n\(option.value): \(option.help)" }
        return text + "\n\nConfiguration comes from PIER_* environment variables; see docs/settings.md."
    }

    /// `healthcheck`: GET /healthz from the server on PIER_HOST:PIER_PORT (the loopback when it
    /// listens on every address), 2 s at most; 0 on a 200, else 1 with the reason on stderr. What a
    /// container's HEALTHCHECK runs: no shell and no curl in the image.
    public static func healthcheck(environment: Environment, defaultPort: Int) async -> Status {
        let port: Int
        do {
            port = try environment.int("PIER_PORT", default: defaultPort, in: 1...65_535)
        } catch {
            printError("healthcheck: \(error)")
            return .failure
        }
        var host = environment.string("PIER_HOST", default: "127.0.0.1")
        if host == "0.0.0.0" || host == "::" || host.isEmpty { host = "127.0.0.1" }
        if host.contains(":") { host = "[\(host)]" }
        let client = HTTPClient()
        defer { client.close() }
        do {
            let response = try await client.get("http://\(host):\(port)/healthz", timeout: .seconds(2))
            guard response.status == 200 else {
                printError("healthcheck: /healthz answered \(response.status)")
                return .failure
            }
            return .success
        } catch {
            printError("healthcheck: \(error)")
            return .failure
        }
    }

    public static func printError(_ text: String) {
        var line = text + "\n"
        line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }

    private func printError(_ text: String) { Self.printError(text) }
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
        case exit(Executable.Status)
    }

    /// Parses `arguments` (the first is the executable); `valued` options take the next word.
    public static func parse(
        _ arguments: [String], executable: String, version: String, usage: String, valued: Set<String> = []
    ) -> Outcome {
        var words = Array(arguments.dropFirst())
        if words.contains("--help") || words.contains("-h") {
            print(usage)
            return .exit(.success)
        }
        if words.contains("--version") {
            print("\(executable) \(version)")
            return .exit(.success)
        }
        var options: [String: [String]] = [:]
        var index = 0
        while index < words.count {
            guard valued.contains(words[index]) else {
                index += 1
                continue
            }
            guard index + 1 < words.count else {
                Executable.printError("\(executable): \(words[index]) needs a value\n\n" + usage)
                return .exit(.usage)
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
