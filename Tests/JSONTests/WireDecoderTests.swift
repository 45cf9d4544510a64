import Foundation
import PierModels
import Testing

@testable import PierJSON

/// The request decoder reads what Foundation's `JSONDecoder` read, refuses what it refused, and
/// fails with the same kinds of errors on the same paths, so the problems clients get are
/// unchanged; where it differs (strict dates, exact integers, a named range) the tests say so.
@Suite struct WireDecoderTests {
    struct Everything: Codable, Equatable {
        enum Kind: String, Codable { case one, two }
        var text: String
        var int: Int
        var int64: Int64
        var uint8: UInt8
        var double: Double
        var float: Float
        var flag: Bool
        var none: String?
        var some: String?
        var id: UUID
        var kind: Kind
        var nested: [String: [Int]]
        var metadata: [String: JSONValue]
        var objects: [Problem.FieldError]
        var rows: [[Int?]]
    }

    static let everything = #"""
        { "text": "quote \" backslash \\ slash \/ nl \n tab \t bell \u0007 é \u00e9 😀 \ud83d\ude00 \u2028",
          "int": -9223372036854775808, "int64": 9223372036854775807, "uint8": 255,
          "double": -1.25e-3, "float": 0.5, "flag": false, "none": null, "some": "here",
          "id": "0b89c48c-5b66-400c-8ca2-1cb0c6bc4b4e", "kind": "two",
          "nested": {"zeta": [1, 2], "alpha": [], "": [3]},
          "metadata": {"a": 1.5, "b": "x", "c": true, "d": null, "e": [1, {"f": "g"}], "big": 12345678901234},
          "objects": [{"field": "f", "message": "m"}],
          "rows": [[1, null], [], [null]] }
        """#

    @Test func wireTypesReadAsFoundationReadThem() throws {
        let bytes = Array(Self.everything.utf8)
        #expect(try WireDecoder.decode(Everything.self, from: bytes) == JSONDecoder().decode(Everything.self, from: Data(bytes)))
        let feedback = Array(
            #"{"id":"0B89C48C-5B66-400C-8CA2-1CB0C6BC4B4E","message":"m","rating":3,"requestIds":["r"],"metadata":{"k":1}}"#
                .utf8)
        let ours = try WireDecoder.decode(CreateFeedback.self, from: feedback)
        let theirs = try JSONDecoder().decode(CreateFeedback.self, from: Data(feedback))
        #expect(try WireEncoder.encode(ours) == WireEncoder.encode(theirs))
        for top in ["7", "-0", "1E+2", "0.0", "\"text\"", "true", "null", " [ ] ", "{}"] {
            let ours = try WireDecoder.decode(JSONValue.self, from: Array(top.utf8))
            #expect(ours == (try JSONDecoder().decode(JSONValue.self, from: Data(top.utf8))), "\(top)")
        }
    }

    @Test(arguments: [
        "", " ", "{", "}", #"{"a" 1}"#, #"{a:1}"#, "{'a':1}", "[01]", "[-]", "[1.]", "[.5]", "[1e]",
        "[+1]", "[NaN]", "[Infinity]", "tru", "nul", "[1 2]", "1 2", "\"open", #""\x""#, #""\u12""#, #""\ud800""#,
        #""\udc00""#, #""\ud800\u0041""#, "\"tab\there\"", "\"nl\nhere\"", "/* c */ 1", "[1]]",
        String(repeating: "[", count: 600) + String(repeating: "]", count: 600),
    ])
    func malformedTextIsRefusedAsFoundationRefusesIt(text: String) {
        #expect(throws: JSONDocument.SyntaxError.self) { try JSONDocument(parsing: Array(text.utf8)) }
        #expect(throws: (any Error).self) { try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) }
    }

    /// Foundation's decoder lets a trailing comma through; RFC 8259 does not, and neither does Pier.
    @Test func trailingCommasAreRefused() {
        for text in ["[1,]", #"{"a":1,}"#, "[,]", #"{,}"#] {
            #expect(throws: JSONDocument.SyntaxError.self) { try JSONDocument(parsing: Array(text.utf8)) }
        }
    }

    @Test func invalidUTF8IsRefused() throws {
        for bytes: [UInt8] in [
            [0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0x5C, 0x6E, 0xFE, 0x22],
        ] {
            #expect(throws: JSONDocument.SyntaxError.self) { try JSONDocument(parsing: bytes) }
        }
        #expect(try WireDecoder.decode(String.self, from: [0x22, 0xC3, 0xA9, 0x22]) == "é")
    }

    @Test func nestingUpToTheLimitIsRead() throws {
        let depth = JSONDocument.maximumDepth
        let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        #expect(throws: Never.self) { try JSONDocument(parsing: Array(text.utf8)) }
        let over = "[" + text + "]"
        #expect(throws: JSONDocument.SyntaxError.self) { try JSONDocument(parsing: Array(over.utf8)) }
    }

    struct Shape: Decodable {
        var count: Int
        var small: Int32?
        var tags: [String]?
        var when: Date?
        var inner: Inner?
        struct Inner: Decodable { var ids: [UUID] }
    }

    /// The error of decoding `text` as `Shape`, as a problem's field and message.
    func failure(_ text: String) -> Problem.FieldError? {
        do {
            _ = try WireDecoder.decode(Shape.self, from: Array(text.utf8))
            return nil
        } catch let error as DecodingError {
            guard case .fields(let issues) = JSON.issue(for: error), let issue = issues.first else { return nil }
            return Problem.FieldError(field: issue.field, message: issue.message)
        } catch {
            return Problem.FieldError(field: "(syntax)", message: "\(error)")
        }
    }

    @Test func failuresNameTheFieldAndWhy() {
        #expect(failure("{}") == .init(field: "count", message: "is required"))
        #expect(failure(#"{"count":null}"#) == .init(field: "count", message: "must be an integer, not null"))
        #expect(failure(#"{"count":"2"}"#) == .init(field: "count", message: "must be an integer"))
        #expect(failure(#"{"count":1.5}"#) == .init(field: "count", message: "must be an integer"))
        #expect(failure(#"{"count":9223372036854775808}"#) == .init(field: "count", message: "must be an integer"))
        #expect(failure(#"{"count":1e300}"#) == .init(field: "count", message: "must be an integer"))
        // A whole number written with a fraction or an exponent is read where a Double is exact, not beyond.
        #expect(failure(#"{"count":2.0}"#) == nil && failure(#"{"count":1e3}"#) == nil)
        #expect(failure(#"{"count":1e17}"#) == .init(field: "count", message: "must be an integer"))
        #expect(
            failure(#"{"count":1,"small":2147483648}"#)
                == .init(field: "small", message: "must be an integer from -2147483648 to 2147483647"))
        #expect(failure(#"{"count":1,"tags":["a",3]}"#) == .init(field: "tags[1]", message: "must be a string"))
        #expect(failure(#"{"count":1,"tags":{}}"#) == .init(field: "tags", message: "must be an array"))
        #expect(
            failure(#"{"count":1,"inner":{"ids":["nope"]}}"#) == .init(field: "inner.ids[0]", message: "has an invalid value"))
        #expect(failure(#"{"count":1,"inner":[]}"#) == .init(field: "inner", message: "must be an object"))
        // Dates are strict ISO 8601 (Foundation's strategy takes 30 February as 2 March).
        #expect(
            failure(#"{"count":1,"when":"2026-02-30T00:00:00Z"}"#)
                == .init(field: "when", message: "must be an ISO 8601 date-time, such as 2026-11-30T12:00:00Z"))
        #expect(failure(#"{"count":1,"when":"2026-11-30T12:00:00.5+01:00"}"#) == nil)
    }

    @Test func membersAreFoundByNameWhateverTheirNumber() throws {
        // A repeated name takes its last value.
        #expect(try WireDecoder.decode(Shape.self, from: Array(#"{"count":1,"count":2}"#.utf8)).count == 2)
        // Large objects are indexed: each of 5,000 members is found.
        let members = (0..<5_000).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        let map = try WireDecoder.decode([String: Int].self, from: Array("{\(members)}".utf8))
        #expect(map.count == 5_000 && map["k4999"] == 4_999 && map["k0"] == 0)
        let wide = try WireDecoder.decode(Shape.self, from: Array("{\(members),\"count\":7,\"k1\":1}".utf8))
        #expect(wide.count == 7)
    }

    /// A type asking for its super decoder (as a subclass does) gets one, whatever its keys: a
    /// key type without a "super" case is no reason to trap.
    struct Child: Decodable {
        enum CodingKeys: String, CodingKey { case name }
        var name: String
        var parent: String?
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            parent = try String?(from: container.superDecoder())
        }
    }

    @Test func aSuperDecoderIsGivenForAnyKeyType() throws {
        #expect(try WireDecoder.decode(Child.self, from: Array(#"{"name":"c","super":"p"}"#.utf8)).parent == "p")
        #expect(try WireDecoder.decode(Child.self, from: Array(#"{"name":"c"}"#.utf8)).parent == nil)
    }

    @Test func theCharacterPostgreSQLCannotStoreIsNoticed() throws {
        #expect(try JSONDocument(parsing: Array(#"{"a":"x\u0000y"}"#.utf8)).containsNUL)
        #expect(try JSONDocument(parsing: Array(#"{"a\u0000":1}"#.utf8)).containsNUL)
        #expect(try !JSONDocument(parsing: Array(#"{"a":"x\\u0000y"}"#.utf8)).containsNUL)
        #expect(try WireDecoder.decode(String.self, from: Array(#""x\u0000y""#.utf8)) == "x\u{0}y")
    }

    @Test func requestBodiesGetErrorsThatNameTheField() {
        func refusal(_ text: String) -> JSON.BodyError? {
            do {
                _ = try JSON.decodeBody(Shape.self, from: Array(text.utf8))
                return nil
            } catch { return error }
        }
        #expect(refusal("") == .body("The request body is empty; a JSON object is expected."))
        #expect(refusal("[1]") == .body("The request body must be an object in JSON."))
        guard case .body(let syntax)? = refusal(#"{"count":1,}"#) else {
            Issue.record("a trailing comma was read")
            return
        }
        #expect(syntax.hasPrefix("The request body is not valid JSON: "))
        #expect(refusal(#"{"count":"one"}"#) == .fields([.init(field: "count", message: "must be an integer")]))
        // U+0000 anywhere, in a value or a member's name, named once per field, members in order.
        let nul = "must not contain the NUL character (U+0000)"
        #expect(
            refusal(#"{"count":1,"tags":["ok","\u0000"],"b\u0000":1,"b\u0000":2}"#)
                == .fields([.init(field: "b\u{0}", message: nul), .init(field: "tags[1]", message: nul)]))
        #expect(refusal(#"{"count":1}"#) == nil)
    }

    struct Strict: StrictDecodable, Equatable {
        enum CodingKeys: String, CodingKey { case message, feedback, rating }
        static let required = [["message", "feedback"], ["rating"]]
        var message: String?
        var feedback: String?
        var rating: Int
    }

    /// A plugin's body type, plain `Decodable`: its unknown top-level members are refused all
    /// the same (its synthesized keys say what it reads), nested ones and values untouched.
    struct Plain: Decodable, Equatable {
        struct Inner: Decodable, Equatable { var a: Int }
        var score: Int
        var name: String?
        var inner: Inner?
    }

    @Test func everyBodyIsStrictByDefault() throws {
        func refusal(_ text: String) -> JSON.BodyError? {
            do {
                _ = try JSON.decodeBody(knownMembersOf: Plain.self, from: Array(text.utf8))
                return nil
            } catch { return error }
        }
        #expect(
            try JSON.decodeBody(knownMembersOf: Plain.self, from: Array(#"{"score":3,"inner":{"a":1,"b":2}}"#.utf8))
                == Plain(score: 3, name: nil, inner: .init(a: 1)))
        #expect(
            refusal(#"{"score":3,"scroe":4,"nmae":"x","scroe":5}"#)
                == .fields([
                    .init(field: "nmae", message: "is not a known field"), .init(field: "scroe", message: "is not a known field"),
                ]))
        #expect(refusal(#"{"name":"x"}"#) == .fields([.init(field: "score", message: "is required")]))
        #expect(refusal("[1]") != nil && refusal("3") != nil)
        let many = (0..<30).map { #""m\#($0)":1"# }.joined(separator: ",")
        guard case .fields(let issues)? = refusal("{\"score\":1," + many + "}") else { Issue.record("not refused"); return }
        #expect(issues.count == JSON.listedUnknown + 1 && issues.last?.field == "*")
        // A body of twenty thousand made-up members (each repeated) is answered as briefly, in
        // one pass over its names: no member is compared with every other.
        let flood = (0..<40_000).map { #""x\#($0 % 20_000)":1"# }.joined(separator: ",")
        guard case .fields(let flooded)? = refusal("{\"score\":1," + flood + "}") else { Issue.record("not refused"); return }
        #expect(flooded.count == JSON.listedUnknown + 1 && flooded.last?.message == "and 19980 more unknown fields")
    }

    @Test func strictBodiesNameEveryMissingAndUnknownMemberAtOnce() {
        func refusal(_ text: String) -> JSON.BodyError? {
            do {
                _ = try JSON.decodeBody(strictly: Strict.self, from: Array(text.utf8))
                return nil
            } catch { return error }
        }
        #expect(refusal(#"{"message":"hi","rating":3}"#) == nil)
        #expect(refusal(#"{"feedback":"hi","rating":3,"rating":4}"#) == nil)
        // Missing with its alternatives, unknown names sorted and each named once, in one answer.
        #expect(
            refusal(#"{"zeta":1,"alpha":2,"zeta":3}"#)
                == .fields([
                    .init(field: "alpha", message: "is not a known field"),
                    .init(field: "message", message: "is required (or feedback)"),
                    .init(field: "rating", message: "is required"),
                    .init(field: "zeta", message: "is not a known field"),
                ]))
        // A long made-up name is cut; past twenty, the rest are counted, not listed.
        let long = String(repeating: "x", count: 100)
        #expect(
            refusal(#"{"message":"hi","rating":1,"\#(long)":1}"#)
                == .fields([.init(field: String(repeating: "x", count: 64) + "…", message: "is not a known field")]))
        let many = (0..<25).map { #""u\#($0 + 10)":1"# }.joined(separator: ",")
        guard case .fields(let issues)? = refusal(#"{"message":"hi","rating":1,\#(many)}"#) else {
            Issue.record("unknown members were accepted")
            return
        }
        #expect(issues.count == 21)
        #expect(issues.last == .init(field: "*", message: "and 5 more unknown fields"))
        // Not an object: the decoding names the body as a whole, as for any type.
        #expect(refusal("[1]") == .body("The request body must be an object in JSON."))
        #expect(
            refusal(#"{"message":"hi","rating":"three"}"#) == .fields([.init(field: "rating", message: "must be an integer")]))
    }
}
