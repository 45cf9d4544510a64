/// Base64 in its two alphabets: URL-safe without padding (JWS, RFC 7515 §2) and the standard one
/// (PEM bodies, `x5c` certificates, PHC strings without padding).
public enum Base64 {
    private static let standardAlphabet = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let standardTable = table(standardAlphabet)
    private static let urlTable = table(urlAlphabet)

    private static func table(_ alphabet: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = UInt8(index) }
        return table
    }

    /// Encodes bytes as base64url without padding.
    public static func urlEncoded(_ bytes: some Collection<UInt8>) -> String {
        encode(Array(bytes), alphabet: urlAlphabet, pad: false)
    }

    /// Decodes base64url without padding; nil on any character outside the alphabet, padding,
    /// an impossible length or non-zero trailing bits (so every value has one spelling only).
    public static func urlDecoded(_ string: some StringProtocol) -> [UInt8]? {
        decode(Array(string.utf8), table: urlTable)
    }

    /// Encodes bytes in the standard alphabet, padded when `padding` is true.
    public static func encoded(_ bytes: some Collection<UInt8>, padding: Bool = true) -> String {
        encode(Array(bytes), alphabet: standardAlphabet, pad: padding)
    }

    /// Decodes the standard alphabet, with or without padding.
    public static func decoded(_ string: some StringProtocol) -> [UInt8]? {
        var characters = Array(string.utf8)
        if characters.count % 4 == 0 {
            while characters.last == UInt8(ascii: "=") { characters.removeLast() }
        }
        return decode(characters, table: standardTable)
    }

    private static func encode(_ bytes: [UInt8], alphabet: [UInt8], pad: Bool) -> String {
        var output = [UInt8]()
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output.append(alphabet[Int(value >> 18 & 63)])
            output.append(alphabet[Int(value >> 12 & 63)])
            output.append(alphabet[Int(value >> 6 & 63)])
            output.append(alphabet[Int(value & 63)])
            index += 3
        }
        let rest = bytes.count - index
        if rest == 1 {
            let value = UInt32(bytes[index]) << 16
            output.append(alphabet[Int(value >> 18 & 63)])
            output.append(alphabet[Int(value >> 12 & 63)])
            if pad { output.append(contentsOf: "==".utf8) }
        } else if rest == 2 {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            output.append(alphabet[Int(value >> 18 & 63)])
            output.append(alphabet[Int(value >> 12 & 63)])
            output.append(alphabet[Int(value >> 6 & 63)])
            if pad { output.append(UInt8(ascii: "=")) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func decode(_ characters: [UInt8], table: [UInt8]) -> [UInt8]? {
        if characters.count % 4 == 1 { return nil }
        var output = [UInt8]()
        output.reserveCapacity(characters.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for character in characters {
            let value = table[Int(character)]
            if value == 0xFF { return nil }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        // Leftover bits must be zero: otherwise two strings would decode to the same bytes.
        if bits > 0 && buffer & ((1 << UInt32(bits)) - 1) != 0 { return nil }
        return output
    }
}
