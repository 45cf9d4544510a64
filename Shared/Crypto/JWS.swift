import PierJSON

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The protected header of a JWS (RFC 7515 §4.1): the fields Pier reads or writes.
public struct JWSHeader: Codable, Sendable, Equatable {
    /// The signature algorithm; Pier accepts only `ES256`.
    public var alg: String
    /// The key id that selects a key from a JWKS.
    public var kid: String?
    /// The media type, `at+jwt` for access tokens (RFC 9068).
    public var typ: String?
    /// A certificate chain, leaf first, each a base64 (not base64url) DER certificate.
    public var x5c: [String]?

    public init(alg: String = "ES256", kid: String? = nil, typ: String? = nil, x5c: [String]? = nil) {
        self.alg = alg
        self.kid = kid
        self.typ = typ
        self.x5c = x5c
    }
}

/// A JWS in compact serialization (RFC 7515 §7.1), split and decoded but not yet verified.
public struct JWS: Sendable {
    /// Why a compact JWS could not be read or verified. The description is safe to log.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case tooLarge
        case malformed(String)
        case unsupportedAlgorithm(String)
        case badSignature

        public var description: String {
            switch self {
            case .tooLarge: "the token is larger than allowed"
            case .malformed(let why): "the token is malformed: \(why)"
            case .unsupportedAlgorithm(let alg): "the algorithm \(alg) is not accepted"
            case .badSignature: "the signature does not verify"
            }
        }
    }

    /// The decoded protected header.
    public let header: JWSHeader
    /// The decoded payload bytes.
    public let payload: [UInt8]
    /// The decoded signature bytes.
    public let signature: [UInt8]
    /// `base64url(header) "." base64url(payload)`: the bytes the signature covers.
    public let signingInput: [UInt8]

    /// Splits and decodes a compact JWS.
    /// - Parameter maximumLength: tokens longer than this are refused before any decoding.
    public init(compact token: some StringProtocol, maximumLength: Int = 8192) throws(Failure) {
        let bytes = Array(token.utf8)
        guard bytes.count <= maximumLength else { throw .tooLarge }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("expected three dot-separated parts") }
        guard let headerBytes = Base64.urlDecoded(String(decoding: parts[0], as: UTF8.self)),
            let payload = Base64.urlDecoded(String(decoding: parts[1], as: UTF8.self)),
            let signature = Base64.urlDecoded(String(decoding: parts[2], as: UTF8.self))
        else { throw .malformed("a part is not base64url") }
        let header: JWSHeader
        do {
            header = try WireDecoder.decode(JWSHeader.self, from: headerBytes)
        } catch {
            throw .malformed("the header is not a JSON object with an alg")
        }
        self.header = header
        self.payload = payload
        self.signature = signature
        self.signingInput = Array(bytes[..<(parts[0].count + 1 + parts[1].count)])
    }

    /// Checks the algorithm (pinned to ES256, so `none` and HMAC-with-a-public-key confusion are
    /// refused before any key is used) and the signature.
    public func verify(with key: P256PublicKey) throws(Failure) {
        guard header.alg == "ES256" else { throw .unsupportedAlgorithm(header.alg) }
        guard signature.count == 64 else { throw .badSignature }
        guard key.isValidSignature(signature, for: signingInput) else { throw .badSignature }
    }

    /// Signs `payload` under `header` and returns the compact serialization.
    public static func sign(payload: [UInt8], header: JWSHeader, key: P256PrivateKey) throws -> String {
        try sign(payload: payload, encodedHeader: encode(header), key: key)
    }

    /// The header's segment of a compact JWS, for a signer that signs many payloads under one
    /// header and makes it once.
    public static func encode(_ header: JWSHeader) throws -> String {
        Base64.urlEncoded(try WireEncoder.encode(header))
    }

    /// Signs `payload` RS256 (the header's `alg` must say so).
    public static func sign(payload: [UInt8], header: JWSHeader, key: RSAPrivateKey) throws -> String {
        let signingInput = try encode(header) + "." + Base64.urlEncoded(payload)
        return signingInput + "." + Base64.urlEncoded(try key.signRS256(Array(signingInput.utf8)))
    }

    /// Signs `payload` under a header already encoded by ``encode(_:)``.
    public static func sign(payload: [UInt8], encodedHeader: String, key: P256PrivateKey) throws -> String {
        let signingInput = encodedHeader + "." + Base64.urlEncoded(payload)
        let signature = try key.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64.urlEncoded(signature)
    }
}
