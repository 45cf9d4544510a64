import Foundation
import PierClient
import RemoteConfigAPI

/// Remote config in an app: the values this app and its user get, read synchronously where a
/// view needs them, kept current by ``refresh()`` (a conditional GET: nothing moves while
/// nothing changed), and the last config kept in a file for a cold start without the network.
///
///     let config = RemoteConfig(pier: pier, storage: cachesURL.appending(path: "config.json"))
///     if config.bool("new_paywall", default: false) { … }
///     for await _ in config.updates { … }   // each new config
public final class RemoteConfig: @unchecked Sendable {
    /// What was last read, and the tag that asks the server whether it changed.
    struct Kept: Codable {
        var answer: ConfigAnswer
        var etag: String?
    }

    private let pier: PierClient
    private let storage: URL?
    private let asking: ConfigRequest
    private let lock = NSLock()
    private var kept: Kept?
    private var listeners: [UUID: AsyncStream<ConfigAnswer>.Continuation] = [:]

    /// - Parameters:
    ///   - storage: the file the last config is kept in (nil: memory only).
    ///   - platform: what the rules' `platforms` judge (`ios`, `android`, …).
    ///   - appVersion: what their version ranges judge (the app's marketing version).
    public init(pier: PierClient, storage: URL? = nil, platform: String? = RemoteConfig.platform, appVersion: String? = nil) {
        self.pier = pier
        self.storage = storage
        asking = ConfigRequest(
            installationID: pier.installationID, platform: platform,
            appVersion: appVersion ?? Bundle.main.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String,
            locale: Locale.preferredLanguages.first)
        if let storage, let data = try? Data(contentsOf: storage) {
            kept = try? JSONDecoder().decode(Kept.self, from: data)
        }
    }

    /// This platform, as the rules name it.
    public static var platform: String? {
        #if os(iOS)
            "ios"
        #elseif os(macOS)
            "macos"
        #elseif os(tvOS)
            "tvos"
        #elseif os(watchOS)
            "watchos"
        #elseif os(visionOS)
            "visionos"
        #else
            nil
        #endif
    }

    /// The version of the config the values come from (0: none read yet).
    public var version: Int { lock.withLock { kept?.answer.version ?? 0 } }

    public func bool(_ key: String, default fallback: Bool) -> Bool {
        if case .bool(let value)? = value(key) { return value }
        return fallback
    }

    public func string(_ key: String, default fallback: String) -> String {
        if case .string(let value)? = value(key) { return value }
        return fallback
    }

    public func number(_ key: String, default fallback: Double) -> Double {
        if case .number(let value)? = value(key) { return value }
        return fallback
    }

    /// A JSON parameter's value (nil when there is none).
    public func json(_ key: String) -> JSONValue? { value(key) }

    /// A parameter's value as read last; nil when it has none (the default given is used).
    public func value(_ key: String) -> JSONValue? { lock.withLock { kept?.answer.values[key] } }

    /// Asks the server whether the config changed for this app and user; true when it did (the
    /// new one is kept, written to the storage file, and sent to ``updates``).
    @discardableResult
    public func refresh() async throws(PierError) -> Bool {
        let etag = lock.withLock { kept?.etag }
        let fetched = try await pier.fetch(RemoteConfigAPI.config, asking, ifNoneMatch: etag)
        guard let answer = fetched.answer else { return false }
        let changed = lock.withLock { () -> Bool in
            let changed = kept?.answer != answer
            kept = Kept(answer: answer, etag: fetched.etag)
            return changed
        }
        if let storage, let data = try? JSONEncoder().encode(Kept(answer: answer, etag: fetched.etag)) {
            try? data.write(to: storage, options: .atomic)
        }
        if changed { lock.withLock { listeners.values.forEach { $0.yield(answer) } } }
        return changed
    }

    /// Keeps the config current while the task runs: refreshed now, then whenever the server
    /// says it may have changed for the signed-in user (a publication, a grant: within about a
    /// second), over their live stream. Returns at sign-out (refresh when the app comes to the
    /// foreground instead, and for anonymous users).
    public func keepCurrent() async {
        guard pier.auth.currentUser != nil else {
            _ = try? await refresh()
            return
        }
        for await _ in pier.live(RemoteConfigAPI.stream, EventStreamRequest(), event: "config", as: ConfigSignal.self) {
            _ = try? await refresh()
        }
    }

    /// Every new config from here on (as ``refresh()`` reads them).
    public var updates: AsyncStream<ConfigAnswer> {
        let (stream, continuation) = AsyncStream<ConfigAnswer>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        lock.withLock { listeners[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.lock.withLock { _ = self?.listeners.removeValue(forKey: id) } }
        return stream
    }
}
