/// Any JSON value, for bodies whose shape is checked by hand (unknown fields, flat metadata).
public enum JSONValue: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The members, when this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// A number as people and JSON write it: a whole one without a fraction (`3`, not `3.0`),
    /// up to 15 digits; any other as Swift prints it (`2.5`, `1e+20`). Never traps.
    public static func text(of number: Double) -> String {
        number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }

    /// The text, when this is a string.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The flag, when this is a boolean.
    public var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// The elements, when this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if value.rounded() == value, abs(value) < 1e15 {
                try container.encode(Int64(value))
            } else {
                try container.encode(value)
            }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

/// A request body that names its fields, so that unknown ones can be refused and missing ones
/// named, all at once.
public protocol StrictDecodable: Decodable {
    /// The keys the type reads: a body member is known exactly when `CodingKeys(stringValue:)`
    /// accepts its name, so the known fields cannot drift from what is decoded, and checking them
    /// builds nothing per request.
    associatedtype CodingKeys: CodingKey
    /// The keys that must be present, each with its alternatives (one of each list; the first
    /// is the one named when all are missing).
    static var required: [[String]] { get }
}

/// A body another party sends (a store's notification, a push service's envelope), which may
/// carry members Pier does not read: they are ignored rather than refused. Every other body's
/// unknown top-level members are refused (422, each named).
public protocol LenientDecodable: Decodable {}

/// A body an HTML form may send as well as JSON (`application/x-www-form-urlencoded`): the
/// pages behind mailed links post their token that way.
public protocol FormDecodable: StrictDecodable {
    init(form: [String: String])
}

extension StrictDecodable {
    public static var required: [[String]] { [] }

    /// Whether `name` is one of the top-level keys the type reads.
    public static func reads(_ name: String) -> Bool { CodingKeys(stringValue: name) != nil }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
