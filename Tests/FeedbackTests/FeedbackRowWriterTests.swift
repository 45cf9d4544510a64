import Foundation
import PierJSON
import PierModels
import PierPostgres
import PierTestSupport
import Testing

@testable import FeedbackService

/// Lists and exports are written straight from the rows; every item must come out as the item
/// built from the same row would be written, whatever its fields hold.
@Suite struct FeedbackRowWriterTests {
    @Test func rowsAreWrittenAsTheirItemsWouldBe() async throws {
        let feedback = try await FeedbackIntakeTests.harness.value
        let marker = "row-writer-\(UUID().uuidString.prefix(8))"
        let awkward = ["quote \" and \\ backslash", "line\nbreak\ttab", "é 😀 \u{2028}", "bell \u{07} unit \u{1F}"]
        // Names and device fields refuse control characters: quotes, backslashes and any script.
        let visible = ["Zoë \"Q\"", "back\\slash", "李小龙", "plain"]
        var ids: [UUID] = []
        for (n, text) in awkward.enumerated() {
            let label = visible[n]
            let anonymous = try await feedback.post(
                #"{"message":\#(quoted(marker + " " + text)),"rating":\#(n + 1),"category":"bug","name":\#(quoted(label)),"email":"a\#(n)@example.com","appVersion":"2.\#(n)","build":\#(quoted(label)),"platform":"ios","osVersion":"18","device":\#(quoted(label)),"locale":"fr-CA","requestIds":["r1","req-\#(n)"],"metadata":{"screen":\#(quoted(text)),"n":\#(n),"x":0.5,"big":1e20}}"#
            )
            let signedIn = try await feedback.post(
                #"{"message":\#(quoted(marker + " plain"))}"#, token: feedback.token(UUID()))
            ids += [anonymous.id, signedIn.id]
            let triage = #"{"status":"triaged","tags":["t\#(n)","shared"],"internalNote":\#(quoted(text))}"#
            #expect(
                try await feedback.send("PATCH", "/feedback/\(anonymous.id)", json: triage, token: feedback.admin()).status == 200
            )
        }
        let rows = try await feedback.pool.query(
            "SELECT \(unsafeSQL: FeedbackRows.columns) FROM feedback.items WHERE message LIKE \(marker + "%") ORDER BY created_at, id"
        )
        #expect(rows.count == ids.count)
        let positions = try FeedbackRows.Positions(try #require(rows.first).columns)
        for row in rows {
            for admin in [false, true] {
                var writer = JSONWriter()
                try FeedbackRows.write(row, positions, admin: admin, into: &writer)
                let expected = try WireEncoder.encode(try FeedbackRows.item(row, admin: admin))
                #expect(
                    String(decoding: writer.bytes, as: UTF8.self) == String(decoding: expected, as: UTF8.self),
                    "admin \(admin)")
            }
        }
        // Through HTTP: the list's page and the export's lines hold the same items.
        let list = try await feedback.send("GET", "/feedback?limit=100&q=\(marker)&includeTotal=true", token: feedback.admin())
        let page = try list.decode(FeedbackPage.self)
        #expect(Set(page.items.map(\.id)) == Set(ids) && page.total == ids.count)
        #expect(page.items.allSatisfy { $0.moderation != nil && $0.tags != nil })
    }
}

extension FeedbackRowWriterTests {
    /// Times are rearranged in place only in the one shape a UTC connection reads; any other
    /// (an offset, a short or long text, no seconds) is left to the parsing path.
    @Test func onlyUTCTimesAreRearrangedInPlace() {
        func written(_ text: String) -> String? {
            var writer = JSONWriter()
            let bytes = Array(text.utf8)
            let done = bytes.withUnsafeBufferPointer { FeedbackRows.writeTime($0, into: &writer) }
            return done ? String(decoding: writer.bytes, as: UTF8.self) : nil
        }
        #expect(written("2026-12-01 22:03:50+00") == #""2026-12-01T22:03:50Z""#)
        #expect(written("2026-12-01 22:03:50.069123+00") == #""2026-12-01T22:03:50Z""#)
        #expect(written("2026-12-01 22:03:50.9+00") == #""2026-12-01T22:03:50Z""#)
        for other in [
            "2026-12-01 22:03:50+01", "2026-12-01 22:03:50.5+05:30", "2026-12-01 22:03:50", "2026-12-01 22:03+00",
            "12026-12-01 22:03:50+00", "2026-12-01T22:03:50+00", "2026-12-01 22:03:50.+0", "", "garbage garbage garbage",
        ] {
            #expect(written(other) == nil, "\(other)")
        }
    }
}
