import COpenSSL

/// A P-256 private key in OpenSSL, used to sign ES256 (ECDSA P-256 + SHA-256, RFC 7518 §3.4).
///
/// `@unchecked Sendable`: the `EVP_PKEY` is never mutated after creation, and OpenSSL 3 allows
/// concurrent signing with one key from several threads.
public final class P256PrivateKey: @unchecked Sendable {
    let pkey: OpaquePointer

    private init(taking pkey: OpaquePointer) { self.pkey = pkey }
    deinit { EVP_PKEY_free(pkey) }

    /// Generates a new key from OpenSSL's CSPRNG.
    public static func generate() throws -> P256PrivateKey {
        guard let pkey = COpenSSL_generate_p256() else { throw CryptoError.openSSL("P-256 key generation") }
        return P256PrivateKey(taking: pkey)
    }

    /// Reads a PEM private key (PKCS#8 or SEC1); it must be on the P-256 curve.
    public convenience init(pem: String) throws {
        let pkey = try withMemoryBIO(pem) { bio in PEM_read_bio_PrivateKey(bio, nil, nil, nil) }
        guard let pkey else { throw CryptoError.openSSL("reading a PEM private key") }
        guard isP256(pkey) else {
            EVP_PKEY_free(pkey)
            throw CryptoError("reading a PEM private key", detail: "the key is not an EC P-256 key")
        }
        self.init(taking: pkey)
    }

    /// Builds a key from its JWK parts (RFC 7518 §6.2): private scalar `d` and point (`x`, `y`).
    public convenience init(d: [UInt8], x: [UInt8], y: [UInt8]) throws {
        let pkey = try makeECKey(x: x, y: y, d: d)
        self.init(taking: pkey)
    }

    /// The key as a PKCS#8 PEM document.
    public func pemRepresentation() throws -> String {
        try writeMemoryBIO { bio in PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil) }
    }

    /// The matching public key.
    public var publicKey: P256PublicKey {
        get throws {
            let point = try publicPoint(pkey)
            return try P256PublicKey(x: Array(point[1..<33]), y: Array(point[33..<65]))
        }
    }

    /// Signs `message` with ECDSA over SHA-256 and returns the JWS form of the signature: the
    /// 64 bytes `r ‖ s` (OpenSSL produces DER, which JWS does not use).
    public func sign(_ message: some Collection<UInt8>) throws -> [UInt8] {
        try rawSignature(fromDER: try signDER(message))
    }

    /// Signs `message` with ECDSA over SHA-256, the signature in DER (as WebAuthn has it).
    public func signDER(_ message: some Collection<UInt8>) throws -> [UInt8] {
        let message = Array(message)
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.openSSL("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pkey) == 1 else {
            throw CryptoError.openSSL("ES256 sign init")
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw CryptoError.openSSL("ES256 sign")
        }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &der, &length, message, message.count) == 1 else {
            throw CryptoError.openSSL("ES256 sign")
        }
        return Array(der.prefix(length))
    }
}

/// A P-256 public key, used to verify ES256 signatures (access tokens, App Store JWS).
///
/// `@unchecked Sendable`: immutable after creation; OpenSSL 3 verifies concurrently with one key.
public final class P256PublicKey: @unchecked Sendable {
    let pkey: OpaquePointer
    /// The point's affine coordinates, 32 bytes each (the JWK `x` and `y`).
    public let x: [UInt8]
    public let y: [UInt8]

    /// Builds a key from its affine coordinates; fails when the point is not on the curve.
    public init(x: [UInt8], y: [UInt8]) throws {
        guard x.count == 32, y.count == 32 else {
            throw CryptoError("importing a P-256 public key", detail: "coordinates must be 32 bytes each")
        }
        self.pkey = try makeECKey(x: x, y: y, d: nil)
        self.x = x
        self.y = y
    }

    /// Takes ownership of an `EVP_PKEY` (from a certificate, say); it must be a P-256 key.
    init(taking pkey: OpaquePointer) throws {
        guard isP256(pkey) else {
            EVP_PKEY_free(pkey)
            throw CryptoError("importing a public key", detail: "the key is not an EC P-256 key")
        }
        let point: [UInt8]
        do { point = try publicPoint(pkey) } catch { EVP_PKEY_free(pkey); throw error }
        self.pkey = pkey
        self.x = Array(point[1..<33])
        self.y = Array(point[33..<65])
    }

    /// Reads a PEM public key (SubjectPublicKeyInfo).
    public convenience init(pem: String) throws {
        let pkey = try withMemoryBIO(pem) { bio in PEM_read_bio_PUBKEY(bio, nil, nil, nil) }
        guard let pkey else { throw CryptoError.openSSL("reading a PEM public key") }
        try self.init(taking: pkey)
    }

    deinit { EVP_PKEY_free(pkey) }

    /// True when `signature` (64 bytes, `r ‖ s`) is a valid ES256 signature of `message`.
    /// A signature of any other length is simply invalid.
    public func isValidSignature(_ signature: [UInt8], for message: some Collection<UInt8>) -> Bool {
        guard signature.count == 64, let der = derSignature(fromRaw: signature) else { return false }
        return isValidSignature(der: der, for: message)
    }

    /// True when `der` (ASN.1 `SEQUENCE { r, s }`, as WebAuthn authenticators send it) is a
    /// valid ECDSA P-256 / SHA-256 signature of `message`.
    public func isValidSignature(der: [UInt8], for message: some Collection<UInt8>) -> Bool {
        guard !der.isEmpty, der.count <= 80 else { return false }
        let message = Array(message)
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, pkey) == 1 else {
            ERR_clear_error()
            return false
        }
        let valid = EVP_DigestVerify(context, der, der.count, message, message.count) == 1
        ERR_clear_error()
        return valid
    }
}

// MARK: - OpenSSL plumbing

private func isP256(_ pkey: OpaquePointer) -> Bool {
    guard EVP_PKEY_is_a(pkey, "EC") == 1 else { return false }
    var name = [CChar](repeating: 0, count: 64)
    var length = 0
    guard EVP_PKEY_get_group_name(pkey, &name, name.count, &length) == 1 else { return false }
    let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return group == "prime256v1" || group == "P-256"
}

/// The uncompressed point `04 ‖ x ‖ y` (65 bytes).
private func publicPoint(_ pkey: OpaquePointer) throws -> [UInt8] {
    var point = [UInt8](repeating: 0, count: 65)
    var length = 0
    guard EVP_PKEY_get_octet_string_param(pkey, "encoded-pub-key", &point, point.count, &length) == 1,
        length == 65, point[0] == 4
    else { throw CryptoError.openSSL("reading a P-256 public point") }
    return point
}

private func makeECKey(x: [UInt8], y: [UInt8], d: [UInt8]?) throws -> OpaquePointer {
    guard x.count == 32, y.count == 32, d.map({ $0.count == 32 }) ?? true else {
        throw CryptoError("importing a P-256 key", detail: "each part must be 32 bytes")
    }
    guard let builder = OSSL_PARAM_BLD_new() else { throw CryptoError.openSSL("OSSL_PARAM_BLD_new") }
    defer { OSSL_PARAM_BLD_free(builder) }
    // The builder keeps pointers to the pushed buffers until OSSL_PARAM_BLD_to_param copies
    // them, so the buffers must outlive that call: hence the nested closures.
    let point = [UInt8(4)] + x + y
    let group = Array("prime256v1".utf8CString)
    var scalar: OpaquePointer? = nil
    defer { if let scalar { BN_clear_free(scalar) } }
    if let d {
        scalar = BN_bin2bn(d, Int32(d.count), nil)
        guard scalar != nil else { throw CryptoError.openSSL("BN_bin2bn") }
    }
    // Parameter names too: Swift passes short string literals as temporary stack copies.
    let names = Array("group\0pub\0priv\0".utf8CString)
    let params: UnsafeMutablePointer<OSSL_PARAM>? = names.withUnsafeBufferPointer { names in
        group.withUnsafeBufferPointer { group in
            point.withUnsafeBufferPointer { point in
                let groupName = names.baseAddress!, pubName = groupName + 6, privName = groupName + 10
                guard OSSL_PARAM_BLD_push_utf8_string(builder, groupName, group.baseAddress, 0) == 1,
                    OSSL_PARAM_BLD_push_octet_string(builder, pubName, point.baseAddress, point.count) == 1
                else { return nil }
                if let scalar, OSSL_PARAM_BLD_push_BN(builder, privName, scalar) != 1 { return nil }
                return OSSL_PARAM_BLD_to_param(builder)
            }
        }
    }
    guard let params else { throw CryptoError.openSSL("building P-256 key parameters") }
    defer { OSSL_PARAM_free(params) }
    guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
        throw CryptoError.openSSL("EVP_PKEY_CTX_new_from_name")
    }
    defer { EVP_PKEY_CTX_free(context) }
    var pkey: OpaquePointer? = nil
    // EVP_PKEY_PUBLIC_KEY = 0x86, EVP_PKEY_KEYPAIR = 0x87 (macros composed of other macros).
    let selection: Int32 = d == nil ? 0x86 : 0x87
    guard EVP_PKEY_fromdata_init(context) == 1, EVP_PKEY_fromdata(context, &pkey, selection, params) == 1,
        let pkey
    else { throw CryptoError.openSSL("importing a P-256 key") }
    if d == nil {
        // fromdata accepts any encoding; check the point is really on the curve.
        guard let check = EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil) else {
            EVP_PKEY_free(pkey)
            throw CryptoError.openSSL("EVP_PKEY_CTX_new_from_pkey")
        }
        defer { EVP_PKEY_CTX_free(check) }
        guard EVP_PKEY_public_check(check) == 1 else {
            EVP_PKEY_free(pkey)
            throw CryptoError.openSSL("checking a P-256 public key")
        }
    }
    return pkey
}

private func rawSignature(fromDER der: [UInt8]) throws -> [UInt8] {
    var cursor: UnsafePointer<UInt8>? = nil
    let signature: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
        cursor = buffer.baseAddress
        return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
    }
    guard let signature else { throw CryptoError.openSSL("decoding an ECDSA signature") }
    defer { ECDSA_SIG_free(signature) }
    var r: OpaquePointer? = nil
    var s: OpaquePointer? = nil
    ECDSA_SIG_get0(signature, &r, &s)
    var raw = [UInt8](repeating: 0, count: 64)
    let ok = raw.withUnsafeMutableBufferPointer { buffer in
        BN_bn2binpad(r, buffer.baseAddress, 32) == 32 && BN_bn2binpad(s, buffer.baseAddress! + 32, 32) == 32
    }
    guard ok else { throw CryptoError.openSSL("encoding an ECDSA signature") }
    return raw
}

private func derSignature(fromRaw raw: [UInt8]) -> [UInt8]? {
    guard let signature = ECDSA_SIG_new() else { return nil }
    defer { ECDSA_SIG_free(signature) }
    let r = BN_bin2bn(raw, 32, nil)
    let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
    guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
        BN_free(r)
        BN_free(s)
        return nil
    }
    var output: UnsafeMutablePointer<UInt8>? = nil
    let length = i2d_ECDSA_SIG(signature, &output)
    guard length > 0, let output else { return nil }
    defer { COpenSSL_free(output) }
    return Array(UnsafeBufferPointer(start: output, count: Int(length)))
}

func withMemoryBIO<T>(_ text: String, _ body: (OpaquePointer) -> T) throws -> T {
    let bytes = Array(text.utf8)
    return try bytes.withUnsafeBytes { buffer in
        guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else {
            throw CryptoError.openSSL("BIO_new_mem_buf")
        }
        defer { BIO_free(bio) }
        return body(bio)
    }
}

func writeMemoryBIO(_ body: (OpaquePointer) -> Int32) throws -> String {
    guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.openSSL("BIO_new") }
    defer { BIO_free(bio) }
    guard body(bio) == 1 else { throw CryptoError.openSSL("writing PEM") }
    var data: UnsafeMutablePointer<CChar>? = nil
    let length = COpenSSL_BIO_get_mem_data(bio, &data)
    guard length > 0, let data else { throw CryptoError.openSSL("reading PEM") }
    return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
}
