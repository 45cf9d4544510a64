import PierCrypto
import PierEvents
import PierHTTP
import PierIdentity
import PierModels
import PierPostgres
import PierRuntime

/// A Pier service: a plugin that runs alone (`pier-auth serve`) or hosted by the gateway with
/// others, with the same paths either way. It describes its parts and starts none: the
/// ``PluginHost`` builds it, runs its ``background`` work in the process's ``ServiceGroup`` and serves
/// its routes.
public protocol Service: Sendable {
    /// The service's name (`auth`): logs, metrics, the gateway's `--embed` list.
    static var name: String { get }
    /// The path prefix it owns (`/auth`).
    static var prefix: String { get }
    /// The schema its migrations create and its queries use.
    static var schema: String { get }
    /// Its numbered migrations.
    static var migrations: [Migration] { get }
    /// The port it listens on when run alone.
    static var defaultPort: Int { get }
    /// Extra commands of its executable (`pier-auth create-admin`).
    static var commands: [ServiceCommand] { get }
    /// The endpoints it answers, for the API document (`/openapi.json`) of every process that
    /// hosts it. Pier's own services list theirs in PierModels (`AuthAPI.all`, …) and leave this
    /// empty; a plugin from another package lists its own here.
    static var endpoints: [EndpointDefinition] { get }
    /// The events it appends to the event log that webhooks may send (auth's webhooks, in a
    /// process built with this plugin, accept them in `PIER_WEBHOOKS`).
    static var events: [EventDeclaration] { get }
    /// Its audit log, when it keeps one: the console's audit page reads it beside Pier's.
    static var auditLog: AuditLogDeclaration? { get }
    /// Its pages in the console: entries in the menu, screens over its API.
    static var consolePages: [ConsolePage] { get }
    /// The settings it reads from the environment, for the settings reference (docs/settings.md,
    /// `pier-gateway settings-reference`): a setting it reads and does not declare fails
    /// `scripts/lint.sh` for Pier's own plugins.
    static var settings: [SettingDeclaration] { get }

    /// Builds the service from its context (configuration, pool, logger, token verifier),
    /// starting nothing.
    static func make(context: ServiceContext) async throws -> Self

    /// Adds its routes (built with a ``Router`` of its own context type).
    func routes(into routes: inout Routes)
    /// True when the service can answer (beyond the database and migrations, which the host
    /// checks itself).
    func isReady() async -> Bool
    /// Its background work (workers, sweeps, thread pools to shut down), run by the host once
    /// every plugin is built and stopped, in reverse order, after the listeners and before the
    /// pools.
    var background: [any LifecycleService] { get }
    /// The names of the capabilities it takes from the plugins beside it (``Capability/name``):
    /// the host builds it after every plugin that offers one of them, and its context's
    /// ``ServiceContext/capabilities`` holds what they offered.
    static var needs: [String] { get }
    /// The names of the capabilities it offers (what ``offer(into:)`` adds), for the host's
    /// order of building.
    static var offers: [String] { get }
    /// What it offers the other plugins of the same process (see ``Capability``).
    func offer(into capabilities: inout Capabilities)
}

extension Service {
    public static var commands: [ServiceCommand] { [] }
    public static var endpoints: [EndpointDefinition] { [] }
    public static var events: [EventDeclaration] { [] }
    public static var auditLog: AuditLogDeclaration? { nil }
    public static var consolePages: [ConsolePage] { [] }
    public static var settings: [SettingDeclaration] { [] }
    public func isReady() async -> Bool { true }
    public var background: [any LifecycleService] { [] }
    public static var needs: [String] { [] }
    public static var offers: [String] { [] }
    public func offer(into capabilities: inout Capabilities) {}
}

/// A command of a service's executable beyond serve/migrate.
public struct ServiceCommand: Sendable {
    public let name: String
    public let usage: String
    public let run: @Sendable ([String], ServiceContext) async throws -> Void

    public init(name: String, usage: String, run: @escaping @Sendable ([String], ServiceContext) async throws -> Void) {
        self.name = name
        self.usage = usage
        self.run = run
    }
}

/// What a service is built from.
public struct ServiceContext: Sendable {
    public let configuration: ServiceConfiguration
    public let database: PostgresPool
    public let logger: Logger
    /// Verifies bearer tokens with the auth service's keys.
    public let authenticator: Authenticator
    /// The process's listener on `pier_events`, which wakes every follower of the event log
    /// (consumers, the revocation list); the host runs it.
    public let events: PostgresListener
    /// The process's outbound HTTP client; each use gives its own timeouts and limits.
    public let http: HTTPClient
    /// What the host and the plugins built before offer (those of ``Service/needs`` among
    /// them): resolved before the service is built, so it holds what it takes as constants.
    public let capabilities: Capabilities
    /// Every plugin the executable was built with, hosted here or not (a cluster runs the same
    /// executable per plugin): what auth's webhooks and the console learn the others' events,
    /// audit logs and pages from.
    public let plugins: [Plugin]

    public init(
        configuration: ServiceConfiguration, database: PostgresPool, logger: Logger, authenticator: Authenticator,
        events: PostgresListener, http: HTTPClient, capabilities: Capabilities = Capabilities(), plugins: [Plugin] = []
    ) {
        self.plugins = plugins
        self.configuration = configuration
        self.database = database
        self.logger = logger
        self.authenticator = authenticator
        self.events = events
        self.http = http
        self.capabilities = capabilities
    }

    /// A consumer of the shared event log: `handler` applies each event of `types` exactly once,
    /// in order, in one transaction with the cursor, which the host keeps in
    /// `<schema>.event_cursors` under `name` (made on its first read: no migration of yours).
    /// Woken by the process's listener; put it in your ``Service/background``.
    public func eventConsumer(
        name: String, schema: String, types: [String],
        handler: @escaping @Sendable (EventConsumer.Event, PostgresConnection) async throws -> Void
    ) -> EventConsumer {
        EventConsumer(
            name: name, cursorTable: "\(schema).event_cursors", types: types, database: database, listener: events,
            logger: logger, makesCursorTable: true, handler: handler)
    }

    /// The first offer of `capability` in this process, for a plugin that does not work as it
    /// should without it. Capabilities are offered in-process only: when no hosted plugin offers
    /// it, the log says so at start, naming the plugins that would (host them together).
    public func need<Value>(_ capability: Capability<Value>) -> Value? {
        if let value = capabilities.first(capability) { return value }
        let offerers = plugins.filter { $0.offers.contains(capability.name) }.map(\.name)
        logger.warning(
            "a capability it needs is offered by no plugin in this process: host them together",
            [
                ("capability", .string(capability.name)),
                ("offered_by", .string(offerers.isEmpty ? "no plugin this executable has" : offerers.joined(separator: ","))),
            ])
        return nil
    }
}
