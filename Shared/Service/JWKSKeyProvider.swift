import PierCrypto
import PierHTTP
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Public keys from the auth service's JWKS, fetched on first use, cached, and fetched again when
/// a token names an unknown `kid` (key rotation) — at most once per `refreshInterval`, so
/// tokens with made-up key ids cannot turn into a flood of fetches.
public final class JWKSKeyProvider: VerificationKeyProvider {
    private struct Cache {
        var keys: [String: P256PublicKey] = [:]
        var fetchedAt: ContinuousClock.Instant?
        /// The fetch in progress: concurrent callers wait for it instead of failing or fetching again.
        var fetching: Task<Void, Error>?
    }

    public let url: String
    public let refreshInterval: Duration
    private let client: HTTPClient
    private let cache = Mutex(Cache())

    public init(url: String, client: HTTPClient, refreshInterval: Duration = .seconds(10)) {
        self.url = url
        self.client = client
        self.refreshInterval = refreshInterval
    }

    public func key(for kid: String) async throws -> P256PublicKey? {
        let (key, fetch) = cache.withLock { cache -> (P256PublicKey?, Task<Void, Error>?) in
            if let key = cache.keys[kid] { return (key, nil) }
            if let fetching = cache.fetching { return (nil, fetching) }
            guard cache.fetchedAt.map({ ContinuousClock.now - $0 >= refreshInterval }) ?? true else { return (nil, nil) }
            cache.fetchedAt = .now
            let task = Task { try await self.refresh() }
            cache.fetching = task
            return (nil, task)
        }
        if let key { return key }
        guard let fetch else { return nil }
        try await fetch.value
        return cache.withLock { $0.keys[kid] }
    }

    /// Fetches the key set now.
    public func refresh() async throws {
        defer { cache.withLock { $0.fetching = nil } }
        let response = try await client.get(url)
        guard response.status == 200 else {
            throw HTTPClient.Failure(message: "JWKS answered \(response.status)")
        }
        let set = try JSON.decoder.decode(JWKSet.self, from: Data(response.body))
        var keys: [String: P256PublicKey] = [:]
        for jwk in set.keys { keys[jwk.kid] = try? jwk.publicKey() }
        cache.withLock { $0.keys = keys }
    }
}
