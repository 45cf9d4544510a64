import COpenSSL

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// An X.509 certificate, parsed by OpenSSL.
///
/// `@unchecked Sendable`: immutable after parsing; OpenSSL 3 reads one `X509` from many threads.
public final class Certificate: @unchecked Sendable {
    let x509: OpaquePointer
    /// The DER encoding the certificate was read from.
    public let der: [UInt8]

    /// Reads a DER certificate (an `x5c` entry, once base64-decoded). Trailing bytes are refused.
    public init(der: [UInt8]) throws {
        var cursor: UnsafePointer<UInt8>? = nil
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            cursor = buffer.baseAddress
            let x509 = d2i_X509(nil, &cursor, buffer.count)
            let consumed = cursor.map { $0 - buffer.baseAddress! } ?? 0
            if let x509, consumed != buffer.count {
                X509_free(x509)
                return nil
            }
            return x509
        }
        guard let parsed else { throw CryptoError.openSSL("reading a DER certificate") }
        self.x509 = parsed
        self.der = der
    }

    /// Reads the first certificate of a PEM text.
    public convenience init(pem: String) throws {
        let x509 = try withMemoryBIO(pem) { bio in PEM_read_bio_X509(bio, nil, nil, nil) }
        guard let x509 else { throw CryptoError.openSSL("reading a PEM certificate") }
        defer { X509_free(x509) }
        try self.init(copying: x509)
    }

    /// Every certificate of a PEM bundle, in order.
    public static func all(pem: String) throws -> [Certificate] {
        let marker = "-----END CERTIFICATE-----"
        return try pem.split(separator: marker, omittingEmptySubsequences: true)
            .filter { $0.contains("-----BEGIN CERTIFICATE-----") }
            .map { try Certificate(pem: String($0) + marker) }
    }

    /// A certificate of OpenSSL's own (a built chain's member), through its DER encoding.
    convenience init(copying x509: OpaquePointer) throws {
        let length = i2d_X509(x509, nil)
        guard length > 0 else { throw CryptoError.openSSL("encoding a certificate") }
        var der = [UInt8](repeating: 0, count: Int(length))
        _ = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_X509(x509, &cursor)
        }
        try self.init(der: der)
    }

    deinit { X509_free(x509) }

    /// True when the certificate carries an extension with this dotted object identifier.
    public func hasExtension(oid: String) -> Bool {
        guard let object = OBJ_txt2obj(oid, 1) else {
            ERR_clear_error()
            return false
        }
        defer { ASN1_OBJECT_free(object) }
        return X509_get_ext_by_OBJ(x509, object, -1) >= 0
    }

    /// The value (the DER its extension's octet string holds) of the extension with this dotted
    /// object identifier; nil when there is none.
    public func extensionValue(oid: String) -> [UInt8]? {
        guard let object = OBJ_txt2obj(oid, 1) else {
            ERR_clear_error()
            return nil
        }
        defer { ASN1_OBJECT_free(object) }
        let index = X509_get_ext_by_OBJ(x509, object, -1)
        guard index >= 0, let ext = X509_get_ext(x509, index), let data = X509_EXTENSION_get_data(ext),
            let bytes = ASN1_STRING_get0_data(data)
        else { return nil }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(data))))
    }

    /// The subject public key, when it is a P-256 key.
    public func p256PublicKey() throws -> P256PublicKey {
        guard let pkey = X509_get_pubkey(x509) else { throw CryptoError.openSSL("reading a certificate's key") }
        return try P256PublicKey(taking: pkey)
    }
}

/// Verifies certificate chains against a fixed set of trusted roots with OpenSSL's own path
/// validation (signatures, validity periods, CA and path-length constraints, key usage).
public struct CertificateChainVerifier: Sendable {
    /// Why a chain was refused. The description is safe to show to a client.
    public struct Failure: Error, CustomStringConvertible, Equatable {
        public let reason: String
        public var description: String { reason }
    }

    public let roots: [Certificate]

    public init(roots: [Certificate]) { self.roots = roots }

    /// Checks that `leaf` chains through `intermediates` to one of the roots, as of `date`, and
    /// returns the chain OpenSSL built: the leaf first, the trusted root last.
    @discardableResult
    public func verify(leaf: Certificate, intermediates: [Certificate], at date: Date) throws(Failure) -> [Certificate] {
        guard let store = X509_STORE_new() else { throw Failure(reason: "could not allocate a certificate store") }
        defer { X509_STORE_free(store) }
        for root in roots where X509_STORE_add_cert(store, root.x509) != 1 {
            ERR_clear_error()
        }
        guard let untrusted = OPENSSL_sk_new_null() else { throw Failure(reason: "could not allocate a certificate stack") }
        defer { OPENSSL_sk_free(untrusted) }
        for certificate in intermediates {
            OPENSSL_sk_push(untrusted, UnsafeRawPointer(certificate.x509))
        }
        guard let context = X509_STORE_CTX_new() else { throw Failure(reason: "could not allocate a verification context") }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, leaf.x509, untrusted) == 1 else {
            ERR_clear_error()
            throw Failure(reason: "could not start the chain verification")
        }
        // `time_t(_:)` would trap on a date beyond its range: such a date is a refusal.
        guard let time = time_t(exactly: date.timeIntervalSince1970.rounded(.down)) else {
            throw Failure(reason: "the date to verify the chain at is out of range")
        }
        X509_STORE_CTX_set_time(context, 0, time)
        let verified = X509_verify_cert(context)
        ERR_clear_error()
        guard verified == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            let text = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
            switch code {
            case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT,
                X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
                throw Failure(reason: "the chain does not lead to a trusted root (\(text))")
            default:
                throw Failure(reason: "the certificate chain does not validate: \(text)")
            }
        }
        guard let built = X509_STORE_CTX_get0_chain(context) else { throw Failure(reason: "no chain was built") }
        var chain: [Certificate] = []
        for index in 0..<OPENSSL_sk_num(built) {
            guard let x509 = OPENSSL_sk_value(built, index), let certificate = try? Certificate(copying: OpaquePointer(x509))
            else { throw Failure(reason: "could not read the built chain") }
            chain.append(certificate)
        }
        return chain
    }
}
