import CCBOR

/// A CBOR data item (RFC 8949), as WebAuthn uses them: attestation objects and COSE keys. Read by
/// Debian's libcbor (`cbor_load`), then copied into Swift values; only definite lengths, as
/// CTAP2's canonical encoding has them, and a bounded nesting depth.
public indirect enum CBOR: Sendable, Hashable {
    case unsigned(UInt64)
    /// A negative integer, `-1 - n` for the `n` stored.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    /// Pairs in the order they came.
    case map([Pair])
    case tagged(UInt64, CBOR)
    case bool(Bool)
    case null
    case undefined
    case float(Double)

    public struct Pair: Sendable, Hashable {
        public let key: CBOR
        public let value: CBOR
        public init(_ key: CBOR, _ value: CBOR) {
            self.key = key
            self.value = value
        }
    }

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Items nested deeper than this are refused (WebAuthn's go three deep).
    public static let maximumDepth = 16

    /// The first item of `bytes` and how many bytes it took: what follows may be another item
    /// (an attested credential's key, then its extensions).
    public static func decodePrefix(_ bytes: some Collection<UInt8>) throws(Failure) -> (item: CBOR, length: Int) {
        let input = Array(bytes)
        guard !input.isEmpty else { throw Failure(description: "no CBOR item: the input is empty") }
        // libcbor makes room for as many elements as an array or map head declares before
        // reading them (and clears each slot): nine bytes declaring 2^40 elements would take the
        // process down. So the item's heads are walked first, every length checked against the
        // bytes that are there; libcbor then reads just that item.
        let data = Array(input.prefix(try scan(input)))
        var result = cbor_load_result()
        let loaded = data.withUnsafeBufferPointer { cbor_load($0.baseAddress, $0.count, &result) }
        var owned: UnsafeMutablePointer<cbor_item_t>? = loaded
        defer { if owned != nil { cbor_decref(&owned) } }
        guard let loaded, result.error.code == CBOR_ERR_NONE else {
            throw Failure(description: "malformed CBOR at byte \(result.error.position)")
        }
        return (try item(loaded, depth: 0), result.read)
    }

    /// The one item `bytes` hold; trailing bytes are refused.
    public static func decode(_ bytes: some Collection<UInt8>) throws(Failure) -> CBOR {
        let (item, length) = try decodePrefix(bytes)
        guard length == bytes.count else { throw Failure(description: "\(bytes.count - length) bytes after the CBOR item") }
        return item
    }

    /// The length of the first item of `bytes` (RFC 8949 appendix C's well-formedness walk), when
    /// every length it declares fits in what follows, no length is indefinite, and it nests at
    /// most ``maximumDepth`` deep.
    static func scan(_ bytes: [UInt8]) throws(Failure) -> Int {
        var index = 0
        // Items still to read at each open level; the outermost is the one item asked for.
        var levels = [1]
        while let last = levels.last {
            if last == 0 {
                levels.removeLast()
                continue
            }
            levels[levels.count - 1] -= 1
            guard index < bytes.count else { throw Failure(description: "the input ends inside an item") }
            let major = bytes[index] >> 5
            let info = bytes[index] & 0x1F
            index += 1
            let value: UInt64
            switch info {
            case 0..<24: value = UInt64(info)
            case 24...27:
                let size = 1 << (Int(info) - 24)
                guard bytes.count - index >= size else { throw Failure(description: "the input ends inside a head") }
                value = bytes[index..<(index + size)].reduce(0) { $0 << 8 | UInt64($1) }
                index += size
            case 31: throw Failure(description: "an indefinite length, which WebAuthn's canonical CBOR does not use")
            default: throw Failure(description: "a reserved head at byte \(index - 1)")
            }
            let remaining = UInt64(bytes.count - index)
            switch major {
            case 2, 3:
                guard value <= remaining else { throw Failure(description: "a string longer than the input") }
                index += Int(value)
            case 4, 5:
                // Every element takes a byte at least (a map's pairs, two).
                let elements = major == 5 ? value.multipliedReportingOverflow(by: 2) : (partialValue: value, overflow: false)
                guard !elements.overflow, elements.partialValue <= remaining else {
                    throw Failure(description: "an array or map declaring more elements than the input holds")
                }
                guard levels.count <= maximumDepth else { throw Failure(description: "CBOR nested deeper than \(maximumDepth)") }
                levels.append(Int(elements.partialValue))
            case 6:
                guard levels.count <= maximumDepth else { throw Failure(description: "CBOR nested deeper than \(maximumDepth)") }
                levels.append(1)
            default:
                break
            }
        }
        return index
    }

    private static func item(_ pointer: UnsafeMutablePointer<cbor_item_t>, depth: Int) throws(Failure) -> CBOR {
        guard depth <= maximumDepth else { throw Failure(description: "CBOR nested deeper than \(maximumDepth)") }
        switch cbor_typeof(pointer) {
        case CBOR_TYPE_UINT:
            return .unsigned(cbor_get_int(pointer))
        case CBOR_TYPE_NEGINT:
            return .negative(cbor_get_int(pointer))
        case CBOR_TYPE_BYTESTRING:
            guard cbor_bytestring_is_definite(pointer) else { throw Failure(description: "an indefinite-length byte string") }
            let count = cbor_bytestring_length(pointer)
            guard count > 0, let handle = cbor_bytestring_handle(pointer) else { return .bytes([]) }
            return .bytes(Array(UnsafeBufferPointer(start: handle, count: count)))
        case CBOR_TYPE_STRING:
            guard cbor_string_is_definite(pointer) else { throw Failure(description: "an indefinite-length text string") }
            let count = cbor_string_length(pointer)
            guard count > 0, let handle = cbor_string_handle(pointer) else { return .text("") }
            let bytes = Array(UnsafeBufferPointer(start: handle, count: count))
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw Failure(description: "a text string that is not UTF-8")
            }
            return .text(text)
        case CBOR_TYPE_ARRAY:
            guard cbor_array_is_definite(pointer) else { throw Failure(description: "an indefinite-length array") }
            let count = cbor_array_size(pointer)
            guard count > 0, let handle = cbor_array_handle(pointer) else { return .array([]) }
            var items: [CBOR] = []
            items.reserveCapacity(count)
            for index in 0..<count {
                guard let element = handle[index] else { throw Failure(description: "a missing array element") }
                items.append(try item(element, depth: depth + 1))
            }
            return .array(items)
        case CBOR_TYPE_MAP:
            guard cbor_map_is_definite(pointer) else { throw Failure(description: "an indefinite-length map") }
            let count = cbor_map_size(pointer)
            guard count > 0, let handle = cbor_map_handle(pointer) else { return .map([]) }
            var pairs: [Pair] = []
            pairs.reserveCapacity(count)
            for index in 0..<count {
                guard let key = handle[index].key, let value = handle[index].value else {
                    throw Failure(description: "a map entry without its key or value")
                }
                pairs.append(Pair(try item(key, depth: depth + 1), try item(value, depth: depth + 1)))
            }
            return .map(pairs)
        case CBOR_TYPE_TAG:
            // cbor_tag_item hands back a reference of its own.
            var owned = cbor_tag_item(pointer)
            defer { if owned != nil { cbor_decref(&owned) } }
            guard let tagged = owned else { throw Failure(description: "a tag without its item") }
            return .tagged(cbor_tag_value(pointer), try item(tagged, depth: depth + 1))
        case CBOR_TYPE_FLOAT_CTRL:
            // Debian builds libcbor with its assertions on: cbor_is_bool and its kin assert that
            // the item is a simple value, not a float, so the width is asked first.
            guard cbor_float_get_width(pointer) == CBOR_FLOAT_0 else { return .float(cbor_float_get_float(pointer)) }
            switch cbor_ctrl_value(pointer) {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            case 23: return .undefined
            default: throw Failure(description: "an unassigned simple value")
            }
        default:
            throw Failure(description: "an unknown CBOR type")
        }
    }

    // MARK: - Reading

    /// The value of `key` in a map (nil for other items or a missing key).
    public subscript(key: CBOR) -> CBOR? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { $0.key == key }?.value
    }

    /// The value of the integer `key` (COSE's labels: 1, 3, -1, -2…).
    public subscript(label: Int) -> CBOR? { self[CBOR(label)] }

    /// The value of the text `key` (`fmt`, `authData`, `attStmt`).
    public subscript(name: String) -> CBOR? { self[.text(name)] }

    public init(_ integer: Int) {
        self = integer >= 0 ? .unsigned(UInt64(integer)) : .negative(UInt64(-(integer + 1)))
    }

    /// The integer, when it fits an `Int`.
    public var int: Int? {
        switch self {
        case .unsigned(let value): value <= UInt64(Int.max) ? Int(value) : nil
        case .negative(let value): value <= UInt64(Int.max) ? -1 - Int(value) : nil
        default: nil
        }
    }

    public var bytes: [UInt8]? { if case .bytes(let value) = self { value } else { nil } }
    public var text: String? { if case .text(let value) = self { value } else { nil } }

    // MARK: - Writing

    /// The item in CBOR's preferred serialization (shortest heads, definite lengths): what a
    /// test's software authenticator sends.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    private func encode(into out: inout [UInt8]) {
        switch self {
        case .unsigned(let value): Self.head(0, value, &out)
        case .negative(let value): Self.head(1, value, &out)
        case .bytes(let value):
            Self.head(2, UInt64(value.count), &out)
            out += value
        case .text(let value):
            Self.head(3, UInt64(value.utf8.count), &out)
            out += Array(value.utf8)
        case .array(let items):
            Self.head(4, UInt64(items.count), &out)
            for item in items { item.encode(into: &out) }
        case .map(let pairs):
            Self.head(5, UInt64(pairs.count), &out)
            for pair in pairs {
                pair.key.encode(into: &out)
                pair.value.encode(into: &out)
            }
        case .tagged(let tag, let item):
            Self.head(6, tag, &out)
            item.encode(into: &out)
        case .bool(let value): out.append(value ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        case .undefined: out.append(0xF7)
        case .float(let value):
            out.append(0xFB)
            withUnsafeBytes(of: value.bitPattern.bigEndian) { out += $0 }
        }
    }

    private static func head(_ major: UInt8, _ value: UInt64, _ out: inout [UInt8]) {
        let type = major << 5
        switch value {
        case 0..<24: out.append(type | UInt8(value))
        case 24...0xFF: out += [type | 24, UInt8(value)]
        case 0x100...0xFFFF: out += [type | 25] + withUnsafeBytes(of: UInt16(value).bigEndian, Array.init)
        case 0x1_0000...0xFFFF_FFFF: out += [type | 26] + withUnsafeBytes(of: UInt32(value).bigEndian, Array.init)
        default: out += [type | 27] + withUnsafeBytes(of: value.bigEndian, Array.init)
        }
    }
}
