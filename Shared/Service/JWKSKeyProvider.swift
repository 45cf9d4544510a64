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
        let (key, mayFetch) = cache.withLock { cache in
            (cache.keys[kid], cache.fetchedAt.map { ContinuousClock.now - $0 >= refreshInterval } ?? true)
        }
        if let key { return key }
        guard mayFetch else { return nil }
        try await refresh()
        return cache.withLock { $0.keys[kid] }
    }

    /// Fetches the key set now.
    public func refresh() async throws {
        cache.withLock { $0.fetchedAt = .now }
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
