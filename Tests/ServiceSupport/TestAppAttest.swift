import COpenSSL
import Foundation
import PierCBOR
import PierCrypto

/// A device doing App Attest against a certificate authority made in the test, shaped like
/// Apple's (root → intermediate → a credential certificate for the device's key, carrying the
/// nonce at 1.2.840.113635.100.8.2). Each part can be made wrong on purpose.
public final class TestAppAttest: @unchecked Sendable {
    public let ca: TestCA
    public let key: P256PrivateKey
    private let rawKey: OpaquePointer
    /// The key identifier: SHA-256 of the public key's uncompressed point.
    public let keyID: [UInt8]
    /// The public key's coordinates.
    public let x: [UInt8]
    public let y: [UInt8]

    /// A device with a new key, attested by `ca` (a new one unless given: devices that share one
    /// are devices of one app).
    public init(ca: TestCA? = nil) throws {
        self.ca = try ca ?? TestCA()
        guard let raw = COpenSSL_generate_p256() else { throw TestCAError("key") }
        rawKey = raw
        key = try P256PrivateKey(pem: try TestCA.privatePEM(raw))
        let publicKey = try key.publicKey
        (x, y) = (publicKey.x, publicKey.y)
        keyID = SHA256.hash([4] + x + y)
    }

    deinit { EVP_PKEY_free(rawKey) }

    public static let production = Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
    public static let development = Array("appattestdevelop".utf8)

    /// The attestation object `attestKey` would give for `appID` over `clientDataHash`.
    public func attestation(
        appID: String, clientDataHash: [UInt8], counter: UInt32 = 0, aaguid: [UInt8] = TestAppAttest.production,
        credentialID: [UInt8]? = nil, nonceOver: [UInt8]? = nil
    ) throws -> [UInt8] {
        let cose = CBOR.map([
            .init(CBOR(1), CBOR(2)), .init(CBOR(3), CBOR(-7)), .init(CBOR(-1), CBOR(1)),
            .init(CBOR(-2), .bytes(x)), .init(CBOR(-3), .bytes(y)),
        ])
        let id = credentialID ?? keyID
        let authData =
            SHA256.hash(appID) + [0x40] + Self.bigEndian(counter) + aaguid + [UInt8(id.count >> 8), UInt8(id.count & 0xFF)]
            + id + cose.encoded
        let nonce = SHA256.hash(authData + (nonceOver ?? clientDataHash))
        let value: [UInt8] = [0x30, 0x24, 0xA1, 0x22, 0x04, 0x20] + nonce
        let now = Date()
        let credential = try TestCA.issue(
            "Test App Attest credential", issuer: ca.intermediate, ca: false, oid: "1.2.840.113635.100.8.2", value: value,
            from: now.addingTimeInterval(-3600), to: now.addingTimeInterval(86_400), key: rawKey)
        let statement = CBOR.map([
            .init(.text("x5c"), .array([.bytes(credential.der), .bytes(ca.intermediate.der)])),
            .init(.text("receipt"), .bytes(Array("a receipt".utf8))),
        ])
        return CBOR.map([
            .init(.text("fmt"), .text("apple-appattest")), .init(.text("attStmt"), statement),
            .init(.text("authData"), .bytes(authData)),
        ]).encoded
    }

    /// The assertion `generateAssertion` would give for `appID` over `clientDataHash`.
    public func assertion(appID: String, clientDataHash: [UInt8], counter: UInt32, signer: P256PrivateKey? = nil) throws
        -> [UInt8]
    {
        let authData = SHA256.hash(appID) + [0x00] + Self.bigEndian(counter)
        let signature = try (signer ?? key).signDER(SHA256.hash(authData + clientDataHash))
        return CBOR.map([.init(.text("signature"), .bytes(signature)), .init(.text("authenticatorData"), .bytes(authData))])
            .encoded
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
}
