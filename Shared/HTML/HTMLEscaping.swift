/// Text made safe for HTML: the one escaping of every page and mail Pier writes.
public enum HTMLEscaping {
    /// `value` as element text or a quoted attribute's value: `& < > " '` escaped, NUL replaced,
    /// and bidirectional overrides, embeddings, isolates and marks shown as visible marks
    /// (`[U+202E]`), so a name cannot reorder the text around it.
    public static func escape(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\u{0}": out += "\u{FFFD}"
            case "\u{202A}"..."\u{202E}", "\u{2066}"..."\u{2069}", "\u{200E}", "\u{200F}", "\u{061C}":
                out += "[U+" + String(scalar.value, radix: 16, uppercase: true) + "]"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
