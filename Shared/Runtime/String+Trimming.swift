extension StringProtocol {
    /// The text without leading and trailing whitespace (Unicode's `White_Space`, newlines
    /// included) — what `trimmingCharacters(in: .whitespacesAndNewlines)` does, without
    /// needing full Foundation.
    public func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        // Most text has nothing to trim: answer without rebuilding it.
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
