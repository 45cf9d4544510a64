import PierJSON
import PierModels
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The JSON coders every service shares, made once: camelCase keys, ISO 8601 dates.
public enum JSON {
    /// `value` as JSON bytes: sorted keys, ISO 8601 dates (``WireEncoder``).
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] { try WireEncoder.encode(value) }

    /// `T` from JSON bytes (``WireDecoder``: strict ISO 8601 dates, exact integers).
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try WireDecoder.decode(T.self, from: bytes)
    }

    /// Decodes a request body, turning every failure into a problem that names the field:
    /// 400 when the body is not JSON at all, 422 when a field is missing or of the wrong type.
    ///
    /// PostgreSQL text cannot hold U+0000 (libpq would cut the string there, jsonb refuses it):
    /// a body whose strings carry one is refused, naming each field, rather than stored changed.
    public static func decodeBody<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(HTTPError) -> T {
        guard !bytes.isEmpty else { throw .badRequest("The request body is empty; a JSON object is expected.") }
        let document: JSONDocument
        do {
            document = try JSONDocument(parsing: bytes)
        } catch {
            throw .badRequest("The request body is not valid JSON: \(error).")
        }
        if document.containsNUL, let value = try? document.decode(JSONValue.self) {
            let fields = paths(in: value, keys: { $0.utf8.contains(0) }) { leaf in
                if case .string(let text) = leaf { text.utf8.contains(0) } else { false }
            }
            throw .invalid(fields.map { Problem.FieldError(field: $0, message: "must not contain the NUL character (U+0000)") })
        }
        do {
            return try document.decode(T.self)
        } catch let error as DecodingError {
            throw problem(for: error)
        } catch let error as HTTPError {
            throw error
        } catch {
            throw .badRequest("The request body could not be read.")
        }
    }

    /// The paths (`items[2].rating`, `(body)` for the top) of the leaves that `leaf` picks, and
    /// of the members whose name `keys` picks, in a stable order.
    private static func paths(
        in value: JSONValue, at path: String = "", keys: (String) -> Bool = { _ in false }, _ leaf: (JSONValue) -> Bool
    ) -> [String] {
        switch value {
        case .array(let values):
            return values.enumerated().flatMap { paths(in: $1, at: path + "[\($0)]", keys: keys, leaf) }
        case .object(let members):
            return members.sorted { $0.key < $1.key }.flatMap { key, member in
                let name = path.isEmpty ? key : path + "." + key
                return keys(key) ? [name] : paths(in: member, at: name, keys: keys, leaf)
            }
        default:
            return leaf(value) ? [path.isEmpty ? "(body)" : path] : []
        }
    }

    /// A decoding failure as a problem that names the field (`items[2].rating`) and why.
    public static func problem(for error: DecodingError) -> HTTPError {
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
        switch error {
        case .keyNotFound(let key, let context):
            return .invalid(path(context.codingPath, key), "is required")
        case .valueNotFound(let type, let context):
            return .invalid(path(context.codingPath), "must be \(describe(type)), not null")
        case .typeMismatch(let type, let context):
            if context.codingPath.isEmpty { return .badRequest("The request body must be \(describe(type)) in JSON.") }
            return .invalid(path(context.codingPath), "must be \(describe(type))")
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return .badRequest("The request body is not valid JSON.") }
            // Pier's own decoders say what is expected ("must be …"); Foundation's wording is not
            // meant for clients.
            let message = context.debugDescription.hasPrefix("must ") ? context.debugDescription : "has an invalid value"
            return .invalid(path(context.codingPath), message)
        @unknown default:
            return .badRequest("The request body could not be read.")
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
        default:
            String(describing: type).hasPrefix("Array")
                ? "an array" : String(describing: type).hasPrefix("Dictionary") ? "an object" : "an object"
        }
    }
}
