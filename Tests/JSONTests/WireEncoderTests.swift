import Foundation
import PierModels
import PierRuntime
import Testing

@testable import PierJSON

/// The response encoder writes exactly what Foundation's `JSONEncoder` (sorted keys, unescaped
/// slashes, ISO 8601 dates) wrote before it, byte for byte, for every kind of value a wire type
/// holds, but for UUIDs, which are lowercase.
@Suite struct WireEncoderTests {
    struct Everything: Codable {
        enum Kind: String, Codable { case one, two }
        var text = "quote \" backslash \\ slash / newline \n tab \t bell \u{07} nul \u{00} unit \u{1F} é 😀 \u{2028}"
        var empty = ""
        var int = -9_223_372_036_854_775_807
        var int64: Int64 = 42
        var uint8: UInt8 = 255
        var doubles = [0.0, 1.0, -2.5, 1e300, 0.1, 123_456_789.125, .leastNonzeroMagnitude]
        var flag = true
        var none: String? = nil
        var some: String? = "here"
        var null: JSONValue = .null
        var date = Date(timeIntervalSince1970: 1_764_547_200.987)
        var before1970 = Date(timeIntervalSince1970: -86_400.5)
        var id = UUID(uuidString: "0b89c48c-5b66-400c-8ca2-1cb0c6bc4b4e")!
        var kind = Kind.two
        var nested = ["zeta": [1, 2], "alpha": [], "Mid": [3]]
        var metadata: [String: JSONValue] = ["b": .string("x"), "a": .number(1.5), "c": .bool(false)]
        var objects = [Problem.FieldError(field: "f", message: "m")]
        var emptyObject: [String: Int] = [:]
    }

    func foundation<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // The one deliberate difference: UUIDs lowercase (Foundation writes them uppercase).
        return String(decoding: try encoder.encode(value), as: UTF8.self)
            .replacingOccurrences(of: "0B89C48C-5B66-400C-8CA2-1CB0C6BC4B4E", with: "0b89c48c-5b66-400c-8ca2-1cb0c6bc4b4e")
    }

    func ours<T: Encodable>(_ value: T) throws -> String { String(decoding: try WireEncoder.encode(value), as: UTF8.self) }

    @Test func everyKindOfValueIsWrittenAsFoundationWroteIt() throws {
        #expect(try ours(Everything()) == foundation(Everything()))
        #expect(try ours([Everything(), Everything()]) == foundation([Everything(), Everything()]))
        #expect(try ours("top-level string") == foundation("top-level string"))
        #expect(try ours(7) == foundation(7))
    }

    @Test func wireTypesAreWrittenAsFoundationWroteThem() throws {
        let item = try JSONDecoder.iso8601.decode(
            FeedbackItem.self,
            from: Data(
                #"""
                {"id":"0B89C48C-5B66-400C-8CA2-1CB0C6BC4B4E","message":"The checkout button does nothing","rating":3,
                 "category":"bug","status":"new","platform":"ios","appVersion":"2.3.1","requestIds":["r1"],"metadata":{"k":"v"},
                 "tags":["a","b"],"moderation":"approved","createdAt":"2026-11-30T21:51:46Z","updatedAt":"2026-11-30T21:51:47Z"}
                """#.utf8))
        let page = FeedbackPage(items: [item, item], nextCursor: "abc/def")
        #expect(try ours(page) == foundation(page))
        let problem = Problem(
            type: "about:blank", title: "Unprocessable", status: 422, detail: "Fix \"this\"",
            errors: [.init(field: "message", message: "is required")])
        #expect(try ours(problem) == foundation(problem))
    }

    @Test func nonFiniteNumbersAreRefusedAsFoundationRefusesThem() {
        #expect(throws: EncodingError.self) { try WireEncoder.encode([Double.nan]) }
        #expect(throws: EncodingError.self) { try WireEncoder.encode(["x": Double.infinity]) }
    }
}

extension JSONDecoder {
    static let iso8601: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}
