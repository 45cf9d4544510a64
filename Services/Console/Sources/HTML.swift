import PierHTTP
import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A fragment of HTML that is safe by construction: its markup comes only from string literals
/// in this source (`StaticString`: nothing read at run time can become markup), and every value
/// interpolated into it is escaped for text and quoted attributes alike (`& < > " '`), with
/// bidirectional controls shown as visible marks so a name cannot reorder what is around it.
/// Fragments nest (`\(otherHTML)`); there is no way to append a raw `String`.
///
/// Templates quote every attribute (`href="\(path)"`); URLs in them are built from ids and
/// encoded paths by ``ConsolePath``, never taken from what users typed.
struct HTML: Sendable, ExpressibleByStringInterpolation {
    private(set) var text: String

    init(stringLiteral literal: StaticString) { text = literal.description }

    init(stringInterpolation: Interpolation) { text = stringInterpolation.text }

    private init(trusted: String) { text = trusted }

    static let empty = HTML(trusted: "")

    /// A QR code as Pier's auth service draws it (one `<svg>` of a rectangle and a path of
    /// squares), inline: kept only when it is made of nothing else, so no markup beyond those
    /// shapes can pass; else nothing (the key is shown as text beside it).
    static func qrCode(_ svg: String) -> HTML {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 <>/=\"#:.-")
        let elements = svg.split(separator: "<").map { $0.prefix { $0 != " " && $0 != ">" } }
        guard svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\" "), svg.hasSuffix("</svg>"),
            svg.allSatisfy(allowed.contains),
            elements.allSatisfy({ ["svg", "rect", "path", "/svg", "/rect", "/path"].contains(String($0)) }),
            !svg.lowercased().contains(" on"), !svg.contains("href")
        else { return .empty }
        return HTML(trusted: svg)
    }

    /// Escaped text (for the rare fragment that is only a value).
    static func text(_ value: String) -> HTML { HTML(trusted: escape(value)) }

    /// The fragments one after the other.
    static func join(_ parts: some Sequence<HTML>) -> HTML { HTML(trusted: parts.map(\.text).joined()) }

    struct Interpolation: StringInterpolationProtocol {
        typealias StringLiteralType = StaticString
        var text = ""

        init(literalCapacity: Int, interpolationCount: Int) { text.reserveCapacity(literalCapacity + interpolationCount * 16) }

        mutating func appendLiteral(_ literal: StaticString) { text += literal.description }
        mutating func appendInterpolation(_ value: String) { text += HTML.escape(value) }
        mutating func appendInterpolation(_ value: String?) { text += HTML.escape(value ?? "") }
        mutating func appendInterpolation(_ value: Int) { text += String(value) }
        /// To two decimals.
        mutating func appendInterpolation(_ value: Double) { text += HTML.escape(String((value * 100).rounded() / 100)) }
        mutating func appendInterpolation(_ id: UUID) { text += id.uuidString.lowercased() }
        /// A status, a category, a role: as the wire spells it (escaped: an unknown one came from outside).
        mutating func appendInterpolation(_ value: some OpenVocabulary) { text += HTML.escape(value.rawValue) }
        mutating func appendInterpolation(_ value: (some OpenVocabulary)?) { text += HTML.escape(value?.rawValue ?? "") }
        mutating func appendInterpolation(_ html: HTML) { text += html.text }
        mutating func appendInterpolation(_ path: ConsolePath) { text += HTML.escape(path.value) }
        mutating func appendInterpolation(_ parts: [HTML]) { text += parts.map(\.text).joined() }
    }

    /// `value` as text or a quoted attribute's value (``HTMLEscaping``).
    static func escape(_ value: String) -> String { HTMLEscaping.escape(value) }
}

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
        if !pairs.isEmpty { value += "?" + pairs.map { Self.encode($0.0) + "=" + Self.encode($0.1) }.joined(separator: "&") }
        self.value = value
    }

    static func encode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
