import COpenSSL
import Foundation
import PierCrypto

/// A certificate authority made in the test, shaped like Apple's: root → intermediate with the
/// WWDR marker → leaf with the receipt-signing marker and a P-256 key. Each part can be made
/// wrong on purpose.
public final class TestCA: @unchecked Sendable {
    public struct Issued {
        public let certificate: Certificate
        public let key: OpaquePointer
        public var der: [UInt8] { certificate.der }
    }

    public let root: Issued
    public let intermediate: Issued
    public let leaf: Issued
    /// The leaf's key, to sign JWS with.
    public let signingKey: P256PrivateKey

    public struct Options {
        public var intermediateOID: Bool
        public var leafOID: Bool
        public var leafValidity: (from: Date, to: Date)
        /// The OCSP responders the leaf's and the intermediate's AIA extension name.
        public var leafOCSP: String?
        public var intermediateOCSP: String?

        public init(
            intermediateOID: Bool = true, leafOID: Bool = true,
            leafValidity: (from: Date, to: Date) = (
                Date().addingTimeInterval(-86_400 * 400), Date().addingTimeInterval(86_400 * 365)
            ), leafOCSP: String? = nil, intermediateOCSP: String? = nil
        ) {
            self.intermediateOID = intermediateOID
            self.leafOID = leafOID
            self.leafValidity = leafValidity
            self.leafOCSP = leafOCSP
            self.intermediateOCSP = intermediateOCSP
        }
    }

    public init(_ options: Options = Options()) throws {
        let now = Date()
        root = try Self.issue(
            "Test Root CA", issuer: nil, ca: true, oid: nil, from: now.addingTimeInterval(-86_400 * 500),
            to: now.addingTimeInterval(86_400 * 3650))
        intermediate = try Self.issue(
            "Test WWDR CA", issuer: root, ca: true, oid: options.intermediateOID ? "1.2.840.113635.100.6.2.1" : nil,
            from: now.addingTimeInterval(-86_400 * 500), to: now.addingTimeInterval(86_400 * 3650),
            ocsp: options.intermediateOCSP)
        leaf = try Self.issue(
            "Test App Store Signing", issuer: intermediate, ca: false,
            oid: options.leafOID ? "1.2.840.113635.100.6.11.1" : nil, from: options.leafValidity.from,
            to: options.leafValidity.to, ocsp: options.leafOCSP)
        signingKey = try P256PrivateKey(pem: try Self.privatePEM(leaf.key))
    }

    deinit {
        for issued in [root, intermediate, leaf] { EVP_PKEY_free(issued.key) }
    }

    /// The `x5c` header value: leaf, intermediate, root, each base64 DER.
    public var x5c: [String] { [leaf, intermediate, root].map { Data($0.der).base64EncodedString() } }

    public var rootPEM: String { root.pem }

    /// A compact JWS of `payload` signed by the leaf, with this CA's chain.
    public func sign(_ payload: [String: Any], alg: String = "ES256", x5c: [String]? = nil) throws -> String {
        let bytes = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return try JWS.sign(payload: Array(bytes), header: JWSHeader(alg: alg, x5c: x5c ?? self.x5c), key: signingKey)
    }

    /// A certificate named `name` issued by `issuer` (self-signed without one), with `oid`'s
    /// extension holding `value` (a DER NULL, as Apple's markers hold, unless given), for `key`
    /// (a new P-256 key unless given).
    static func issue(
        _ name: String, issuer: Issued?, ca: Bool, oid: String?, value: [UInt8] = [0x05, 0x00], from: Date, to: Date,
        ocsp: String? = nil, key given: OpaquePointer? = nil
    ) throws -> Issued {
        guard let key = given ?? COpenSSL_generate_p256(), let x509 = X509_new() else { throw TestCAError("allocation") }
        defer { X509_free(x509) }
        X509_set_version(x509, 2)
        ASN1_INTEGER_set(X509_get_serialNumber(x509), Int(UInt16.random(in: 1...UInt16.max)))
        ASN1_TIME_set(X509_getm_notBefore(x509), time_t(from.timeIntervalSince1970))
        ASN1_TIME_set(X509_getm_notAfter(x509), time_t(to.timeIntervalSince1970))
        X509_set_pubkey(x509, key)
        let subject = X509_get_subject_name(x509)
        X509_NAME_add_entry_by_txt(subject, "CN", 0x1001, name, -1, -1, 0)
        X509_NAME_add_entry_by_txt(subject, "O", 0x1001, "Pier Tests", -1, -1, 0)
        let issuerX509 = issuer.map { $0.certificate.x509Copy() } ?? nil
        defer { if let issuerX509 { X509_free(issuerX509) } }
        X509_set_issuer_name(x509, issuerX509.map { X509_get_subject_name($0) } ?? subject)

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuerX509 ?? x509, x509, nil, nil, 0)
        var constraints: [(Int32, String)] = [
            (NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE"),
            (NID_key_usage, ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature"),
            (NID_subject_key_identifier, "hash"),
        ]
        if let ocsp { constraints.append((NID_info_access, "OCSP;URI:\(ocsp)")) }
        for (nid, value) in constraints {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else { throw TestCAError("extension \(nid)") }
            X509_add_ext(x509, ext, -1)
            X509_EXTENSION_free(ext)
        }
        if let oid {
            let object = OBJ_txt2obj(oid, 1)
            let octets = ASN1_OCTET_STRING_new()
            ASN1_OCTET_STRING_set(octets, value, Int32(value.count))
            guard let ext = X509_EXTENSION_create_by_OBJ(nil, object, 0, octets) else { throw TestCAError("marker") }
            X509_add_ext(x509, ext, -1)
            X509_EXTENSION_free(ext)
            ASN1_OCTET_STRING_free(octets)
            ASN1_OBJECT_free(object)
        }
        guard X509_sign(x509, issuer?.key ?? key, EVP_sha256()) > 0 else { throw TestCAError("signing") }
        let length = i2d_X509(x509, nil)
        var der = [UInt8](repeating: 0, count: Int(length))
        _ = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_X509(x509, &cursor)
        }
        return Issued(certificate: try Certificate(der: der), key: key)
    }

    public static func privatePEM(_ key: OpaquePointer) throws -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw TestCAError("BIO") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else { throw TestCAError("PEM") }
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = COpenSSL_BIO_get_mem_data(bio, &data)
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }
}

extension TestCA.Issued {
    /// The serial number in hex, as OpenSSL's index files write it.
    public var serialHex: String {
        let x509 = certificate.x509Copy()
        defer { X509_free(x509) }
        let number = ASN1_INTEGER_to_BN(X509_get_serialNumber(x509), nil)
        defer { BN_free(number) }
        let hex = BN_bn2hex(number)
        defer { COpenSSL_free(hex) }
        return hex.map { String(cString: $0) } ?? ""
    }

    public var pem: String {
        "-----BEGIN CERTIFICATE-----\n" + Data(der).base64EncodedString(options: .lineLength64Characters)
            + "\n-----END CERTIFICATE-----\n"
    }
}

public struct TestCAError: Error {
    public let what: String
    public init(_ what: String) { self.what = what }
}

extension Certificate {
    /// A new `X509` parsed from the DER (the test owns and frees it).
    fileprivate func x509Copy() -> OpaquePointer? {
        der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_X509(nil, &cursor, buffer.count)
        }
    }
}
