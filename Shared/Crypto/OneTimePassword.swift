/// Time-based one-time passwords (RFC 6238 over RFC 4226's HOTP) as authenticator apps make
/// them: HMAC-SHA1, six digits, 30-second steps.
public struct TOTP: Sendable {
    public let secret: [UInt8]
    public static let digits = 6
    public static let period = 30

    /// - Parameter secret: the shared secret (20 random bytes for a new one: ``generate()``).
    public init(secret: [UInt8]) { self.secret = secret }

    /// A new secret of 160 bits, the size RFC 4226 recommends for HMAC-SHA1.
    public static func generate() -> TOTP { TOTP(secret: SecureRandom.bytes(20)) }

    /// The step `seconds` (since 1970) falls in.
    public static func step(at seconds: Int) -> Int { seconds / period }

    /// The code of `step` (RFC 4226 §5.3's dynamic truncation), zero-padded.
    public func code(step: Int) -> String {
        var counter = [UInt8](repeating: 0, count: 8)
        for index in 0..<8 { counter[7 - index] = UInt8(truncatingIfNeeded: UInt64(step) >> (8 * index)) }
        let mac = HMACSHA1.authenticate(counter, key: secret)
        let offset = Int(mac[19] & 0x0F)
        let value =
            (UInt32(mac[offset] & 0x7F) << 24) | (UInt32(mac[offset + 1]) << 16) | (UInt32(mac[offset + 2]) << 8)
            | UInt32(mac[offset + 3])
        let text = String(value % 1_000_000)
        return String(repeating: "0", count: Self.digits - text.count) + text
    }

    /// The step whose code `code` is, among the step of `seconds` and one on each side (a clock
    /// a little off, a code typed as the step turned), and later than `after` (each code is
    /// used once: the caller keeps the last step used). Every candidate is compared, in
    /// constant time, whichever matches.
    public func matchingStep(_ code: String, at seconds: Int, after used: Int?) -> Int? {
        let typed = Array(code.utf8)
        guard typed.count == Self.digits, typed.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        let now = Self.step(at: seconds)
        var found: Int?
        for step in (now - 1)...(now + 1) {
            let matches = constantTimeEquals(Array(self.code(step: step).utf8), typed)
            if matches && step > (used ?? Int.min) && found == nil { found = step }
        }
        return found
    }

    /// The `otpauth://` URI authenticator apps read (Google Authenticator's key URI format),
    /// usually from a QR code: `otpauth://totp/Issuer:account?secret=…&issuer=Issuer…`.
    public func uri(issuer: String, account: String) -> String {
        let label = Self.percentEncoded(issuer) + ":" + Self.percentEncoded(account)
        return "otpauth://totp/\(label)?secret=\(Base32.encode(secret))&issuer=\(Self.percentEncoded(issuer))"
            + "&algorithm=SHA1&digits=\(Self.digits)&period=\(Self.period)"
    }

    /// RFC 3986's unreserved characters as they are, every other byte of the UTF-8 `%XX`.
    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                output.append(byte)
            default:
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}

/// Base32 (RFC 4648 §6) without padding: how TOTP secrets are shown and typed.
public enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = ((buffer << 8) | UInt32(byte)) & 0xFFFF  // at most 12 bits wait
            bits += 8
            while bits >= 5 {
                output.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { output.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes of `text` (either case; spaces and padding ignored, as users type them), or nil
    /// for any other character.
    public static func decode(_ text: String) -> [UInt8]? {
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for character in text.utf8 where character != UInt8(ascii: " ") && character != UInt8(ascii: "=") {
            let upper = (0x61...0x7A).contains(character) ? character - 0x20 : character
            guard let value = alphabet.firstIndex(of: upper) else { return nil }
            buffer = ((buffer << 5) | UInt32(value)) & 0xFFFF
            bits += 5
            if bits >= 8 {
                output.append(UInt8((buffer >> UInt32(bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return output
    }
}
