import Foundation
import PierModels

#if canImport(CryptoKit)
    import CryptoKit
#endif

/// Checks ES256 signatures (ECDSA on P-256 with SHA-256) for ``StatusSigning``.
public protocol SignatureVerifier: Sendable {
    /// Whether `signature` (r then s, 32 bytes each) signs `message` under the P-256 public key
    /// whose coordinates are `x` and `y` (32 bytes each).
    func isValidES256(signature: [UInt8], of message: [UInt8], x: [UInt8], y: [UInt8]) -> Bool
}

#if canImport(CryptoKit)
    /// The platform's verifier (Apple platforms; compiled there only, so nothing here builds it).
    public struct CryptoKitVerifier: SignatureVerifier {
        public init() {}

        public func isValidES256(signature: [UInt8], of message: [UInt8], x: [UInt8], y: [UInt8]) -> Bool {
            guard let key = try? P256.Signing.PublicKey(rawRepresentation: x + y),
                let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
            else { return false }
            return key.isValidSignature(signature, for: message)
        }
    }
#endif

/// Statuses trusted only when signed by your server's key (``PierClient/Options/statusSigning``).
///
/// Each `status()` then sends a fresh nonce and takes the status from the signed answer
/// (`Pier-Signed-Status`): bound to the user, this installation and that nonce, checked with a
/// key pinned in the app. The kept status carries its signature and is checked again when it
/// is read back, and trusted offline only until the signature's expiry
/// (`PIER_SUBSCRIPTIONS_SIGNED_STATUS_S` on the server, a day by default).
///
/// What it protects against: an answer changed on the way (a proxy the device was made to
/// trust), a replayed older answer or another user's, and a status edited in the device's
/// store. What it does not: a device whose owner patches the app itself (the check is in the
/// app); anything worth more than a paywall belongs on your server.
public struct StatusSigning: Sendable {
    struct Key: Sendable {
        let x: [UInt8]
        let y: [UInt8]
    }

    let keys: [String: Key]
    let verifier: any SignatureVerifier

    /// - Parameters:
    ///   - jwks: the JSON of `GET /subscriptions/.well-known/jwks.json`, fetched once and
    ///     shipped in the app (pinned: a key fetched at run time would be the attacker's).
    ///     During a key rotation, list the old and the new keys' sets' entries together.
    ///   - verifier: checks the signatures (`CryptoKitVerifier` on Apple platforms).
    public init(jwks: Data, verifier: any SignatureVerifier) throws(PierError) {
        struct Set: Decodable {
            struct Key: Decodable {
                let kty: String
                let crv: String?
                let alg: String?
                let use: String?
                let kid: String?
                let x: String?
                let y: String?
            }
            let keys: [Key]
        }
        guard let set = try? JSONDecoder().decode(Set.self, from: jwks) else {
            throw PierError(kind: .decoding, detail: "The pinned key set is not a JWKS.")
        }
        var keys: [String: Key] = [:]
        // Only keys for ES256 signatures: a P-256 key published for another algorithm or for
        // encryption is not a status key, whatever its kid.
        for key in set.keys
        where key.kty == "EC" && key.crv == "P-256" && (key.alg ?? "ES256") == "ES256" && (key.use ?? "sig") == "sig" {
            guard let kid = key.kid, let x = key.x.flatMap(Self.base64URL), let y = key.y.flatMap(Self.base64URL),
                x.count == 32, y.count == 32
            else { throw PierError(kind: .decoding, detail: "A pinned key has no kid, or no 32-byte x and y.") }
            keys[kid] = Key(x: x, y: y)
        }
        guard !keys.isEmpty else {
            throw PierError(kind: .decoding, detail: "The pinned key set holds no P-256 ES256 signing key.")
        }
        self.keys = keys
        self.verifier = verifier
    }

    #if canImport(CryptoKit)
        /// Pins `jwks`, checked with CryptoKit.
        public init(jwks: Data) throws(PierError) { try self.init(jwks: jwks, verifier: CryptoKitVerifier()) }
    #endif

    /// The claims of `jws` when a pinned key signed it as a signed status, for `user` on
    /// `installation`, unexpired at `now`, and (when given) answering `nonce`.
    func claims(
        _ jws: String?, user: UUID, installation: String, nonce: String?, now: Date = Date()
    ) throws(PierError) -> SignedStatusClaims {
        func refused(_ why: String) -> PierError {
            PierError(kind: .untrusted, detail: "The subscription status was refused: \(why).")
        }
        guard let jws else { throw refused("the server sent no signed status (is PIER_SUBSCRIPTIONS_SIGNING_KEY_FILE set?)") }
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Self.base64URL(String(parts[0])),
            let payload = Self.base64URL(String(parts[1])), let signature = Self.base64URL(String(parts[2]))
        else { throw refused("its signature is not a compact JWS") }
        struct Header: Decodable {
            let alg: String
            let kid: String?
            let typ: String?
        }
        guard let header = try? Transport.decoder.decode(Header.self, from: Data(headerBytes)), header.alg == "ES256",
            header.typ == SignedStatusClaims.type
        else { throw refused("its signature is not an ES256 signed status") }
        guard let key = header.kid.flatMap({ keys[$0] }) else { throw refused("it is signed by a key the app does not pin") }
        let signed = Array((parts[0] + "." + parts[1]).utf8)
        guard signature.count == 64, verifier.isValidES256(signature: signature, of: signed, x: key.x, y: key.y) else {
            throw refused("its signature does not verify")
        }
        guard let claims = try? Transport.decoder.decode(SignedStatusClaims.self, from: Data(payload)) else {
            throw refused("its signed claims cannot be read")
        }
        guard claims.sub == user else { throw refused("it is another user's") }
        guard claims.ins == installation else { throw refused("it was signed for another installation") }
        if let nonce, claims.nonce != nonce { throw refused("it answers another request (a replay)") }
        guard Double(claims.exp) > now.timeIntervalSince1970 else { throw refused("its signature has expired") }
        return claims
    }

    /// A fresh nonce: 18 random bytes, base64url.
    static func nonce() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<18).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
    }

    static func base64URL(_ text: String) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !base64.contains("=") else { return nil }
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64).map { Array($0) }
    }
}
