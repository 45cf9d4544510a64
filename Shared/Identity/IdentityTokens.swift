import PierCrypto
import PierHTTP
import PierJSON
import PierModels
import PierRuntime
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A provider whose signed ID tokens sign users in: Apple, or any OpenID Connect issuer that
/// publishes a JWKS (`PIER_AUTH_OIDC_PROVIDERS`).
public struct IdentityProvider: Sendable, Decodable {
    public var name: String
    public var issuer: String
    public var jwksURL: String
    /// The `aud` values accepted: the app's bundle ids and service ids, the provider's client ids.
    public var audiences: [String]
    /// `hashed`: the token's `nonce` is the SHA-256 (hex) of the raw nonce the app sent (Apple's
    /// way); `plain`: the raw nonce itself (the OpenID Connect default).
    public var nonce: String?
    /// Other spellings of the issuer the provider signs with (Google's `accounts.google.com`).
    public var otherIssuers: [String]?

    public init(
        name: String, issuer: String, jwksURL: String, audiences: [String], nonce: String? = nil, otherIssuers: [String]? = nil
    ) {
        (self.name, self.issuer, self.jwksURL, self.audiences) = (name, issuer, jwksURL, audiences)
        (self.nonce, self.otherIssuers) = (nonce, otherIssuers)
    }

    public static let appleIssuer = "https://appleid.apple.com"
    public static let appleJWKS = "https://appleid.apple.com/auth/keys"

    public var hashesNonce: Bool { (nonce ?? "plain") == "hashed" }
}

/// What a verified ID token says about the user.
public struct IdentityClaims: Sendable {
    public var subject: String
    public var email: String?
    public var emailVerified: Bool
    /// The whole claim set (Apple's notifications carry their events inside).
    public var claims: [String: JSONValue]
    /// What identifies this token among all the provider's: its `jti`, else the SHA-256 of the
    /// whole token; spent once (``UsedTokens/spend(_:until:)``).
    public var replayKey: [UInt8]
    /// Until when the token could be accepted (seconds since 1970): how long its key is kept.
    public var acceptedUntil: Int
}

/// Why an ID token was refused (said to the client), or why no answer can be given now.
public enum IdentityFailure: Error, CustomStringConvertible {
    case invalid(String)
    /// The provider's keys cannot be fetched now.
    case unavailable(String)

    public var description: String {
        switch self {
        case .invalid(let why): why
        case .unavailable(let why): why
        }
    }
}

/// A provider's signing keys (its JWKS), fetched when first needed, kept for an hour, and fetched
/// again when a token names a key id the set lacks (key rotation) — at most once a minute, so
/// made-up key ids cannot turn into a flood of fetches. Concurrent callers share one fetch.
public final class IdentityKeys: Sendable {
    private struct State {
        var keys: [String: VerificationKey] = [:]
        var fetchedAt: Date?
        var fetching: Task<Void, Error>?
    }

    public let url: String
    private let client: HTTPClient
    private let state = Mutex(State())
    static let lifetime: TimeInterval = 3600
    static let refetchInterval: TimeInterval = 60

    public init(url: String, client: HTTPClient) {
        self.url = url
        self.client = client
    }

    public func key(_ kid: String, now: Date = Date()) async throws(IdentityFailure) -> VerificationKey? {
        enum Next {
            case known(VerificationKey?)
            case wait(Task<Void, Error>)
        }
        let next = state.withLock { state -> Next in
            let fresh = state.fetchedAt.map { now.timeIntervalSince($0) < Self.lifetime } ?? false
            if fresh, let key = state.keys[kid] { return .known(key) }
            if let fetching = state.fetching { return .wait(fetching) }
            if let fetchedAt = state.fetchedAt, fresh, now.timeIntervalSince(fetchedAt) < Self.refetchInterval {
                return .known(nil)
            }
            let task = Task { try await self.fetch() }
            state.fetching = task
            return .wait(task)
        }
        switch next {
        case .known(let key): return key
        case .wait(let task):
            do {
                try await task.value
            } catch {
                throw .unavailable("the provider's keys (\(url)) cannot be fetched now")
            }
            return state.withLock { $0.keys[kid] }
        }
    }

    private func fetch() async throws {
        defer { state.withLock { $0.fetching = nil } }
        let response = try await client.get(url).expecting(200)
        let set = try WireDecoder.decode(ForeignJWKSet.self, from: response.body)
        var keys: [String: VerificationKey] = [:]
        for jwk in set.keys {
            // A key this version cannot use (another type, too weak) is left out, not fatal.
            if let kid = jwk.kid, let key = try? jwk.verificationKey() { keys[kid] = key }
        }
        state.withLock {
            $0.keys = keys
            $0.fetchedAt = Date()
        }
    }
}

/// Verifies ID tokens as Apple and OpenID Connect document it: the algorithm pinned to RS256 or
/// ES256 (never `none` or HMAC), the key from the provider's JWKS by `kid`, the signature, `iss`,
/// `aud` (one of the configured audiences), `exp` (and `iat` not in the future; one minute of
/// clock skew), a life of a day at most, and the `nonce` the app bound the request to.
///
/// Apple's server-to-server notifications are tokens of the same keys with other claims: `iss`,
/// `aud`, `iat`, `jti` and `events` (an `exp` when present), no `sub` and no `nonce`.
public struct IdentityTokenVerifier: Sendable {
    public enum Purpose: Sendable {
        /// An ID token that signs a user in, bound to the raw nonce the app sent.
        case signIn(nonce: String)
        /// One of Apple's server-to-server notifications.
        case notification
        /// A token a Google service account signed (Cloud Pub/Sub's push): its `email`, verified,
        /// must be this one.
        case serviceAccount(email: String)
    }

    public let provider: IdentityProvider
    public let keys: IdentityKeys
    public static let skew = 60
    /// The longest life a token may claim (Apple's ID tokens live 10 minutes, Google's an hour):
    /// a token that says it is good for ten years is refused.
    public static let maximumLifetime = 86_400

    public init(provider: IdentityProvider, keys: IdentityKeys) {
        self.provider = provider
        self.keys = keys
    }

    public func verify(_ token: String, _ purpose: Purpose, now: Date = Date()) async throws(IdentityFailure) -> IdentityClaims {
        let jws: JWS
        do {
            jws = try JWS(compact: token, maximumLength: 16 * 1024)
        } catch {
            throw .invalid("the identity token is malformed")
        }
        guard ["RS256", "ES256"].contains(jws.header.alg) else {
            throw .invalid("the identity token's algorithm \(jws.header.alg) is not accepted")
        }
        guard let kid = jws.header.kid else { throw .invalid("the identity token names no key (kid)") }
        guard let key = try await keys.key(kid, now: now) else {
            throw .invalid("the identity token's key \(kid) is not one of \(provider.name)'s")
        }
        guard key.verifies(jws) else { throw .invalid("the identity token's signature does not verify") }
        guard let claims = (try? WireDecoder.decode(JSONValue.self, from: jws.payload))?.objectValue else {
            throw .invalid("the identity token's claims are not a JSON object")
        }
        guard case .string(let issuer) = claims["iss"], ([provider.issuer] + (provider.otherIssuers ?? [])).contains(issuer)
        else {
            throw .invalid("the identity token is not from \(provider.issuer)")
        }
        let audiences: [String] =
            switch claims["aud"] {
            case .string(let one): [one]
            case .array(let many): many.compactMap { if case .string(let value) = $0 { value } else { nil } }
            default: []
            }
        guard audiences.contains(where: provider.audiences.contains) else {
            throw .invalid("the identity token is for another app (aud)")
        }
        let seconds = Int(now.timeIntervalSince1970)
        let exp = Self.seconds(claims["exp"])
        let iat = Self.seconds(claims["iat"])
        if case .notification = purpose {} else if exp == nil { throw .invalid("the identity token has no expiry (exp)") }
        if case .notification = purpose, iat == nil { throw .invalid("the notification has no issue time (iat)") }
        if let exp, exp + Self.skew <= seconds { throw .invalid("the identity token has expired") }
        if let iat, iat > seconds + Self.skew { throw .invalid("the identity token is issued in the future") }
        if let exp, exp > seconds + Self.maximumLifetime + Self.skew {
            throw .invalid("the identity token claims a life longer than a day")
        }
        if let iat, iat + Self.maximumLifetime + Self.skew < seconds {
            throw .invalid("the identity token was issued more than a day ago")
        }
        let acceptedUntil = min(exp ?? Int.max, (iat ?? seconds) + Self.maximumLifetime) + Self.skew
        var jti: String? = nil
        if case .string(let value) = claims["jti"], !value.isEmpty { jti = value }
        let replayKey = SHA256.hash(jti.map { "jti:" + $0 } ?? "token:" + token)
        switch purpose {
        case .signIn(let nonce):
            let expected = provider.hashesNonce ? Self.hex(SHA256.hash(nonce)) : nonce
            guard case .string(let given) = claims["nonce"], given == expected else {
                throw .invalid("the identity token's nonce does not match")
            }
            guard case .string(let subject) = claims["sub"], !subject.isEmpty, subject.utf8.count <= 255 else {
                throw .invalid("the identity token names no subject")
            }
            var email: String? = nil
            if case .string(let value) = claims["email"] { email = value }
            return IdentityClaims(
                subject: subject, email: email, emailVerified: Self.flag(claims["email_verified"]), claims: claims,
                replayKey: replayKey, acceptedUntil: acceptedUntil)
        case .serviceAccount(let expected):
            guard case .string(let email) = claims["email"], email == expected, Self.flag(claims["email_verified"]) else {
                throw .invalid("the token is not signed for the service account \(expected)")
            }
            return IdentityClaims(
                subject: email, email: email, emailVerified: true, claims: claims, replayKey: replayKey,
                acceptedUntil: acceptedUntil)
        case .notification:
            guard jti != nil else { throw .invalid("the notification has no identifier (jti)") }
            return IdentityClaims(
                subject: "", email: nil, emailVerified: false, claims: claims, replayKey: replayKey,
                acceptedUntil: acceptedUntil)
        }
    }

    /// A NumericDate claim: whole seconds since 1970, within a sane range.
    public static func seconds(_ value: JSONValue?) -> Int? {
        guard case .number(let number) = value, number.rounded() == number, abs(number) < 1e12 else { return nil }
        return Int(number)
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
    }

    /// Apple sends booleans as JSON booleans or as the strings "true" and "false".
    public static func flag(_ value: JSONValue?) -> Bool {
        switch value {
        case .bool(let flag): flag
        case .string(let text): text == "true"
        default: false
        }
    }
}
