import PierRuntime

/// An email address as entered (trimmed) and its normalized key (lowercased).
public struct EmailAddress: Sendable {
    public let address: String
    public let key: String

    /// nil unless `text` looks like `local@domain.tld` (at most 254 characters, no spaces).
    public init?(_ text: String) {
        let address = text.trimmingWhitespace()
        guard address.utf8.count <= 254, let at = address.lastIndex(of: "@") else { return nil }
        let local = address[..<at]
        let domain = address[address.index(after: at)...]
        guard !local.isEmpty, local.utf8.count <= 64, domain.contains("."), !domain.hasPrefix("."), !domain.hasSuffix("."),
            !address.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0 == "\u{7F}" }),
            !local.contains("@")
        else { return nil }
        self.address = address
        self.key = EmailAddress.key(address)
    }

    public static func key(_ text: String) -> String { text.trimmingWhitespace().lowercased() }
}
