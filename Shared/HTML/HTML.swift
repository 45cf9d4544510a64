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
/// encoded paths (the console's `ConsolePath`, an endpoint's path), never taken from what users
/// typed. The console's pages, the mails' HTML twins and the pages behind mailed links are made
/// of it.
public struct HTML: Sendable, ExpressibleByStringInterpolation {
    public private(set) var text: String

    public init(stringLiteral literal: StaticString) { text = literal.description }

    public init(stringInterpolation: Interpolation) { text = stringInterpolation.text }

    private init(trusted: String) { text = trusted }

    public static let empty = HTML(trusted: "")

    /// A QR code as Pier's auth service draws it (one `<svg>` of a rectangle and a path of
    /// squares), inline: kept only when it is made of nothing else, so no markup beyond those
    /// shapes can pass; else nothing (the key is shown as text beside it).
    public static func qrCode(_ svg: String) -> HTML {
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
    public static func text(_ value: String) -> HTML { HTML(trusted: escape(value)) }

    /// Escaped text whose line breaks stay line breaks (`<br>`): a reply, a message.
    public static func lines(_ value: String) -> HTML {
        join(value.split(separator: "\n", omittingEmptySubsequences: false).map { text(String($0)) }, separator: "<br>\n")
    }

    /// The fragments one after the other, `separator` between them.
    public static func join(_ parts: some Sequence<HTML>, separator: HTML = .empty) -> HTML {
        HTML(trusted: parts.map(\.text).joined(separator: separator.text))
    }

    public struct Interpolation: StringInterpolationProtocol {
        public typealias StringLiteralType = StaticString
        var text = ""

        public init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + interpolationCount * 16)
        }

        public mutating func appendLiteral(_ literal: StaticString) { text += literal.description }
        public mutating func appendInterpolation(_ value: String) { text += HTML.escape(value) }
        public mutating func appendInterpolation(_ value: String?) { text += HTML.escape(value ?? "") }
        public mutating func appendInterpolation(_ value: Int) { text += String(value) }
        /// To two decimals.
        public mutating func appendInterpolation(_ value: Double) {
            text += HTML.escape(String((value * 100).rounded() / 100))
        }
        public mutating func appendInterpolation(_ id: UUID) { text += id.uuidString.lowercased() }
        /// A status, a category, a role as the wire spells it (escaped: an unknown one came from
        /// outside): a form's value, a link's query. Shown to people, a value has words of its
        /// own (the console's `Labels`), so there is no unlabelled `\(status)`.
        public mutating func appendInterpolation(wire value: some OpenVocabulary) { text += HTML.escape(value.rawValue) }
        public mutating func appendInterpolation(_ html: HTML) { text += html.text }
        public mutating func appendInterpolation(_ parts: [HTML]) { text += parts.map(\.text).joined() }
    }

    /// `value` as text or a quoted attribute's value (``HTMLEscaping``).
    public static func escape(_ value: String) -> String { HTMLEscaping.escape(value) }
}
