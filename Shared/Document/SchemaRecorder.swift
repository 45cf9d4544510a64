import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The JSON Schema of a `Decodable` type, read from the type itself: its `init(from:)` runs
/// against a decoder that notes each member asked for (`decode`: required, `decodeIfPresent`:
/// optional) and the type asked for it, and answers with a stand-in value. A struct's members
/// are what it decodes, so a member added or made optional changes the document with it.
///
/// A type whose decoding cannot run on stand-ins (one that checks its values while decoding)
/// states its schema instead (``SchemaStated``).
final class SchemaRecorder {
    /// The named schemas met so far (`#/components/schemas/…`), by name.
    private(set) var components: [String: JSONValue] = [:]
    /// A stand-in value of each named type met, to hand to the types holding one.
    private var instances: [ObjectIdentifier: Any] = [:]

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The schema of a member of type `type`: inline for a scalar, a list or a map; a reference
    /// to a named component for a struct (recorded on first sight).
    func schema(of type: Any.Type) throws -> JSONValue {
        if let stated = type as? any SchemaStated.Type {
            if let name = stated.schemaName {
                if components[name] == nil { components[name] = try stated.schema(in: self) }
                return .object(["$ref": .string("#/components/schemas/" + name)])
            }
            return try stated.schema(in: self)
        }
        if let scalar = Self.scalar(type) { return scalar }
        if let optional = type as? any OptionalMember.Type { return try schema(of: optional.wrapped) }
        if let list = type as? any ListMember.Type {
            return .object(["type": "array", "items": try schema(of: list.element)])
        }
        if let map = type as? any MapMember.Type {
            return .object(["type": "object", "additionalProperties": try schema(of: map.value)])
        }
        if let vocabulary = type as? any OpenVocabulary.Type { return Self.vocabulary(vocabulary) }
        // A closed set of strings (a plugin's `enum Kind: String, CaseIterable`): its values.
        if let enumeration = type as? any (RawRepresentable & CaseIterable).Type, let values = Self.strings(of: enumeration) {
            return .object(["type": "string", "enum": .array(values.map(JSONValue.string))])
        }
        guard let decodable = type as? any Decodable.Type else {
            throw Failure(description: "\(type) is not Decodable: it cannot be described")
        }
        let name = Self.name(of: type)
        if components[name] == nil {
            components[name] = .object([:])  // met: a type holding itself refers to it
            components[name] = try record(decodable)
        }
        return .object(["$ref": .string("#/components/schemas/" + name)])
    }

    /// The raw values of a string enumeration; nil for any other raw type.
    static func strings<T: RawRepresentable & CaseIterable>(of type: T.Type) -> [String]? {
        T.allCases.map(\.rawValue) as? [String]
    }

    /// A component's name: the type's (`FeedbackItem`); a list of items (`ItemList<Plan>`) is
    /// named after its item (`PlanList`).
    static func name(of type: Any.Type) -> String {
        if let list = type as? any NamedList.Type { return name(of: list.item) + "List" }
        // `PierModels.Problem.FieldError`: `ProblemFieldError`.
        return String(reflecting: type).split(separator: ".").dropFirst().joined()
    }

    /// The object schema of `type`: its members in the order it decodes them.
    private func record<T: Decodable>(_ type: T.Type) throws -> JSONValue {
        let object = RecordedObject()
        do {
            instances[ObjectIdentifier(type)] = try T(from: RecordingDecoder(recorder: self, object: object, codingPath: []))
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(description: "\(type) cannot be described by decoding stand-ins (\(error)): state its schema")
        }
        if let single = object.single { return try noted(Self.name(of: type), single) }
        var members: [String: JSONValue] = ["type": "object"]
        members["properties"] = .object(Dictionary(object.members.map { ($0.name, $0.schema) }, uniquingKeysWith: { a, _ in a }))
        let required = object.members.filter(\.required).map { JSONValue.string($0.name) }
        if !required.isEmpty { members["required"] = .array(required) }
        return try noted(Self.name(of: type), .object(members))
    }

    /// The components whose notes were applied.
    private(set) var noted: Set<String> = []

    /// `schema` of the component `name` with its notes (``SchemaNotes``) merged in.
    func noted(_ name: String, _ schema: JSONValue) throws -> JSONValue {
        guard let notes = Notes.all[name], var object = schema.objectValue else { return schema }
        noted.insert(name)
        if let summary = notes.summary { object["description"] = .string(summary) }
        if !notes.alwaysSent.isEmpty {
            let required = (object["required"]?.arrayValue ?? []) + notes.alwaysSent.map(JSONValue.string)
            object["required"] = .array(required)
        }
        var properties = object["properties"]?.objectValue ?? [:]
        for (member, extra) in notes.members {
            guard var schema = properties[member]?.objectValue else {
                throw Failure(description: "the notes of \(name) name `\(member)`, which it does not decode")
            }
            for (keyword, value) in extra.objectValue ?? [:] { schema[keyword] = value }
            properties[member] = .object(schema)
        }
        if !notes.members.isEmpty { object["properties"] = .object(properties) }
        return .object(object)
    }

    /// A stand-in value of `type`, for a member decoded as required.
    func standIn<T: Decodable>(_ type: T.Type) throws -> T {
        let given: Any? =
            if let empty = type as? any EmptyMember.Type {
                empty.empty
            } else if let vocabulary = type as? any OpenVocabulary.Type {
                Self.first(vocabulary)
            } else if let enumeration = type as? any (RawRepresentable & CaseIterable).Type {
                Self.firstCase(enumeration)
            } else {
                Self.scalarStandIns.first { $0 is T }
            }
        if let value = given as? T { return value }
        _ = try schema(of: type)
        if let instance = instances[ObjectIdentifier(type)] as? T { return instance }
        return try T(from: RecordingDecoder(recorder: self, object: RecordedObject(), codingPath: []))
    }

    /// A value of each scalar type a member may have.
    private static let scalarStandIns: [any Sendable] = [
        "", false, 0, Int64(0), Int32(0), 0.0, Decimal(0), UUID(), Date(timeIntervalSince1970: 0),
        URL(fileURLWithPath: "/"), Data(),
    ]

    private static func first<V: OpenVocabulary>(_ type: V.Type) -> V { V.allCases[0] }

    private static func firstCase<E: RawRepresentable & CaseIterable>(_ type: E.Type) -> E? { E.allCases.first }

    private static func vocabulary<V: OpenVocabulary>(_ type: V.Type) -> JSONValue {
        .object([
            "type": "string", "enum": .array(V.allCases.map { .string($0.rawValue) }),
        ])
    }

    static func scalar(_ type: Any.Type) -> JSONValue? {
        switch type {
        case is String.Type: .object(["type": "string"])
        case is Bool.Type: .object(["type": "boolean"])
        case is Int.Type, is Int32.Type: .object(["type": "integer"])
        case is Int64.Type: .object(["type": "integer", "format": "int64"])
        case is Double.Type, is Decimal.Type: .object(["type": "number"])
        case is UUID.Type: .object(["type": "string", "format": "uuid"])
        case is Date.Type: .object(["type": "string", "format": "date-time"])
        case is URL.Type: .object(["type": "string", "format": "uri"])
        case is Data.Type: .object(["type": "string", "contentEncoding": "base64"])
        default: nil
        }
    }
}

/// What one `init(from:)` asked for.
final class RecordedObject {
    struct Member {
        let name: String
        let schema: JSONValue
        let required: Bool
    }
    var members: [Member] = []
    /// The members asked whether they are null before being read.
    var optional: Set<String> = []
    /// A type decoded as one value (a string it wraps).
    var single: JSONValue?

    func note(_ name: String, _ schema: JSONValue, required: Bool) {
        if let index = members.firstIndex(where: { $0.name == name }) {
            // Asked twice (once optionally, then required): required wins.
            members[index] = Member(name: name, schema: schema, required: required || members[index].required)
        } else {
            members.append(Member(name: name, schema: schema, required: required))
        }
    }
}

struct RecordingDecoder: Decoder {
    let recorder: SchemaRecorder
    let object: RecordedObject
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(RecordingKeyedContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw SchemaRecorder.Failure(description: "a list decoded by hand at \(codingPath): state the schema")
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { RecordingSingleValue(decoder: self) }
}

struct RecordingKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: RecordingDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }

    /// Asked before a scalar's `decodeIfPresent` reads it: the member may be absent.
    func decodeNil(forKey key: Key) throws -> Bool {
        decoder.object.optional.insert(key.stringValue)
        return false
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let optional = type is any OptionalMember.Type || decoder.object.optional.contains(key.stringValue)
        decoder.object.note(key.stringValue, try decoder.recorder.schema(of: type), required: !optional)
        return try decoder.recorder.standIn(type)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        decoder.object.note(key.stringValue, try decoder.recorder.schema(of: type), required: false)
        return nil
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        throw SchemaRecorder.Failure(description: "a nested container at \(key.stringValue): state the schema")
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw SchemaRecorder.Failure(description: "a list decoded by hand at \(key.stringValue): state the schema")
    }

    func superDecoder() throws -> any Decoder { decoder }
    func superDecoder(forKey key: Key) throws -> any Decoder { decoder }
}

struct RecordingSingleValue: SingleValueDecodingContainer {
    let decoder: RecordingDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        decoder.object.single = try decoder.recorder.schema(of: type)
        return try decoder.recorder.standIn(type)
    }
}

/// `T?`: a member that may be left out.
protocol OptionalMember { static var wrapped: Any.Type { get } }
extension Optional: OptionalMember { static var wrapped: Any.Type { Wrapped.self } }

/// `[T]`: a list.
protocol ListMember { static var element: Any.Type { get } }
extension Array: ListMember { static var element: Any.Type { Element.self } }

/// `[String: T]`: a map of names to values.
protocol MapMember { static var value: Any.Type { get } }
extension Dictionary: MapMember where Key == String { static var value: Any.Type { Value.self } }

/// A member whose stand-in is empty (a list, a map, nothing).
protocol EmptyMember { static var empty: Self { get } }
extension Optional: EmptyMember { static var empty: Self { nil } }
extension Array: EmptyMember { static var empty: Self { [] } }
extension Dictionary: EmptyMember { static var empty: Self { [:] } }

/// `ItemList<T>`: named after its item.
protocol NamedList { static var item: Any.Type { get } }
extension ItemList: NamedList { static var item: Any.Type { Item.self } }
