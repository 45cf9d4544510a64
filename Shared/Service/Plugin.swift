import PierEvents
import PierModels
import PierPostgres
import PierRuntime

/// A plugin as a host takes it: what its type says about it, and how it is built (by its own
/// `make`, or by a test's with explicit keys or a clock).
public struct Plugin: Sendable {
    public let name: String
    public let prefix: String
    public let schema: String
    public let migrations: [Migration]
    public let defaultPort: Int
    public let commands: [ServiceCommand]
    /// The endpoints it declares for the API document (``Service/endpoints``), and its audit log's
    /// (`GET /<prefix>/audit`) when it keeps one.
    public let endpoints: [EndpointDefinition]
    /// The capabilities it takes and offers, by name (the host's order of building).
    public let needs: [String]
    public let offers: [String]
    /// What webhooks may send of it, its audit log and its console pages (``Service/events``,
    /// ``Service/auditLog``, ``Service/consolePages``).
    public let events: [EventDeclaration]
    public let auditLog: AuditLogDeclaration?
    public let consolePages: [ConsolePage]
    /// The settings it reads (``Service/settings``).
    public let settings: [SettingDeclaration]
    let make: @Sendable (ServiceContext) async throws -> any Service

    public init<S: Service>(_ type: S.Type) {
        self.init(type) { try await S.make(context: $0) }
    }

    public init<S: Service>(_ type: S.Type, make: @escaping @Sendable (ServiceContext) async throws -> S) {
        name = S.name
        prefix = S.prefix
        schema = S.schema
        migrations = S.migrations
        defaultPort = S.defaultPort
        commands = S.commands
        endpoints = S.endpoints + (S.auditLog == nil ? [] : [AuditAPI.log(of: String(S.prefix.dropFirst())).definition])
        needs = S.needs
        offers = S.offers
        events = S.events
        auditLog = S.auditLog
        consolePages = S.consolePages
        settings = S.settings
        self.make = { try await make($0) }
    }

    /// What makes `plugins` impossible to host together: a name, a prefix or a schema that two
    /// of them share (a team's list that adds one of `Gateway.builtIn` again, say); nil when none.
    public static func repeated(in plugins: [Plugin]) -> String? {
        for (what, key) in [("name", \Plugin.name), ("prefix", \Plugin.prefix), ("schema", \Plugin.schema)] {
            var seen = Set<String>()
            for plugin in plugins where !seen.insert(plugin[keyPath: key]).inserted {
                return "two plugins have the \(what) \(plugin[keyPath: key]) (is one of Pier's own listed again?)"
            }
        }
        return nil
    }

    /// Applies the plugin's migrations and the shared event log's, first waiting up to `wait`
    /// seconds for a database that cannot be reached yet (a migrate job started with its database,
    /// as an orchestrator that does not order them starts it). Only failures to connect are
    /// waited on, each logged with its reason (a wrong password shows there); a statement the
    /// server refuses fails at once.
    public func migrate(pool: PostgresPool, logger: Logger, waitingUpTo wait: Int) async throws {
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
        try await migrate(pool: pool, logger: logger, eventsWait: max(0, deadline - MonotonicClock.seconds()))
    }

    /// Applies the plugin's migrations and the shared event log's. The event log belongs to its
    /// producer (auth): a role that may not create in its schema (a reader, as the roles of the
    /// deployments are) does not migrate it but waits up to `eventsWait` seconds for its owner to
    /// have done so.
    public func migrate(pool: PostgresPool, logger: Logger, eventsWait: Double = 60) async throws {
        var events: [Int] = []
        if try await Migrator.mayCreate(in: EventLog.schema, pool: pool) {
            events = try await Migrator.migrate(pool, schema: EventLog.schema, migrations: EventLog.migrations)
        } else {
            let deadline = MonotonicClock.seconds() + eventsWait
            var waited = false
            while try await !Migrator.pending(pool, schema: EventLog.schema, migrations: EventLog.migrations).isEmpty {
                guard MonotonicClock.seconds() < deadline else {
                    throw HostFailure(
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
        let own = try await Migrator.migrate(pool, schema: schema, migrations: migrations)
        logger.info("migrated", [("schema", .string(schema)), ("applied", .int(own.count + events.count))])
    }

    /// Says at start, in one line that names the command to run, when the schema is behind the
    /// plugin: requests then answer 503 `schema_not_migrated` (and `/readyz` is not ready) until
    /// it is migrated.
    public func warnIfNotMigrated(pool: PostgresPool, logger: Logger) async {
        guard let pending = try? await Migrator.pending(pool, schema: schema, migrations: migrations), !pending.isEmpty
        else { return }
        logger.warning(
            "schema \(schema) is not migrated: run pier-\(name) migrate (or start with --migrate)",
            [("schema", .string(schema)), ("pending", .int(pending.count))])
    }
}

/// A failure of a host's step, said as it is printed.
struct HostFailure: Error, CustomStringConvertible {
    let description: String
}
