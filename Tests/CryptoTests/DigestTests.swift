import Testing

@testable import PierCrypto

@Suite struct DigestTests {
    @Test func sha256MatchesFIPS180Vectors() {
        #expect(hexString(SHA256.hash("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hexString(SHA256.hash("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func hmacMatchesRFC4231() {
        // Test case 2.
        let mac = HMACSHA256.authenticate(Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8))
        #expect(hexString(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // Test case 1: 20 bytes of 0x0b, "Hi There".
        let mac1 = HMACSHA256.authenticate(Array("Hi There".utf8), key: [UInt8](repeating: 0x0b, count: 20))
        #expect(hexString(mac1) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
    }

    @Test func constantTimeCompare() {
        #expect(constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(constantTimeEquals([UInt8](), [UInt8]()))
    }

    @Test func randomBytesDiffer() {
        let a = SecureRandom.bytes(32)
        let b = SecureRandom.bytes(32)
        #expect(a.count == 32)
        #expect(a != b)
    }

    @Test func base64URLRoundTripsAndRejectsNonCanonical() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(($0 * 37 + 11) % 256) }
            let encoded = Base64.urlEncoded(bytes)
            #expect(!encoded.contains("=") && !encoded.contains("+") && !encoded.contains("/"))
            #expect(Base64.urlDecoded(encoded) == bytes)
            #expect(Base64.decoded(Base64.encoded(bytes)) == bytes)
        }
        #expect(Base64.urlEncoded(Array("any carnal pleas".utf8)) == "YW55IGNhcm5hbCBwbGVhcw")
        #expect(Base64.urlDecoded("YW55IGNhcm5hbCBwbGVhcw==") == nil)  // padding
        #expect(Base64.urlDecoded("YW55+GNh") == nil)  // standard alphabet
        #expect(Base64.urlDecoded("YR") == nil)  // trailing bits set: "YQ" is the only spelling of "a"
        #expect(Base64.urlDecoded("YQ") == Array("a".utf8))
        #expect(Base64.urlDecoded("Y") == nil)  // impossible length
    }
}
