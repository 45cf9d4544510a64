import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierRuntime
import PierTestSupport
import Testing

@testable import FeedbackService

/// Input that once got a 500 or was silently changed: each is now a 422 that names the field,
/// and nothing is stored changed.
@Suite struct FeedbackHostileInputTests {
    static let harness = Task { try await FeedbackHarness.start(database: "pier_test_feedback_hostile") }
    var feedback: FeedbackHarness { get async throws { try await Self.harness.value } }

    @Test func theNulCharacterIsRefusedWhereverItIs() async throws {
        let feedback = try await feedback
        for (body, field) in [
            (#"{"message":"abc\u0000def"}"#, "message"),
            (#"{"message":"fine","metadata":{"note":"a\u0000b"}}"#, "metadata.note"),
            (#"{"message":"fine","metadata":{"a\u0000":"b"}}"#, "metadata.a\u{0}"),
            (#"{"message":"fine","metadata":{"list":["ok","\u0000"]}}"#, "metadata.list[1]"),
            (#"{"message":"fine","device":"\u0000"}"#, "device"),
        ] {
            let reply = try await feedback.send("POST", "/feedback", json: body)
            #expect(reply.status == 422, "\(body) → \(reply.status) \(reply.text)")
            #expect(reply.fields == [field], "\(body) → \(reply.text)")
            #expect(reply.problem?.errors?.first?.message.contains("U+0000") == true)
        }
        // A backslash followed by "u0000" as text is not the character: stored exactly.
        let text = #"C:\u0000 is a path"#
        let item = try await feedback.post("{\"message\":\(quoted(text))}")
        #expect(item.message == text)
        let rows = try await feedback.pool.query("SELECT message FROM feedback.items WHERE id = \(item.id)")
        #expect(try rows[0].decode("message", as: String.self) == text)
    }

    @Test func impossibleOrOutOfRangeDatesAre422() async throws {
        let feedback = try await feedback
        let admin = try feedback.admin()
        for value in [
            "0000-01-01", "2026-99-99T99:99:99Z", "2026-02-30", "2025-02-29", "2026-01-01T24:00:00Z", "2026-01-01T10:60:00Z",
            "2026-01-01T10:00:00+24:00", "10000-01-01", "2026-1-1", "2026-01-01T10:00:00", "yesterday", "",
        ] {
            let encoded = value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? value
            for (path, field) in [
                ("/feedback?createdFrom=\(encoded)", "createdFrom"), ("/feedback?createdTo=\(encoded)", "createdTo"),
                ("/feedback/stats?from=\(encoded)", "from"), ("/feedback/stats?to=\(encoded)", "to"),
            ] {
                let reply = try await feedback.send("GET", path, token: admin)
                #expect(reply.status == 422 && reply.fields == [field], "\(path) → \(reply.status) \(reply.text)")
            }
        }
        // Real dates at the edges of the range are fine.
        for value in ["0001-01-01", "2024-02-29", "9999-12-31T23:59:59.999Z", "2026-11-30T12:00:00+05:30"] {
            let encoded = value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? value
            #expect(try await feedback.send("GET", "/feedback?createdFrom=\(encoded)", token: admin).status == 200, "\(value)")
        }
    }

    @Test func forgedCursorsAre422() async throws {
        let feedback = try await feedback
        let token = try feedback.token(UUID())
        let id = UUID().uuidString
        for forged in [
            "v1:9223372036854775807:\(id)", "v1:-9223372036854775808:\(id)", "v1:253402300800000000:\(id)", "v1:-1:\(id)",
            "v1:1e300:\(id)", "v1:NaN:\(id)", "v1::\(id)", "v2:0:\(id)", "v1:0:not-a-uuid", "v1:0",
        ] {
            let cursor = Base64.urlEncoded(Array(forged.utf8))
            for path in ["/feedback/mine?cursor=\(cursor)", "/feedback?cursor=\(cursor)"] {
                let reply = try await feedback.send(
                    "GET", path, token: path.hasPrefix("/feedback/mine") ? token : try feedback.admin())
                #expect(reply.status == 422 && reply.fields == ["cursor"], "\(forged) at \(path) → \(reply.status)")
            }
        }
        for limit in ["0", "-1", "101", "9223372036854775808", "1e3", "NaN"] {
            let reply = try await feedback.send("GET", "/feedback/mine?limit=\(limit)", token: token)
            #expect(reply.status == 422 && reply.fields == ["limit"], "limit=\(limit) → \(reply.status)")
        }
    }

    /// OWASP: a cell whose first meaningful character starts a formula is neutralized, however
    /// it is disguised; ordinary text is left alone.
    @Test func theCSVFormulaGuardLooksAtScalarsNotCharacters() {
        for disguised in [
            "=1+1", "=\u{200D}HYPERLINK(\"x\")", "=\u{0301}1", "\u{200B}=1", "\u{FEFF}+1", " =1", "\u{00A0}@SUM(A1)", "-2+3",
            "\t=1", "\r=1", "\u{FF1D}1",
        ] {
            #expect(CSVExport.startsLikeAFormula(disguised), "\(disguised.unicodeScalars.map { $0.value })")
            #expect(CSVExport.cell(disguised).drop { $0 == "\"" }.hasPrefix("'"), "\(disguised.debugDescription)")
        }
        for plain in ["hello", "a=b", "  spaced", "", "é=1", "1-2"] {
            #expect(!CSVExport.startsLikeAFormula(plain), "\(plain)")
        }
    }
}
