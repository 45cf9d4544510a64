/// A JSON text parsed once (RFC 8259, strictly: no comments, no trailing commas, no leading
/// zeros, no lone surrogates, valid UTF-8 only), ready to be decoded into `Decodable` types
/// without Foundation's coder (``decode(_:)``).
///
/// Numbers are kept as their digits and read only when a field asks for a type, so an integer
/// is exact to its last digit and one that does not fit is named. The parse also notes whether
/// a string or a member name holds U+0000, which PostgreSQL's text cannot store.
public struct JSONDocument: Sendable {
    /// Why a text is not JSON, with the byte offset where the parse stopped.
    public struct SyntaxError: Error, CustomStringConvertible, Sendable {
        public let offset: Int
        public let reason: String
        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// Objects and arrays nest at most this deep (Foundation's limit is 512).
    public static let maximumDepth = 512

    let bytes: [UInt8]
    let root: JSONNode
    /// True when a string or a member name holds U+0000.
    public let containsNUL: Bool

    public init(parsing bytes: [UInt8]) throws(SyntaxError) {
        var parser = JSONParser(bytes: bytes)
        root = try parser.parseDocument()
        containsNUL = parser.sawNUL
        self.bytes = bytes
    }

    /// Decodes `T` from the document; failures are `DecodingError`s with the path of the field.
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try NodeDecoder.unbox(root, as: T.self, bytes: bytes, path: [])
    }

    /// Decodes `T`, refusing the top-level members its keys do not name.
    func decodeKnown<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try NodeDecoder.unboxKnown(root, as: T.self, bytes: bytes)
    }

    /// The member names of the top-level object, in order (repeated names as often as they
    /// appear); nil when the document is not an object.
    public var memberNames: [String]? {
        guard case .object(let keys, _) = root else { return nil }
        return keys
    }
}

/// One parsed value. Numbers are byte ranges of the text; objects keep their members in order.
enum JSONNode: Sendable {
    case null
    case bool(Bool)
    case number(Range<Int>)
    case string(String)
    case array([JSONNode])
    case object(keys: [String], values: [JSONNode])

    /// How a value is named in a type mismatch.
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

struct JSONParser {
    let bytes: [UInt8]
    var index = 0
    var depth = 0
    var sawNUL = false

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func parseDocument() throws(JSONDocument.SyntaxError) -> JSONNode {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected text after the value") }
        return value
    }

    private func fail(_ reason: String) -> JSONDocument.SyntaxError {
        JSONDocument.SyntaxError(offset: index, reason: reason)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(JSONDocument.SyntaxError) -> JSONNode {
        guard index < bytes.count else { throw fail("unexpected end of the text") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONDocument.SyntaxError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end of the text") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw fail("unexpected character")
        }
        index += count
    }

    /// Enters an object or array at its opening byte: true when it closes at once (`{}`, `[]`).
    private mutating func open(closing: UInt8) throws(JSONDocument.SyntaxError) -> Bool {
        depth += 1
        guard depth <= JSONDocument.maximumDepth else {
            throw fail("values nest deeper than \(JSONDocument.maximumDepth) levels")
        }
        index += 1
        skipWhitespace()
        return closes(closing)
    }

    /// After a member or an element: true at the closing byte (the container ends), false
    /// after a comma (another one follows).
    private mutating func next(closing: UInt8) throws(JSONDocument.SyntaxError) -> Bool {
        skipWhitespace()
        guard index < bytes.count else { throw fail("unexpected end of the text") }
        if bytes[index] == UInt8(ascii: ",") {
            index += 1
            skipWhitespace()
            return false
        }
        guard closes(closing) else { throw fail("expected ',' or '\(Character(Unicode.Scalar(closing)))'") }
        return true
    }

    private mutating func closes(_ closing: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == closing else { return false }
        index += 1
        depth -= 1
        return true
    }

    private mutating func parseObject() throws(JSONDocument.SyntaxError) -> JSONNode {
        var keys: [String] = []
        var values: [JSONNode] = []
        if try open(closing: UInt8(ascii: "}")) { return .object(keys: keys, values: values) }
        repeat {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            keys.append(try parseString())
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            values.append(try parseValue())
        } while try !next(closing: UInt8(ascii: "}"))
        return .object(keys: keys, values: values)
    }

    private mutating func parseArray() throws(JSONDocument.SyntaxError) -> JSONNode {
        var items: [JSONNode] = []
        if try open(closing: UInt8(ascii: "]")) { return .array(items) }
        repeat {
            items.append(try parseValue())
        } while try !next(closing: UInt8(ascii: "]"))
        return .array(items)
    }

    private mutating func parseNumber() throws(JSONDocument.SyntaxError) -> JSONNode {
        let start = index
        func isDigit(_ at: Int) -> Bool { at < bytes.count && bytes[at] >= 0x30 && bytes[at] <= 0x39 }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard isDigit(index) else { throw fail("expected a digit") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if isDigit(index) { throw fail("a number must not start with 0") }
        } else {
            while isDigit(index) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard isDigit(index) else { throw fail("expected a digit after '.'") }
            while isDigit(index) { index += 1 }
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard isDigit(index) else { throw fail("expected a digit in the exponent") }
            while isDigit(index) { index += 1 }
        }
        return .number(start..<index)
    }

    /// A string at `index` (its opening quote), unescaped and checked to be UTF-8.
    private mutating func parseString() throws(JSONDocument.SyntaxError) -> String {
        index += 1
        let start = index
        // The common case: no escape, read straight from the text.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                guard let text = String(validating: bytes[start..<index], as: UTF8.self) else {
                    throw fail("a string is not valid UTF-8")
                }
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw fail("a control character must be escaped in a string") }
            index += 1
        }
        var unescaped = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: unescaped, as: UTF8.self) else {
                    throw fail("a string is not valid UTF-8")
                }
                index += 1
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unexpected end of the text") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): unescaped.append(escape)
                case UInt8(ascii: "b"): unescaped.append(0x08)
                case UInt8(ascii: "f"): unescaped.append(0x0C)
                case UInt8(ascii: "n"): unescaped.append(0x0A)
                case UInt8(ascii: "r"): unescaped.append(0x0D)
                case UInt8(ascii: "t"): unescaped.append(0x09)
                case UInt8(ascii: "u"): try appendEscapedScalar(to: &unescaped)
                default:
                    index -= 1
                    throw fail("unknown escape")
                }
            default:
                guard byte >= 0x20 else { throw fail("a control character must be escaped in a string") }
                unescaped.append(byte)
                index += 1
            }
        }
        throw fail("unexpected end of the text in a string")
    }

    /// `\uXXXX` (after the `u`), with a following low surrogate when this is a high one.
    private mutating func appendEscapedScalar(to output: inout [UInt8]) throws(JSONDocument.SyntaxError) {
        var code = try hex4()
        if (0xD800...0xDBFF).contains(code) {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw fail("a high surrogate must be followed by a low one")
            }
            index += 2
            let low = try hex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw fail("a high surrogate must be followed by a low one") }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(code) {
            throw fail("a low surrogate without a high one")
        }
        if code == 0 { sawNUL = true }
        // Surrogates were handled above, so every value here is a scalar; the guard only keeps a
        // mistake from trapping.
        guard let scalar = Unicode.Scalar(code) else { throw fail("not a Unicode scalar") }
        output.append(contentsOf: String(Character(scalar)).utf8)
    }

    private mutating func hex4() throws(JSONDocument.SyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("unexpected end of the text in an escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail("expected a hexadecimal digit")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}

/// Decodes JSON bytes into `Decodable` values without Foundation's coder: one parse into a
/// ``JSONDocument``, then a walk over it. Throws ``JSONDocument/SyntaxError`` for a text that
/// is not JSON and `DecodingError` (with the field's path) for JSON of the wrong shape.
public enum WireDecoder {
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try JSONDocument(parsing: bytes).decode(T.self)
    }
}
