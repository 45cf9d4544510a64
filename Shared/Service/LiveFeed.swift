import PierCrypto
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

/// Who listens for changes of which user, and the changes as the shared event log tells them:
/// the source of a service's live streams (``ServerSentEvents``).
///
/// One loop reads the log whenever `pier_events` is notified (and every `pollInterval`), and
/// signals ``Signal/changed`` to the streams of each user an event names (`subjects`); a stream
/// then reads its state again and sends it if it differs from what it sent last, so an event
/// read twice, or one that changed nothing a stream shows, sends nothing. Every `heartbeat` each
/// stream is signalled ``Signal/heartbeat`` (a comment line that keeps proxies from closing an
/// idle stream and tells the server when the client has gone). Any process reads the log, so a
/// change made by another replica, or by another service (a grant made in the console), reaches
/// the streams held here within about a notification's round trip.
///
/// Streams are bounded: `limitPerUser` for one user (an app that leaks streams), `limit` in all.
public final class LiveFeed: LifecycleService {
    public enum Signal: Sendable, Equatable {
        case changed
        case heartbeat
        /// The user is gone (the account deleted): the stream ends.
        case ended
    }

    public enum Refusal: Error, Sendable, Equatable {
        case tooManyForUser
        case tooMany
        case stopped
    }

    public typealias Subjects = @Sendable (_ type: String, _ payload: [UInt8]) -> (users: [UUID], ended: Bool)

    private struct State {
        var cursor: (txid: String, id: Int64)?
        var streams: [UUID: [UInt64: AsyncStream<Signal>.Continuation]] = [:]
        var lastStream: UInt64 = 0
        var count = 0
        var stopped = false
    }

    public let lifecycleName: String
    public let heartbeat: Duration
    public let pollInterval: Duration
    public let limit: Int
    public let limitPerUser: Int
    private let types: [String]
    private let subjects: Subjects
    private let database: PostgresPool
    private let listener: PostgresListener
    private let state = Mutex(State())

    /// - Parameters:
    ///   - types: the event types that can change what the streams show.
    ///   - subjects: the users an event concerns, and whether it ends their streams.
    public init(
        name: String, database: PostgresPool, listener: PostgresListener, types: [String], subjects: @escaping Subjects,
        heartbeat: Duration = .seconds(15), pollInterval: Duration = .seconds(1), limit: Int = 20_000, limitPerUser: Int = 8
    ) {
        lifecycleName = name
        self.database = database
        self.listener = listener
        self.types = types
        self.subjects = subjects
        self.heartbeat = heartbeat
        self.pollInterval = pollInterval
        self.limit = limit
        self.limitPerUser = limitPerUser
    }

    /// Streams held now.
    public var count: Int { state.withLock { $0.count } }

    /// A stream of signals for `user`'s listener; it is forgotten when the listener stops
    /// iterating (or drops it).
    public func subscribe(_ user: UUID) throws(Refusal) -> AsyncStream<Signal> {
        let (stream, continuation) = AsyncStream.makeStream(of: Signal.self, bufferingPolicy: .bufferingNewest(2))
        let id = try state.withLock { state throws(Refusal) -> UInt64 in
            guard !state.stopped else { throw .stopped }
            guard state.count < limit else { throw .tooMany }
            guard state.streams[user, default: [:]].count < limitPerUser else { throw .tooManyForUser }
            state.lastStream += 1
            state.streams[user, default: [:]][state.lastStream] = continuation
            state.count += 1
            return state.lastStream
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { state in
                guard state.streams[user]?.removeValue(forKey: id) != nil else { return }
                state.count -= 1
                if state.streams[user]?.isEmpty == true { state.streams[user] = nil }
            }
        }
        return stream
    }

    /// Reads the log until cancelled, and beats; then ends every stream.
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { [self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: heartbeat)
                    signal(everyone: .heartbeat)
                }
            }
            await listener.follow(every: pollInterval) { try? await read() }
            group.cancelAll()
        }
        let streams = state.withLock { state in
            state.stopped = true
            return state.streams.values.flatMap(\.values)
        }
        for stream in streams { stream.finish() }
    }

    /// Reads the events after the cursor and signals the users they name. The first read only
    /// places the cursor: below the oldest transaction still running, every event is in the past.
    func read() async throws {
        guard let cursor = state.withLock({ $0.cursor }) else {
            let rows = try await database.query("SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin")
            let xmin = try rows.first?.decode("xmin", as: String.self) ?? "0"
            state.withLock { $0.cursor = (xmin, 0) }
            return
        }
        let rows = try await database.query(
            """
            SELECT id, txid::text AS txid, type, payload::text AS payload,
                   txid < pg_snapshot_xmin(pg_current_snapshot()) AS settled
            FROM events.events
            WHERE (txid, id) > (\(cursor.txid)::xid8, \(cursor.id)) AND type = ANY(\(PostgresTextArray(types))::text[])
            ORDER BY txid, id LIMIT 10000
            """)
        var next = cursor
        var settled = true
        var changed: Set<UUID> = []
        var ended: Set<UUID> = []
        for row in rows {
            let named = subjects(try row.decode("type"), Array(try row.decode("payload", as: String.self).utf8))
            if named.ended { ended.formUnion(named.users) } else { changed.formUnion(named.users) }
            // Events above a running transaction's are read again next time (a second signal
            // sends nothing new); the cursor passes only those no transaction can still precede.
            let isSettled = try row.decode("settled", as: Bool.self)
            settled = settled && isSettled
            if settled { next = (try row.decode("txid"), try row.decode("id", as: Int64.self)) }
        }
        let targets = state.withLock { state -> [(AsyncStream<Signal>.Continuation, Signal)] in
            state.cursor = next
            return changed.subtracting(ended).flatMap { user in (state.streams[user]?.values ?? [:].values).map { ($0, .changed) }
            }
                + ended.flatMap { user in (state.streams[user]?.values ?? [:].values).map { ($0, .ended) } }
        }
        for (stream, signal) in targets { stream.yield(signal) }
    }

    private func signal(everyone signal: Signal) {
        let streams = state.withLock { $0.streams.values.flatMap(\.values) }
        for stream in streams { stream.yield(signal) }
    }
}

/// A live stream of one user's state as server-sent events (`text/event-stream`).
///
/// The first message is the state now (`event` named by the caller, `data` its JSON on one
/// line, `id` a fingerprint of it); then a message whenever the state changes, and a comment
/// every heartbeat. A client that reconnects sends the last id it received (`Last-Event-ID`):
/// when the state still has that fingerprint, nothing is sent again; otherwise the state now.
/// A state stream needs no replay: the latest state is all that was missed.
public enum ServerSentEvents {
    /// Milliseconds a browser's `EventSource` waits before it reconnects (sent as `retry`).
    public static let retryMilliseconds = 3000

    /// - Parameters:
    ///   - snapshot: the state now, encoded.
    ///   - fingerprint: what of the encoded state identifies it (without values that change by
    ///     themselves, as a time to check again).
    ///   - endsAt: when the stream ends (the access token's expiry, seconds since 1970): the
    ///     client opens the next one with a fresh token, so a stream never outlives what let it
    ///     be opened (a revoked session's stream ends with its last token).
    public static func response(
        _ request: Request, feed: LiveFeed, user: UUID, endsAt: Int?, event: String,
        snapshot: @escaping @Sendable () async throws -> [UInt8],
        fingerprint: @escaping @Sendable ([UInt8]) -> [UInt8] = { $0 }
    ) throws -> Response {
        let signals: AsyncStream<LiveFeed.Signal>
        do {
            signals = try feed.subscribe(user)
        } catch .tooManyForUser {
            throw HTTPError(
                429, code: .tooManyStreams,
                detail: "This account holds \(feed.limitPerUser) live streams already; close one before opening another.",
                headers: ["Retry-After": "\(retryMilliseconds / 1000)"])
        } catch {
            throw HTTPError.unavailable(retryAfter: 5, "This server holds all the live streams it can; try again shortly.")
        }
        let resumedFrom = request.headers["Last-Event-ID"]
        let headers: HTTPHeaders = [
            "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", "X-Accel-Buffering": "no",
        ]
        return .streaming(headers: headers) { writer in
            var sent = resumedFrom
            // The reconnection delay goes with the first message (or alone, when none is due).
            var pending = "retry: \(retryMilliseconds)\n"
            /// The state, unless it is what was sent last; one that cannot be read now (the
            /// database away) is read again at the next signal.
            func changed() async {
                guard let state = try? await snapshot() else { return }
                let id = hexString(SHA256.hash(fingerprint(state)).prefix(12))
                guard id != sent else { return }
                pending += "id: \(id)\nevent: \(event)\ndata: " + String(decoding: state, as: UTF8.self) + "\n\n"
                sent = id
            }
            // The first state is read after subscribing: a change in between is signalled too.
            await changed()
            if !pending.hasSuffix("\n\n") { pending += "\n" }
            try await writer.write(pending)
            for await signal in signals {
                if let endsAt, Date().timeIntervalSince1970 >= Double(endsAt) { return }
                pending = ""
                switch signal {
                case .changed: await changed()
                case .heartbeat: pending = ": heartbeat\n\n"
                case .ended: return
                }
                if !pending.isEmpty { try await writer.write(pending) }
            }
        }
    }
}
