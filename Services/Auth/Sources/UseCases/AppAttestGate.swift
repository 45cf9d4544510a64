import PierCrypto
import PierModels
import PierPostgres

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// App Attest in front of anonymous sign-ups: challenges, keys attested per installation
/// (`auth.app_attest_keys`), and the assertion a sign-up carries.
///
/// A challenge is stateless (its expiry and a random part, authenticated by a key derived from
/// the service's secret), so asking for them stores nothing. Replays need no record of spent
/// challenges: an attestation names its key, attested once; an assertion's counter must grow,
/// kept by a conditional update that two concurrent replays cannot both pass.
struct AppAttestGate: Sendable {
    let attestedKeys: AppAttestKeys
    let verifier: AppAttest
    let mode: AppAttestSettings.Mode
    let keysPerAddressPerDay: Int
    private let key: [UInt8]
    static let challengeLifetime: TimeInterval = 300

    init(database: PostgresPool, settings: AppAttestSettings, keys: SigningKeys) {
        attestedKeys = AppAttestKeys(database: database)
        mode = settings.mode
        keysPerAddressPerDay = settings.keysPerAddressPerDay
        verifier = AppAttest(
            roots: CertificateChainVerifier(roots: settings.roots), appIDs: settings.appIDs,
            environment: AppAttest.Environment(rawValue: settings.environment) ?? .production)
        key = HMACSHA256.authenticate(Array("pier app attest challenges".utf8), key: keys.refreshSecret)
    }

    typealias Failure = WebAuthn.Failure

    /// A new challenge: `base64url(expiry ‖ 16 random bytes ‖ HMAC)`.
    func challenge(now: Date = Date()) -> AppAttestChallenge {
        let expires = Int64(now.timeIntervalSince1970 + Self.challengeLifetime)
        let body = withUnsafeBytes(of: expires.bigEndian, Array.init) + SecureRandom.bytes(16)
        return AppAttestChallenge(
            challenge: Base64.urlEncoded(body + HMACSHA256.authenticate(body, key: key)),
            expiresAt: Date(timeIntervalSince1970: Double(expires)))
    }

    /// The SHA-256 of `challenge` (what the app signs over), when it is one of ours, unexpired.
    func clientDataHash(_ challenge: String, field: String, now: Date = Date()) throws(Failure) -> [UInt8] {
        guard let bytes = Base64.urlDecoded(challenge), bytes.count == 56,
            constantTimeEquals(HMACSHA256.authenticate(bytes.prefix(24), key: key), bytes.suffix(32))
        else { throw Failure(field: field, reason: "is not a challenge from POST /auth/app-attest/challenge") }
        let expires = bytes.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
        guard Double(expires) > now.timeIntervalSince1970 else { throw Failure(field: field, reason: "has expired") }
        return SHA256.hash(challenge)
    }

    enum Registered: Sendable, Equatable {
        case registered
        /// The key was attested before (a replayed attestation).
        case known
        /// The client's network attested `keysPerAddressPerDay` keys in the last day.
        case limited(retryAfter: Int)
    }

    /// Verifies and keeps the attested key of `installation`, attested from `client` (its
    /// address, an IPv6 /64), unless that network attested `keysPerAddressPerDay` keys in the
    /// last day (counted under its lock, so a burst makes no more).
    func register(_ request: AppAttestKeyRequest, client: String) async throws -> Registered {
        let hash = try clientDataHash(request.challenge, field: "challenge")
        guard let keyID = Base64.decoded(request.keyId), keyID.count == 32 else {
            throw Failure(field: "keyId", reason: "must be the key identifier DCAppAttestService gave, base64")
        }
        guard let object = Base64.decoded(request.attestation) else {
            throw Failure(field: "attestation", reason: "must be base64")
        }
        let attested = try verifier.attestation(object, keyID: keyID, clientDataHash: hash)
        let key = AppAttestKeys.NewKey(
            id: keyID, installation: request.installationId, publicKey: attested.publicKey, appID: attested.appID,
            receipt: attested.receipt, address: client)
        switch try await attestedKeys.insert(key, limit: keysPerAddressPerDay) {
        case .inserted: return .registered
        case .known: return .known
        case .limited: return .limited(retryAfter: 3600)
        }
    }

    /// Checks the assertion of an anonymous sign-up for `installation`, spending its counter.
    func check(_ proof: AppAttestAssertion, installation: String) async throws {
        let hash = try clientDataHash(proof.challenge, field: "appAttest.challenge")
        guard let keyID = Base64.decoded(proof.keyId), keyID.count == 32,
            let kept = try await attestedKeys.key(keyID, installation: installation)
        else { throw Failure(field: "appAttest.keyId", reason: "names no key this installation attested") }
        guard let object = Base64.decoded(proof.assertion) else {
            throw Failure(field: "appAttest.assertion", reason: "must be base64")
        }
        let counter: UInt32
        do {
            counter = try verifier.assertion(
                object, clientDataHash: hash, publicKey: kept.publicKey, after: UInt32(clamping: kept.counter))
        } catch { throw Failure(field: "appAttest." + error.field, reason: error.reason) }
        guard try await attestedKeys.advance(keyID, to: Int64(counter)) else {
            throw Failure(field: "appAttest.assertion", reason: "has a counter that did not grow (a replay)")
        }
    }
}
