import PierCrypto
import PierEvents
import PierHTTP
import PierIdentity
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
/// One loop reads the log whenever `pier_events` is notified (and every `pollInterval`). For an
/// event of the `changes` types (each names its user by `userId`), the user's state is read
/// once (`snapshot`) and handed to each of their streams, which sends it if it differs from what
/// it sent last: an event read twice, or one that changed nothing a stream shows, sends
/// nothing. What the process's ``RevocationList`` revokes ends streams at once: a deleted
/// account's, and those opened with a token of an ended session; a stream is never opened on a
/// token it already refuses (see ``subscribe(_:session:)``). Every `heartbeat` each stream is
/// signalled ``Signal/heartbeat`` (a comment line that keeps proxies from closing an idle
/// stream and tells the server when the client has gone). Any process reads the log, so a
/// change made by another replica, or by another service (a grant made in the console),
/// reaches the streams held here within about a notification's round trip.
///
/// Streams are bounded: `limitPerUser` for one user (an app that leaks streams), `limit` in all.
/// At the user's bound, a new stream of a session that holds streams already pushes out that
/// session's oldest: someone holding a copy of the session's token cannot keep its owner's app
/// from streaming (the app's next stream takes one back), and one session's leak never locks
/// the account's other devices out for longer than the other session's own streams.
public final class LiveFeed: LifecycleService {
    public enum Signal: Sendable {
        /// The user's state changed: its reading, shared by the user's streams (nil when it
        /// could not be read, the database away: the next change reads it again).
        case changed(Task<[UInt8]?, Never>)
        case heartbeat
    }

    public enum Refusal: Error, Sendable, Equatable {
        case tooManyForUser
        case tooMany
        case stopped
        /// The token's session has ended, or its account is gone.
        case revoked
    }

    private struct Listener {
        let session: UUID?
        let continuation: AsyncStream<Signal>.Continuation
    }

    private struct State {
        var streams: [UUID: [UInt64: Listener]] = [:]
        var lastStream: UInt64 = 0
        var count = 0
        var stopped = false
        /// The tail has read once: its place is set, and what comes after is kept for later.
        var anchored = false
    }

    /// What names an event's user.
    private struct Subject: Decodable {
        let userId: UUID
    }

    public let lifecycleName: String
    public let heartbeat: Duration
    public let pollInterval: Duration
    public let limit: Int
    public let limitPerUser: Int
    /// The state of a user as the streams send it.
    public let snapshot: @Sendable (UUID) async throws -> [UInt8]
    private let tail: EventLogTail
    private let database: PostgresPool
    private let listener: PostgresListener
    private let revocations: RevocationList?
    private let state = Mutex(State())

    /// - Parameters:
    ///   - changes: the event types that can change what the streams show.
    ///   - snapshot: the state of a user, encoded.
    ///   - revocations: the process's list, whose revocations end streams (nil: none end but
    ///     with their token's life).
    /// The event types it shows: only their notifications wake it.
    private let changes: Set<String>
    /// The event types that concern every user with a stream (a new version of something
    /// everyone's state depends on).
    private let broadcasts: Set<String>

    public init(
        name: String, database: PostgresPool, listener: PostgresListener, revocations: RevocationList?,
        changes: [String], broadcasts: [String] = [], snapshot: @escaping @Sendable (UUID) async throws -> [UInt8],
        settings: LiveSettings, pollInterval: Duration = .seconds(1)
    ) {
        lifecycleName = name
        self.database = database
        self.listener = listener
        self.revocations = revocations
        tail = EventLogTail(types: changes + broadcasts, from: .now)
        self.changes = Set(changes + broadcasts)
        self.broadcasts = Set(broadcasts)
        self.snapshot = snapshot
        heartbeat = settings.heartbeat
        self.pollInterval = pollInterval
        limit = settings.limit
        limitPerUser = settings.limitPerUser
        revocations?.watch { [weak self] revoked in self?.end(revoked) }
    }

    /// Streams held now.
    public var count: Int { state.withLock { $0.count } }

    /// A stream of signals for a listener of `user`, opened with a token of `session`; it is
    /// forgotten when the listener stops iterating (or drops it), and it finishes when the
    /// session or the account is revoked.
    ///
    /// The token was checked before, but the revocation list may have read an end since: the
    /// stream is registered first, then the list is asked. An end read before the question is
    /// answered here (``Refusal/revoked``); one read after finds the stream registered.
    public func subscribe(_ user: UUID, session: UUID?) throws(Refusal) -> AsyncStream<Signal> {
        let (stream, continuation) = AsyncStream.makeStream(of: Signal.self, bufferingPolicy: .bufferingNewest(2))
        let (id, pushedOut) = try state.withLock { state throws(Refusal) -> (UInt64, Listener?) in
            guard !state.stopped else { throw .stopped }
            var pushedOut: Listener?
            if state.streams[user, default: [:]].count >= limitPerUser {
                // The session's own oldest stream makes room (one out, one in); no other session's.
                guard let session,
                    let oldest = state.streams[user]?.filter({ $0.value.session == session }).keys.min(),
                    let listener = state.streams[user]?.removeValue(forKey: oldest)
                else { throw .tooManyForUser }
                state.count -= 1
                pushedOut = listener
            } else if state.count >= limit {
                throw .tooMany
            }
            state.lastStream += 1
            state.streams[user, default: [:]][state.lastStream] = Listener(session: session, continuation: continuation)
            state.count += 1
            return (state.lastStream, pushedOut)
        }
        pushedOut?.continuation.finish()
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { state in
                guard state.streams[user]?.removeValue(forKey: id) != nil else { return }
                state.count -= 1
                if state.streams[user]?.isEmpty == true { state.streams[user] = nil }
            }
        }
        if revocations?.isRevoked(user: user, session: session) == true {
            continuation.finish()
            throw .revoked
        }
        return stream
    }

    /// Finishes the streams of deleted accounts and of ended sessions. A finished stream gives
    /// what it holds, then ends: no later signal (a heartbeat) can push the end out of its buffer.
    func end(_ revoked: RevocationList.Revoked) {
        let ending = state.withLock { state in
            revoked.users.flatMap { state.streams[$0]?.values.map { $0 } ?? [] }
                + revoked.sessions.flatMap { ended in
                    state.streams[ended.userId]?.values.filter { $0.session == ended.sessionId } ?? []
                }
        }
        for stream in ending { stream.continuation.finish() }
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
            await listener.follow(every: pollInterval, wakingOn: changes) { try? await read() }
            group.cancelAll()
        }
        let streams = state.withLock { state in
            state.stopped = true
            return state.streams.values.flatMap(\.values)
        }
        for stream in streams { stream.continuation.finish() }
    }

    /// Reads the events appended since the last read and signals the streams they concern.
    func read() async throws {
        // Nobody to tell: no read (an idle process costs the database nothing), once the tail's
        // place is set. A stream opened later is sent the state then, and the next read brings
        // every change since the last one, those after its state among them.
        guard state.withLock({ !$0.anchored || !$0.streams.isEmpty }) else { return }
        var changed: Set<UUID> = []
        var everyone = false
        // An event read twice (not settled the first time) signals twice: the second sends nothing.
        for event in try await tail.next(on: database) {
            if broadcasts.contains(event.type) {
                everyone = true
            } else if let subject = try? event.decode(Subject.self) {
                changed.insert(subject.userId)
            }
        }
        state.withLock { $0.anchored = true }
        let following = state.withLock { state in
            everyone
                ? state.streams.map { ($0.key, Array($0.value.values)) }
                : changed.compactMap { user in state.streams[user].map { (user, Array($0.values)) } }
        }
        for (user, streams) in following {
            // One reading per user, whatever the number of their streams.
            let reading = Task { [snapshot] in try? await snapshot(user) }
            for stream in streams { stream.continuation.yield(.changed(reading)) }
        }
    }

    private func signal(everyone signal: Signal) {
        let streams = state.withLock { $0.streams.values.flatMap(\.values) }
        for stream in streams { stream.continuation.yield(signal) }
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
    ///   - caller: whose state (their stream ends when the token it was opened with expires:
    ///     the client opens the next one with a fresh token, so a stream never outlives what
    ///     let it be opened; it ends at once when that token's session is revoked).
    ///   - resumedFrom: the last id the client received (`Last-Event-ID`, ``EventStreamRequest``),
    ///     when it reconnects.
    ///   - event: the name of the messages.
    ///   - fingerprint: what of the encoded state identifies it (without values that change by
    ///     themselves, as a time to check again).
    public static func response(
        _ request: Request, resumingAfter resumedFrom: String?, feed: LiveFeed, caller: Principal, event: String,
        fingerprint: @escaping @Sendable ([UInt8]) -> [UInt8] = { $0 }
    ) throws -> Response {
        let (user, endsAt) = (caller.userID, caller.expiresAt)
        let signals: AsyncStream<LiveFeed.Signal>
        do {
            signals = try feed.subscribe(user, session: caller.sessionID)
        } catch .revoked {
            throw HTTPError.unauthorized("The session has ended; sign in again.", code: .sessionRevoked)
        } catch .tooManyForUser {
            throw HTTPError(
                429, code: .tooManyStreams,
                detail: "This account holds \(feed.limitPerUser) live streams already; close one before opening another.",
                headers: ["Retry-After": "\(retryMilliseconds / 1000)"])
        } catch {
            throw HTTPError.unavailable(retryAfter: 5, "This server holds all the live streams it can; try again shortly.")
        }
        let headers: HTTPHeaders = [
            "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", "X-Accel-Buffering": "no",
        ]
        return .streaming(headers: headers) { writer in
            var sent = resumedFrom
            // The reconnection delay goes with the first message (or alone, when none is due).
            var pending = "retry: \(retryMilliseconds)\n"
            /// Adds the state to what is written, unless it is what was sent last; one that could
            /// not be read (the database away) is read again at the next change.
            func send(_ state: [UInt8]?) {
                guard let state else { return }
                let id = hexString(SHA256.hash(fingerprint(state)).prefix(12))
                guard id != sent else { return }
                pending += "id: \(id)\nevent: \(event)\ndata: " + String(decoding: state, as: UTF8.self) + "\n\n"
                sent = id
            }
            // The first state is read after subscribing: a change in between is signalled too.
            send(try? await feed.snapshot(user))
            if !pending.hasSuffix("\n\n") { pending += "\n" }
            try await writer.write(pending)
            for await signal in signals {
                if let endsAt, Date().timeIntervalSince1970 >= Double(endsAt) { return }
                pending = ""
                switch signal {
                case .changed(let reading): send(await reading.value)
                case .heartbeat: pending = ": heartbeat\n\n"
                }
                if !pending.isEmpty { try await writer.write(pending) }
            }
        }
    }
}
