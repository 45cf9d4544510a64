extension StringProtocol {
    /// The text without leading and trailing whitespace (Unicode's `White_Space`, newlines
    /// included) — what `trimmingCharacters(in: .whitespacesAndNewlines)` does, without
    /// needing full Foundation.
    public func trimmingWhitespace() -> String {
        // Most text has nothing to trim, and begins and ends in visible ASCII (header values):
        // answer without looking up Unicode properties or rebuilding it.
        let visible = utf8.withContiguousStorageIfAvailable { bytes in
            guard let head = bytes.first, let tail = bytes.last else { return false }
            return (0x21...0x7E).contains(head) && (0x21...0x7E).contains(tail)
        }
        if visible == true { return String(self) }
        let scalars = unicodeScalars
        if let head = scalars.first, let tail = scalars.last, !head.properties.isWhitespace, !tail.properties.isWhitespace {
            return String(self)
        }
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars[first...last])
        return String(result)
    }
}
