import Testing

@testable import PierCrypto

/// One-time passwords against RFC 4226 and RFC 6238's published values, Base32 against RFC 4648,
/// and sealed secrets against the GCM specification's AES-256 test cases.
@Suite struct OneTimePasswordTests {
    static let rfcSecret = Array("12345678901234567890".utf8)

    @Test func hotpMatchesRFC4226AppendixD() {
        let expected = ["755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871", "520489"]
        #expect((0..<10).map { TOTP(secret: Self.rfcSecret).code(step: $0) } == expected)
    }

    /// RFC 6238 Appendix B (SHA-1), as six digits: the eight-digit codes' last six.
    @Test func totpMatchesRFC6238AppendixB() {
        let totp = TOTP(secret: Self.rfcSecret)
        for (seconds, code) in [
            (59, "287082"), (1_111_111_109, "081804"), (1_111_111_111, "050471"), (1_234_567_890, "005924"),
            (2_000_000_000, "279037"), (20_000_000_000, "353130"),
        ] {
            #expect(totp.code(step: TOTP.step(at: seconds)) == code, "\(seconds)")
        }
    }

    @Test func aCodeMatchesItsStepAndOneOnEachSideOnceEach() {
        let totp = TOTP.generate()
        let now = 1_800_000_015
        let step = TOTP.step(at: now)
        #expect(totp.matchingStep(totp.code(step: step), at: now, after: nil) == step)
        #expect(totp.matchingStep(totp.code(step: step - 1), at: now, after: nil) == step - 1)
        #expect(totp.matchingStep(totp.code(step: step + 1), at: now, after: nil) == step + 1)
        // Two steps away: refused, either way.
        #expect(totp.matchingStep(totp.code(step: step - 2), at: now, after: nil) == nil)
        #expect(totp.matchingStep(totp.code(step: step + 2), at: now, after: nil) == nil)
        // Used: the same step, or one before the last used, is refused.
        #expect(totp.matchingStep(totp.code(step: step), at: now, after: step) == nil)
        #expect(totp.matchingStep(totp.code(step: step - 1), at: now, after: step) == nil)
        #expect(totp.matchingStep(totp.code(step: step + 1), at: now, after: step) == step + 1)
        for typed in ["", "12345", "1234567", "12345a", "１２３４５６", " 12345"] {
            #expect(totp.matchingStep(typed, at: now, after: nil) == nil, "\(typed)")
        }
    }

    @Test func theURIIsWhatAuthenticatorAppsRead() {
        let totp = TOTP(secret: Self.rfcSecret)
        #expect(
            totp.uri(issuer: "Notes & Co", account: "anna@example.com")
                == "otpauth://totp/Notes%20%26%20Co:anna%40example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
                + "&issuer=Notes%20%26%20Co&algorithm=SHA1&digits=6&period=30")
    }

    @Test func base32MatchesRFC4648() {
        for (plain, encoded) in [
            ("", ""), ("f", "MY"), ("fo", "MZXQ"), ("foo", "MZXW6"), ("foob", "MZXW6YQ"), ("fooba", "MZXW6YTB"),
            ("foobar", "MZXW6YTBOI"),
        ] {
            #expect(Base32.encode(Array(plain.utf8)) == encoded)
            #expect(Base32.decode(encoded) == Array(plain.utf8))
        }
        #expect(Base32.decode("mzxw 6ytb oi==") == Array("foobar".utf8))
        #expect(Base32.decode("MZXW1") == nil && Base32.decode("MZXW6!") == nil)
        let secret = TOTP.generate().secret
        #expect(Base32.decode(Base32.encode(secret)) == secret)
    }
}

@Suite struct SecretBoxTests {
    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map {
            UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
        }
    }

    /// The GCM specification's test cases 13 and 14 (AES-256, zero key and IV), as sealed values.
    @Test func opensTheSpecificationsTestCases() throws {
        let box = try SecretBox(key: [UInt8](repeating: 0, count: 32))
        let nonce = [UInt8](repeating: 0, count: 12)
        #expect(try box.open([1] + nonce + Self.bytes("530f8afbc74536b9a963b4f1c4cb738b"), context: []) == [])
        let sealed =
            [1] + nonce + Self.bytes("cea7403d4d606b6e074ec5d3baf39d18") + Self.bytes("d0d1c8a799996bf0265b98b5d48ab919")
        #expect(try box.open(sealed, context: []) == [UInt8](repeating: 0, count: 16))
    }

    @Test func aSealedSecretOpensOnlyWithItsKeyAndContext() throws {
        let box = try SecretBox(key: SecretBox.generateKey())
        let secret = Array("the shared secret".utf8)
        let sealed = try box.seal(secret, context: Array("user-1".utf8))
        #expect(try box.open(sealed, context: Array("user-1".utf8)) == secret)
        #expect(try box.seal(secret, context: Array("user-1".utf8)) != sealed)  // a fresh nonce each time
        #expect(throws: SecretBox.Failure.self) { try box.open(sealed, context: Array("user-2".utf8)) }
        #expect(throws: SecretBox.Failure.self) {
            try SecretBox(key: SecretBox.generateKey()).open(sealed, context: Array("user-1".utf8))
        }
        for index in sealed.indices {
            var changed = sealed
            changed[index] ^= 0x01
            #expect(throws: SecretBox.Failure.self, "byte \(index)") { try box.open(changed, context: Array("user-1".utf8)) }
        }
        #expect(throws: SecretBox.Failure.self) { try box.open(Array(sealed.prefix(28)), context: Array("user-1".utf8)) }
        #expect(throws: SecretBox.Failure.self) { try SecretBox(key: [1, 2, 3]) }
    }
}
