/// Splits a request target into its decoded path and query parameters.
enum URLTarget {
    static func parse(_ target: String) throws(HTTPError) -> (String, [(name: String, value: String)]) {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard let rawPath = parts.first, rawPath.hasPrefix("/") else {
            throw .badRequest("The request target must be an absolute path.")
        }
        guard let path = percentDecode(rawPath, plusIsSpace: false) else {
            throw .badRequest("The path has an invalid percent-encoding.")
        }
        var query: [(name: String, value: String)] = []
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") where !pair.isEmpty {
                let nameValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let name = percentDecode(nameValue[0], plusIsSpace: true),
                    let value = percentDecode(nameValue.count > 1 ? nameValue[1] : "", plusIsSpace: true)
                else { throw .badRequest("The query has an invalid percent-encoding.") }
                query.append((name, value))
            }
        }
        return (path, query)
    }

    /// Decodes `%XX` (and `+` in queries); nil on a bad escape or invalid UTF-8.
    static func percentDecode(_ text: Substring, plusIsSpace: Bool) -> String? {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "%")) || (plusIsSpace && bytes.contains(UInt8(ascii: "+"))) else {
            return String(text)
        }
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
