import PierJSON
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A Swift value that can be bound as a query parameter, in PostgreSQL's text format.
public protocol PostgresEncodable: Sendable {
    /// The value in PostgreSQL's text input format.
    var postgresText: String { get }
}

/// A Swift value that can be read from a column in PostgreSQL's text output format.
public protocol PostgresDecodable {
    /// Parses the column's text; nil when it is not a valid value of this type.
    init?(postgresText: String)
    /// Parses the column's bytes where libpq's result was copied to; by default through a
    /// String. Integers, booleans, UUIDs and dates read the bytes directly: no String per cell.
    init?(postgresBytes: UnsafeBufferPointer<UInt8>)
}

extension PostgresDecodable {
    public init?(postgresBytes: UnsafeBufferPointer<UInt8>) {
        self.init(postgresText: String(decoding: postgresBytes, as: UTF8.self))
    }
}

extension FixedWidthInteger {
    /// Decimal digits with an optional leading `-`; nil on anything else or an overflow.
    init?(decimalBytes bytes: UnsafeBufferPointer<UInt8>) {
        var value: Self = 0
        let negative = bytes.first == UInt8(ascii: "-")
        let digits = negative ? UnsafeBufferPointer(rebasing: bytes.dropFirst()) : bytes
        guard !digits.isEmpty else { return nil }
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let digit = Self(byte - UInt8(ascii: "0"))
            let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) =
                negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !overflow, !overflow2 else { return nil }
            value = next
        }
        self = value
    }
}

extension String: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { self }
    public init?(postgresText: String) { self = postgresText }
}

extension Int: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { String(self) }
    public init?(postgresText: String) { self.init(postgresText) }
    public init?(postgresBytes: UnsafeBufferPointer<UInt8>) { self.init(decimalBytes: postgresBytes) }
}

extension Int32: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { String(self) }
    public init?(postgresText: String) { self.init(postgresText) }
    public init?(postgresBytes: UnsafeBufferPointer<UInt8>) { self.init(decimalBytes: postgresBytes) }
}

extension Int64: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { String(self) }
    public init?(postgresText: String) { self.init(postgresText) }
    public init?(postgresBytes: UnsafeBufferPointer<UInt8>) { self.init(decimalBytes: postgresBytes) }
}

extension Double: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { String(self) }
    public init?(postgresText: String) { self.init(postgresText) }
}

extension Bool: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { self ? "t" : "f" }
    public init?(postgresText: String) {
        switch postgresText {
        case "t", "true": self = true
        case "f", "false": self = false
        default: return nil
        }
    }
    public init?(postgresBytes: UnsafeBufferPointer<UInt8>) {
        guard postgresBytes.count == 1 else {
            self.init(postgresText: String(decoding: postgresBytes, as: UTF8.self))
            return
        }
        switch postgresBytes[0] {
        case UInt8(ascii: "t"): self = true
        case UInt8(ascii: "f"): self = false
        default: return nil
        }
    }
}

extension UUID: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { text() }
    public init?(postgresText: String) { self.init(text: postgresText) }
    public init?(postgresBytes: UnsafeBufferPointer<UInt8>) { self.init(utf8: postgresBytes) }
}

extension Decimal: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { description }
    public init?(postgresText: String) { self.init(string: postgresText) }
}

/// `bytea`, sent and read in hex format (`\x0a1b…`).
public struct PostgresBytes: PostgresEncodable, PostgresDecodable, Equatable, Hashable {
    public var bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var postgresText: String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        output.reserveCapacity(2 + bytes.count * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 15)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    public init?(postgresText: String) {
        let characters = Array(postgresText.utf8)
        guard characters.count >= 2, characters[0] == UInt8(ascii: "\\"), characters[1] == UInt8(ascii: "x"),
            characters.count % 2 == 0
        else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes = [UInt8]()
        bytes.reserveCapacity((characters.count - 2) / 2)
        var index = 2
        while index < characters.count {
            guard let high = nibble(characters[index]), let low = nibble(characters[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.bytes = bytes
    }
}

/// A `json`/`jsonb` value holding a Codable Swift value.
public struct PostgresJSON<Value: Codable & Sendable>: PostgresEncodable, PostgresDecodable, Sendable {
    public var value: Value
    public init(_ value: Value) { self.value = value }

    public var postgresText: String {
        // Encoding a Codable value only fails for non-finite floats; null keeps the row valid.
        guard let bytes = try? WireEncoder.encode(value) else { return "null" }
        return String(decoding: bytes, as: UTF8.self)
    }

    public init?(postgresText: String) {
        guard let value = try? WireDecoder.decode(Value.self, from: Array(postgresText.utf8)) else {
            return nil
        }
        self.value = value
    }
}

/// `text[]`, in array literal syntax with every element quoted.
public struct PostgresTextArray: PostgresEncodable, PostgresDecodable, Equatable, Sendable {
    public var values: [String]
    public init(_ values: [String]) { self.values = values }

    public var postgresText: String {
        let quoted = values.map { value -> String in
            var escaped = "\""
            for character in value {
                if character == "\"" || character == "\\" { escaped.append("\\") }
                escaped.append(character)
            }
            return escaped + "\""
        }
        return "{" + quoted.joined(separator: ",") + "}"
    }

    public init?(postgresText: String) {
        let characters = Array(postgresText)
        guard characters.first == "{", characters.last == "}" else { return nil }
        var values: [String] = []
        var index = 1
        let end = characters.count - 1
        while index < end {
            var value = ""
            if characters[index] == "\"" {
                index += 1
                while index < end, characters[index] != "\"" {
                    if characters[index] == "\\" { index += 1 }
                    guard index < end else { return nil }
                    value.append(characters[index])
                    index += 1
                }
                index += 1
            } else {
                while index < end, characters[index] != "," {
                    value.append(characters[index])
                    index += 1
                }
            }
            values.append(value)
            if index < end, characters[index] == "," { index += 1 }
        }
        self.values = values
    }
}

extension Date: PostgresEncodable, PostgresDecodable {
    /// ISO 8601 in UTC with microseconds, which PostgreSQL parses for timestamptz.
    public var postgresText: String { CivilDate.iso8601(secondsSince1970: timeIntervalSince1970, fractionDigits: 6) }

    /// Parses PostgreSQL's ISO output, `2026-11-29 19:50:28.123456+00` (any offset, optional
    /// fraction), which connections produce with `DateStyle=ISO`.
    public init?(postgresText: String) {
        guard let seconds = CivilDate.parse(postgresText, .postgres) else { return nil }
        self.init(timeIntervalSince1970: seconds)
    }

    public init?(postgresBytes: UnsafeBufferPointer<UInt8>) {
        guard let seconds = CivilDate.parse(utf8: postgresBytes, .postgres) else { return nil }
        self.init(timeIntervalSince1970: seconds)
    }
}
