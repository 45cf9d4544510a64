import Testing

@testable import PierCrypto

/// RFC 7515, appendix A.3: the ES256 example.
enum RFC7515A3 {
    static let x = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"
    static let y = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
    static let d = "jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"
    static let token =
        "eyJhbGciOiJFUzI1NiJ9"
        + ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
        + ".DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"
    static var publicKey: P256PublicKey {
        get throws { try P256PublicKey(x: Base64.urlDecoded(x)!, y: Base64.urlDecoded(y)!) }
    }
}

@Suite struct JWSTests {
    @Test func verifiesTheRFC7515Example() throws {
        let jws = try JWS(compact: RFC7515A3.token)
        #expect(jws.header.alg == "ES256")
        #expect(String(decoding: jws.payload, as: UTF8.self).hasPrefix("{\"iss\":\"joe\",\r\n"))
        try jws.verify(with: RFC7515A3.publicKey)
    }

    @Test func privateKeyFromTheRFCSignsWhatItsPublicKeyVerifies() throws {
        let key = try P256PrivateKey(
            d: Base64.urlDecoded(RFC7515A3.d)!, x: Base64.urlDecoded(RFC7515A3.x)!,
            y: Base64.urlDecoded(RFC7515A3.y)!)
        #expect(Base64.urlEncoded(try key.publicKey.x) == RFC7515A3.x)
        let token = try JWS.sign(payload: Array("{\"iss\":\"joe\"}".utf8), header: JWSHeader(), key: key)
        try JWS(compact: token).verify(with: RFC7515A3.publicKey)
    }

    @Test func everySignatureBitFlipIsRejected() throws {
        let jws = try JWS(compact: RFC7515A3.token)
        let key = try RFC7515A3.publicKey
        for index in 0..<jws.signature.count {
            for bit in [0, 3, 7] {
                var signature = jws.signature
                signature[index] ^= UInt8(1 << bit)
                #expect(!key.isValidSignature(signature, for: jws.signingInput))
            }
        }
    }

    @Test func malformedTokensAreRefused() throws {
        let parts = RFC7515A3.token.split(separator: ".").map(String.init)
        let cases: [String] = [
            "", "a.b", "a.b.c.d", parts[0] + "." + parts[1],
            parts[0] + "." + parts[1] + "." + parts[2] + "=",  // padding
            "!!!." + parts[1] + "." + parts[2],
            Base64.urlEncoded(Array("not json".utf8)) + "." + parts[1] + "." + parts[2],
            Base64.urlEncoded(Array("{\"typ\":\"JWT\"}".utf8)) + "." + parts[1] + "." + parts[2],  // no alg
        ]
        for token in cases {
            #expect(throws: JWS.Failure.self, "\(token)") { try JWS(compact: token) }
        }
        #expect(throws: JWS.Failure.tooLarge) { try JWS(compact: String(repeating: "a", count: 9000)) }
    }

    @Test func wrongLengthSignaturesAndOtherAlgorithmsAreRefused() throws {
        let parts = RFC7515A3.token.split(separator: ".").map(String.init)
        let key = try RFC7515A3.publicKey
        let signature = Base64.urlDecoded(parts[2])!
        let short = try JWS(compact: parts[0] + "." + parts[1] + "." + Base64.urlEncoded(signature.prefix(63)))
        #expect(throws: JWS.Failure.badSignature) { try short.verify(with: key) }
        for alg in ["none", "HS256", "RS256", "ES384", "es256"] {
            let header = Base64.urlEncoded(Array("{\"alg\":\"\(alg)\"}".utf8))
            let jws = try JWS(compact: header + "." + parts[1] + "." + parts[2])
            #expect(throws: JWS.Failure.unsupportedAlgorithm(alg)) { try jws.verify(with: key) }
        }
    }

    @Test func pemAndJWKRoundTrips() throws {
        let key = try P256PrivateKey.generate()
        let pem = try key.pemRepresentation()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let again = try P256PrivateKey(pem: pem)
        #expect(try again.publicKey.x == key.publicKey.x)
        let jwk = JWK(key: try key.publicKey, kid: "k1")
        let decoded = try jwk.publicKey()
        let token = try JWS.sign(payload: [1, 2, 3], header: JWSHeader(kid: "k1"), key: key)
        try JWS(compact: token).verify(with: decoded)
        #expect(throws: CryptoError.self) {
            try P256PrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
        }
        // A point off the curve is refused.
        #expect(throws: CryptoError.self) {
            try P256PublicKey(x: [UInt8](repeating: 1, count: 32), y: [UInt8](repeating: 2, count: 32))
        }
    }

    @Test func anotherKeyDoesNotVerify() throws {
        let key = try P256PrivateKey.generate()
        let other = try P256PrivateKey.generate()
        let token = try JWS.sign(payload: [1], header: JWSHeader(), key: key)
        #expect(throws: JWS.Failure.badSignature) { try JWS(compact: token).verify(with: other.publicKey) }
    }
}
