import COpenSSL

/// An Ed25519 public key (RFC 8032), from its 32 raw bytes: WebAuthn's EdDSA (COSE -8).
///
/// `@unchecked Sendable`: immutable after creation; OpenSSL 3 verifies concurrently with one key.
public final class Ed25519PublicKey: @unchecked Sendable {
    let pkey: OpaquePointer
    public let raw: [UInt8]

    public init(raw: [UInt8]) throws {
        guard raw.count == 32 else { throw CryptoError("importing an Ed25519 key", detail: "a public key is 32 bytes") }
        guard let pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, raw, raw.count) else {
            ERR_clear_error()
            throw CryptoError.openSSL("importing an Ed25519 key")
        }
        self.pkey = pkey
        self.raw = raw
    }

    deinit { EVP_PKEY_free(pkey) }

    /// True when `signature` (64 bytes) is a valid Ed25519 signature of `message`.
    public func isValidSignature(_ signature: [UInt8], for message: some Collection<UInt8>) -> Bool {
        guard signature.count == 64, let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        let message = Array(message)
        guard EVP_DigestVerifyInit(context, nil, nil, nil, pkey) == 1 else {
            ERR_clear_error()
            return false
        }
        let valid = EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
        ERR_clear_error()
        return valid
    }
}

/// An Ed25519 private key: what a test's software authenticator signs with.
///
/// `@unchecked Sendable`: immutable after creation.
public final class Ed25519PrivateKey: @unchecked Sendable {
    let pkey: OpaquePointer

    public static func generate() throws -> Ed25519PrivateKey {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nil) else { throw CryptoError.openSSL("EVP_PKEY_CTX_new_id") }
        defer { EVP_PKEY_CTX_free(context) }
        var pkey: OpaquePointer? = nil
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_keygen(context, &pkey) == 1, let pkey else {
            throw CryptoError.openSSL("generating an Ed25519 key")
        }
        return Ed25519PrivateKey(pkey)
    }

    private init(_ pkey: OpaquePointer) { self.pkey = pkey }

    deinit { EVP_PKEY_free(pkey) }

    /// The 32 raw bytes of the public key.
    public var publicRaw: [UInt8] {
        get throws {
            var length = 32
            var raw = [UInt8](repeating: 0, count: 32)
            guard EVP_PKEY_get_raw_public_key(pkey, &raw, &length) == 1, length == 32 else {
                throw CryptoError.openSSL("EVP_PKEY_get_raw_public_key")
            }
            return raw
        }
    }

    public func sign(_ message: some Collection<UInt8>) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.openSSL("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        let message = Array(message)
        var length = 64
        var signature = [UInt8](repeating: 0, count: 64)
        guard EVP_DigestSignInit(context, nil, nil, nil, pkey) == 1,
            EVP_DigestSign(context, &signature, &length, message, message.count) == 1
        else { throw CryptoError.openSSL("Ed25519 sign") }
        return signature
    }
}
