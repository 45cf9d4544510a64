import COpenSSL

/// An RSA public key (2048 bits or more) that verifies RS256 signatures (RSASSA-PKCS1-v1_5 with
/// SHA-256): what Sign in with Apple and most OpenID Connect providers sign ID tokens with.
///
/// `@unchecked Sendable`: immutable after construction; OpenSSL 3 reads one key from many threads.
public final class RSAPublicKey: @unchecked Sendable {
    let pkey: OpaquePointer
    /// The modulus size in bits.
    public let bits: Int

    /// Builds a key from its JWK `n` and `e` (big-endian bytes). The public exponent must be
    /// 65537, what every signing key in use has: a hostile key set could otherwise offer e = 1,
    /// for which the padded digest itself "verifies" as a signature.
    public init(n: [UInt8], e: [UInt8]) throws {
        guard !n.isEmpty, !e.isEmpty, e.count <= 8 else { throw CryptoError("importing an RSA key", detail: "bad n or e") }
        guard Array(e.drop(while: { $0 == 0 })) == [0x01, 0x00, 0x01] else {
            throw CryptoError("importing an RSA key", detail: "the public exponent must be 65537")
        }
        guard let modulus = BN_bin2bn(n, Int32(n.count), nil), let exponent = BN_bin2bn(e, Int32(e.count), nil) else {
            throw CryptoError.openSSL("BN_bin2bn")
        }
        defer {
            BN_free(modulus)
            BN_free(exponent)
        }
        guard let builder = OSSL_PARAM_BLD_new() else { throw CryptoError.openSSL("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(builder) }
        // Parameter names outlive the builder's use of them (see makeECKey).
        let names = Array("n\0e\0".utf8CString)
        let params: UnsafeMutablePointer<OSSL_PARAM>? = names.withUnsafeBufferPointer { names in
            guard OSSL_PARAM_BLD_push_BN(builder, names.baseAddress!, modulus) == 1,
                OSSL_PARAM_BLD_push_BN(builder, names.baseAddress! + 2, exponent) == 1
            else { return nil }
            return OSSL_PARAM_BLD_to_param(builder)
        }
        guard let params else { throw CryptoError.openSSL("building RSA key parameters") }
        defer { OSSL_PARAM_free(params) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else {
            throw CryptoError.openSSL("EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var pkey: OpaquePointer? = nil
        // EVP_PKEY_PUBLIC_KEY = 0x86 (a macro composed of other macros).
        guard EVP_PKEY_fromdata_init(context) == 1, EVP_PKEY_fromdata(context, &pkey, 0x86, params) == 1, let pkey else {
            ERR_clear_error()
            throw CryptoError.openSSL("importing an RSA key")
        }
        let bits = Int(EVP_PKEY_get_bits(pkey))
        guard bits >= 2048 else {
            EVP_PKEY_free(pkey)
            throw CryptoError("importing an RSA key", detail: "a \(bits)-bit key is too weak (2048 bits at least)")
        }
        self.pkey = pkey
        self.bits = bits
    }

    deinit { EVP_PKEY_free(pkey) }

    /// True when `signature` is a valid RS256 signature of `message`.
    public func isValidRS256Signature(_ signature: [UInt8], for message: some Collection<UInt8>) -> Bool {
        guard signature.count == (bits + 7) / 8, let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        let message = Array(message)
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, pkey) == 1 else {
            ERR_clear_error()
            return false
        }
        let valid = EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
        ERR_clear_error()
        return valid
    }
}

/// A key that verifies a JWS from another issuer: EC P-256 (ES256) or RSA (RS256).
public enum VerificationKey: Sendable {
    case p256(P256PublicKey)
    case rsa(RSAPublicKey)

    /// The JWS algorithm the key verifies.
    public var algorithm: String {
        switch self {
        case .p256: "ES256"
        case .rsa: "RS256"
        }
    }

    /// True when the JWS's algorithm is this key's and its signature verifies.
    public func verifies(_ jws: JWS) -> Bool {
        guard jws.header.alg == algorithm else { return false }
        switch self {
        case .p256(let key): return key.isValidSignature(jws.signature, for: jws.signingInput)
        case .rsa(let key): return key.isValidRS256Signature(jws.signature, for: jws.signingInput)
        }
    }
}

/// A public JWK of any issuer (RFC 7517/7518): EC P-256 or RSA signing keys; others are
/// refused when read.
public struct ForeignJWK: Decodable, Sendable {
    public var kty: String
    public var kid: String?
    public var use: String?
    public var alg: String?
    public var crv: String?
    public var x: String?
    public var y: String?
    public var n: String?
    public var e: String?

    public func verificationKey() throws -> VerificationKey {
        guard use == nil || use == "sig" else { throw CryptoError("reading a JWK", detail: "not a signing key") }
        switch kty {
        case "EC":
            guard crv == "P-256", alg == nil || alg == "ES256", let x = x.flatMap(Base64.urlDecoded),
                let y = y.flatMap(Base64.urlDecoded)
            else { throw CryptoError("reading a JWK", detail: "only P-256 EC keys are supported") }
            return .p256(try P256PublicKey(x: x, y: y))
        case "RSA":
            guard alg == nil || alg == "RS256", let n = n.flatMap(Base64.urlDecoded), let e = e.flatMap(Base64.urlDecoded)
            else { throw CryptoError("reading a JWK", detail: "only RS256 RSA keys are supported") }
            return .rsa(try RSAPublicKey(n: n, e: e))
        default:
            throw CryptoError("reading a JWK", detail: "key type \(kty) is not supported")
        }
    }
}

/// A JWK Set of another issuer.
public struct ForeignJWKSet: Decodable, Sendable {
    public var keys: [ForeignJWK]
}
