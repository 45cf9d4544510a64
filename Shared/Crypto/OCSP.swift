import COpenSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What an OCSP responder (RFC 6960) said about one certificate, once its answer was verified.
public struct OCSPAnswer: Sendable, Equatable {
    public enum Status: Sendable, Equatable {
        case good
        /// `reason` is the CRL reason's name (`keyCompromise`, …) when the responder gave one.
        case revoked(at: Date, reason: String?)
        /// The responder does not know the certificate: no proof either way.
        case unknown
    }

    public let status: Status
    public let thisUpdate: Date
    /// Until when the answer may be relied on; nil when the responder did not say.
    public let nextUpdate: Date?
}

/// One certificate's OCSP question: the request to send to its responder and the check of the
/// answer. The transport (an HTTP POST of ``der`` as `application/ocsp-request`) is the caller's.
///
/// `@unchecked Sendable`: the certificate id is read only, after construction.
public final class OCSPRequest: @unchecked Sendable {
    private let id: OpaquePointer
    private let issuer: Certificate
    /// The DER request.
    public let der: [UInt8]
    /// The DER certificate id (issuer name and key hashes, serial): what answers are cached by.
    public let certificateID: [UInt8]

    /// Why an answer could not be used; safe to log and to show.
    public struct Failure: Error, CustomStringConvertible, Equatable {
        public let reason: String
        public var description: String { reason }
    }

    /// The question about `certificate`, issued by `issuer` (SHA-1 ids, what responders expect).
    public init(certificate: Certificate, issuer: Certificate) throws {
        guard let id = OCSP_cert_to_id(nil, certificate.x509, issuer.x509) else {
            throw CryptoError.openSSL("building an OCSP certificate id")
        }
        guard let request = OCSP_REQUEST_new(), let added = OCSP_CERTID_dup(id) else {
            OCSP_CERTID_free(id)
            throw CryptoError.openSSL("building an OCSP request")
        }
        defer { OCSP_REQUEST_free(request) }
        guard OCSP_request_add0_id(request, added) != nil else {
            OCSP_CERTID_free(added)
            OCSP_CERTID_free(id)
            throw CryptoError.openSSL("building an OCSP request")
        }
        self.id = id
        self.issuer = issuer
        der = encode { i2d_OCSP_REQUEST(request, $0) }
        certificateID = encode { i2d_OCSP_CERTID(id, $0) }
    }

    deinit { OCSP_CERTID_free(id) }

    /// Reads a responder's DER answer: it must be a successful response, signed by the issuer
    /// (or a responder the issuer delegated to) that chains to one of `roots`, current (five
    /// minutes of clock skew allowed), and about this certificate.
    public func answer(fromResponse response: [UInt8], roots: [Certificate]) throws(Failure) -> OCSPAnswer {
        let parsed: OpaquePointer? = response.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_OCSP_RESPONSE(nil, &cursor, buffer.count)
        }
        guard let parsed else {
            ERR_clear_error()
            throw Failure(reason: "the OCSP answer is not a DER OCSP response")
        }
        defer { OCSP_RESPONSE_free(parsed) }
        let responseStatus = OCSP_response_status(parsed)
        guard responseStatus == OCSP_RESPONSE_STATUS_SUCCESSFUL else {
            let text = OCSP_response_status_str(Int(responseStatus)).map { String(cString: $0) } ?? "\(responseStatus)"
            throw Failure(reason: "the OCSP responder answered \(text)")
        }
        guard let basic = OCSP_response_get1_basic(parsed) else {
            ERR_clear_error()
            throw Failure(reason: "the OCSP answer carries no basic response")
        }
        defer { OCSP_BASICRESP_free(basic) }
        guard let store = X509_STORE_new(), let certificates = OPENSSL_sk_new_null() else {
            throw Failure(reason: "could not allocate a certificate store")
        }
        defer {
            X509_STORE_free(store)
            OPENSSL_sk_free(certificates)
        }
        for root in roots where X509_STORE_add_cert(store, root.x509) != 1 { ERR_clear_error() }
        OPENSSL_sk_push(certificates, UnsafeRawPointer(issuer.x509))
        guard OCSP_basic_verify(basic, certificates, store, 0) == 1 else {
            ERR_clear_error()
            throw Failure(reason: "the OCSP answer's signature does not verify to the certificate's issuer")
        }
        var status: Int32 = -1
        var reason: Int32 = -1
        var revokedAt: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>? = nil
        var thisUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>? = nil
        var nextUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>? = nil
        guard OCSP_resp_find_status(basic, id, &status, &reason, &revokedAt, &thisUpdate, &nextUpdate) == 1,
            let thisUpdate, let thisDate = date(thisUpdate)
        else {
            ERR_clear_error()
            throw Failure(reason: "the OCSP answer does not speak of this certificate")
        }
        guard OCSP_check_validity(thisUpdate, nextUpdate, 300, -1) == 1 else {
            ERR_clear_error()
            throw Failure(reason: "the OCSP answer is not current (thisUpdate/nextUpdate)")
        }
        let next = nextUpdate.flatMap(date)
        switch status {
        case V_OCSP_CERTSTATUS_GOOD:
            return OCSPAnswer(status: .good, thisUpdate: thisDate, nextUpdate: next)
        case V_OCSP_CERTSTATUS_REVOKED:
            let name = reason >= 0 ? OCSP_crl_reason_str(Int(reason)).map { String(cString: $0) } : nil
            return OCSPAnswer(
                status: .revoked(at: revokedAt.flatMap(date) ?? thisDate, reason: name), thisUpdate: thisDate,
                nextUpdate: next)
        default:
            return OCSPAnswer(status: .unknown, thisUpdate: thisDate, nextUpdate: next)
        }
    }
}

extension Certificate {
    /// The OCSP responders its Authority Information Access extension names, in order.
    public var ocspResponders: [String] {
        guard let list = X509_get1_ocsp(x509) else { return [] }
        defer { X509_email_free(list) }
        return (0..<OPENSSL_sk_num(list)).compactMap { index in
            OPENSSL_sk_value(list, index).map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
        }
    }
}

private func encode(_ body: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8] {
    let length = body(nil)
    guard length > 0 else { return [] }
    var bytes = [UInt8](repeating: 0, count: Int(length))
    bytes.withUnsafeMutableBufferPointer { buffer in
        var cursor = buffer.baseAddress
        _ = body(&cursor)
    }
    return bytes
}

/// An ASN.1 time as a date; nil when OpenSSL cannot read it.
private func date(_ time: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>) -> Date? {
    var parts = tm()
    guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
    return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
}
