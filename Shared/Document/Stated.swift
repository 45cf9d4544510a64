import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A type that states its schema, where decoding stand-ins cannot tell it: one decoded by hand
/// (any JSON value, a member with another name), or one the document describes but no Swift
/// type carries (a key set).
protocol SchemaStated {
    /// The component's name, nil to write it where it is used.
    static var schemaName: String? { get }
    static func schema(in recorder: SchemaRecorder) throws -> JSONValue
}

/// Words and limits for a type's members that its declaration cannot say (what each means, how
/// long it may be, the values the server checks), merged into what is read from the type; a
/// member noted that the type does not decode fails the document, as does a note of a
/// component the document does not have.
struct SchemaNotes {
    /// What the type is.
    var summary: String?
    /// Members the type reads as optional that the server always sends (an answer's `code`).
    var alwaysSent: [String] = []
    /// Each member's extra keywords (`description`, `maxLength`, `pattern`…), by name.
    var members: [String: JSONValue] = [:]
}

/// Every type's notes, by component name (``SchemaRecorder/name(of:)``).
enum Notes {
    static let all: [String: SchemaNotes] = auth.merging(passkeys) { a, _ in a }.merging(feedback) { a, _ in a }
        .merging(subscriptions) { a, _ in a }.merging(gateway) { a, _ in a }

    /// The known values of a vocabulary, for a member that takes one as text.
    static func values<V: OpenVocabulary>(_ type: V.Type) -> JSONValue { .array(V.allCases.map { .string($0.rawValue) }) }
}

extension JSONValue: SchemaStated {
    static var schemaName: String? { nil }
    static func schema(in recorder: SchemaRecorder) throws -> JSONValue { ["description": "Any JSON value."] }
}

extension ProblemCode: SchemaStated {
    static var schemaName: String? { nil }
    static func schema(in recorder: SchemaRecorder) throws -> JSONValue {
        [
            "type": "string",
            "description": .string(
                "What went wrong, for a program to switch on (`detail` is for people and may change). New codes may appear: "
                    + "treat one you do not know by the status. Known: "
                    + ProblemCode.all.map { "`\($0.rawValue)`" }.joined(separator: ", ") + "."),
        ]
    }
}

extension CreateFeedback: SchemaStated {
    static var schemaName: String? { "CreateFeedback" }
    /// `message`, or `feedback` (its other name): one of the two is required.
    static func schema(in recorder: SchemaRecorder) throws -> JSONValue {
        let members: [(String, Any.Type)] = [
            ("id", UUID.self), ("message", String.self), ("feedback", String.self), ("name", String.self),
            ("rating", Int.self), ("category", String.self), ("email", String.self), ("appVersion", String.self),
            ("build", String.self), ("platform", String.self), ("osVersion", String.self), ("device", String.self),
            ("locale", String.self), ("requestIds", [String].self), ("metadata", [String: JSONValue].self),
        ]
        var properties: [String: JSONValue] = [:]
        for (name, type) in members { properties[name] = try recorder.schema(of: type) }
        return try recorder.noted(
            "CreateFeedback",
            [
                "type": "object", "properties": .object(properties),
                "oneOf": [["required": ["message"]], ["required": ["feedback"]]],
            ])
    }
}

/// A JSON Web Key Set (RFC 7517) of P-256 public keys.
struct JWKSet: Decodable {
    struct Key: Decodable {
        let kty: String
        let crv: String
        let x: String
        let y: String
        let kid: String
        let use: String?
        let alg: String?
    }
    let keys: [Key]
}
