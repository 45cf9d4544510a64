import PierCrypto
import PierEvents
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

/// Access tokens revoked before they expire, as every service learns them from the shared event
/// log: `session.revoked` (a logout, a password change ending other sessions, a refresh token
/// reused) refuses the tokens of that session; `account.deleted` refuses every token of that
/// user. Kept in memory, so checking a token costs two dictionary
/// lookups and no database round trip; each entry is forgotten once every token it could match
/// has expired, so memory is bounded by what is revoked within a token's lifetime.
///
/// A background loop reads new events whenever `pier_events` is notified, and every
/// `pollInterval` in any case. Once the last successful read is older than `staleAfter` (a
/// machine so busy that the loop fell behind), a request reads the log itself before it is
/// answered (one read at a time, which every request then waiting shares). While nothing can
/// read (the database is away), nothing is known of what was revoked meanwhile: tokens are
/// answered with ``Verdict/unknown`` (a 503) rather than accepted. So a revoked token is
/// accepted at most `staleAfter` after its revocation, whatever fails.
public final class RevocationList: LifecycleService {
    public var lifecycleName: String { "revocations" }

    public enum Verdict: Sendable, Equatable {
        case valid
        case revoked
        /// The list is out of date: whether the token was revoked cannot be told.
        case unknown
    }

    private struct State {
        /// Session id → until when its tokens may exist (seconds since 1970).
        var sessions: [UUID: Double] = [:]
        /// User id → until when its tokens may exist (seconds since 1970).
        var users: [UUID: Double] = [:]
        var syncedAt: ContinuousClock.Instant?
        var watchers: [@Sendable (Revoked) -> Void] = []
        /// The read under way, which every caller of ``sync()`` meanwhile shares.
        var reading: Task<Void, any Error>?
    }

    /// What one read of the log revoked: sessions (with their user), and users whose every
    /// token is refused.
    public struct Revoked: Sendable {
        public var sessions: [SessionRevoked] = []
        public var users: Set<UUID> = []
        public var isEmpty: Bool { sessions.isEmpty && users.isEmpty }
    }

    /// The longest an access token can live (`PIER_AUTH_ACCESS_TTL_S` at most), plus leeway:
    /// how long an `account.deleted` is kept, and how far back a starting process reads.
    public static let longestTokenLife: Double = 86_400 + 60

    /// The events that end tokens: a session's, or an account's (deleted, or merged into another).
    static let types = [SessionRevoked.type, AccountDeleted.type, AccountMerged.type]

    public let staleAfter: Duration
    public let pollInterval: Duration
    private let database: PostgresPool
    private let listener: PostgresListener
    private let state = Mutex(State())
    private let tail = EventLogTail(
        types: RevocationList.types, from: .recent(seconds: RevocationList.longestTokenLife))

    /// - Parameters:
    ///   - database: a pool on the database that holds the `events` schema.
    ///   - listener: the process's listener on `pier_events` (started and stopped by its owner).
    ///   - staleAfter: how old the last read may be before tokens are answered `unknown`.
    ///   - pollInterval: how often the log is read without a notification.
    public init(
        database: PostgresPool, listener: PostgresListener, staleAfter: Duration = .seconds(5),
        pollInterval: Duration = .seconds(1)
    ) {
        self.database = database
        self.listener = listener
        self.staleAfter = staleAfter
        self.pollInterval = pollInterval
    }

    /// Whether a verified token may be used.
    public func verdict(for claims: AccessClaims) -> Verdict { verdict(for: claims, readSince: nil) }

    /// The verdict from the list as read: `unknown` when its last read began more than
    /// `staleAfter` ago, unless it began after `readSince` (the read a request waited for).
    private func verdict(for claims: AccessClaims, readSince asked: ContinuousClock.Instant?) -> Verdict {
        state.withLock { state in
            guard let synced = state.syncedAt,
                ContinuousClock.now - synced <= staleAfter || asked.map({ synced >= $0 }) == true
            else { return .unknown }
            // Ids as UUIDs, not strings: any casing matches, and nothing is allocated per request.
            if !state.sessions.isEmpty, let sid = claims.sid.flatMap({ UUID(text: $0) }), state.sessions[sid] != nil {
                return .revoked
            }
            // A deleted account's id never gets a token again (a new account has a new id): every
            // token of it is refused, whatever its `iat` says (the auth host's clock, not the database's).
            if !state.users.isEmpty, let sub = UUID(text: claims.sub), state.users[sub] != nil { return .revoked }
            return .valid
        }
    }

    /// How long a request waits for the read it asked for: a database that accepts and never
    /// answers gets a 503 after this, not a request held open.
    public static let readWait: Duration = .seconds(2)

    /// Whether a verified token may be used, reading the log first when the last read is older
    /// than `staleAfter`: ``Verdict/unknown`` only when that read fails too, or takes longer
    /// than ``readWait``.
    public func currentVerdict(for claims: AccessClaims) async -> Verdict {
        let verdict = verdict(for: claims)
        guard verdict == .unknown else { return verdict }
        let asked = ContinuousClock.now
        // A read under way may have begun before this request: then one more, after it.
        for _ in 0..<2 {
            let left = Self.readWait - (ContinuousClock.now - asked)
            guard left > .zero else { break }
            await Self.wait(for: reading(), atMost: left)
            let verdict = self.verdict(for: claims, readSince: asked)
            if verdict != .unknown { return verdict }
        }
        return .unknown
    }

    /// Whether what `user` opened with a token of `session` has been revoked since (as far as
    /// this list has read: ``watch(_:)`` tells what it reads later).
    public func isRevoked(user: UUID, session: UUID?) -> Bool {
        state.withLock { state in state.users[user] != nil || session.map { state.sessions[$0] != nil } ?? false }
    }

    /// Calls `watcher` with what each later read revokes, once the list refuses it. Whoever
    /// holds something open on a token (a live stream) registers it first, then asks
    /// ``isRevoked(user:session:)``: a revocation read in between is told by one or the other,
    /// never by neither.
    public func watch(_ watcher: @escaping @Sendable (Revoked) -> Void) {
        state.withLock { $0.watchers.append(watcher) }
    }

    /// Reads the log until its task is cancelled: whenever `pier_events` is notified and every
    /// `pollInterval`; a database not there is tried again at the next turn.
    public func run() async {
        await listener.follow(every: pollInterval, wakingOn: Set(Self.types)) { try? await sync() }
    }

    /// The first read, before the parts after it start: the servers do not answer tokens
    /// `unknown` while it is on its way. A database not there yet is tried again by ``run()``.
    public func start() async { try? await sync() }

    /// Reads the events after the cursor (all of the last day on the first read) and forgets
    /// entries whose tokens have all expired. One read at a time: a caller that comes while one
    /// is under way waits for it and shares its outcome.
    public func sync() async throws { try await reading().value }

    /// The read under way, or a new one.
    private func reading() -> Task<Void, any Error> {
        state.withLock { state in
            if let reading = state.reading { return reading }
            let reading = Task {
                // Runs once the lock is let go, after the task is stored.
                defer { self.state.withLock { $0.reading = nil } }
                try await self.read()
            }
            state.reading = reading
            return reading
        }
    }

    /// Waits until `reading` ends, or `limit` passes.
    private static func wait(for reading: Task<Void, any Error>, atMost limit: Duration) async {
        final class Once: Sendable {
            private let continuation: Mutex<CheckedContinuation<Void, Never>?>
            init(_ continuation: CheckedContinuation<Void, Never>) { self.continuation = Mutex(continuation) }
            func resume() { continuation.withLock { $0.take() }?.resume() }
        }
        await withCheckedContinuation { continuation in
            let once = Once(continuation)
            let timer = Task {
                try? await Task.sleep(for: limit)
                once.resume()
            }
            Task {
                _ = try? await reading.value
                once.resume()
                timer.cancel()
            }
        }
    }

    private func read() async throws {
        // What is read is the log as of now: the list is as fresh as the read's start.
        let began = ContinuousClock.now
        var sessions: [SessionRevoked] = []
        var users: [(UUID, Double)] = []
        // An event read twice (not settled the first time) is added twice: the same entry.
        for event in try await tail.next(on: database) {
            if event.type == SessionRevoked.type {
                sessions.append(try event.decode(SessionRevoked.self))
            } else if event.type == AccountMerged.type {
                users.append((try event.decode(AccountMerged.self).userId, event.createdAt.timeIntervalSince1970))
            } else {
                users.append((try event.decode(AccountDeleted.self).userId, event.createdAt.timeIntervalSince1970))
            }
        }
        let revoked = Revoked(sessions: sessions, users: Set(users.map(\.0)))
        let now = Date().timeIntervalSince1970
        let watchers = state.withLock { state in
            for ended in sessions {
                state.sessions[ended.sessionId] = max(Double(ended.until), state.sessions[ended.sessionId] ?? 0)
            }
            for (user, at) in users { state.users[user] = at + Self.longestTokenLife }
            state.sessions = state.sessions.filter { $0.value > now }
            state.users = state.users.filter { $0.value > now }
            state.syncedAt = began
            return state.watchers
        }
        // After the list refuses them: see `watch`.
        if !revoked.isEmpty { for watcher in watchers { watcher(revoked) } }
    }

    /// Revoked sessions and deleted users currently kept (for metrics and tests).
    public var count: (sessions: Int, users: Int) { state.withLock { ($0.sessions.count, $0.users.count) } }
}
