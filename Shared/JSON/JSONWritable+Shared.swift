import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// The shared wire shapes, written member by member in sorted key order (JSONTests hold each to
// what `Encodable` writes for the same value). The services' own types are written next to
// their services.

extension JSONValue: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        switch self {
        case .null: writer.writeNull()
        case .bool(let value): writer.write(value)
        case .number(let value):
            if value.rounded() == value, abs(value) < 1e15 {
                writer.write(Int(value))
            } else if value.isFinite {
                var text = value.description
                if text.hasSuffix(".0") { text.removeLast(2) }
                text.withUTF8 { writer.writeRaw($0) }
            } else {
                // Never parsed from JSON; `Encodable` refuses it, a response writes null.
                writer.writeNull()
            }
        case .string(let value): writer.write(value)
        case .array(let values): writer.write(values)
        case .object(let members): writer.write(members)
        }
    }
}

extension JSONWriter {
    /// An object from a dictionary, its keys in sorted order.
    public mutating func write<Value: JSONWritable>(_ members: [String: Value]) {
        beginObject()
        for (key, value) in members.sorted(by: { $0.key < $1.key }) {
            member(named: key)
            write(value)
        }
        endObject()
    }
}

/// A generic type has no stored statics: the envelope's one key, escaped once for all of them.
private let itemListItemsKey = JSONKey("items")

extension ItemList: JSONWritable where Item: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member(itemListItemsKey, items)
        writer.endObject()
    }
}

extension JSONValue {
    /// An encodable value as the JSON the API would answer with.
    public static func encoded(_ value: some Encodable) throws -> JSONValue {
        try WireDecoder.decode(JSONValue.self, from: try JSON.encode(value))
    }
}
