import COpenSSL

/// An RSA private key that signs RS256 (RSASSA-PKCS1-v1_5 with SHA-256): what a Google service
/// account's key is, and what its OAuth 2.0 JWT bearer assertions are signed with.
///
/// `@unchecked Sendable`: immutable after construction; OpenSSL 3 signs with one key from many threads.
public final class RSAPrivateKey: @unchecked Sendable {
    let pkey: OpaquePointer

    private init(taking pkey: OpaquePointer) { self.pkey = pkey }
    deinit { EVP_PKEY_free(pkey) }

    /// Reads a PEM private key (PKCS#8 or PKCS#1); it must be RSA, 2048 bits or more.
    public convenience init(pem: String) throws {
        let pkey = try withMemoryBIO(pem) { bio in PEM_read_bio_PrivateKey(bio, nil, nil, nil) }
        guard let pkey else { throw CryptoError.openSSL("reading a PEM private key") }
        guard EVP_PKEY_is_a(pkey, "RSA") == 1, EVP_PKEY_get_bits(pkey) >= 2048 else {
            EVP_PKEY_free(pkey)
            throw CryptoError("reading a PEM private key", detail: "the key is not an RSA key of 2048 bits or more")
        }
        self.init(taking: pkey)
    }

    /// A new key of `bits` from OpenSSL's CSPRNG (tests play a service account with one).
    public static func generate(bits: Int32 = 2048) throws -> RSAPrivateKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else {
            throw CryptoError.openSSL("EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var pkey: OpaquePointer? = nil
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, bits) == 1,
            EVP_PKEY_generate(context, &pkey) == 1, let pkey
        else { throw CryptoError.openSSL("RSA key generation") }
        return RSAPrivateKey(taking: pkey)
    }

    /// The key as a PKCS#8 PEM document.
    public func pemRepresentation() throws -> String {
        try writeMemoryBIO { bio in PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil) }
    }

    /// The matching public key.
    public var publicKey: RSAPublicKey {
        get throws {
            func parameter(_ name: String) throws -> [UInt8] {
                var number: OpaquePointer? = nil
                guard EVP_PKEY_get_bn_param(pkey, name, &number) == 1, let number else {
                    throw CryptoError.openSSL("reading the RSA key's \(name)")
                }
                defer { BN_free(number) }
                var bytes = [UInt8](repeating: 0, count: Int((BN_num_bits(number) + 7) / 8))
                BN_bn2bin(number, &bytes)
                return bytes
            }
            return try RSAPublicKey(n: try parameter("n"), e: try parameter("e"))
        }
    }

    /// The RS256 signature of `message`.
    public func signRS256(_ message: some Collection<UInt8>) throws -> [UInt8] {
        let message = Array(message)
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.openSSL("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pkey) == 1 else {
            throw CryptoError.openSSL("RS256 sign init")
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw CryptoError.openSSL("RS256 sign")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw CryptoError.openSSL("RS256 sign")
        }
        return Array(signature.prefix(length))
    }
}
