import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A value that writes itself as JSON, member by member, into one growing buffer: no tree, no
/// existential, no dynamic cast on the way (what `Encodable` costs, measured as half of a
/// 100-item list's time). The output is byte for byte ``WireEncoder``'s for the same value:
/// members in sorted key order, absent optionals left out, dates in whole seconds, UUIDs in
/// lowercase. PierJSON's `JSON.encode` takes this path for a conforming value. The server's
/// alone: apps decode the wire types with Foundation's coders.
public protocol JSONWritable: Sendable {
    func write(to writer: inout JSONWriter)
}

/// A member name, quoted and escaped once: a type keeps its keys in `static let`s. The bytes
/// live as long as the process (never freed, never reference-counted: writing a key costs one
/// copy of its bytes); names known only at run time go through ``JSONWriter/member(named:)``.
/// `@unchecked Sendable`: the bytes are written once, before the key is shared, then only read.
public struct JSONKey: @unchecked Sendable {
    @usableFromInline let bytes: UnsafeBufferPointer<UInt8>

    public init(_ name: String) {
        var escaped = JSONWriter(capacity: name.utf8.count + 8)
        escaped.write(name)
        escaped.put(UInt8(ascii: ":"))
        let storage = UnsafeMutablePointer<UInt8>.allocate(capacity: escaped.count)
        storage.initialize(from: escaped.base, count: escaped.count)
        bytes = UnsafeBufferPointer(start: storage, count: escaped.count)
    }
}

/// The buffer JSON is written into. Commas are placed by the writer: call ``member(_:)`` before
/// each member of an object and ``element()`` before each element of an array. It owns its
/// memory (written through a pointer: no uniqueness check or generic append per byte, measured
/// as a fifth of a 100-item list's writing), so it cannot be copied, only passed `inout`.
/// `@unchecked Sendable`: the memory is owned by this one value and moves with it.
public struct JSONWriter: ~Copyable, @unchecked Sendable {
    @usableFromInline var base: UnsafeMutablePointer<UInt8>
    @usableFromInline var count = 0
    @usableFromInline var capacity: Int
    /// True right after a container opened: its first member or element needs no comma.
    @usableFromInline var first = true

    public init(capacity: Int = 512) {
        self.capacity = max(capacity, 32)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// What was written so far.
    public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// Room for `more` bytes after what is written.
    @inlinable @inline(__always)
    mutating func reserve(_ more: Int) {
        if count + more > capacity { grow(to: count + more) }
    }

    @usableFromInline
    mutating func grow(to needed: Int) {
        let larger = max(needed, capacity * 2)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: larger)
        moved.initialize(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = larger
    }

    @inlinable @inline(__always)
    mutating func put(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    @inlinable @inline(__always)
    mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(bytes.count)
        (base + count).initialize(from: source, count: bytes.count)
        count += bytes.count
    }

    @inlinable @inline(__always)
    mutating func put(_ bytes: UnsafeRawBufferPointer) {
        put(bytes.assumingMemoryBound(to: UInt8.self))
    }

    @inlinable
    mutating func put(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { put($0) }
    }

    // MARK: - Containers

    @inlinable
    public mutating func beginObject() {
        put(UInt8(ascii: "{"))
        first = true
    }

    @inlinable
    public mutating func endObject() {
        put(UInt8(ascii: "}"))
        first = false
    }

    @inlinable
    public mutating func beginArray() {
        put(UInt8(ascii: "["))
        first = true
    }

    @inlinable
    public mutating func endArray() {
        put(UInt8(ascii: "]"))
        first = false
    }

    /// The next member's name (and the comma before it); its value follows.
    @inlinable
    public mutating func member(_ key: JSONKey) {
        if !first { put(UInt8(ascii: ",")) }
        put(key.bytes)
        first = true
    }

    /// The next member's name given at run time (a dictionary's keys); its value follows.
    public mutating func member(named name: String) {
        if !first { put(UInt8(ascii: ",")) }
        appendString(name)
        put(UInt8(ascii: ":"))
        first = true
    }

    /// The comma before an array's next element, when it is not the first.
    @inlinable
    public mutating func element() {
        if !first { put(UInt8(ascii: ",")) }
        first = true
    }

    // MARK: - Values

    public mutating func write(_ text: String) {
        appendString(text)
        first = false
    }

    /// A string from its UTF-8 bytes as they are stored (a row's cell): escaped, never made a
    /// `String` first.
    public mutating func writeString(utf8: UnsafeBufferPointer<UInt8>) {
        appendString(utf8: utf8)
        first = false
    }

    public mutating func write(_ value: Int) {
        appendInteger(Int64(value))
        first = false
    }

    public mutating func write(_ value: Bool) {
        put(value ? JSONWriter.trueBytes : JSONWriter.falseBytes)
        first = false
    }

    public mutating func writeNull() {
        put(JSONWriter.nullBytes)
        first = false
    }

    /// `2026-12-01T10:00:00Z`: whole seconds, rounded down, as ``WireEncoder`` writes dates.
    public mutating func write(_ date: Date) {
        appendDate(secondsSince1970: date.timeIntervalSince1970)
        first = false
    }

    /// Lowercase `8-4-4-4-12`, in place.
    public mutating func write(_ id: UUID) {
        let value = id.uuid
        put(UInt8(ascii: "\""))
        withUnsafeBytes(of: value) { raw in
            for (index, byte) in raw.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { put(UInt8(ascii: "-")) }
                put(Self.hexDigit(byte >> 4))
                put(Self.hexDigit(byte & 0xF))
            }
        }
        put(UInt8(ascii: "\""))
        first = false
    }

    public mutating func write<Value: JSONWritable>(_ value: Value) {
        value.write(to: &self)
        first = false
    }

    public mutating func write<Value: JSONWritable>(_ values: [Value]) {
        beginArray()
        for value in values {
            element()
            value.write(to: &self)
        }
        endArray()
    }

    public mutating func write(_ values: [String]) {
        beginArray()
        for value in values {
            element()
            write(value)
        }
        endArray()
    }

    /// A line break between values (NDJSON): the next value starts a new one.
    public mutating func newline() {
        put(0x0A)
        first = true
    }

    /// Bytes that are JSON already (a number's digits as a row holds them).
    public mutating func writeRaw(_ json: UnsafeBufferPointer<UInt8>) {
        put(json)
        first = false
    }

    // MARK: - Formatting in place

    /// The lowercase hex digit of a value below 16.
    @inline(__always)
    static func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? 0x30 + value : 0x57 + value }
    static let trueBytes = Array("true".utf8)
    static let falseBytes = Array("false".utf8)
    static let nullBytes = Array("null".utf8)

    /// Text that is JSON already, its bytes as they are.
    mutating func appendRaw(_ text: String) {
        var text = text
        text.withUTF8 { put($0) }
    }

    mutating func appendString(_ text: String) {
        var text = text
        text.withUTF8 { appendString(utf8: $0) }
    }

    /// Quotes, backslashes and control characters escaped, nothing else (``WireEncoder``'s rule).
    mutating func appendString(utf8: UnsafeBufferPointer<UInt8>) {
        put(UInt8(ascii: "\""))
        // Most text has nothing to escape: eight bytes at a time until something might.
        var clean = utf8.startIndex
        var start = utf8.startIndex
        if let source = utf8.baseAddress {
            let raw = UnsafeRawPointer(source)
            while start + 8 <= utf8.endIndex, !Self.needsEscape(raw.loadUnaligned(fromByteOffset: start, as: UInt64.self)) {
                start += 8
            }
        }
        for index in start..<utf8.endIndex {
            let byte = utf8[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            put(UnsafeBufferPointer(rebasing: utf8[clean..<index]))
            clean = index + 1
            put(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): put(byte)
            case 0x0A: put(UInt8(ascii: "n"))
            case 0x0D: put(UInt8(ascii: "r"))
            case 0x09: put(UInt8(ascii: "t"))
            case 0x08: put(UInt8(ascii: "b"))
            case 0x0C: put(UInt8(ascii: "f"))
            default:
                put(UInt8(ascii: "u"))
                put(UInt8(ascii: "0"))
                put(UInt8(ascii: "0"))
                put(Self.hexDigit(byte >> 4))
                put(Self.hexDigit(byte & 0xF))
            }
        }
        put(UnsafeBufferPointer(rebasing: utf8[clean...]))
        put(UInt8(ascii: "\""))
    }

    /// Whether any of the eight bytes is a control character, `"` or `\\` (the classic
    /// has-zero-byte test on the word, and on it xor each character).
    @inline(__always)
    static func needsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        func hasZero(_ value: UInt64) -> Bool { (value &- ones) & ~value & highs != 0 }
        // A byte below 0x20 (and below 0x80): subtracting 0x20 from it borrows into its high bit.
        let control = (word &- 0x2020_2020_2020_2020) & ~word & highs != 0
        return control || hasZero(word ^ 0x2222_2222_2222_2222) || hasZero(word ^ 0x5C5C_5C5C_5C5C_5C5C)
    }

    mutating func appendInteger(_ value: Int64) {
        if value == 0 {
            put(UInt8(ascii: "0"))
            return
        }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 20 digits at most, written backwards
        var written = 0
        if value < 0 { put(UInt8(ascii: "-")) }
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                buffer[23 - written] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                written += 1
            }
        }
        withUnsafeBytes(of: &digits) { put(UnsafeRawBufferPointer(rebasing: $0[(24 - written)...])) }
    }

    /// `"YYYY-MM-DDTHH:MM:SSZ"`, the time rounded down to the second and bounded to years
    /// 0001–9999, as PierRuntime's `CivilDate.iso8601` writes it (the wire types cannot link
    /// PierRuntime; JSONTests hold the two to the same output).
    mutating func appendDate(secondsSince1970 value: Double) {
        let bounded = value.isNaN ? 0 : min(max(value, -62_135_596_800), 253_402_300_799.999_999)
        var seconds = Int64(bounded.rounded(.down))
        var days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        seconds -= days * 86_400
        // Days since 1970 to a civil date (H. Hinnant's algorithm).
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shifted = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shifted + 2) / 5 + 1
        let month = shifted < 10 ? shifted + 3 : shifted - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int64) {
            put(UInt8(ascii: "0") + UInt8(value / 10))
            put(UInt8(ascii: "0") + UInt8(value % 10))
        }
        put(UInt8(ascii: "\""))
        if year < 10_000 {
            two(year / 100)
            two(year % 100)
        } else {
            // The upper bound itself rounds to 10000-01-01 as a Double: written as CivilDate does.
            appendRaw(String(year))
        }
        put(UInt8(ascii: "-"))
        two(month)
        put(UInt8(ascii: "-"))
        two(day)
        put(UInt8(ascii: "T"))
        two(seconds / 3600)
        put(UInt8(ascii: ":"))
        two(seconds / 60 % 60)
        put(UInt8(ascii: ":"))
        two(seconds % 60)
        put(UInt8(ascii: "Z"))
        put(UInt8(ascii: "\""))
    }
}
