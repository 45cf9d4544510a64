import Foundation
import PierModels

/// A signed-in user's tokens, as a ``SessionStore`` keeps them.
public struct Session: Codable, Sendable, Equatable {
    public var user: User
    public var accessToken: String
    public var refreshToken: String
    /// When the access token expires (from `expiresIn`, by this device's clock).
    public var accessTokenExpiresAt: Date

    public init(user: User, accessToken: String, refreshToken: String, accessTokenExpiresAt: Date) {
        self.user = user
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.accessTokenExpiresAt = accessTokenExpiresAt
    }

    init(_ answer: AuthSession, receivedAt: Date = Date()) {
        self.init(
            user: answer.user, accessToken: answer.accessToken, refreshToken: answer.refreshToken,
            accessTokenExpiresAt: receivedAt.addingTimeInterval(TimeInterval(answer.expiresIn)))
    }
}

/// Where the session lives between launches. An app and its extensions sharing one store (an
/// app group's Keychain, a shared file) share the session: a refresh by one is seen by the other.
///
/// Errors from `load` never sign the user out (a locked Keychain before first unlock is not a
/// signed-out user): PierClient tries again on the next call.
public protocol SessionStore: Sendable {
    func load() throws -> Session?
    func save(_ session: Session) throws
    func clear() throws
    /// The device token of this device's last password sign-in to `email` (lowercased), which
    /// outlives sign-outs: sent with the next login of that address, so failed logins by others
    /// on the same network do not hold this device back. nil when none is kept.
    func deviceToken(for email: String) -> String?
    func saveDeviceToken(_ token: String, for email: String)
    /// The signed-in user's last subscription status as the server gave it (an opaque value of
    /// PierSubscriptions'), kept so that a launch without network still knows what the user has
    /// paid for, until the status's own dates end it. nil when none is kept. Forgotten with the
    /// session (`clear`).
    func loadStatus() -> Data?
    func saveStatus(_ status: Data)
}

extension SessionStore {
    /// A store that keeps no device tokens: logins work the same, only without the exemption.
    public func deviceToken(for email: String) -> String? { nil }
    public func saveDeviceToken(_ token: String, for email: String) {}
    /// A store that keeps no status: offline, a launch knows none.
    public func loadStatus() -> Data? { nil }
    public func saveStatus(_ status: Data) {}
}

/// Device tokens by address, as the stores keep them (a JSON object).
struct DeviceTokenList: Codable {
    var tokens: [String: String] = [:]
    /// Enough for every account a device signs in to; the oldest-named go beyond.
    static let limit = 20

    mutating func set(_ token: String, for email: String) {
        tokens[email] = token
        while tokens.count > Self.limit, let first = tokens.keys.sorted().first(where: { $0 != email }) { tokens[first] = nil }
    }
}

/// Keeps the session in memory only: signed out at every launch. The default.
public final class MemorySessionStore: SessionStore {
    private let session = Locked<Session?>(nil)
    public init() {}
    private let status = Locked<Data?>(nil)
    public func load() throws -> Session? { session.withLock { $0 } }
    public func save(_ session: Session) throws { self.session.withLock { $0 = session } }
    public func clear() throws {
        session.withLock { $0 = nil }
        status.withLock { $0 = nil }
    }
    public func loadStatus() -> Data? { status.withLock { $0 } }
    public func saveStatus(_ status: Data) { self.status.withLock { $0 = status } }
    private let devices = Locked(DeviceTokenList())
    public func deviceToken(for email: String) -> String? { devices.withLock { $0.tokens[email] } }
    public func saveDeviceToken(_ token: String, for email: String) { devices.withLock { $0.set(token, for: email) } }
}

/// Keeps the session in a JSON file readable by its owner only (mode 0600), written atomically:
/// for command-line tools and Linux; on Apple platforms prefer `KeychainSessionStore`.
public final class FileSessionStore: SessionStore {
    public let url: URL
    public init(url: URL) { self.url = url }

    public func load() throws -> Session? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try Transport.decoder.decode(Session.self, from: Data(contentsOf: url))
    }

    public func save(_ session: Session) throws { try Self.write(try Transport.encoder.encode(session), to: url) }

    /// Device tokens live beside the session (`<name>.devices.json`), not in it: they outlive
    /// sign-outs.
    public var devicesURL: URL {
        url.deletingLastPathComponent().appendingPathComponent(url.deletingPathExtension().lastPathComponent + ".devices.json")
    }

    public func deviceToken(for email: String) -> String? { devices().tokens[email] }

    public func saveDeviceToken(_ token: String, for email: String) {
        var list = devices()
        list.set(token, for: email)
        if let data = try? Transport.encoder.encode(list) { try? Self.write(data, to: devicesURL) }
    }

    /// The last subscription status lives beside the session too (`<name>.status.json`, 0600),
    /// and goes with it.
    public var statusURL: URL {
        url.deletingLastPathComponent().appendingPathComponent(url.deletingPathExtension().lastPathComponent + ".status.json")
    }

    public func loadStatus() -> Data? { try? Data(contentsOf: statusURL) }
    public func saveStatus(_ status: Data) { try? Self.write(status, to: statusURL) }

    private func devices() -> DeviceTokenList {
        (try? Data(contentsOf: devicesURL)).flatMap { try? Transport.decoder.decode(DeviceTokenList.self, from: $0) }
            ?? DeviceTokenList()
    }

    private static func write(_ data: Data, to url: URL) throws {
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)")
        // Created readable by its owner only, then renamed over the old one: never a moment
        // when the tokens are readable by others, or half written.
        guard FileManager.default.createFile(atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600])
        else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: temporary.path]) }
        guard rename(temporary.path, url.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
    }

    public func clear() throws {
        try? FileManager.default.removeItem(at: statusURL)
        guard FileManager.default.fileExists(atPath: url.path) else { return }
        try FileManager.default.removeItem(at: url)
    }
}

/// What happened to the session, as ``PierAuth/events`` tells it.
public enum AuthEvent: Sendable, Equatable {
    case signedIn(User)
    case tokenRefreshed(User)
    /// The signed-in user as the server now has it, after a call that changed or read them
    /// (a profile change, a verified or changed address, ``PierAuth/reload()``).
    case userUpdated(User)
    case signedOut(SignOutReason)
}

public enum SignOutReason: Sendable, Equatable {
    /// ``PierAuth/logout()`` was called.
    case requested
    /// The server refused the refresh token (expired, revoked, reused): sign in again.
    case sessionEnded
    /// The account no longer exists.
    case accountDeleted
}

/// The session's state and its refresh, one at a time per refresh token.
///
/// - A refresh starts before the access token expires (``PierClient/Options/refreshMargin``) and
///   after a 401 on a token that is still the current one; concurrent callers share it.
/// - Sign-in and sign-out bump a generation: a refresh that completes after either is discarded.
/// - The user is signed out only when the server refuses the refresh token; a network error, a
///   5xx, a 429 or an unreadable store leaves the session as it was.
/// - Before refreshing, the store is read again: when another process (an app extension) already
///   rotated the token, its session is taken instead of refreshing a second time.
actor SessionManager {
    /// Read by PierSubscriptions too (the last status lives beside the session).
    nonisolated let store: any SessionStore
    private let transport: Transport
    private let margin: TimeInterval
    private var session: Session?
    private var loaded = false
    private var generation = 0
    private var refreshing: [String: Task<Session, any Error>] = [:]
    /// For ``PierAuth/currentUser`` and ``PierAuth/events``, read without awaiting the actor.
    nonisolated let snapshot = Locked<User?>(nil)
    nonisolated let events = Broadcaster<AuthEvent>()
    /// Runs before each refresh request is sent (tests hold a refresh in flight with it).
    nonisolated let beforeRefresh = Locked<(@Sendable () async -> Void)?>(nil)

    init(store: any SessionStore, transport: Transport, margin: TimeInterval) {
        self.store = store
        self.transport = transport
        self.margin = margin
        do {
            let stored = try store.load()
            session = stored
            loaded = true
            snapshot.withLock { $0 = stored?.user }
        } catch {}
    }

    /// The session, read from the store the first time it can be (a store that cannot be read
    /// now is asked again next time: that is not a sign-out).
    func current() -> Session? {
        if !loaded {
            do {
                session = try store.load()
                loaded = true
                snapshot.withLock { [session] in $0 = session?.user }
            } catch {}
        }
        return session
    }

    /// The store's device token for `email` (lowercased).
    nonisolated func deviceToken(for email: String) -> String? { store.deviceToken(for: email) }
    nonisolated func saveDeviceToken(_ token: String, for email: String) { store.saveDeviceToken(token, for: email) }

    func signIn(_ new: Session) {
        generation += 1
        session = new
        loaded = true
        try? store.save(new)
        snapshot.withLock { $0 = new.user }
        events.send(.signedIn(new.user))
    }

    /// Keeps a step-up's access token (the same session, a fresh `auth_time`) when the session
    /// is still `user`'s.
    func adopt(_ stepUp: StepUpToken, of user: UUID) {
        guard var current = current(), current.user.id == user else { return }
        current.accessToken = stepUp.accessToken
        current.accessTokenExpiresAt = Date().addingTimeInterval(Double(stepUp.expiresIn))
        session = current
        try? store.save(current)
    }

    /// Takes `user` as the signed-in user's new state when it is theirs (a mailed link opened
    /// on this device may be another account's): kept in the store, seen by ``PierAuth/currentUser``
    /// at once, and told to ``PierAuth/events`` when it changed.
    func update(_ user: User) {
        guard var current = current(), current.user.id == user.id else { return }
        let changed = current.user != user
        current.user = user
        session = current
        try? store.save(current)
        snapshot.withLock { $0 = user }
        if changed { events.send(.userUpdated(user)) }
    }

    /// Puts the session aside (a merge's anonymous side, while the app signs in to the other
    /// account): signed out here, the store keeping it until a sign-in replaces it, so an app
    /// stopped meanwhile finds it again. ``signIn(_:)`` brings it back.
    func setAside() -> Session? {
        generation += 1
        let aside = current()
        session = nil
        snapshot.withLock { $0 = nil }
        return aside
    }

    /// Forgets the session here and in the store; returns the refresh token it had.
    @discardableResult
    func signOut(_ reason: SignOutReason) -> String? {
        generation += 1
        let ended = session
        session = nil
        loaded = true
        try? store.clear()
        snapshot.withLock { $0 = nil }
        if ended != nil || reason == .requested { events.send(.signedOut(reason)) }
        return ended?.refreshToken
    }

    /// An access token to send: the current one while it has more than the margin left, else a
    /// refreshed one. `rejected`: the server just refused this token (401): refresh unless
    /// another caller already replaced it.
    func accessToken(rejected: String? = nil) async throws(PierError) -> String {
        guard let session = current() else { throw .signedOut() }
        if let rejected {
            if session.accessToken != rejected { return session.accessToken }
        } else if session.accessTokenExpiresAt.timeIntervalSinceNow > margin {
            return session.accessToken
        }
        return try await refresh(session).accessToken
    }

    /// The session after refreshing `stale`: one request per refresh token, whoever asks.
    func refresh(_ stale: Session) async throws(PierError) -> Session {
        if let stored = try? store.load(), stored.user.id == stale.user.id, stored.refreshToken != stale.refreshToken {
            // Rotated by another process sharing the store.
            session = stored
            if stored.accessTokenExpiresAt.timeIntervalSinceNow > margin { return stored }
            return try await refresh(stored)
        }
        let key = stale.refreshToken
        let task: Task<Session, any Error>
        if let running = refreshing[key] {
            task = running
        } else {
            let started = generation
            task = Task { try await self.performRefresh(stale, generation: started) }
            refreshing[key] = task
        }
        do {
            let value = try await task.value
            refreshing[key] = nil
            return value
        } catch {
            refreshing[key] = nil
            throw error as? PierError ?? PierError(kind: .network, detail: "\(error)")
        }
    }

    private func performRefresh(_ stale: Session, generation started: Int) async throws -> Session {
        let call = Call(
            AuthAPI.refresh, NoParameters(), body: Transport.body(RefreshRequest(refreshToken: stale.refreshToken)))
        if let hook = beforeRefresh.withLock({ $0 }) { await hook() }
        let answer: AuthSession
        do {
            answer = try await transport.json(AuthSession.self, call, token: nil)
        } catch {
            if error.kind == .server, error.status == 401 || error.status == 403, generation == started {
                signOut(error.code == .accountDeleted ? .accountDeleted : .sessionEnded)
            }
            throw error
        }
        guard generation == started else {
            // Signed out or in again while this was in flight: its tokens are not the session's.
            throw PierError.signedOut("The session changed while it was being refreshed.")
        }
        let fresh = Session(answer)
        session = fresh
        try? store.save(fresh)
        snapshot.withLock { $0 = fresh.user }
        events.send(.tokenRefreshed(fresh.user))
        return fresh
    }
}

/// Hands each value to every current listener (``PierAuth/events``).
final class Broadcaster<Value: Sendable>: Sendable {
    private let listeners = Locked<[UUID: AsyncStream<Value>.Continuation]>([:])

    func stream() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream<Value>.makeStream(bufferingPolicy: .bufferingNewest(32))
        let id = UUID()
        listeners.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.listeners.withLock { _ = $0.removeValue(forKey: id) } }
        return stream
    }

    func send(_ value: Value) {
        for continuation in listeners.withLock({ Array($0.values) }) { continuation.yield(value) }
    }
}
