import PierCrypto
import PierHTTP
import PierJSON
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Public keys from the auth service's JWKS, fetched on first use, cached, and fetched again when
/// a token names an unknown `kid` (key rotation) — at most once per `refreshInterval` after a
/// successful fetch, so tokens with made-up key ids cannot turn into a flood of fetches.
///
/// An unreachable JWKS is an outage, never a verdict on the token: while the last fetch failed,
/// a key not in the cache is ``VerificationKeysUnavailable`` (a 503 with `Retry-After`), fetched
/// again at most once per `retryInterval`; keys already known keep verifying meanwhile.
public final class JWKSKeyProvider: VerificationKeyProvider {
    private struct Cache {
        var keys: [String: P256PublicKey] = [:]
        /// When the key set was last fetched successfully.
        var fetchedAt: ContinuousClock.Instant?
        /// When the last fetch failed, while no fetch has succeeded since.
        var failedAt: ContinuousClock.Instant?
        /// The fetch in progress: concurrent callers wait for it instead of failing or fetching again.
        var fetching: Task<Void, Error>?
    }

    public let url: String
    public let refreshInterval: Duration
    public let retryInterval: Duration
    private let client: HTTPClient
    private let cache = Mutex(Cache())

    public init(url: String, client: HTTPClient, refreshInterval: Duration = .seconds(10), retryInterval: Duration = .seconds(1))
    {
        self.url = url
        self.client = client
        self.refreshInterval = refreshInterval
        self.retryInterval = retryInterval
    }

    public func key(for kid: String) async throws -> P256PublicKey? {
        enum Next {
            case known(P256PublicKey?)
            case wait(Task<Void, Error>)
            case unavailable
        }
        let next = cache.withLock { cache -> Next in
            if let key = cache.keys[kid] { return .known(key) }
            if let fetching = cache.fetching { return .wait(fetching) }
            let now = ContinuousClock.now
            if let failedAt = cache.failedAt, now - failedAt < retryInterval { return .unavailable }
            if cache.failedAt == nil, let fetchedAt = cache.fetchedAt, now - fetchedAt < refreshInterval { return .known(nil) }
            let task = Task { try await self.refresh() }
            cache.fetching = task
            return .wait(task)
        }
        switch next {
        case .known(let key): return key
        case .unavailable: throw VerificationKeysUnavailable(url: url)
        case .wait(let fetch):
            do {
                try await fetch.value
            } catch {
                throw VerificationKeysUnavailable(url: url)
            }
            return cache.withLock { $0.keys[kid] }
        }
    }

    /// Fetches the key set now.
    public func refresh() async throws {
        do {
            let response = try await client.get(url).expecting(200)
            let set = try WireDecoder.decode(JWKSet.self, from: response.body)
            var keys: [String: P256PublicKey] = [:]
            for jwk in set.keys { keys[jwk.kid] = try? jwk.publicKey() }
            cache.withLock {
                $0.keys = keys
                $0.fetchedAt = .now
                $0.failedAt = nil
                $0.fetching = nil
            }
        } catch {
            cache.withLock {
                $0.failedAt = .now
                $0.fetching = nil
            }
            throw error
        }
    }
}

/// The key set could not be fetched: a token with a key not yet known cannot be judged now.
public struct VerificationKeysUnavailable: Error, CustomStringConvertible {
    public let url: String
    public var description: String { "the verification keys at \(url) could not be fetched" }
}
