import PierHTTP
import PierJSON
import PierPostgres
import PierRuntime
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Reads the shared event log after its own stored cursor and applies each event exactly once,
/// in the order of their transactions (then of their ids):
/// the effect and the cursor move commit in the same transaction. Replicas take turns (the
/// cursor row is locked). It wakes on NOTIFY `pier_events` of the types it applies (the others'
/// events it passes at its poll, many to a transaction), and polls as a fallback; a part of its
/// plugin's ``Service/background``.
public final class EventConsumer: LifecycleService {
    public var lifecycleName: String { "events \(name)" }

    public typealias Event = LoggedEvent

    public let name: String
    public let cursorTable: String
    public let types: [String]
    /// The notified types that wake it (those it applies, unless told fewer).
    public let wakingOn: Set<String>
    public let pollInterval: Duration
    private let database: PostgresPool
    private let logger: Logger
    private let handler: @Sendable (Event, PostgresConnection) async throws -> Void
    private let applied: (@Sendable () -> Void)?
    private let listener: PostgresListener
    /// Whether its cursor row is known to exist (made on the first batch).
    private let cursorMade = Atomic<Bool>(false)
    /// Whether it makes `cursorTable` itself, when missing (a plugin's, kept by the host).
    private let makesCursorTable: Bool

    /// - Parameters:
    ///   - name: the consumer's row in `cursorTable` (a `consumer text, last_event_id bigint` table).
    ///   - listener: the process's listener on `pier_events` (started and stopped by its owner).
    ///   - applied: called once a batch that applied events committed (to wake what its effects
    ///     wait for, such as a mail outbox).
    ///   - wakingOn: the types whose notifications wake it (default: `types`); fewer when some
    ///     of them change nothing now (webhooks nobody subscribed to).
    ///   - makesCursorTable: make `cursorTable` when it is missing (`ServiceContext.eventConsumer`:
    ///     a plugin's cursor kept without a migration of its own).
    ///   - handler: applies one event on the transaction's connection; throwing retries later.
    public init(
        name: String, cursorTable: String, types: [String], database: PostgresPool, listener: PostgresListener,
        logger: Logger, pollInterval: Duration = .seconds(5), applied: (@Sendable () -> Void)? = nil,
        wakingOn: [String]? = nil, makesCursorTable: Bool = false,
        handler: @escaping @Sendable (Event, PostgresConnection) async throws -> Void
    ) {
        self.makesCursorTable = makesCursorTable
        self.wakingOn = Set(wakingOn ?? types)
        self.applied = applied
        self.name = name
        self.cursorTable = cursorTable
        self.types = types
        self.database = database
        self.logger = logger
        self.pollInterval = pollInterval
        self.handler = handler
        self.listener = listener
    }

    /// Consumes until its task is cancelled: at once, on every notification, and every
    /// `pollInterval`. A failure is logged and retried at the next wake-up.
    public func run() async {
        await listener.follow(every: pollInterval, wakingOn: wakingOn) {
            do {
                // A batch that read fewer than it could was the last there was.
                while try await consumeBatch() == Self.batch {}
            } catch {
                logger.warning("event consumer will retry", [("consumer", .string(name)), ("error", .string("\(error)"))])
            }
        }
    }

    /// The migration that gives a consumer's cursor table (`consumer text, last_event_id bigint`)
    /// its transaction: the cursor is the pair, placed at the last event it read.
    public static func cursorMigration(table: String, version: Int) -> Migration {
        Migration(
            version: version, name: "cursor_by_transaction",
            sql: """
                ALTER TABLE \(table) ADD COLUMN last_txid xid8 NOT NULL DEFAULT '0';
                UPDATE \(table) c SET last_txid = e.txid FROM events.events e WHERE e.id = c.last_event_id;
                """)
    }

    /// Events read in one transaction: a consumer woken only by its own types passes the others'
    /// at its poll, a few thousand at a time under load.
    static let batch = 1000

    /// Reads the next events (at most ``batch``), applies those of its types and returns how
    /// many it read.
    @discardableResult
    public func consumeBatch() async throws -> Int {
        let name = name, table = cursorTable, wanted = self.types, types = Set(self.types), handler = handler
        let made = cursorMade.load(ordering: .relaxed)
        let makesTable = makesCursorTable && !made
        let (read, applied) = try await database.withTransaction { connection in
            if makesTable {
                // Replicas starting together make it once: the second waits, then finds it.
                try await connection.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended('pier.event_cursors:' || \(table), 0))")
                try await connection.execute(
                    """
                    CREATE TABLE IF NOT EXISTS \(unsafeSQL: table) (
                        consumer text PRIMARY KEY, last_event_id bigint NOT NULL, last_txid xid8 NOT NULL DEFAULT '0')
                    """)
            }
            func lockCursor() async throws -> PostgresRow? {
                try await connection.query(
                    "SELECT last_event_id, last_txid::text AS last_txid FROM \(unsafeSQL: table) WHERE consumer = \(name) FOR UPDATE"
                ).first
            }
            var locked = made ? try await lockCursor() : nil
            if locked == nil {
                try await connection.execute(
                    "INSERT INTO \(unsafeSQL: table) (consumer, last_event_id) VALUES (\(name), 0) ON CONFLICT (consumer) DO NOTHING"
                )
                locked = try await lockCursor()
            }
            guard let row = locked else { throw PostgresError(.server, message: "the cursor row of \(name) is missing") }
            let cursor = EventCursor(txid: try row.decode("last_txid"), id: try row.decode("last_event_id"))
            // Every type is read, so that the cursor passes the others' events too (filtered here,
            // a cursor left behind would scan them all again at each turn).
            let events = try await EventLog.read(
                after: cursor, types: nil, settledOnly: true, payloadsOf: wanted, limit: Self.batch, on: connection)
            for event in events where types.contains(event.type) { try await handler(event, connection) }
            let last = cursor.passing(events)
            if last != cursor {
                try await connection.execute(
                    """
                    UPDATE \(unsafeSQL: table) SET last_event_id = \(last.id), last_txid = \(last.txid)::xid8
                    WHERE consumer = \(name)
                    """)
            }
            return (events.count, events.contains { types.contains($0.type) })
        }
        cursorMade.store(true, ordering: .relaxed)
        if applied { self.applied?() }
        return read
    }
}
