import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Encodes `Encodable` values to JSON bytes the way every response is written, without
/// Foundation's coder: the same output as `JSONEncoder` with sorted keys, unescaped slashes and
/// ISO 8601 dates (whole seconds), except that UUIDs are lowercase, as in tokens, paths, logs
/// and `Location` (one spelling everywhere), at a fraction of its cost (measured: its dictionaries,
/// hashing and date formatting were most of a 100-item list's time).
///
/// Values are gathered in a small tree (keys in arrays, no hashing), then written once into one
/// buffer that becomes the response body.
public enum WireEncoder {
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let node = try Node.make(value, path: [])
        var output: [UInt8] = []
        output.reserveCapacity(512)
        node.write(into: &output)
        return output
    }
}

/// A JSON value under construction; objects and arrays are boxes, so that containers handed
/// out by the encoder fill them later.
enum Node {
    case null
    case bool(Bool)
    /// Digits, written as they are.
    case number(String)
    case string(String)
    case object(ObjectBox)
    case array(ArrayBox)

    final class ObjectBox {
        var pairs: [(key: String, value: Node)] = []
        init() { pairs.reserveCapacity(16) }
    }

    final class ArrayBox {
        var items: [Node] = []
    }

    /// The node of `value`; `path` (where it sits, for errors and nested encoders) is only
    /// built when needed: most values are strings, numbers, dates and ids.
    static func make<T: Encodable>(_ value: T, path: @autoclosure () -> [any CodingKey]) throws -> Node {
        switch value {
        case let string as String: return .string(string)
        case let int as Int: return .number(String(int))
        case let bool as Bool: return .bool(bool)
        case let date as Date: return .string(CivilDate.iso8601(secondsSince1970: date.timeIntervalSince1970, fractionDigits: 0))
        case let uuid as UUID: return .string(uuid.text())
        case let double as Double: return try number(double, path: path())
        default:
            let encoder = TreeEncoder(codingPath: path())
            try value.encode(to: encoder)
            return encoder.root ?? .object(ObjectBox())
        }
    }

    static func number(_ value: Double, path: @autoclosure () -> [any CodingKey]) throws -> Node {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: path(), debugDescription: "\(value) is not valid JSON"))
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return .number(text)
    }

    func write(into output: inout [UInt8]) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let digits): output.append(contentsOf: digits.utf8)
        case .string(let text): Node.write(text, into: &output)
        case .array(let box):
            output.append(UInt8(ascii: "["))
            for (index, item) in box.items.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                item.write(into: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let box):
            output.append(UInt8(ascii: "{"))
            let pairs = box.pairs
            // Sorted keys, as before: the order of the keys' scalars (their UTF-8 order). Most
            // objects need a sort (declaration order); an index list spares moving the pairs.
            let sorted = !zip(pairs, pairs.dropFirst()).contains { !($0.key < $1.key) }
            let order = sorted ? nil : pairs.indices.sorted { pairs[$0].key < pairs[$1].key }
            for position in pairs.indices {
                let pair = pairs[order?[position] ?? position]
                if position > 0 { output.append(UInt8(ascii: ",")) }
                Node.write(pair.key, into: &output)
                output.append(UInt8(ascii: ":"))
                pair.value.write(into: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// A JSON string: quotes, backslashes and control characters escaped, nothing else.
    static func write(_ text: String, into output: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes in
            output.append(UInt8(ascii: "\""))
            // Most strings need no escape: copied whole.
            guard bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                output.append(contentsOf: bytes)
                output.append(UInt8(ascii: "\""))
                return
            }
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
                case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case 0x0A: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case 0x0D: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                case 0x08: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
                case 0x0C: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
                case 0..<0x20:
                    output.append(contentsOf: "\\u00".utf8)
                    output.append(hex[Int(byte >> 4)])
                    output.append(hex[Int(byte & 0xF)])
                default: output.append(byte)
                }
            }
            output.append(UInt8(ascii: "\""))
        }
    }
}

/// The `Encoder` that builds a ``Node``.
final class TreeEncoder: Encoder {
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var root: Node?

    init(codingPath: [any CodingKey]) { self.codingPath = codingPath }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .object(let box) = root { return KeyedEncodingContainer(KeyedTree(box: box, codingPath: codingPath)) }
        let box = Node.ObjectBox()
        root = .object(box)
        return KeyedEncodingContainer(KeyedTree(box: box, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array(let box) = root { return UnkeyedTree(box: box, codingPath: codingPath) }
        let box = Node.ArrayBox()
        root = .array(box)
        return UnkeyedTree(box: box, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleTree(encoder: self) }
}

struct KeyedTree<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: Node.ObjectBox
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws { box.pairs.append((key.stringValue, .null)) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { box.pairs.append((key.stringValue, .bool(value))) }
    mutating func encode(_ value: String, forKey key: Key) throws { box.pairs.append((key.stringValue, .string(value))) }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        box.pairs.append((key.stringValue, .number(String(value))))
    }
    mutating func encode(_ value: Int8, forKey key: Key) throws { box.pairs.append((key.stringValue, .number(String(value)))) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { box.pairs.append((key.stringValue, .number(String(value)))) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { box.pairs.append((key.stringValue, .number(String(value)))) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { box.pairs.append((key.stringValue, .number(String(value)))) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { box.pairs.append((key.stringValue, .number(String(value)))) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { box.pairs.append((key.stringValue, .number(String(value)))) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { box.pairs.append((key.stringValue, .number(String(value)))) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { box.pairs.append((key.stringValue, .number(String(value)))) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { box.pairs.append((key.stringValue, .number(String(value)))) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        box.pairs.append((key.stringValue, try Node.number(value, path: codingPath + [key])))
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        box.pairs.append((key.stringValue, try Node.number(Double(value), path: codingPath + [key])))
    }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        box.pairs.append((key.stringValue, try Node.make(value, path: codingPath + [key])))
    }

    // Absent optionals are left out, as Foundation does; these spare the protocol's generic
    // default its dynamic casts for the common types.
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws {
        if let value { box.pairs.append((key.stringValue, .string(value))) }
    }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws {
        if let value { box.pairs.append((key.stringValue, .number(String(value)))) }
    }
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws {
        if let value { box.pairs.append((key.stringValue, .bool(value))) }
    }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { box.pairs.append((key.stringValue, try Node.make(value, path: codingPath + [key]))) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = Node.ObjectBox()
        box.pairs.append((key.stringValue, .object(nested)))
        return KeyedEncodingContainer(KeyedTree<NestedKey>(box: nested, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = Node.ArrayBox()
        box.pairs.append((key.stringValue, .array(nested)))
        return UnkeyedTree(box: nested, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { superEncoder(forKey: Key(stringValue: "super")!) }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let nested = Node.ObjectBox()
        box.pairs.append((key.stringValue, .object(nested)))
        let encoder = TreeEncoder(codingPath: codingPath + [key])
        encoder.root = .object(nested)
        return encoder
    }
}

struct UnkeyedTree: UnkeyedEncodingContainer {
    let box: Node.ArrayBox
    let codingPath: [any CodingKey]
    var count: Int { box.items.count }

    private struct Index: CodingKey {
        var stringValue: String { String(intValue!) }
        var intValue: Int?
        init(_ index: Int) { intValue = index }
        init?(stringValue: String) { nil }
        init?(intValue: Int) { self.intValue = intValue }
    }

    mutating func encodeNil() throws { box.items.append(.null) }
    mutating func encode(_ value: String) throws { box.items.append(.string(value)) }
    mutating func encode(_ value: Int) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: Int8) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: Int16) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: Int32) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: Int64) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: UInt) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: UInt8) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: UInt16) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: UInt32) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: UInt64) throws { box.items.append(.number(String(value))) }
    mutating func encode(_ value: Bool) throws { box.items.append(.bool(value)) }
    mutating func encode(_ value: Double) throws { box.items.append(try Node.number(value, path: codingPath)) }
    mutating func encode(_ value: Float) throws { box.items.append(try Node.number(Double(value), path: codingPath)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        box.items.append(try Node.make(value, path: codingPath + [Index(box.items.count)]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let nested = Node.ObjectBox()
        box.items.append(.object(nested))
        return KeyedEncodingContainer(KeyedTree<NestedKey>(box: nested, codingPath: codingPath + [Index(count - 1)]))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = Node.ArrayBox()
        box.items.append(.array(nested))
        return UnkeyedTree(box: nested, codingPath: codingPath + [Index(count - 1)])
    }

    mutating func superEncoder() -> any Encoder {
        let nested = Node.ObjectBox()
        box.items.append(.object(nested))
        let encoder = TreeEncoder(codingPath: codingPath + [Index(count - 1)])
        encoder.root = .object(nested)
        return encoder
    }
}

struct SingleTree: SingleValueEncodingContainer {
    let encoder: TreeEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.root = .null }
    mutating func encode(_ value: Bool) throws { encoder.root = .bool(value) }
    mutating func encode(_ value: String) throws { encoder.root = .string(value) }
    mutating func encode(_ value: Int) throws { encoder.root = .number(String(value)) }
    mutating func encode(_ value: Int8) throws { encoder.root = .number(String(value)) }
    mutating func encode(_ value: Int16) throws { encoder.root = .number(String(value)) }
    mutating func encode(_ value: Int32) throws { encoder.root = .number(String(value)) }
    mutating func encode(_ value: Int64) throws { encoder.root = .number(String(value)) }
    mutating func encode(_ value: UInt) throws { encoder.root = .number(String(value)) }
    mutating func encode(_ value: UInt8) throws { encoder.root = .number(String(value)) }
    mutating func encode(_ value: UInt16) throws { encoder.root = .number(String(value)) }
    mutating func encode(_ value: UInt32) throws { encoder.root = .number(String(value)) }
    mutating func encode(_ value: UInt64) throws { encoder.root = .number(String(value)) }
    mutating func encode(_ value: Double) throws { encoder.root = try Node.number(value, path: codingPath) }
    mutating func encode(_ value: Float) throws { encoder.root = try Node.number(Double(value), path: codingPath) }
    mutating func encode<T: Encodable>(_ value: T) throws { encoder.root = try Node.make(value, path: codingPath) }
}
