import PierHTML
import PierHTTP
import PierModels

/// A path under `/console/`, made of fixed segments and encoded values, with an encoded query:
/// what links and form actions point to.
struct ConsolePath: Sendable, Equatable {
    let value: String

    /// A console path already checked (``SignInScreens/next(_:)``).
    init(rawPath: String) { value = rawPath }

    /// `/console/` followed by `segments`, each percent-encoded.
    init(_ segments: String..., query: [(String, String)] = []) {
        var value = "/console"
        for segment in segments { value += "/" + Self.encode(segment) }
        if segments.isEmpty { value += "/" }
        let pairs = query.filter { !$0.1.isEmpty }
        if !pairs.isEmpty { value += "?" + Self.query(pairs) }
        self.value = value
    }

    /// `pairs` as a query string, each part percent-encoded (`q=crash&status=open`).
    static func query(_ pairs: [(String, String)]) -> String {
        pairs.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
    }

    /// `text` as one path segment or query component (RFC 3986).
    static func encode(_ text: String) -> String { PercentEncoding.component(text) }
}

extension HTML.Interpolation {
    /// A console path, escaped as an attribute's value.
    mutating func appendInterpolation(_ path: ConsolePath) { appendInterpolation(path.value) }
}
