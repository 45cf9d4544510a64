import PierJSON
import PierPostgres
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One event of the shared log.
public struct LoggedEvent: Sendable {
    public let id: Int64
    public let type: String
    public let payload: String
    public let createdAt: Date
    /// Its place in the log.
    public let place: EventCursor
    /// No running transaction can still commit an event before it: a reader may pass it for
    /// good. A reader that passes an unsettled event could skip one committed later below it.
    public let settled: Bool

    /// The payload decoded as `T`.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try WireDecoder.decode(T.self, from: Array(payload.utf8))
    }
}

/// A place in the log. Events are read in the order of their transactions, then of their ids
/// (an id order would pass over an event whose id was taken before an older transaction's).
public struct EventCursor: Sendable, Equatable {
    public var txid: String
    public var id: Int64

    public static let start = EventCursor(txid: "0", id: 0)

    public init(txid: String, id: Int64) {
        self.txid = txid
        self.id = id
    }

    /// The place after reading `events` from here: past each one up to the first that is not
    /// settled (read again next time, with those after it).
    public func passing(_ events: [LoggedEvent]) -> EventCursor {
        var next = self
        for event in events {
            guard event.settled else { break }
            next = event.place
        }
        return next
    }
}

extension EventLog {
    /// Events after `cursor` in the log's order.
    ///
    /// - Parameters:
    ///   - types: only events of these types (nil: every event).
    ///   - settledOnly: leave out the events not settled yet.
    ///   - within: only events younger than this many seconds.
    ///   - payloadsOf: the types whose payloads are read (nil: every type's); the others' come
    ///     with an empty payload (a reader passing thousands of events it does not apply
    ///     spent most of its read turning their payloads into text).
    public static func read(
        after cursor: EventCursor, types: [String]?, settledOnly: Bool = false, within seconds: Double? = nil,
        payloadsOf: [String]? = nil, limit: Int, on connection: any PostgresExecutor
    ) async throws -> [LoggedEvent] {
        var query: PostgresQuery = "SELECT id, txid::text AS txid, type, "
        if let payloadsOf {
            query.append("CASE WHEN type = ANY(\(PostgresTextArray(payloadsOf))::text[]) THEN payload::text ELSE '' END")
        } else {
            query.append("payload::text")
        }
        query.append(
            """
             AS payload, created_at, txid < pg_snapshot_xmin(pg_current_snapshot()) AS settled
            FROM events.events WHERE (txid, id) > (\(cursor.txid)::xid8, \(cursor.id))
            """)
        if let types { query.append("AND type = ANY(\(PostgresTextArray(types))::text[])") }
        if settledOnly { query.append("AND txid < pg_snapshot_xmin(pg_current_snapshot())") }
        if let seconds { query.append("AND created_at > now() - make_interval(secs => \(seconds))") }
        query.append("ORDER BY txid, id LIMIT \(limit)")
        return try await connection.query(query).map { row in
            let id = try row.decode("id", as: Int64.self)
            return LoggedEvent(
                id: id, type: try row.decode("type"), payload: try row.decode("payload"),
                createdAt: try row.decode("created_at"), place: EventCursor(txid: try row.decode("txid"), id: id),
                settled: try row.decode("settled"))
        }
    }
}

/// A process's own place in the log, kept in memory: what a process learns for itself (tokens
/// revoked, changes its live streams show) rather than applies once for the service
/// (``EventConsumer``, whose place is stored).
///
/// Each read returns the events after the place, then moves it past the settled ones: an event
/// not settled yet is returned again by the next read, so what a reader does with an event must
/// be the same done twice.
public final class EventLogTail: Sendable {
    public enum Start: Sendable {
        /// Events appended from the first read on (the first read returns none).
        case now
        /// The events of the last `seconds` too; older ones are never read.
        case recent(seconds: Double)
    }

    public let types: [String]
    private let window: Double?
    private let cursor: Mutex<EventCursor?>

    public init(types: [String], from start: Start) {
        self.types = types
        switch start {
        case .now:
            window = nil
            cursor = Mutex(nil)
        case .recent(let seconds):
            window = seconds
            cursor = Mutex(.start)
        }
    }

    /// The events after the place (at most `limit`); one reader at a time.
    public func next(on database: PostgresPool, limit: Int = 10_000) async throws -> [LoggedEvent] {
        guard let place = cursor.withLock({ $0 }) else {
            // Below the oldest transaction still running, every event is in the past.
            let rows = try await database.query("SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin")
            let xmin = try rows.first?.decode("xmin", as: String.self) ?? "0"
            cursor.withLock { $0 = EventCursor(txid: xmin, id: 0) }
            return []
        }
        let events = try await EventLog.read(after: place, types: types, within: window, limit: limit, on: database)
        cursor.withLock { $0 = place.passing(events) }
        return events
    }
}
