import PierCBOR
import PierCrypto

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Apple's App Attest, checked as Apple's "Validating apps that connect to your server"
/// describes: an attestation (once per key: the certificate chain to the App Attest root, the
/// nonce the credential certificate carries, the key's identifier, the App ID, a zero counter,
/// the environment's `aaguid`) and assertions (later requests: the signature by the attested
/// key over the nonce, the App ID, a counter that grows). CBOR is read by libcbor, certificates
/// and signatures checked by OpenSSL.
struct AppAttest: Sendable {
    /// The `aaguid` of keys made by development builds, and of those made by the App Store's.
    enum Environment: String, Sendable {
        case development, production
        var aaguid: [UInt8] {
            switch self {
            case .development: Array("appattestdevelop".utf8)
            case .production: Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
            }
        }
    }

    /// The extension of the credential certificate that holds the nonce.
    static let nonceOID = "1.2.840.113635.100.8.2"

    let roots: CertificateChainVerifier
    /// `TEAMID.bundle.identifier` of each app allowed.
    let appIDs: [String]
    let environment: Environment

    /// What an attestation proves: the key's public point (65 bytes, uncompressed), Apple's
    /// receipt (kept for a later fraud-risk check), the App ID it was made for.
    struct AttestedKey: Sendable, Equatable {
        let publicKey: [UInt8]
        let receipt: [UInt8]
        let appID: String
    }

    typealias Failure = WebAuthn.Failure

    /// Checks the attestation object of key `keyID` made over `clientDataHash` (the SHA-256 of
    /// the challenge the server gave), at `date`.
    func attestation(_ object: [UInt8], keyID: [UInt8], clientDataHash: [UInt8], at date: Date = Date())
        throws(Failure) -> AttestedKey
    {
        let field = "attestation"
        let decoded: CBOR
        do { decoded = try CBOR.decode(object) } catch { throw Failure(field: field, reason: "is not CBOR: \(error)") }
        guard decoded["fmt"]?.text == "apple-appattest", let authData = decoded["authData"]?.bytes,
            case .array(let chain)? = decoded["attStmt"]?["x5c"], chain.count >= 2,
            let receipt = decoded["attStmt"]?["receipt"]?.bytes
        else {
            throw Failure(field: field, reason: "is not an apple-appattest attestation (fmt, authData, attStmt.x5c, receipt)")
        }
        let certificates: [Certificate]
        do { certificates = try chain.map { try Certificate(der: $0.bytes ?? []) } } catch {
            throw Failure(field: field, reason: "holds a certificate that does not parse")
        }
        do { _ = try roots.verify(leaf: certificates[0], intermediates: Array(certificates.dropFirst()), at: date) } catch {
            throw Failure(field: field, reason: "is not signed by the App Attest root: \(error.reason)")
        }
        let nonce = SHA256.hash(authData + clientDataHash)
        guard let value = certificates[0].extensionValue(oid: Self.nonceOID), Self.nonce(in: value) == nonce else {
            throw Failure(field: field, reason: "was not made for this challenge (the nonce differs)")
        }
        let publicKey: [UInt8]
        do {
            let key = try certificates[0].p256PublicKey()
            publicKey = [4] + key.x + key.y
        } catch { throw Failure(field: field, reason: "has a credential certificate without a P-256 key") }
        guard SHA256.hash(publicKey) == keyID else { throw Failure(field: "keyId", reason: "is not the attested key's") }
        let data = try WebAuthn.AuthenticatorData(authData, field: field)
        guard let appID = appIDs.first(where: { SHA256.hash($0) == data.rpIDHash }) else {
            throw Failure(field: field, reason: "was made for another app")
        }
        guard data.signCount == 0 else { throw Failure(field: field, reason: "has a counter that is not zero") }
        guard data.aaguid == environment.aaguid else {
            throw Failure(field: field, reason: "is not from the \(environment.rawValue) environment")
        }
        guard data.credentialID == keyID else { throw Failure(field: "keyId", reason: "is not the attested credential's") }
        return AttestedKey(publicKey: publicKey, receipt: receipt, appID: appID)
    }

    /// Checks an assertion made over `clientDataHash` by the key `publicKey` whose last counter
    /// was `counter`; returns its counter (greater).
    func assertion(_ object: [UInt8], clientDataHash: [UInt8], publicKey: [UInt8], after counter: UInt32)
        throws(Failure) -> UInt32
    {
        let field = "assertion"
        let decoded: CBOR
        do { decoded = try CBOR.decode(object) } catch { throw Failure(field: field, reason: "is not CBOR: \(error)") }
        guard let signature = decoded["signature"]?.bytes, let authData = decoded["authenticatorData"]?.bytes else {
            throw Failure(field: field, reason: "is not an assertion (signature, authenticatorData)")
        }
        guard publicKey.count == 65,
            let key = try? P256PublicKey(x: Array(publicKey[1..<33]), y: Array(publicKey[33..<65])),
            key.isValidSignature(der: signature, for: SHA256.hash(authData + clientDataHash))
        else { throw Failure(field: field, reason: "is not signed by the attested key over this challenge") }
        let data = try WebAuthn.AuthenticatorData(authData, field: field)
        guard appIDs.contains(where: { SHA256.hash($0) == data.rpIDHash }) else {
            throw Failure(field: field, reason: "was made for another app")
        }
        guard data.signCount > counter else { throw Failure(field: field, reason: "has a counter that did not grow (a replay)") }
        return data.signCount
    }

    /// The octet string of `SEQUENCE { [1] EXPLICIT OCTET STRING }`, the nonce extension's value.
    static func nonce(in der: [UInt8]) -> [UInt8]? {
        var reader = DERReader(der[...])
        guard let sequence = reader.read(tag: 0x30), reader.isAtEnd else { return nil }
        var inner = DERReader(sequence)
        guard let tagged = inner.read(tag: 0xA1), inner.isAtEnd else { return nil }
        var octets = DERReader(tagged)
        guard let nonce = octets.read(tag: 0x04), octets.isAtEnd else { return nil }
        return Array(nonce)
    }
}

/// Reads DER's tag-length-value items one after the other (definite lengths up to 4 bytes).
private struct DERReader {
    private var rest: ArraySlice<UInt8>
    init(_ bytes: ArraySlice<UInt8>) { rest = bytes }
    var isAtEnd: Bool { rest.isEmpty }

    /// The contents of the next item when its tag is `tag`.
    mutating func read(tag: UInt8) -> ArraySlice<UInt8>? {
        guard rest.count >= 2, rest[rest.startIndex] == tag else { return nil }
        var index = rest.startIndex + 1
        var length = Int(rest[index])
        index += 1
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard (1...4).contains(count), rest.endIndex - index >= count else { return nil }
            length = rest[index..<index + count].reduce(0) { $0 << 8 | Int($1) }
            index += count
        }
        guard rest.endIndex - index >= length else { return nil }
        let contents = rest[index..<index + length]
        rest = rest[(index + length)...]
        return contents
    }
}
