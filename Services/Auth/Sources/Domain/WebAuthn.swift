import PierCBOR
import PierCrypto
import PierJSON

/// The checks of WebAuthn Level 3 (§7.1 registration, §7.2 authentication) on what a platform
/// authenticator sends: CBOR read by libcbor (``CBOR``), signatures checked by OpenSSL. libfido2
/// was not used: its `fido_cred_verify` checks an attestation statement and has no place for
/// `none`, which is what passkeys send.
enum WebAuthn {
    /// Why a ceremony was refused; `field` names the member of the request at fault.
    struct Failure: Error, Sendable {
        let field: String
        let reason: String
    }

    /// The relying party: the domain passkeys are bound to and the origins allowed to use them.
    struct RelyingParty: Sendable {
        /// `PIER_AUTH_PASSKEY_RP_ID`: a registrable domain (the app's associated domain).
        let id: String
        let name: String
        /// Web origins (`https://example.com`) and Android apps (`android:apk-key-hash:…`).
        let origins: Set<String>
        var idHash: [UInt8] { SHA256.hash(id) }
    }

    enum Ceremony: String {
        case create = "webauthn.create"
        case get = "webauthn.get"
    }

    // MARK: - Client data

    /// The client data the browser or platform signed over, checked for the ceremony and the
    /// origins; its challenge, decoded, for the caller to spend.
    static func clientData(_ json: [UInt8], _ ceremony: Ceremony, _ rp: RelyingParty) throws(Failure) -> [UInt8] {
        struct ClientData: Decodable {
            let type: String
            let challenge: String
            let origin: String
            let crossOrigin: Bool?
        }
        let field = "response.clientDataJSON"
        guard json.count <= 4096, let data = try? WireDecoder.decode(ClientData.self, from: json) else {
            throw Failure(field: field, reason: "is not client data JSON (type, challenge, origin)")
        }
        guard data.type == ceremony.rawValue else {
            throw Failure(field: field, reason: "is for \(data.type), not \(ceremony.rawValue)")
        }
        guard rp.origins.contains(data.origin) else {
            throw Failure(field: field, reason: "comes from the origin \(data.origin), which is not one of this server's")
        }
        guard data.crossOrigin != true else { throw Failure(field: field, reason: "comes from a cross-origin frame") }
        guard let challenge = Base64.urlDecoded(data.challenge), challenge.count == 32 else {
            throw Failure(field: field, reason: "carries no challenge of this server")
        }
        return challenge
    }

    // MARK: - Authenticator data

    struct AuthenticatorData: Sendable {
        static let userPresent: UInt8 = 0x01
        static let userVerified: UInt8 = 0x04
        static let backupEligible: UInt8 = 0x08
        static let backedUp: UInt8 = 0x10
        static let attested: UInt8 = 0x40
        static let extensions: UInt8 = 0x80

        let rpIDHash: [UInt8]
        let flags: UInt8
        let signCount: UInt32
        /// With `attested`: the authenticator's model (16 bytes), the new credential's id and its
        /// COSE public key.
        let aaguid: [UInt8]?
        let credentialID: [UInt8]?
        let publicKey: CBOR?

        func has(_ flag: UInt8) -> Bool { flags & flag != 0 }

        init(_ bytes: [UInt8], field: String) throws(Failure) {
            guard bytes.count >= 37 else { throw Failure(field: field, reason: "is shorter than authenticator data") }
            rpIDHash = Array(bytes[0..<32])
            flags = bytes[32]
            signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
            var rest = bytes[37...]
            if flags & Self.attested != 0 {
                guard rest.count >= 18 else { throw Failure(field: field, reason: "ends inside the attested credential") }
                aaguid = Array(rest.prefix(16))
                let idLength = Int(rest[rest.startIndex + 16]) << 8 | Int(rest[rest.startIndex + 17])
                rest = rest.dropFirst(18)
                guard idLength > 0, idLength <= 1023, rest.count > idLength else {
                    throw Failure(field: field, reason: "has a credential id of a wrong length")
                }
                credentialID = Array(rest.prefix(idLength))
                rest = rest.dropFirst(idLength)
                let key: (item: CBOR, length: Int)
                do { key = try CBOR.decodePrefix(rest) } catch {
                    throw Failure(field: field, reason: "has a credential public key that is not CBOR: \(error)")
                }
                publicKey = key.item
                rest = rest.dropFirst(key.length)
            } else {
                aaguid = nil
                credentialID = nil
                publicKey = nil
            }
            if flags & Self.extensions != 0 {
                do { _ = try CBOR.decode(rest) } catch {
                    throw Failure(field: field, reason: "has extensions that are not one CBOR map: \(error)")
                }
            } else if !rest.isEmpty {
                throw Failure(field: field, reason: "has \(rest.count) bytes after its end")
            }
        }

        /// The checks both ceremonies make: this relying party, the user present.
        func check(_ rp: RelyingParty, field: String) throws(Failure) {
            guard constantTimeEquals(rpIDHash, rp.idHash) else {
                throw Failure(field: field, reason: "is for another relying party than \(rp.id)")
            }
            guard has(Self.userPresent) else { throw Failure(field: field, reason: "says the user was not present") }
            guard has(Self.backupEligible) || !has(Self.backedUp) else {
                throw Failure(field: field, reason: "says backed up but not backup eligible")
            }
        }
    }

    // MARK: - Credential public keys (COSE, RFC 9053)

    enum PublicKey {
        case es256(P256PublicKey)
        case rs256(RSAPublicKey)
        case edDSA(Ed25519PublicKey)

        /// The COSE algorithm: -7 ES256, -257 RS256, -8 EdDSA.
        var algorithm: Int {
            switch self {
            case .es256: -7
            case .rs256: -257
            case .edDSA: -8
            }
        }

        init(cose key: CBOR, field: String) throws(Failure) {
            let kty = key[1]?.int
            let alg = key[3]?.int
            do {
                switch (kty, alg) {
                case (2, -7):
                    guard key[-1]?.int == 1, let x = key[-2]?.bytes, let y = key[-3]?.bytes else {
                        throw Failure(field: field, reason: "has an EC2 key that is not P-256 with x and y")
                    }
                    self = .es256(try P256PublicKey(x: x, y: y))
                case (3, -257):
                    guard let n = key[-1]?.bytes, let e = key[-2]?.bytes else {
                        throw Failure(field: field, reason: "has an RSA key without n and e")
                    }
                    // 2048 to 4096 bits (authenticators make 2048): a larger modulus only makes
                    // every later sign-in's check slower (a 16,384-bit key was once accepted).
                    let modulusBits = n.drop(while: { $0 == 0 }).count * 8
                    guard (2048...4096).contains(modulusBits) else {
                        throw Failure(field: field, reason: "has a \(modulusBits)-bit RSA key (2048 to 4096 bits are accepted)")
                    }
                    self = .rs256(try RSAPublicKey(n: n, e: e))
                case (1, -8):
                    guard key[-1]?.int == 6, let x = key[-2]?.bytes else {
                        throw Failure(field: field, reason: "has an OKP key that is not Ed25519 with x")
                    }
                    self = .edDSA(try Ed25519PublicKey(raw: x))
                default:
                    throw Failure(
                        field: field,
                        reason:
                            "has a key of type \(kty.map(String.init) ?? "?") for algorithm \(alg.map(String.init) ?? "?"): ES256, RS256 and EdDSA are accepted"
                    )
                }
            } catch let failure as Failure {
                throw failure
            } catch {
                throw Failure(field: field, reason: "has a public key that cannot be used: \(error)")
            }
        }

        func verifies(_ signature: [UInt8], _ message: [UInt8]) -> Bool {
            switch self {
            case .es256(let key): key.isValidSignature(der: signature, for: message)
            case .rs256(let key): key.isValidRS256Signature(signature, for: message)
            case .edDSA(let key): key.isValidSignature(signature, for: message)
            }
        }
    }

    // MARK: - Ceremonies

    /// A credential registration checked (§7.1): the credential, its key (as COSE bytes, stored),
    /// and what its flags say.
    struct NewCredential: Sendable {
        let id: [UInt8]
        let publicKey: [UInt8]
        let algorithm: Int
        let signCount: UInt32
        let userVerified: Bool
        let backupEligible: Bool
        let backedUp: Bool
    }

    /// Checks an attestation object against the client data the challenge came in. Attestation
    /// `none` is accepted, and `packed` self-attestation (signed by the credential itself) is
    /// verified; any other statement (a certificate chain) is refused, since Pier asks for `none`
    /// and keeps no list of authenticator makers to check a chain against.
    static func registration(attestationObject: [UInt8], clientDataJSON: [UInt8], rp: RelyingParty) throws(Failure)
        -> NewCredential
    {
        let field = "response.attestationObject"
        let object: CBOR
        do { object = try CBOR.decode(attestationObject) } catch {
            throw Failure(field: field, reason: "is not CBOR: \(error)")
        }
        guard let format = object["fmt"]?.text, let authData = object["authData"]?.bytes, let statement = object["attStmt"],
            case .map = statement
        else { throw Failure(field: field, reason: "is not an attestation object (fmt, authData, attStmt)") }
        let data = try AuthenticatorData(authData, field: field)
        try data.check(rp, field: field)
        guard let id = data.credentialID, let coseKey = data.publicKey else {
            throw Failure(field: field, reason: "carries no attested credential")
        }
        let key = try PublicKey(cose: coseKey, field: field)
        switch format {
        case "none":
            guard statement == .map([]) else { throw Failure(field: field, reason: "has a statement for format none") }
        case "packed" where statement["x5c"] == nil:
            guard statement["alg"]?.int == key.algorithm, let signature = statement["sig"]?.bytes,
                key.verifies(signature, authData + SHA256.hash(clientDataJSON))
            else { throw Failure(field: field, reason: "has a packed self-attestation that does not verify") }
        default:
            throw Failure(
                field: field, reason: "has an attestation of format \(format) with a certificate: ask for attestation none")
        }
        return NewCredential(
            id: id, publicKey: coseKey.encoded, algorithm: key.algorithm, signCount: data.signCount,
            userVerified: data.has(AuthenticatorData.userVerified), backupEligible: data.has(AuthenticatorData.backupEligible),
            backedUp: data.has(AuthenticatorData.backedUp))
    }

    /// An assertion checked (§7.2) against the stored key: its flags and counter.
    static func assertion(
        authenticatorData: [UInt8], clientDataJSON: [UInt8], signature: [UInt8], publicKey: [UInt8], rp: RelyingParty
    ) throws(Failure) -> AuthenticatorData {
        let field = "response.authenticatorData"
        let data = try AuthenticatorData(authenticatorData, field: field)
        try data.check(rp, field: field)
        let stored: CBOR
        do { stored = try CBOR.decode(publicKey) } catch {
            throw Failure(field: "id", reason: "names a credential whose stored key cannot be read")
        }
        let key = try PublicKey(cose: stored, field: "id")
        guard key.verifies(signature, authenticatorData + SHA256.hash(clientDataJSON)) else {
            throw Failure(field: "response.signature", reason: "is not the credential's signature of this sign-in")
        }
        return data
    }
}
