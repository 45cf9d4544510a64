import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Decodes `Decodable` values from a parsed ``JSONDocument``, failing the way Foundation's
/// `JSONDecoder` does (`keyNotFound`, `valueNotFound`, `typeMismatch`, `dataCorrupted`, each with
/// the field's path), with three differences that Pier wants: dates are strict ISO 8601
/// (`CivilDate.parse`), an integer that does not fit its type is named with its range, and a
/// duplicated member name takes its last value.
struct NodeDecoder: Decoder {
    let node: JSONNode
    let bytes: [UInt8]
    let codingPath: [any CodingKey]
    /// Refuse the members the type's keys do not name (a client's body, at its top level).
    var knownMembersOnly = false
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// The members of a body that its type does not read (``knownMembersOnly``).
    struct UnknownMembers: Error {
        let names: [String]
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let keys, let values) = node else {
            throw Self.mismatch([String: Any].self, node, codingPath)
        }
        if knownMembersOnly {
            // The type's own keys say what it reads (a synthesized `CodingKeys` knows its cases
            // alone): a member none of them names is a client's typo, not data to drop.
            let unknown = Set(keys.filter { Key(stringValue: $0) == nil })
            if !unknown.isEmpty { throw UnknownMembers(names: unknown.sorted()) }
        }
        return KeyedDecodingContainer(ObjectContainer(keys: keys, values: values, bytes: bytes, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = node else { throw Self.mismatch([Any].self, node, codingPath) }
        return ArrayContainer(items: items, bytes: bytes, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        ValueContainer(node: node, bytes: bytes, codingPath: codingPath)
    }

    // MARK: - Values

    /// `node` as `T`: the standard library's scalars, dates and strings read here, everything
    /// else through its own `init(from:)`.
    static func unbox<T: Decodable>(_ node: JSONNode, as type: T.Type, bytes: [UInt8], path: [any CodingKey]) throws -> T {
        if T.self == String.self {
            guard case .string(let text) = node else { throw mismatch(T.self, node, path) }
            return text as! T
        }
        if T.self == Int.self { return try integer(Int.self, node, bytes, path) as! T }
        if T.self == Bool.self {
            guard case .bool(let value) = node else { throw mismatch(T.self, node, path) }
            return value as! T
        }
        if T.self == Double.self { return try double(node, bytes, path) as! T }
        if T.self == Date.self {
            guard case .string(let text) = node else { throw mismatch(T.self, node, path) }
            guard let seconds = CivilDate.parse(text) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: path, debugDescription: "must be an ISO 8601 date-time, such as 2026-11-30T12:00:00Z"))
            }
            return Date(timeIntervalSince1970: seconds) as! T
        }
        if T.self == Int64.self { return try integer(Int64.self, node, bytes, path) as! T }
        if T.self == Int32.self { return try integer(Int32.self, node, bytes, path) as! T }
        if T.self == Int16.self { return try integer(Int16.self, node, bytes, path) as! T }
        if T.self == Int8.self { return try integer(Int8.self, node, bytes, path) as! T }
        if T.self == UInt.self { return try integer(UInt.self, node, bytes, path) as! T }
        if T.self == UInt64.self { return try integer(UInt64.self, node, bytes, path) as! T }
        if T.self == UInt32.self { return try integer(UInt32.self, node, bytes, path) as! T }
        if T.self == UInt16.self { return try integer(UInt16.self, node, bytes, path) as! T }
        if T.self == UInt8.self { return try integer(UInt8.self, node, bytes, path) as! T }
        if T.self == Float.self {
            let value = try double(node, bytes, path)
            guard let float = Float(exactly: value) ?? (abs(value) <= Double(Float.greatestFiniteMagnitude) ? Float(value) : nil)
            else {
                throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "must be a number that fits a Float"))
            }
            return float as! T
        }
        return try T(from: NodeDecoder(node: node, bytes: bytes, codingPath: path))
    }

    /// `node` as `T`, refusing top-level members `T`'s keys do not name (``UnknownMembers``).
    static func unboxKnown<T: Decodable>(_ node: JSONNode, as type: T.Type, bytes: [UInt8]) throws -> T {
        guard case .object = node else { return try unbox(node, as: T.self, bytes: bytes, path: []) }
        return try T(from: NodeDecoder(node: node, bytes: bytes, codingPath: [], knownMembersOnly: true))
    }

    /// An integer of type `I`: digits without a fraction, or a fraction or exponent that is
    /// still a whole number in range (`2.0`, `1e3`) and within ±2^53, where doubles are exact.
    static func integer<I: FixedWidthInteger>(_ type: I.Type, _ node: JSONNode, _ bytes: [UInt8], _ path: [any CodingKey]) throws
        -> I
    {
        guard case .number(let range) = node else { throw mismatch(I.self, node, path) }
        let text = bytes[range]
        if let value = parseInteger(I.self, text) { return value }
        // A fraction or an exponent is read as a Double: only where a Double is exact.
        if text.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }),
            let double = Double(String(decoding: text, as: UTF8.self)), abs(double) <= 9_007_199_254_740_992,
            let value = I(exactly: double)
        {
            return value
        }
        let expected =
            I.bitWidth >= 64 && I.isSigned ? "must be an integer" : "must be an integer from \(I.min) to \(I.max)"
        throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: expected))
    }

    /// Plain decimal digits with an optional minus sign; nil on overflow or anything else.
    private static func parseInteger<I: FixedWidthInteger>(_ type: I.Type, _ digits: ArraySlice<UInt8>) -> I? {
        var rest = digits[...]
        let negative = rest.first == UInt8(ascii: "-")
        if negative {
            guard I.isSigned else { return nil }
            rest = rest.dropFirst()
        }
        guard !rest.isEmpty else { return nil }
        var value: I = 0
        for byte in rest {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            let digit = I(byte - 0x30)
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) =
                negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !overflow1, !overflow2 else { return nil }
            value = next
        }
        return value
    }

    static func double(_ node: JSONNode, _ bytes: [UInt8], _ path: [any CodingKey]) throws -> Double {
        guard case .number(let range) = node else { throw mismatch(Double.self, node, path) }
        guard let value = Double(String(decoding: bytes[range], as: UTF8.self)), value.isFinite else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "must be a number that fits a Double"))
        }
        return value
    }

    /// A value of the wrong kind; null is reported as a missing value, as Foundation does.
    static func mismatch(_ type: Any.Type, _ node: JSONNode, _ path: [any CodingKey]) -> DecodingError {
        if case .null = node {
            return .valueNotFound(type, .init(codingPath: path, debugDescription: "Expected \(type) but found null instead."))
        }
        return .typeMismatch(type, .init(codingPath: path, debugDescription: "Expected \(type) but found \(node.kind) instead."))
    }
}

/// The key of an array element in a coding path.
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

private struct SuperKey: CodingKey {
    var stringValue: String { "super" }
    var intValue: Int? { nil }
    init() {}
    init?(stringValue: String) { nil }
    init?(intValue: Int) { nil }
}

private struct ObjectContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let keys: [String]
    let values: [JSONNode]
    let bytes: [UInt8]
    let codingPath: [any CodingKey]
    /// For objects beyond a few members, where a linear search per key would be quadratic.
    let index: [String: Int]?

    init(keys: [String], values: [JSONNode], bytes: [UInt8], codingPath: [any CodingKey]) {
        self.keys = keys
        self.values = values
        self.bytes = bytes
        self.codingPath = codingPath
        if keys.count > 16 {
            var index: [String: Int] = [:]
            index.reserveCapacity(keys.count)
            for (position, key) in keys.enumerated() { index[key] = position }
            self.index = index
        } else {
            index = nil
        }
    }

    var allKeys: [Key] {
        var seen = Set<String>()
        return keys.compactMap { seen.insert($0).inserted ? Key(stringValue: $0) : nil }
    }

    /// The last member called `key`.
    private func lookup(_ key: Key) -> JSONNode? { lookup(named: key.stringValue) }

    private func lookup(named name: String) -> JSONNode? {
        if let index { return index[name].map { values[$0] } }
        var position = keys.count
        while position > 0 {
            position -= 1
            if keys[position] == name { return values[position] }
        }
        return nil
    }

    private func member(_ key: Key) throws -> JSONNode {
        guard let node = lookup(key) else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "No value for the key \"\(key.stringValue)\"."))
        }
        return node
    }

    func contains(_ key: Key) -> Bool { lookup(key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool {
        if case .null = try member(key) { return true }
        return false
    }

    func value<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try NodeDecoder.unbox(try member(key), as: T.self, bytes: bytes, path: codingPath + [key])
    }

    func optional<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let node = lookup(key) else { return nil }
        if case .null = node { return nil }
        return try NodeDecoder.unbox(node, as: T.self, bytes: bytes, path: codingPath + [key])
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try value(type, forKey: key) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try value(type, forKey: key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try value(type, forKey: key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try value(type, forKey: key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try value(type, forKey: key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try value(type, forKey: key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try value(type, forKey: key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try value(type, forKey: key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try value(type, forKey: key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try value(type, forKey: key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try value(type, forKey: key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try value(type, forKey: key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try value(type, forKey: key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try value(type, forKey: key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try value(type, forKey: key) }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try optional(type, forKey: key) }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try optional(type, forKey: key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try optional(type, forKey: key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try optional(type, forKey: key) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try optional(type, forKey: key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try optional(type, forKey: key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try optional(type, forKey: key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try optional(type, forKey: key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try optional(type, forKey: key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try optional(type, forKey: key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try optional(type, forKey: key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try optional(type, forKey: key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try optional(type, forKey: key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try optional(type, forKey: key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try optional(type, forKey: key) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try NodeDecoder(node: try member(key), bytes: bytes, codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try NodeDecoder(node: try member(key), bytes: bytes, codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        NodeDecoder(node: lookup(named: "super") ?? .null, bytes: bytes, codingPath: codingPath + [SuperKey()])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        NodeDecoder(node: lookup(key) ?? .null, bytes: bytes, codingPath: codingPath + [key])
    }
}

private struct ArrayContainer: UnkeyedDecodingContainer {
    let items: [JSONNode]
    let bytes: [UInt8]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(items: [JSONNode], bytes: [UInt8], codingPath: [any CodingKey]) {
        self.items = items
        self.bytes = bytes
        self.codingPath = codingPath
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    private mutating func next<T>(_ type: T.Type) throws -> (JSONNode, [any CodingKey]) {
        let path = codingPath + [IndexKey(currentIndex)]
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: path, debugDescription: "Unkeyed container is at end."))
        }
        defer { currentIndex += 1 }
        return (items[currentIndex], path)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                Any?.self,
                .init(codingPath: codingPath + [IndexKey(currentIndex)], debugDescription: "Unkeyed container is at end."))
        }
        if case .null = items[currentIndex] {
            currentIndex += 1
            return true
        }
        return false
    }

    private mutating func one<T: Decodable>(_ type: T.Type) throws -> T {
        let (node, path) = try next(type)
        return try NodeDecoder.unbox(node, as: T.self, bytes: bytes, path: path)
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try one(type) }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try one(type) }
    mutating func decode(_ type: String.Type) throws -> String { try one(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try one(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try one(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try one(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try one(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try one(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try one(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try one(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try one(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try one(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try one(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try one(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try one(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let (node, path) = try next([String: Any].self)
        return try NodeDecoder(node: node, bytes: bytes, codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (node, path) = try next([Any].self)
        return try NodeDecoder(node: node, bytes: bytes, codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (node, path) = try next(Any.self)
        return NodeDecoder(node: node, bytes: bytes, codingPath: path)
    }
}

private struct ValueContainer: SingleValueDecodingContainer {
    let node: JSONNode
    let bytes: [UInt8]
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool {
        if case .null = node { return true }
        return false
    }

    private func one<T: Decodable>(_ type: T.Type) throws -> T {
        try NodeDecoder.unbox(node, as: T.self, bytes: bytes, path: codingPath)
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try one(type) }
    func decode(_ type: Bool.Type) throws -> Bool { try one(type) }
    func decode(_ type: String.Type) throws -> String { try one(type) }
    func decode(_ type: Double.Type) throws -> Double { try one(type) }
    func decode(_ type: Float.Type) throws -> Float { try one(type) }
    func decode(_ type: Int.Type) throws -> Int { try one(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try one(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try one(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try one(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try one(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try one(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try one(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try one(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try one(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try one(type) }
}
