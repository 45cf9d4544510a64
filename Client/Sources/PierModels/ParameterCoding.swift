#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// An endpoint's parameters as text both ways, from one `Codable` type and its ``EndpointParameters/declared``
/// list: a client's call encodes the value into its path, query and headers
/// (``EndpointParameters/values``); the server checks the text against the declarations (kind, range,
/// length, set, pattern) and decodes the same type before the handler runs
/// (``EndpointParameters/decoded(_:)``). A member is named as the declaration names its parameter
/// (its coding key: `case query = "q"` when the Swift name differs).
extension EndpointParameters {
    /// This call's values, in the declared order; what is not set, or is the declared default,
    /// is left out.
    public var values: [(name: String, value: String)] {
        let encoder = ParameterEncoder()
        try? encode(to: encoder)
        let written = encoder.box.values
        return Self.declared.compactMap { parameter in
            guard let value = written[parameter.name], value != parameter.defaultValue else { return nil }
            return (parameter.name, value)
        }
    }

    /// The parameters of a request, from `text` (each declared parameter's text as the request
    /// has it: path, query or header), checked against the declarations: the problems name each
    /// parameter, and `inPath` says whether one of them is a path segment (a 404, not a 422).
    public static func decoded(_ text: [String: String]) -> Result<Self, ParameterProblems> {
        var problems = ParameterProblems()
        var values: [String: String] = [:]
        for parameter in declared {
            guard let given = text[parameter.name] else {
                if let value = parameter.defaultValue {
                    values[parameter.name] = value
                } else if parameter.required {
                    problems.add(parameter, "is required")
                }
                continue
            }
            if let message = parameter.problem(with: given) {
                problems.add(parameter, message)
            } else {
                values[parameter.name] = given
            }
        }
        guard problems.fields.isEmpty else { return .failure(problems) }
        do {
            return .success(try Self(from: ParameterDecoder(values: values)))
        } catch {
            // The declarations and the coding keys disagree: a defect the endpoints' test finds first.
            problems.fields.append(.init(field: "parameters", message: "could not be read (\(error))"))
            return .failure(problems)
        }
    }
}

/// What is wrong with a request's parameters: each named, and whether one is in the path.
public struct ParameterProblems: Error, Sendable {
    public var fields: [Problem.FieldError] = []
    /// One of them is a path segment: the address names nothing (404), rather than a request to
    /// correct (422).
    public var inPath = false

    mutating func add(_ parameter: Parameter, _ message: String) {
        fields.append(.init(field: parameter.name, message: message))
        if parameter.location == .path { inPath = true }
    }
}

extension Parameter {
    /// What is wrong with `text` as this parameter's value, in words; nil when it is fine.
    func problem(with text: String) -> String? {
        switch kind {
        case .uuid:
            guard UUID(uuidString: text) != nil else { return "must be a UUID" }
        case .integer:
            guard let number = Int(text), number >= (minimum ?? .min), number <= (maximum ?? .max) else {
                switch (minimum, maximum) {
                case (let low?, let high?): return "must be an integer from \(low) to \(high)"
                case (let low?, nil): return "must be an integer of at least \(low)"
                default: return "must be an integer"
                }
            }
        case .boolean:
            guard text == "true" || text == "false" else { return "must be true or false" }
        case .string, .date:
            break
        }
        if let length, !length.contains(text.count) {
            return "must be \(length.lowerBound) to \(length.upperBound) characters"
        }
        if let values, !values.contains(text) {
            return "must be "
                + (values.count == 1 ? values[0] : values.dropLast().joined(separator: ", ") + " or " + values.last!)
        }
        // A pattern that does not compile refuses every value (closed, and the endpoints' test
        // fails on it), never checks nothing.
        if pattern != nil, !(compiled?.matches(text) ?? false) { return "has characters it may not have" }
        return nil
    }
}

/// A parameter's pattern compiled once, at its declaration: a regular expression is never
/// compiled per request. Immutable after its initializer, so shared between threads.
final class CompiledPattern: @unchecked Sendable, Equatable {
    private let expression: Regex<AnyRegexOutput>?

    init(_ pattern: String) { expression = try? Regex(pattern) }

    /// Whether the whole of `text` matches (false when the pattern did not compile).
    func matches(_ text: String) -> Bool {
        guard let expression else { return false }
        return (try? expression.wholeMatch(in: text)) != nil
    }

    /// Parameters compare by their pattern's text; its compiled form follows from it.
    static func == (lhs: CompiledPattern, rhs: CompiledPattern) -> Bool { true }
}

/// Writes a parameters value as text by name (``EndpointParameters/values``).
final class ParameterEncoder: Encoder {
    final class Box { var values: [String: String] = [:] }
    let box: Box
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(Keyed(box: box))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { Refused(codingPath: codingPath) }
    func singleValueContainer() -> any SingleValueEncodingContainer { Refused(codingPath: codingPath) }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let box: Box
        var codingPath: [any CodingKey] = []

        mutating func encodeNil(forKey key: Key) {}
        mutating func encode(_ value: String, forKey key: Key) { box.values[key.stringValue] = value }
        mutating func encode(_ value: Bool, forKey key: Key) { box.values[key.stringValue] = value ? "true" : "false" }
        mutating func encode(_ value: Int, forKey key: Key) { box.values[key.stringValue] = String(value) }
        mutating func encode(_ value: Int64, forKey key: Key) { box.values[key.stringValue] = String(value) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            if let id = value as? UUID {
                box.values[key.stringValue] = id.uuidString.lowercased()
            } else if let value = value as? any LosslessStringConvertible {
                box.values[key.stringValue] = value.description
            } else {
                let text = TextEncoder()
                try value.encode(to: text)
                box.values[key.stringValue] = text.box.text
            }
        }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
            -> KeyedEncodingContainer<NestedKey>
        { KeyedEncodingContainer(Keyed<NestedKey>(box: box)) }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            Refused(codingPath: codingPath + [key])
        }
        mutating func superEncoder() -> any Encoder { ParameterEncoder(sharing: box) }
        mutating func superEncoder(forKey key: Key) -> any Encoder { ParameterEncoder(sharing: box) }
    }

    init() { box = Box() }
    private init(sharing box: Box) { self.box = box }

    /// One value's text: a `RawRepresentable` enum's raw value, a number.
    final class TextEncoder: Encoder, SingleValueEncodingContainer {
        final class Box { var text = "" }
        let box = Box()
        var codingPath: [any CodingKey] = []
        var userInfo: [CodingUserInfoKey: Any] { [:] }
        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            KeyedEncodingContainer(Refused<Key>(codingPath: codingPath))
        }
        func unkeyedContainer() -> any UnkeyedEncodingContainer { Refused(codingPath: codingPath) }
        func singleValueContainer() -> any SingleValueEncodingContainer { self }
        func encodeNil() {}
        func encode(_ value: String) { box.text = value }
        func encode(_ value: Bool) { box.text = value ? "true" : "false" }
        func encode(_ value: Int) { box.text = String(value) }
        func encode(_ value: Int64) { box.text = String(value) }
        func encode<T: Encodable>(_ value: T) throws {
            if let value = value as? any LosslessStringConvertible {
                box.text = value.description
            } else {
                try value.encode(to: self)
            }
        }
    }
}

/// What a parameters type cannot be written as: a list, or a value made of parts where one text
/// goes. Every write throws (the value's `values` then hold what was written before it), so a
/// plugin's type with such a member never stops the app that calls it.
struct Refused<Key: CodingKey>: UnkeyedEncodingContainer, SingleValueEncodingContainer, KeyedEncodingContainerProtocol {
    var codingPath: [any CodingKey]
    var count: Int { 0 }

    func refusal(_ value: Any) -> EncodingError {
        .invalidValue(value, .init(codingPath: codingPath, debugDescription: "a parameter is one text, named"))
    }
    mutating func encodeNil() throws { throw refusal(()) }
    mutating func encode<T: Encodable>(_ value: T) throws { throw refusal(value) }
    mutating func encodeNil(forKey key: Key) throws { throw refusal(()) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { throw refusal(value) }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(Refused<NestedKey>(codingPath: codingPath))
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    { KeyedEncodingContainer(Refused<NestedKey>(codingPath: codingPath)) }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { self }
    mutating func superEncoder() -> any Encoder { ParameterEncoder() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { ParameterEncoder() }
}

extension Refused where Key == AnyKey {
    init(codingPath: [any CodingKey]) { self.codingPath = codingPath }
}

/// The key of a container that has none.
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) { (self.stringValue, self.intValue) = (String(intValue), intValue) }
}

/// Reads a parameters value from checked text by name (``EndpointParameters/decoded(_:)``).
struct ParameterDecoder: Decoder {
    let values: [String: String]
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Keyed(values: values))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: [], debugDescription: "parameters are named"))
    }
    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DecodingError.typeMismatch(String.self, .init(codingPath: [], debugDescription: "parameters are named"))
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let values: [String: String]
        var codingPath: [any CodingKey] = []
        var allKeys: [Key] { values.keys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { values[key.stringValue] != nil }
        func decodeNil(forKey key: Key) -> Bool { values[key.stringValue] == nil }

        func text(_ key: Key) throws -> String {
            guard let text = values[key.stringValue] else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "not given"))
            }
            return text
        }
        func wrong(_ key: Key, _ type: Any.Type) -> DecodingError {
            .typeMismatch(type, .init(codingPath: codingPath + [key], debugDescription: "not a \(type)"))
        }

        func decode(_ type: String.Type, forKey key: Key) throws -> String { try text(key) }
        /// A switch the declarations leave out (the export's `includeTotal`, which only the list
        /// declares) reads false; one they require was checked before.
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
            guard values[key.stringValue] != nil else { return false }
            switch try text(key) {
            case "true": return true
            case "false": return false
            default: throw wrong(key, type)
            }
        }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
            guard let value = Int(try text(key)) else { throw wrong(key, type) }
            return value
        }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
            guard let value = Int64(try text(key)) else { throw wrong(key, type) }
            return value
        }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            let text = try text(key)
            if T.self == UUID.self {
                guard let id = UUID(uuidString: text) as? T else { throw wrong(key, type) }
                return id
            }
            if let readable = T.self as? any LosslessStringConvertible.Type {
                guard let value = readable.init(text) as? T else { throw wrong(key, type) }
                return value
            }
            return try T(from: TextDecoder(text: text))
        }
        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        { KeyedDecodingContainer(Keyed<NestedKey>(values: values)) }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw wrong(key, [Any].self)
        }
        func superDecoder() throws -> any Decoder { ParameterDecoder(values: values) }
        func superDecoder(forKey key: Key) throws -> any Decoder { ParameterDecoder(values: values) }
    }

    /// One value from its text: a `RawRepresentable` enum, a number.
    struct TextDecoder: Decoder, SingleValueDecodingContainer {
        let text: String
        var codingPath: [any CodingKey] = []
        var userInfo: [CodingUserInfoKey: Any] { [:] }
        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            throw DecodingError.typeMismatch(type, .init(codingPath: [], debugDescription: "a parameter's value is one text"))
        }
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            throw DecodingError.typeMismatch(
                [Any].self, .init(codingPath: [], debugDescription: "a parameter's value is one text"))
        }
        func singleValueContainer() -> any SingleValueDecodingContainer { self }
        func decodeNil() -> Bool { false }
        func decode(_ type: String.Type) -> String { text }
        func decode(_ type: Bool.Type) throws -> Bool {
            guard text == "true" || text == "false" else { throw mismatch(type) }
            return text == "true"
        }
        func decode(_ type: Int.Type) throws -> Int {
            guard let value = Int(text) else { throw mismatch(type) }
            return value
        }
        func decode(_ type: Int64.Type) throws -> Int64 {
            guard let value = Int64(text) else { throw mismatch(type) }
            return value
        }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            if let readable = T.self as? any LosslessStringConvertible.Type {
                guard let value = readable.init(text) as? T else { throw mismatch(type) }
                return value
            }
            return try T(from: self)
        }
        func mismatch(_ type: Any.Type) -> DecodingError {
            .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "\(text) is not a \(type)"))
        }
    }
}
