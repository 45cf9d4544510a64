/// Splits a request target into its decoded path and query parameters.
public enum URLTarget {
    /// The decoded path, the query parameters, and the target with its path normalized (what a
    /// proxy forwards).
    ///
    /// Dot segments are removed before anything routes on the path (RFC 3986 §5.2.4), so
    /// `/feedback/../metrics` is `/metrics` here and upstream alike. Encodings whose meaning
    /// differs between servers are refused: an encoded `/` or `\` (one segment or two?), an
    /// encoded dot segment (`%2e%2e`), an encoded NUL.
    static func parse(_ target: String) throws(HTTPError) -> (
        path: String, query: [(name: String, value: String)], target: String
    ) {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard let rawPath = parts.first, rawPath.hasPrefix("/") else {
            throw .badRequest("The request target must be an absolute path.")
        }
        let normalized = try normalize(rawPath)
        guard let path = percentDecode(normalized[...], plusIsSpace: false) else {
            throw .badRequest("The path has an invalid percent-encoding.")
        }
        let normalizedTarget = parts.count == 2 ? normalized + "?" + parts[1] : normalized
        let query = parts.count == 2 ? try pairs(parts[1], what: "query") : []
        return (path, query, normalizedTarget)
    }

    /// `name=value&…` pairs, percent-decoded (`+` is a space): a query, or a form body
    /// (`application/x-www-form-urlencoded`). `what` names it in the refusal.
    public static func pairs(_ text: Substring, what: String) throws(HTTPError) -> [(name: String, value: String)] {
        var pairs: [(name: String, value: String)] = []
        for pair in text.split(separator: "&") where !pair.isEmpty {
            let nameValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = percentDecode(nameValue[0], plusIsSpace: true),
                let value = percentDecode(nameValue.count > 1 ? nameValue[1] : "", plusIsSpace: true)
            else { throw .badRequest("The \(what) has an invalid percent-encoding.") }
            // U+0000 cannot be stored or bound (libpq would cut the text there).
            if name.utf8.contains(0) || value.utf8.contains(0) {
                throw .badRequest("The \(what) has an encoded NUL (%00).")
            }
            pairs.append((name, value))
        }
        return pairs
    }

    /// The raw path with its dot segments removed; refuses ambiguous encodings.
    static func normalize(_ rawPath: Substring) throws(HTTPError) -> String {
        // Most paths have nothing to remove or refuse: no escape, no segment that is `.` or `..`
        // (`/.well-known/` is plain).
        var plain = true
        var segment = 0  // bytes of the current segment, while all of them are dots (else 3)
        for byte in rawPath.utf8 {
            if byte == UInt8(ascii: "%") {
                plain = false
                break
            }
            if byte == UInt8(ascii: "/") {
                if segment == 1 || segment == 2 {
                    plain = false
                    break
                }
                segment = 0
            } else {
                segment = byte == UInt8(ascii: ".") && segment < 3 ? segment + 1 : 3
            }
        }
        if segment == 1 || segment == 2 { plain = false }
        if plain { return String(rawPath) }
        let segments = rawPath.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        var output: [Substring] = []
        for (index, segment) in segments.enumerated() {
            if segment.utf8.contains(UInt8(ascii: "%")) {
                let lowered = segment.lowercased()
                if lowered.contains("%2f") || lowered.contains("%5c") || lowered.contains("%00") {
                    throw .badRequest("The path has an encoded slash, backslash or NUL, which servers read differently.")
                }
                let decoded = percentDecode(segment, plusIsSpace: false)
                if decoded == "." || decoded == ".." {
                    throw .badRequest("The path has an encoded dot segment, which servers read differently.")
                }
            }
            let last = index == segments.count - 1
            switch segment {
            case ".":
                if last { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if last { output.append("") }
            default:
                output.append(segment)
            }
        }
        return "/" + output.joined(separator: "/")
    }

    /// Decodes `%XX` (and `+` in queries); nil on a bad escape or invalid UTF-8.
    static func percentDecode(_ text: Substring, plusIsSpace: Bool) -> String? {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusIsSpace && $0 == UInt8(ascii: "+")) }) else {
            return String(text)
        }
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 65...70: c - 55
            case 97...102: c - 87
            default: nil
            }
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) else {
                    return nil
                }
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        return String(validating: output, as: UTF8.self)
    }
}
