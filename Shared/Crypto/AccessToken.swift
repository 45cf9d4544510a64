import PierJSON
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What every token the verifier accepts carries: its issuer, audience and validity.
public protocol SignedTokenClaims: Decodable, Sendable {
    var iss: String { get }
    var aud: Audience { get }
    var exp: Int { get }
    var nbf: Int { get }
}

/// The claims of a Pier access token (a JWT, RFC 7519, profiled by RFC 9068).
public struct AccessClaims: Codable, Sendable, Equatable, SignedTokenClaims {
    /// Issuer: who minted the token (the auth service's public URL or name).
    public var iss: String
    /// Subject: the user id.
    public var sub: String
    /// Audience: the API the token is for.
    public var aud: Audience
    /// Issued at, not before and expiry, in seconds since 1970.
    public var iat: Int
    public var nbf: Int
    public var exp: Int
    /// A unique token id.
    public var jti: String
    /// The session (refresh-token family) the token belongs to.
    public var sid: String?
    /// The user's role: `user` or `admin`.
    public var role: String
    /// `email_verified`: the user proved they hold their address (a link Pier mailed).
    public var emailVerified: Bool?
    /// `auth_time`: when the user last proved who they are in this session (seconds since 1970).
    public var authTime: Int?
    /// `amr`: how the sign-in was proven, as RFC 8176 names it (`pwd`, `otp`, `mfa`); absent
    /// when no registered name fits (an identity provider's sign-in alone).
    public var amr: [String]?
    /// `acr`: the assurance the sign-in reached: `aal1` (one factor) or `aal2` (two, `mfa`).
    public var acr: String?
    /// `mfa_enrolment_required`: the account's role needs a second factor
    /// (`PIER_AUTH_REQUIRE_MFA_FOR_ROLES`) and this session has none: the team's routes refuse it
    /// until the account enrols and signs in with it.
    public var mfaEnrolmentRequired: Bool?
    /// `name` (OpenID Connect's claim): the account's display name when the token was issued, for
    /// plugins to show people by (a change reaches the next token, within its lifetime).
    public var name: String?

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, iat, nbf, exp, jti, sid, role, amr, acr, name
        case emailVerified = "email_verified"
        case authTime = "auth_time"
        case mfaEnrolmentRequired = "mfa_enrolment_required"
    }

    public init(
        iss: String, sub: String, aud: String, iat: Int, nbf: Int, exp: Int, jti: String,
        sid: String?, role: String, emailVerified: Bool? = nil, authTime: Int? = nil, amr: [String]? = nil,
        acr: String? = nil, mfaEnrolmentRequired: Bool? = nil, name: String? = nil
    ) {
        self.name = name
        self.amr = amr
        self.acr = acr
        self.mfaEnrolmentRequired = mfaEnrolmentRequired
        self.emailVerified = emailVerified
        self.authTime = authTime
        self.iss = iss
        self.sub = sub
        self.aud = Audience([aud])
        self.iat = iat
        self.nbf = nbf
        self.exp = exp
        self.jti = jti
        self.sid = sid
        self.role = role
    }
}

/// A JWT `aud`: one string or an array of strings (RFC 7519 §4.1.3).
public struct Audience: Codable, Sendable, Equatable {
    public var values: [String]
    public init(_ values: [String]) { self.values = values }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let one = try? container.decode(String.self) {
            values = [one]
        } else {
            values = try container.decode([String].self)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if values.count == 1 { try container.encode(values[0]) } else { try container.encode(values) }
    }
}

/// Signs access tokens with the newest key.
public struct AccessTokenSigner: Sendable {
    public let key: P256PrivateKey
    public let kid: String

    public init(key: P256PrivateKey, kid: String) {
        self.key = key
        self.kid = kid
    }

    /// A compact JWS with header `{alg: ES256, typ: at+jwt, kid}` over `claims`.
    public func sign(_ claims: AccessClaims) throws -> String {
        let payload = try WireEncoder.encode(claims)
        return try JWS.sign(payload: Array(payload), header: JWSHeader(alg: "ES256", kid: kid, typ: "at+jwt"), key: key)
    }

    /// A compact JWS with header `{alg: ES256, typ: installation+jwt, kid}` over `claims`.
    public func sign(_ claims: InstallationClaims) throws -> String {
        let payload = try WireEncoder.encode(claims)
        return try JWS.sign(
            payload: Array(payload), header: JWSHeader(alg: "ES256", kid: kid, typ: InstallationClaims.type), key: key)
    }
}

/// Where a verifier finds the public key for a `kid`.
public protocol VerificationKeyProvider: Sendable {
    /// The key published under `kid`, refreshing its source when the id is unknown; nil when
    /// the id is still unknown after that.
    func key(for kid: String) async throws -> P256PublicKey?
}

/// A fixed set of keys (the auth service's own, or keys from a file).
public struct StaticKeyProvider: VerificationKeyProvider {
    public let keys: [String: P256PublicKey]
    public init(keys: [String: P256PublicKey]) { self.keys = keys }
    public func key(for kid: String) async throws -> P256PublicKey? { keys[kid] }
}

/// Why an access token was refused. Every case is a 401 to the client; the description is for logs.
public enum TokenError: Error, Equatable, CustomStringConvertible {
    case malformed(JWS.Failure)
    case missingKeyID
    case unknownKey(String)
    case wrongType
    case expired
    case notYetValid
    case wrongIssuer
    case wrongAudience
    case keysUnavailable

    public var description: String {
        switch self {
        case .malformed(let failure): failure.description
        case .missingKeyID: "the token has no kid"
        case .unknownKey(let kid): "no key is published under kid \(kid)"
        case .wrongType: "the token is of another type (typ)"
        case .expired: "the token has expired"
        case .notYetValid: "the token is not valid yet"
        case .wrongIssuer: "the token comes from another issuer"
        case .wrongAudience: "the token is for another audience"
        case .keysUnavailable: "the verification keys could not be fetched"
        }
    }
}

/// Verifies access tokens: algorithm pinned to ES256, `typ` at+jwt, known `kid`, signature,
/// `exp`/`nbf` with a small leeway, `iss` and `aud`.
///
/// Verified tokens are cached by their whole text until they expire, so an app that reuses its
/// token costs a dictionary lookup instead of a ~95 µs signature check. The cache is bounded.
public final class AccessTokenVerifier: Sendable {
    public let issuer: String
    public let audience: String
    /// Seconds of clock skew tolerated on `exp` and `nbf`.
    public let leeway: Int
    /// Tokens longer than this are refused unread.
    public let maximumLength: Int
    private let keys: any VerificationKeyProvider
    private let cacheLimit: Int
    private let cache = Mutex<[String: AccessClaims]>([:])
    private let clock: @Sendable () -> Int

    /// - Parameters:
    ///   - keys: where public keys come from.
    ///   - leeway: default 30 seconds.
    ///   - cacheLimit: verified tokens kept at most (default 10,000).
    ///   - clock: seconds since 1970; tests move it.
    public init(
        keys: any VerificationKeyProvider, issuer: String, audience: String, leeway: Int = 30,
        maximumLength: Int = 4096, cacheLimit: Int = 10_000,
        clock: @escaping @Sendable () -> Int = { Int(Date().timeIntervalSince1970) }
    ) {
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.leeway = leeway
        self.maximumLength = maximumLength
        self.cacheLimit = cacheLimit
        self.clock = clock
    }

    /// The token's claims when every check passes.
    public func verify(_ token: String) async throws(TokenError) -> AccessClaims {
        let now = clock()
        if let cached = cache.withLock({ $0[token] }) {
            try checkTimes(cached, now: now)
            return cached
        }
        let claims = try await checked(token, type: "at+jwt", as: AccessClaims.self, now: now)
        remember(token, claims, now: now)
        return claims
    }

    /// An installation token's claims (``InstallationClaims``, `typ` installation+jwt, signed by
    /// the same keys) when every check passes. Not cached: one is spent per anonymous request.
    public func verifyInstallation(_ token: String) async throws(TokenError) -> InstallationClaims {
        try await checked(token, type: InstallationClaims.type, as: InstallationClaims.self, now: clock())
    }

    private func checked<Claims: SignedTokenClaims>(_ token: String, type: String, as: Claims.Type, now: Int)
        async throws(TokenError) -> Claims
    {
        let jws: JWS
        do { jws = try JWS(compact: token, maximumLength: maximumLength) } catch { throw .malformed(error) }
        guard jws.header.alg == "ES256" else { throw .malformed(.unsupportedAlgorithm(jws.header.alg)) }
        guard jws.header.typ == type else { throw .wrongType }
        guard let kid = jws.header.kid, !kid.isEmpty else { throw .missingKeyID }
        let key: P256PublicKey?
        do { key = try await keys.key(for: kid) } catch { throw .keysUnavailable }
        guard let key else { throw .unknownKey(kid) }
        do { try jws.verify(with: key) } catch { throw .malformed(error) }
        let claims: Claims
        do {
            claims = try WireDecoder.decode(Claims.self, from: jws.payload)
        } catch {
            throw .malformed(.malformed("the claims are missing or of the wrong type"))
        }
        guard claims.iss == issuer else { throw .wrongIssuer }
        guard claims.aud.values.contains(audience) else { throw .wrongAudience }
        try checkTimes(claims, now: now)
        return claims
    }

    private func checkTimes(_ claims: some SignedTokenClaims, now: Int) throws(TokenError) {
        // Arithmetic on `now` only: a signed claim may hold any integer, Int.max included, and
        // `claims.exp + leeway` would overflow.
        guard claims.exp > now - leeway else { throw .expired }
        guard claims.nbf <= now + leeway else { throw .notYetValid }
    }

    private func remember(_ token: String, _ claims: AccessClaims, now: Int) {
        cache.withLock { cache in
            if cache.count >= cacheLimit {
                cache = cache.filter { $0.value.exp > now - leeway }
                // Still full of live tokens: start over rather than grow without bound.
                if cache.count >= cacheLimit { cache.removeAll(keepingCapacity: true) }
            }
            cache[token] = claims
        }
    }
}
