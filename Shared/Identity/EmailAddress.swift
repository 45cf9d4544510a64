import PierRuntime

/// An email address as entered (trimmed) and its normalized key (lowercased).
public struct EmailAddress: Sendable {
    public let address: String
    public let key: String

    /// nil unless `text` (trimmed) is an address in the grammar of HTML's `type=email` (the
    /// dot-atom of RFC 5322 without comments, quotes or display names): `local@domain`, the local
    /// part of letters, digits and ``localCharacters``, dots only between them; the domain of at
    /// least two labels of letters, digits and inner hyphens; at most 64 characters before the
    /// `@` and 254 in all. Letters and digits beyond ASCII are accepted (internationalized
    /// addresses). Nothing that a mail system reads as a second address (`a<b>@c`, `x <y@z>`,
    /// `a,b@c`, `"a@b"@c`) is an address.
    public init?(_ text: String) {
        let address = text.trimmingWhitespace()
        guard address.utf8.count <= 254, let at = address.firstIndex(of: "@") else { return nil }
        let local = address[..<at]
        let domain = address[address.index(after: at)...]
        guard local.utf8.count <= 64, Self.isDotAtom(local, allowing: Self.localCharacters) else { return nil }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2,
            labels.allSatisfy({ label in
                (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                    && label.unicodeScalars.allSatisfy { Self.isLetterOrDigit($0) || $0 == "-" }
            })
        else { return nil }
        self.address = address
        self.key = EmailAddress.key(address)
    }

    /// What the local part may hold besides letters and digits (RFC 5322's `atext`).
    static let localCharacters = Set("!#$%&'*+/=?^_`{|}~-".unicodeScalars)

    private static func isDotAtom(_ text: Substring, allowing extra: Set<Unicode.Scalar>) -> Bool {
        let atoms = text.split(separator: ".", omittingEmptySubsequences: false)
        return atoms.allSatisfy { atom in
            !atom.isEmpty && atom.unicodeScalars.allSatisfy { isLetterOrDigit($0) || extra.contains($0) }
        }
    }

    private static func isLetterOrDigit(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            return ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
        }
        let properties = scalar.properties
        return properties.isAlphabetic || properties.numericType == .decimal
    }

    public static func key(_ text: String) -> String { text.trimmingWhitespace().lowercased() }
}
