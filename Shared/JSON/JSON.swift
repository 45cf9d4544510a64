import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The JSON every service speaks, made once: camelCase keys, ISO 8601 dates, exact integers.
/// The coders (``WireEncoder``, ``WireDecoder``) and the front end that reads a client's body
/// into a type, saying what is wrong with it field by field (``decodeBody(_:from:)``).
public enum JSON {
    /// `value` as JSON bytes: sorted keys, ISO 8601 dates. A ``JSONWritable`` value writes
    /// itself (no tree, one buffer); any other goes through ``WireEncoder``, with the same output.
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        if let writable = value as? any JSONWritable { return write(writable) }
        return try WireEncoder.encode(value)
    }

    /// `value` as JSON bytes, written in one pass.
    public static func write(_ value: some JSONWritable, capacity: Int = 512) -> [UInt8] {
        var writer = JSONWriter(capacity: capacity)
        writer.write(value)
        return writer.bytes
    }

    /// `T` from JSON bytes (``WireDecoder``: strict ISO 8601 dates, exact integers).
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try WireDecoder.decode(T.self, from: bytes)
    }

    /// Why a client's body cannot become the type asked for, said for that client.
    public enum BodyError: Error, Sendable, Equatable {
        /// The body as a whole: empty, not JSON, or not the shape at all (an array for an object).
        case body(String)
        /// Each field at fault, by its path (`items[2].rating`, `(body)` for the top).
        case fields([FieldIssue])
    }

    /// A field at fault and why ("must be an integer", "is required").
    public struct FieldIssue: Sendable, Equatable {
        public let field: String
        public let message: String

        public init(field: String, message: String) {
            self.field = field
            self.message = message
        }
    }

    /// Decodes a client's body, turning every failure into a ``BodyError`` that names the field.
    ///
    /// PostgreSQL text cannot hold U+0000 (libpq would cut the string there, jsonb refuses it):
    /// a body whose strings or member names carry one is refused, naming each field, rather than
    /// stored changed.
    public static func decodeBody<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(BodyError) -> T {
        try decode(T.self, from: try parseBody(bytes))
    }

    /// `T` from a client's body, refused with every top-level member `T`'s coding keys do not
    /// name (a typo is an error, not data silently dropped): what every endpoint's body gets
    /// unless its type is ``StrictDecodable`` (then missing members are named too) or
    /// ``LenientDecodable`` (another party's, which may add members).
    public static func decodeBody<T: Decodable>(knownMembersOf type: T.Type, from bytes: [UInt8]) throws(BodyError) -> T {
        let document = try parseBody(bytes)
        do {
            return try document.decodeKnown(T.self)
        } catch let unknown as NodeDecoder.UnknownMembers {
            throw .fields(unknownIssues(unknown.names))
        } catch let error as DecodingError {
            throw issue(for: error)
        } catch {
            throw .body("The request body could not be read.")
        }
    }

    /// `T` from a client's body, refused with every missing required and every unknown
    /// top-level member named at once (checked on the parsed member names, before decoding).
    public static func decodeBody<T: StrictDecodable>(strictly type: T.Type, from bytes: [UInt8]) throws(BodyError) -> T {
        let document = try parseBody(bytes)
        if let names = document.memberNames { try checkMembers(names, of: T.self) }
        return try decode(T.self, from: document)
    }

    /// An answer names at most this many unknown fields, each cut to ``shownLength`` characters:
    /// a body of many long made-up names gets a short answer, not one larger than itself.
    static var listedUnknown: Int { 20 }
    static var shownLength: Int { 64 }

    static func checkMembers<T: StrictDecodable>(_ names: [String], of type: T.Type) throws(BodyError) {
        let missing = T.required.filter { !$0.contains(where: names.contains) }.compactMap { alternatives in
            alternatives.first.map {
                FieldIssue(
                    field: $0,
                    message: alternatives.count == 1
                        ? "is required" : "is required (or \(alternatives.dropFirst().joined(separator: ", ")))")
            }
        }
        var unknownNames: [String] = []
        for name in names.sorted() where !T.reads(name) && unknownNames.last != name { unknownNames.append(name) }
        guard missing.isEmpty && unknownNames.isEmpty else {
            var errors = unknownIssues(unknownNames)
            let more = errors.last?.field == "*" ? errors.removeLast() : nil
            throw .fields((missing + errors).sorted { $0.field < $1.field } + (more.map { [$0] } ?? []))
        }
    }

    /// Unknown member names (sorted, each once) as issues: at most ``listedUnknown``, each cut to
    /// ``shownLength``, then a count of the rest.
    static func unknownIssues(_ names: [String]) -> [FieldIssue] {
        var issues = names.prefix(listedUnknown).map { name in
            FieldIssue(
                field: name.count <= shownLength ? name : String(name.prefix(shownLength)) + "…", message: "is not a known field")
        }
        if names.count > listedUnknown {
            issues.append(FieldIssue(field: "*", message: "and \(names.count - listedUnknown) more unknown fields"))
        }
        return issues
    }

    private static func parseBody(_ bytes: [UInt8]) throws(BodyError) -> JSONDocument {
        guard !bytes.isEmpty else { throw .body("The request body is empty; a JSON object is expected.") }
        let document: JSONDocument
        do {
            document = try JSONDocument(parsing: bytes)
        } catch {
            throw .body("The request body is not valid JSON: \(error).")
        }
        if document.containsNUL {
            throw .fields(
                document.pathsHoldingNUL().map { FieldIssue(field: $0, message: "must not contain the NUL character (U+0000)") })
        }
        return document
    }

    private static func decode<T: Decodable>(_ type: T.Type, from document: JSONDocument) throws(BodyError) -> T {
        do {
            return try document.decode(T.self)
        } catch let error as DecodingError {
            throw issue(for: error)
        } catch {
            throw .body("The request body could not be read.")
        }
    }

    /// A decoding failure as the field it names (`items[2].rating`) and why.
    public static func issue(for error: DecodingError) -> BodyError {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            var text = ""
            for key in codingPath + (last.map { [$0] } ?? []) {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else {
                    text += text.isEmpty ? key.stringValue : "." + key.stringValue
                }
            }
            return text.isEmpty ? "(body)" : text
        }
        func field(_ name: String, _ message: String) -> BodyError { .fields([FieldIssue(field: name, message: message)]) }
        switch error {
        case .keyNotFound(let key, let context):
            return field(path(context.codingPath, key), "is required")
        case .valueNotFound(let type, let context):
            return field(path(context.codingPath), "must be \(describe(type)), not null")
        case .typeMismatch(let type, let context):
            if context.codingPath.isEmpty { return .body("The request body must be \(describe(type)) in JSON.") }
            return field(path(context.codingPath), "must be \(describe(type))")
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return .body("The request body is not valid JSON.") }
            // Pier's own decoders say what is expected ("must be …"); Foundation's wording is not
            // meant for clients.
            let message = context.debugDescription.hasPrefix("must ") ? context.debugDescription : "has an invalid value"
            return field(path(context.codingPath), message)
        @unknown default:
            return .body("The request body could not be read.")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int32.Type, is Int64.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        case is Bool.Type: "a boolean"
        case is UUID.Type: "a UUID"
        case is Date.Type: "an ISO 8601 date"
        default: String(describing: type).hasPrefix("Array") ? "an array" : "an object"
        }
    }
}

extension JSONDocument {
    /// The paths of the strings, and of the members whose name, that hold U+0000, in a stable
    /// order (members by name).
    func pathsHoldingNUL() -> [String] {
        func paths(_ node: JSONNode, at path: String) -> [String] {
            switch node {
            case .array(let values):
                return values.enumerated().flatMap { paths($1, at: path + "[\($0)]") }
            case .object(let keys, let values):
                return zip(keys, values).sorted { $0.0 < $1.0 }.flatMap { key, value in
                    let name = path.isEmpty ? key : path + "." + key
                    return key.utf8.contains(0) ? [name] : paths(value, at: name)
                }
            case .string(let text):
                return text.utf8.contains(0) ? [path.isEmpty ? "(body)" : path] : []
            default:
                return []
            }
        }
        // A name given twice is named once.
        var seen = Set<String>()
        return paths(root, at: "").filter { seen.insert($0).inserted }
    }
}
