import Foundation
import PierCBOR
import PierCrypto
import PierModels

/// A passkey authenticator in software, built as platform authenticators build their answers
/// (WebAuthn §6.1 authenticator data, §5.8.1 client data, attestation `none`): its key made
/// here, its flags and counter chosen by the test, and the origin an iOS app's associated domain
/// (or an Android app) sends.
public final class SoftwareAuthenticator: @unchecked Sendable {
    public enum Key {
        case es256(P256PrivateKey)
        case edDSA(Ed25519PrivateKey)
        case rs256(TestRSAKey)
    }

    public static let up: UInt8 = 0x01
    public static let uv: UInt8 = 0x04
    public static let be: UInt8 = 0x08
    public static let bs: UInt8 = 0x10

    public let key: Key
    public let credentialID = SecureRandom.bytes(16)
    public var rpID: String
    public var origin: String
    /// iCloud Keychain's: present, verified, synced.
    public var flags: UInt8 =
        SoftwareAuthenticator.up | SoftwareAuthenticator.uv | SoftwareAuthenticator.be | SoftwareAuthenticator.bs
    /// Synced passkeys keep 0; a security key counts up.
    public var counter: UInt32 = 0
    public var type = "webauthn.get"

    public init(_ key: Key, rpID: String, origin: String) {
        self.key = key
        self.rpID = rpID
        self.origin = origin
    }

    public static func es256(rpID: String, origin: String) throws -> SoftwareAuthenticator {
        SoftwareAuthenticator(.es256(try P256PrivateKey.generate()), rpID: rpID, origin: origin)
    }

    /// The credential's public key, COSE (RFC 9053).
    public var coseKey: CBOR {
        get throws {
            switch key {
            case .es256(let key):
                let publicKey = try key.publicKey
                return .map([
                    .init(CBOR(1), CBOR(2)), .init(CBOR(3), CBOR(-7)), .init(CBOR(-1), CBOR(1)),
                    .init(CBOR(-2), .bytes(publicKey.x)), .init(CBOR(-3), .bytes(publicKey.y)),
                ])
            case .edDSA(let key):
                return .map([
                    .init(CBOR(1), CBOR(1)), .init(CBOR(3), CBOR(-8)), .init(CBOR(-1), CBOR(6)),
                    .init(CBOR(-2), .bytes(try key.publicRaw)),
                ])
            case .rs256(let key):
                let jwk = key.jwk(kid: "passkey")
                return .map([
                    .init(CBOR(1), CBOR(3)), .init(CBOR(3), CBOR(-257)),
                    .init(CBOR(-1), .bytes(Base64.urlDecoded(jwk["n"]!)!)),
                    .init(CBOR(-2), .bytes(Base64.urlDecoded(jwk["e"]!)!)),
                ])
            }
        }
    }

    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        switch key {
        case .es256(let key): try key.signDER(message)
        case .edDSA(let key): try key.sign(message)
        case .rs256(let key): key.sign(message)
        }
    }

    public func authenticatorData(attested: Bool) throws -> [UInt8] {
        var data = SHA256.hash(rpID) + [flags | (attested ? 0x40 : 0)]
        data += withUnsafeBytes(of: counter.bigEndian, Array.init)
        if attested {
            data += [UInt8](repeating: 0, count: 16) + [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)]
            data += credentialID + (try coseKey).encoded
        }
        return data
    }

    public func clientData(_ type: String, challenge: String) -> [UInt8] {
        Array(#"{"type":"\#(type)","challenge":"\#(challenge)","origin":"\#(origin)","crossOrigin":false}"#.utf8)
    }

    /// What `navigator.credentials.create` answers to `options`, as JSON.
    public func register(_ options: PasskeyCreationOptions, name: String? = nil) throws -> PasskeyRegistration {
        let attestation = CBOR.map([
            .init(.text("fmt"), .text("none")), .init(.text("attStmt"), .map([])),
            .init(.text("authData"), .bytes(try authenticatorData(attested: true))),
        ])
        return PasskeyRegistration(
            id: Base64.urlEncoded(credentialID),
            response: .init(
                clientDataJSON: Base64.urlEncoded(clientData("webauthn.create", challenge: options.challenge)),
                attestationObject: Base64.urlEncoded(attestation.encoded), transports: ["internal", "hybrid"]),
            name: name)
    }

    /// What `navigator.credentials.get` answers to `options`, as JSON; the counter moves on first.
    public func assert(_ options: PasskeyRequestOptions, userHandle: [UInt8]?, signWith other: SoftwareAuthenticator? = nil)
        throws
        -> PasskeyAssertion
    {
        if counter > 0 { counter += 1 }
        let data = try authenticatorData(attested: false)
        let client = clientData(type, challenge: options.challenge)
        let signature = try (other ?? self).sign(data + SHA256.hash(client))
        return PasskeyAssertion(
            id: Base64.urlEncoded(credentialID),
            response: .init(
                clientDataJSON: Base64.urlEncoded(client), authenticatorData: Base64.urlEncoded(data),
                signature: Base64.urlEncoded(signature), userHandle: userHandle.map { Base64.urlEncoded($0) }),
            deviceName: "Anna's iPhone")
    }
}
