#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A value's every stored property, written in one spelling: what a request hash is taken of
/// (an idempotency key's). Read by reflection from the type's declaration, not from a writer or
/// an `encode(to:)` someone keeps by hand: a property added to the type is in the hash without a
/// line written for it, and two values that differ in any property differ here.
///
/// Properties in declaration order, each `name=value;`; nil as `~`; texts length-prefixed (so no
/// text can imitate a boundary); arrays in order, dictionaries by key; enums by case and payload.
public enum CanonicalForm {
    public static func bytes(of value: Any) -> [UInt8] {
        var out: [UInt8] = []
        write(value, into: &out)
        return out
    }

    static func write(_ value: Any, into out: inout [UInt8]) {
        switch value {
        case let text as String: text_(text, &out)
        case let id as UUID: text_(id.uuidString.lowercased(), &out)
        case let number as any BinaryInteger: out += Array("i\(number)".utf8)
        case let number as Double: out += Array("d\(number.bitPattern)".utf8)
        case let flag as Bool: out += Array(flag ? "T".utf8 : "F".utf8)
        case let date as Date: out += Array("t\(date.timeIntervalSince1970.bitPattern)".utf8)
        default: reflected(value, into: &out)
        }
    }

    private static func text_(_ text: String, _ out: inout [UInt8]) {
        let bytes = Array(text.utf8)
        out += Array("s\(bytes.count):".utf8) + bytes
    }

    private static func reflected(_ value: Any, into out: inout [UInt8]) {
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .optional:
            guard let wrapped = mirror.children.first else { return out.append(UInt8(ascii: "~")) }
            write(wrapped.value, into: &out)
        case .collection, .set:
            let elements = mirror.children.map { bytes(of: $0.value) }
            out += Array("[\(elements.count)".utf8)
            for element in mirror.displayStyle == .set ? elements.sorted(by: { $0.lexicographicallyPrecedes($1) }) : elements {
                out += element
                out.append(UInt8(ascii: ","))
            }
            out.append(UInt8(ascii: "]"))
        case .dictionary:
            let pairs = mirror.children.map { pair -> ([UInt8], [UInt8]) in
                let parts = Array(Mirror(reflecting: pair.value).children)
                return (bytes(of: parts[0].value), bytes(of: parts[1].value))
            }.sorted { $0.0.lexicographicallyPrecedes($1.0) }
            out += Array("{\(pairs.count)".utf8)
            for (key, element) in pairs { out += key + [UInt8(ascii: "=")] + element + [UInt8(ascii: ";")] }
            out.append(UInt8(ascii: "}"))
        case .enum:
            // The case's name (its payload's label), then its payload; a case without one by name.
            text_(mirror.children.first?.label ?? String(describing: value), &out)
            out.append(UInt8(ascii: "("))
            for child in mirror.children { write(child.value, into: &out) }
            out.append(UInt8(ascii: ")"))
        default:
            out.append(UInt8(ascii: "("))
            for child in mirror.children {
                text_(child.label ?? "", &out)
                out.append(UInt8(ascii: "="))
                write(child.value, into: &out)
                out.append(UInt8(ascii: ";"))
            }
            out.append(UInt8(ascii: ")"))
        }
    }
}
