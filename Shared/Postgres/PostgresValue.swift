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
}

extension String: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { self }
    public init?(postgresText: String) { self = postgresText }
}

extension Int: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { String(self) }
    public init?(postgresText: String) { self.init(postgresText) }
}

extension Int32: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { String(self) }
    public init?(postgresText: String) { self.init(postgresText) }
}

extension Int64: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { String(self) }
    public init?(postgresText: String) { self.init(postgresText) }
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
}

extension UUID: PostgresEncodable, PostgresDecodable {
    public var postgresText: String { uuidString.lowercased() }
    public init?(postgresText: String) { self.init(uuidString: postgresText) }
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
        guard let data = try? PostgresCoders.encoder.encode(value) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    public init?(postgresText: String) {
        guard let value = try? PostgresCoders.decoder.decode(Value.self, from: Data(postgresText.utf8)) else {
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

enum PostgresCoders {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()
    static let decoder = JSONDecoder()
}

extension Date: PostgresEncodable, PostgresDecodable {
    /// ISO 8601 in UTC with microseconds, which PostgreSQL parses for timestamptz.
    public var postgresText: String { CivilDate.iso8601(secondsSince1970: timeIntervalSince1970, fractionDigits: 6) }

    /// Parses PostgreSQL's ISO output, `2026-11-29 19:50:28.123456+00` (any offset, optional
    /// fraction), which connections produce with `DateStyle=ISO`.
    public init?(postgresText: String) {
        let c = Array(postgresText.utf8)
        func number(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= c.count else { return nil }
            var value: Int64 = 0
            for index in from..<(from + count) {
                let digit = c[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int64(digit)
            }
            return value
        }
        guard c.count >= 19, c[4] == UInt8(ascii: "-"), c[7] == UInt8(ascii: "-"),
            c[10] == UInt8(ascii: " ") || c[10] == UInt8(ascii: "T"),
            let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
            let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2)
        else { return nil }
        var index = 19
        var fraction = 0.0
        if index < c.count, c[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            while index < c.count, c[index] >= UInt8(ascii: "0"), c[index] <= UInt8(ascii: "9") {
                fraction += Double(c[index] - UInt8(ascii: "0")) * scale
                scale /= 10
                index += 1
            }
        }
        var offset: Int64 = 0
        if index < c.count {
            if c[index] == UInt8(ascii: "Z") {
                index += 1
            } else if c[index] == UInt8(ascii: "+") || c[index] == UInt8(ascii: "-") {
                let sign: Int64 = c[index] == UInt8(ascii: "+") ? 1 : -1
                guard let hours = number(index + 1, 2) else { return nil }
                index += 3
                var minutes: Int64 = 0
                if index < c.count, c[index] == UInt8(ascii: ":") {
                    guard let m = number(index + 1, 2) else { return nil }
                    minutes = m
                    index += 3
                }
                offset = sign * (hours * 3600 + minutes * 60)
            }
        }
        guard index == c.count else { return nil }
        let days = CivilDate.days(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        self.init(timeIntervalSince1970: Double(seconds) + fraction)
    }
}
