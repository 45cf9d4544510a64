#if canImport(Glibc)
    import Glibc
#endif

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// UUIDs to and from their 36-character text without Foundation's formatted scanning and
/// printing (measured: `UUID(uuidString:)` and `uuidString` were a twentieth of a 100-row list's
/// time, through `sscanf` and `snprintf`).
extension UUID {
    /// A new random (version 4) id from the C library's generator: Foundation's `UUID()` opens,
    /// reads and closes `/dev/urandom` for each one on Linux (measured: 2.5% of an intake's
    /// time), this is one call.
    public static func random() -> UUID {
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { arc4random_buf($0.baseAddress!, 16) }
        bytes.6 = (bytes.6 & 0x0F) | 0x40  // version 4
        bytes.8 = (bytes.8 & 0x3F) | 0x80  // RFC 9562 variant
        return UUID(uuid: bytes)
    }

    /// Parses `8-4-4-4-12` hex digits, either case; nil otherwise (what `UUID(uuidString:)` accepts).
    public init?(text: some StringProtocol) { self.init(utf8: text.utf8) }

    /// The same from the text's UTF-8 bytes. Inlinable, so that callers get it specialized for
    /// their buffer type (rows are read from their bytes).
    @inlinable
    public init?(utf8: some Sequence<UInt8>) {
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &value) { output -> Bool in
            var position = 0
            var digits = 0
            var high: UInt8 = 0
            for byte in utf8 {
                defer { position += 1 }
                if position == 8 || position == 13 || position == 18 || position == 23 {
                    guard byte == UInt8(ascii: "-") else { return false }
                    continue
                }
                guard position < 36 else { return false }
                let nibble: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte &- UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte &- UInt8(ascii: "a") &+ 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte &- UInt8(ascii: "A") &+ 10
                default: return false
                }
                if digits & 1 == 0 {
                    high = nibble
                } else {
                    output[digits >> 1] = high << 4 | nibble
                }
                digits += 1
            }
            return position == 36 && digits == 32
        }
        guard parsed else { return nil }
        self.init(uuid: value)
    }

    /// The 36-character text, lowercase (PostgreSQL's, the API's in paths and logs) or uppercase
    /// (`uuidString`'s, which JSON bodies carry).
    public func text(uppercase: Bool = false) -> String {
        let digits = uppercase ? UUID.upper : UUID.lower
        return withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { output in
                var index = 0
                for (position, byte) in bytes.enumerated() {
                    if position == 4 || position == 6 || position == 8 || position == 10 {
                        output[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    output[index] = digits[Int(byte >> 4)]
                    output[index + 1] = digits[Int(byte & 0xF)]
                    index += 2
                }
                return index
            }
        }
    }

    private static let lower = Array("0123456789abcdef".utf8)
    private static let upper = Array("0123456789ABCDEF".utf8)
}
