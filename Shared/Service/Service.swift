import PierCrypto
import PierHTTP
import PierPostgres
import PierRuntime

/// A Pier service: a plugin that runs alone (`pier-auth serve`) or hosted by the gateway with
/// others, with the same paths either way.
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

    /// Builds the service from its context (configuration, pool, logger, token verifier).
    static func make(context: ServiceContext) async throws -> Self

    /// Adds its routes (built with a ``Router`` of its own context type).
    func routes(into routes: inout Routes)
    /// True when the service can answer (beyond the database and migrations, which the runner
    /// checks itself).
    func isReady() async -> Bool
    /// Stops background work before the pool closes.
    func shutdown() async
}

extension Service {
    public static var commands: [ServiceCommand] { [] }
    public func isReady() async -> Bool { true }
    public func shutdown() async {}
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
    /// (consumers, the revocation list); whoever built the context starts and stops it.
    public let events: PostgresListener

    public init(
        configuration: ServiceConfiguration, database: PostgresPool, logger: Logger, authenticator: Authenticator,
        events: PostgresListener
    ) {
        self.configuration = configuration
        self.database = database
        self.logger = logger
        self.authenticator = authenticator
        self.events = events
    }
}

extension ServiceContext {
    /// A context that follows the event log, as a serving process needs: it starts a listener
    /// on ``EventLog/channel`` and the ``RevocationList`` that follows it, and checks the
    /// list in its authenticator. ``stopFollowing()`` stops both.
    public static func following(
        configuration: ServiceConfiguration, database: PostgresPool, logger: Logger, authenticator: Authenticator
    ) async -> ServiceContext {
        let events = PostgresListener(configuration: database.configuration, channel: EventLog.channel)
        events.start()
        let revocations = RevocationList(database: database, listener: events)
        await revocations.start()
        return ServiceContext(
            configuration: configuration, database: database, logger: logger,
            authenticator: authenticator.checking(revocations), events: events)
    }

    /// Stops the revocation list and the listener that ``following(configuration:database:logger:authenticator:)`` started.
    public func stopFollowing() async {
        await authenticator.revocations?.stop()
        events.stop()
    }
}
