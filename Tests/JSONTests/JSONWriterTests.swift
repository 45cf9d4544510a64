import Foundation
import PierModels
import Testing

@testable import PierJSON

/// The writer that wire types write themselves with is the same JSON as the `Encodable` path,
/// byte for byte: the answers clients get do not change with the path taken.
@Suite struct JSONWriterTests {
    func tree<T: Encodable>(_ value: T) throws -> String { String(decoding: try WireEncoder.encode(value), as: UTF8.self) }
    func written<T: JSONWritable>(_ value: T) -> String { String(decoding: JSON.write(value), as: UTF8.self) }

    static let awkward = [
        "", "plain", "quote \" backslash \\ slash /", "new\nline\r\ttab", "bell \u{07} nul \u{00} unit \u{1F} del \u{7F}",
        "é 😀 \u{2028} \u{202E}", String(repeating: "x", count: 300) + "\"",
    ]

    @Test func valuesAreFormattedInPlaceAsTheEncoderFormatsThem() throws {
        struct Box<T: Encodable>: Encodable { var value: T }
        func check(_ value: JSONValue) throws {
            var writer = JSONWriter()
            writer.write(value)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == (try tree(value)), "\(value)")
        }
        for number in [0, 1, -1, 42, -9_007_199_254_740_991, 1e15 - 1, 1e15, 1e300, 0.1, -2.5, 123_456_789.125] {
            try check(.number(number))
        }
        for text in Self.awkward { try check(.string(text)) }
        // Each character that needs escaping, at every offset around the eight-byte scan, and
        // bytes near them that do not (0x20, '!', '#', '[', ']', DEL, UTF-8 continuation bytes).
        for special in ["\"", "\\", "\n", "\u{00}", "\u{1F}", "\u{01}"] {
            for offset in 0..<20 { try check(.string(String(repeating: "a", count: offset) + special + "tail")) }
        }
        for near in [" ", "!", "#", "[", "]", "\u{7F}", "é", "😀"] {
            try check(.string(String(repeating: near, count: 19)))
        }
        try check(.object([:]))
        try check(.array([]))
        try check(.object(["b": .null, "a": .bool(false), "B": .array([.string("x")]), "é": .number(2)]))
        // Integers across the range, dates across the years, ids.
        for integer in [0, 7, -7, 10, 99, 100, Int.max, Int.min, Int(Int32.max)] {
            var writer = JSONWriter()
            writer.write(integer)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == String(integer))
        }
        for seconds in [
            0, -0.5, 1_764_547_200.999, -62_135_596_800, -62_135_596_801, 253_402_300_799.5, 253_402_300_800, 951_782_400,
        ] {
            let date = Date(timeIntervalSince1970: seconds)
            var writer = JSONWriter()
            writer.write(date)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == (try tree(date)), "\(seconds)")
        }
        for _ in 0..<100 {
            let id = UUID()
            var writer = JSONWriter()
            writer.write(id)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == "\"\(id.uuidString.lowercased())\"")
        }
    }

    /// The writer owns its memory and grows it: from the smallest start, through many
    /// doublings and one write far larger than all before, nothing written is lost or moved.
    @Test func theBufferGrowsWithoutLosingAByte() throws {
        let texts = (0..<300).map { index in String(repeating: index % 7 == 0 ? "\"é\n" : "ab", count: index) }
        let large = String(repeating: "x\u{01}", count: 40_000)
        var writer = JSONWriter(capacity: 1)
        writer.beginArray()
        for text in texts {
            writer.element()
            writer.write(text)
        }
        writer.element()
        writer.write(large)
        writer.endArray()
        #expect(String(decoding: writer.bytes, as: UTF8.self) == (try tree(texts + [large])))
    }

    /// Commas fall where they belong whatever is left out, nested or not.
    @Test func commasFollowWhatIsWritten() {
        let a = JSONKey("a"), b = JSONKey("b"), c = JSONKey("c")
        var writer = JSONWriter()
        writer.beginObject()
        writer.member(a, ifPresent: String?.none)
        writer.member(b)
        writer.beginArray()
        writer.element()
        writer.beginObject()
        writer.endObject()
        writer.element()
        writer.write(["x"])
        writer.endArray()
        writer.member(c, ifPresent: 3)
        writer.endObject()
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #"{"b":[{},["x"]],"c":3}"#)
    }
}
