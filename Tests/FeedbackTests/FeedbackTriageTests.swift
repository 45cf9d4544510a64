import FeedbackService
import Foundation
import PierEvents
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierTestSupport
import Testing

@testable import FeedbackService

@Suite struct FeedbackTriageTests {
    var feedback: FeedbackHarness { get async throws { try await FeedbackIntakeTests.harness.value } }

    @Test func onlyTheOwnerOrAnAdminReadsAnItem() async throws {
        let feedback = try await feedback
        let alice = UUID(), bob = UUID()
        let item = try await feedback.post(#"{"message":"alice's"}"#, token: feedback.token(alice))
        let own = try await feedback.send("GET", "/feedback/\(item.id)", token: feedback.token(alice))
        #expect(own.status == 200)
        #expect(try own.decode(FeedbackItem.self).internalNote == nil)
        let other = try await feedback.send("GET", "/feedback/\(item.id)", token: feedback.token(bob))
        let missing = try await feedback.send("GET", "/feedback/\(UUID())", token: feedback.token(bob))
        #expect(other.status == 404 && missing.status == 404)
        #expect(other.problem?.detail == missing.problem?.detail)
        // A malformed id is answered as every route answers one: 404, naming the parameter.
        for (method, token) in [("GET", try feedback.token(bob)), ("PATCH", try feedback.admin())] {
            let malformed = try await feedback.send(method, "/feedback/not-a-uuid", json: "{}", token: token)
            #expect(malformed.status == 404 && malformed.problem?.detail?.contains("id must be a UUID") == true)
        }
        #expect(try await feedback.send("GET", "/feedback/\(item.id)").status == 401)
        let admin = try await feedback.send("GET", "/feedback/\(item.id)", token: feedback.admin())
        #expect(try admin.decode(FeedbackItem.self).userId == alice)
        // Users cannot triage, list or export.
        #expect(
            try await feedback.send("PATCH", "/feedback/\(item.id)", json: #"{"status":"triaged"}"#, token: feedback.token(alice))
                .status == 403)
        #expect(try await feedback.send("GET", "/feedback", token: feedback.token(alice)).status == 403)
        #expect(try await feedback.send("GET", "/feedback/export", token: feedback.token(alice)).status == 403)
        #expect(try await feedback.send("GET", "/feedback/stats", token: feedback.token(alice)).status == 403)
    }

    @Test func minePagesAreStableWhileNewItemsArrive() async throws {
        let feedback = try await feedback
        let user = try feedback.token(UUID())
        var posted: [UUID] = []
        for index in 0..<25 { posted.append(try await feedback.post(#"{"message":"page item \#(index)"}"#, token: user).id) }
        let first = try await feedback.send("GET", "/feedback/mine?limit=10", token: user).decode(FeedbackPage.self)
        #expect(first.items.map(\.id) == Array(posted.reversed().prefix(10)))
        // New items in between do not shift the next page.
        for index in 0..<3 { try await feedback.post(#"{"message":"newer \#(index)"}"#, token: user) }
        let cursor = try #require(first.nextCursor)
        let second = try await feedback.send("GET", "/feedback/mine?limit=10&cursor=\(cursor)", token: user).decode(
            FeedbackPage.self)
        #expect(second.items.map(\.id) == Array(posted.reversed().dropFirst(10).prefix(10)))
        let third = try await feedback.send(
            "GET", "/feedback/mine?limit=10&cursor=\(try #require(second.nextCursor))", token: user
        )
        .decode(FeedbackPage.self)
        #expect(third.items.map(\.id) == Array(posted.reversed().dropFirst(20)))
        #expect(third.nextCursor == nil)
        #expect(try await feedback.send("GET", "/feedback/mine?limit=101", token: user).fields == ["limit"])
        #expect(try await feedback.send("GET", "/feedback/mine?limit=0", token: user).fields == ["limit"])
        #expect(try await feedback.send("GET", "/feedback/mine?cursor=garbage", token: user).fields == ["cursor"])
        #expect(try await feedback.send("GET", "/feedback/mine").status == 401)
    }

    @Test func statusMovesAlongTheWorkflowAndEveryChangeIsRecorded() async throws {
        let feedback = try await feedback
        let adminID = UUID()
        let admin = try feedback.token(adminID, role: "admin")
        let item = try await feedback.post(#"{"message":"triage me"}"#)
        func patch(_ json: String) async throws -> Reply {
            try await feedback.send("PATCH", "/feedback/\(item.id)", json: json, token: admin)
        }
        // A refused move says which ones the item's status allows.
        let refused = try await patch(#"{"status":"done"}"#)
        #expect(
            refused.status == 409
                && refused.problem?.detail?.hasSuffix("from new it can go to: closed, duplicate, triaged.") == true)
        #expect(try await patch(#"{"status":"planned"}"#).status == 409)
        for status in ["triaged", "planned", "in_progress", "done"] {
            #expect(try await patch(#"{"status":"\#(status)"}"#).status == 200, "\(status)")
        }
        #expect(try await patch(#"{"status":"triaged"}"#).status == 409)
        let tagged = try await patch(#"{"tags":["Crash "," crash","iOS"],"internalNote":"seen in 2.3.1"}"#)
        let updated = try tagged.decode(FeedbackItem.self)
        #expect(updated.tags == ["crash", "ios"])
        #expect(updated.internalNote == "seen in 2.3.1")
        #expect(updated.status == "done")
        let history = try #require(updated.history)
        try #require(history.count == 5)
        #expect(history.allSatisfy { $0.actor == adminID })
        #expect(history[0].changes["status"] == .init(from: .string("new"), to: .string("triaged")))
        #expect(history[4].changes["internalNote"]?.to == .string("seen in 2.3.1"))
        // The sender never sees the note or the tags.
        let senderView = try await feedback.send("GET", "/feedback/\(item.id)", token: feedback.token(UUID()))
        #expect(senderView.status == 404)

        #expect(try await patch(#"{"status":"bogus"}"#).fields == ["status"])
        #expect(try await patch(#"{"priority":"high"}"#).fields == ["priority"])
        #expect(try await patch(#"{"tags":["\#(String(repeating: "t", count: 33))"]}"#).fields == ["tags"])
        #expect(try await patch(#"{}"#).status == 400)
        #expect(try await feedback.send("PATCH", "/feedback/\(UUID())", json: #"{"tags":["x"]}"#, token: admin).status == 404)
    }

    /// Support triages like an admin; each change is in the audit log under the sender's id,
    /// with only what changed before and after, and in the sender's export. Users read none of it.
    @Test func supportTriagesAndTheLogKeepsWhatChanged() async throws {
        let feedback = try await feedback
        let supportID = UUID()
        let support = try feedback.token(supportID, role: "support")
        let sender = UUID()
        let item = try await feedback.post(#"{"message":"log me"}"#, token: try feedback.token(sender))
        let patched = try await feedback.send(
            "PATCH", "/feedback/\(item.id)", json: #"{"status":"triaged","tags":["billing"]}"#, token: support)
        #expect(patched.status == 200, "\(patched.text)")
        // Nothing changed: nothing recorded.
        #expect(
            try await feedback.send("PATCH", "/feedback/\(item.id)", json: #"{"tags":["billing"]}"#, token: support).status == 200
        )
        #expect(try await feedback.send("GET", "/feedback/\(item.id)", token: support).status == 200)
        #expect(try await feedback.send("GET", "/feedback?limit=1", token: support).status == 200)

        let entries = try await feedback.send("GET", "/feedback/audit?target=\(item.id)", token: support)
            .decode(AuditList.self).items
        #expect(entries.count == 1)
        let entry = try #require(entries.first)
        #expect(entry.action == "feedback.updated" && entry.actorId == supportID && entry.actorRole == "support")
        #expect(entry.subjectId == sender && entry.targetType == "feedback")
        #expect(entry.before == .object(["status": .string("new"), "tags": .array([])]))
        #expect(entry.after == .object(["status": .string("triaged"), "tags": .array([.string("billing")])]))
        let export = try await feedback.send("GET", "/feedback/users/\(sender)/export", token: support)
        guard case .array(let exported)? = try export.decode(ExportPart.self).data.objectValue?["audit"] else {
            Issue.record("no audit in the export: \(export.text)")
            return
        }
        #expect(exported.count == 1)
        #expect(try await feedback.send("GET", "/feedback/audit", token: try feedback.token(sender)).status == 403)
        #expect(
            try await feedback.send("GET", "/feedback/users/\(sender)/export", token: try feedback.token(sender)).status == 403)
    }

    @Test func duplicatesPointToTheirOriginal() async throws {
        let feedback = try await feedback
        let admin = try feedback.admin()
        let original = try await feedback.post(#"{"message":"original"}"#)
        let copy = try await feedback.post(#"{"message":"copy"}"#)
        func patch(_ json: String) async throws -> Reply {
            try await feedback.send("PATCH", "/feedback/\(copy.id)", json: json, token: admin)
        }
        #expect(try await patch(#"{"status":"duplicate"}"#).fields == ["duplicateOf"])
        #expect(try await patch(#"{"status":"duplicate","duplicateOf":"\#(UUID())"}"#).fields == ["duplicateOf"])
        #expect(try await patch(#"{"status":"duplicate","duplicateOf":"\#(copy.id)"}"#).fields == ["duplicateOf"])
        let marked = try await patch(#"{"status":"duplicate","duplicateOf":"\#(original.id)"}"#)
        #expect(try marked.decode(FeedbackItem.self).duplicateOf == original.id)
        let reopened = try await patch(#"{"status":"triaged"}"#).decode(FeedbackItem.self)
        #expect(reopened.status == "triaged" && reopened.duplicateOf == nil)
    }

    /// Search finds what people type: stems ("crash" finds "crashes"), the start of a word as
    /// it is typed, accents ignored, a message in its sender's language, the anonymous sender's
    /// name and any part of the address, tags; the tag and assignee filters; hostile text is
    /// words, never syntax.
    @Test func searchFindsWhatPeopleType() async throws {
        let feedback = try await FeedbackHarness.start(database: "pier_test_feedback_search")
        let admin = try feedback.admin()
        try await feedback.post(#"{"message":"The app crashes when I open it","category":"bug"}"#)
        try await feedback.post(#"{"message":"Push notifications never arrive","category":"bug"}"#)
        try await feedback.post(#"{"message":"Frozen screen after the payment","category":"bug","locale":"en-GB"}"#)
        try await feedback.post(#"{"message":"L'écran se fige après le paiement","category":"bug","locale":"fr-FR"}"#)
        try await feedback.post(
            #"{"message":"Love it","category":"praise","name":"Casey Zielińska","email":"casey.z@northwind.example"}"#)
        func found(_ query: String) async throws -> [String] {
            let reply = try await feedback.send("GET", "/feedback?\(query)", token: admin)
            #expect(reply.status == 200, "\(query): \(reply.text)")
            return try reply.decode(FeedbackPage.self).items.map(\.message)
        }
        #expect(try await found("q=crash") == ["The app crashes when I open it"])
        #expect(try await found("q=crashing") == ["The app crashes when I open it"])
        #expect(try await found("q=notification") == ["Push notifications never arrive"])
        #expect(try await found("q=notif") == ["Push notifications never arrive"])
        #expect(try await found("q=pay") == ["Frozen screen after the payment"])
        #expect(try await found("q=paiements") == ["L'écran se fige après le paiement"])
        #expect(try await found("q=ecran") == ["L'écran se fige après le paiement"])
        #expect(try await found("q=zielinska") == ["Love it"])
        #expect(try await found("q=northwind") == ["Love it"])
        #expect(try await found("q=casey%20northwind.example") == ["Love it"])
        #expect(try await found("q=crash%20notification").isEmpty)
        // A word the parser would read otherwise alone (a number, then a word) is still found.
        try await feedback.post(#"{"message":"Build ref-9e9e9e9e fails","category":"bug"}"#)
        #expect(try await found("q=9e9e9e9e") == ["Build ref-9e9e9e9e fails"])
        #expect(try await found("q=ref-9e9e") == ["Build ref-9e9e9e9e fails"])
        // Hostile text is words: to_tsquery's syntax never reaches PostgreSQL.
        for hostile in ["%27%20%7C%20a%3A*", "!!%26(", "a%3A*%20%26%20%21b", "%5C%5C", "x%3AABCD"] {
            #expect(try await feedback.send("GET", "/feedback?q=\(hostile)", token: admin).status != 500, "\(hostile)")
        }
        #expect(try await feedback.send("GET", "/feedback?q=%21%21%21", token: admin).status == 422)
        // Tags: searched, and filtered on (every tag given).
        let crash = try #require(
            try await feedback.send("GET", "/feedback?q=crashes", token: admin).decode(FeedbackPage.self).items.first)
        // Only a team member takes an item: feedback knows the team from auth's events.
        let me = UUID()
        let tag = #"{"tags":["Billing","ios-17"],"assignee":"\#(me)"}"#
        let stranger = try await feedback.send("PATCH", "/feedback/\(crash.id)", json: tag, token: admin)
        #expect(stranger.status == 422 && stranger.problem?.errors?.map(\.field) == ["assignee"], "\(stranger.text)")
        _ = try await EventLog.append(UserUpdated.type, payload: UserUpdated(userId: me, role: "support"), on: feedback.pool)
        var tagged = stranger
        #expect(
            try await eventually {
                tagged = try await feedback.send("PATCH", "/feedback/\(crash.id)", json: tag, token: admin)
                return tagged.status == 200
            }, "\(tagged.text)")
        #expect(try tagged.decode(FeedbackItem.self).assignee == me)
        #expect(try await found("q=billing") == ["The app crashes when I open it"])
        #expect(try await found("tag=billing") == ["The app crashes when I open it"])
        #expect(try await found("tag=billing,ios-17").count == 1)
        #expect(try await found("tag=billing,android").isEmpty)
        #expect(try await found("assignee=\(me)") == ["The app crashes when I open it"])
        #expect(try await found("assignee=none").count == 5)
        #expect(try await feedback.send("GET", "/feedback?assignee=me", token: admin).status == 422)
        let unassigned = try await feedback.send(
            "PATCH", "/feedback/\(crash.id)", json: #"{"assignee":""}"#, token: admin)
        #expect(try unassigned.decode(FeedbackItem.self).assignee == nil)
        #expect(
            try await feedback.send("PATCH", "/feedback/\(crash.id)", json: #"{"assignee":"sam"}"#, token: admin).status == 422)
        // A member no longer on the team takes nothing more.
        _ = try await EventLog.append(UserUpdated.type, payload: UserUpdated(userId: me, role: "user"), on: feedback.pool)
        #expect(
            try await eventually {
                try await feedback.pool.query("SELECT 1 AS n FROM feedback.team WHERE user_id = \(me)").isEmpty
            })
        let former = try await feedback.send(
            "PATCH", "/feedback/\(crash.id)", json: #"{"assignee":"\#(me)"}"#, token: admin)
        #expect(former.status == 422 && former.text.contains("team member"), "\(former.text)")
        await feedback.stop()
    }

    /// The team's first reply to a new item moves it to triaged (the replier's triage, in its
    /// history); a retry moves nothing more, an item further along stays where it is, and
    /// `PIER_FEEDBACK_REPLY_STATUS` chooses another status or none.
    @Test func aReplyMovesANewItem() async throws {
        let feedback = try await FeedbackHarness.start(database: "pier_test_feedback_reply_moves")
        let staff = UUID()
        let token = try feedback.token(staff, role: "support")
        func reply(_ item: UUID, id: UUID = UUID()) async throws -> Int {
            let body = #"{"id":"\#(id.uuidString)","message":"Thanks, looking into it"}"#
            let answer = try await feedback.send("POST", "/feedback/\(item)/replies", json: body, token: token)
            return answer.status
        }
        func item(_ id: UUID) async throws -> FeedbackItem {
            try await feedback.send("GET", "/feedback/\(id)", token: token).decode(FeedbackItem.self)
        }
        let new = try await feedback.post(#"{"message":"It freezes","category":"bug"}"#)
        let replyID = UUID()
        #expect(try await reply(new.id, id: replyID) == 201)
        let moved = try await item(new.id)
        #expect(moved.status == .triaged)
        #expect(moved.history?.count == 1 && moved.history?.first?.actor == staff)
        #expect(moved.history?.first?.changes["status"]?.to == .string("triaged"))
        #expect(try await reply(new.id, id: replyID) == 200)
        #expect(try await item(new.id).history?.count == 1)
        let planned = try await feedback.post(#"{"message":"Dark mode","category":"idea"}"#)
        for status in ["triaged", "planned"] {
            let patched = try await feedback.send(
                "PATCH", "/feedback/\(planned.id)", json: #"{"status":"\#(status)"}"#, token: token)
            #expect(patched.status == 200)
        }
        #expect(try await reply(planned.id) == 201)
        #expect(try await item(planned.id).status == .planned)
        await feedback.stop()

        let staying = try await FeedbackHarness.start(
            database: "pier_test_feedback_reply_stays", settings: ["PIER_FEEDBACK_REPLY_STATUS": "none"])
        let kept = try await staying.post(#"{"message":"Hello","category":"question"}"#)
        let sent = try await staying.send(
            "POST", "/feedback/\(kept.id)/replies", json: #"{"message":"Hi"}"#, token: try staying.token(staff, role: "support"))
        #expect(sent.status == 201)
        #expect(
            try await staying.send("GET", "/feedback/\(kept.id)", token: try staying.admin()).decode(FeedbackItem.self).status
                == .new)
        await staying.stop()
        for wrong in ["done", "maybe"] {
            #expect(throws: Environment.Failure.self) {
                try FeedbackConfiguration(environment: Environment(["PIER_FEEDBACK_REPLY_STATUS": wrong]))
            }
        }
    }

    @Test func adminListFiltersAndSearches() async throws {
        let feedback = try await FeedbackHarness.start(database: "pier_test_feedback_list")
        let admin = try feedback.admin()
        let tag = UUID().uuidString.prefix(8).lowercased()
        try await feedback.post(
            #"{"message":"The checkout button crashes \#(tag)","rating":1,"category":"bug","platform":"ios","appVersion":"2.0"}"#)
        try await feedback.post(
            #"{"message":"Dark mode please","rating":4,"category":"idea","platform":"android","appVersion":"2.1"}"#)
        try await feedback.post(
            #"{"message":"Crashing again on checkout","rating":2,"category":"bug","platform":"android","appVersion":"2.1"}"#)
        func list(_ query: String) async throws -> FeedbackPage {
            let reply = try await feedback.send("GET", "/feedback?\(query)", token: admin)
            #expect(reply.status == 200, "\(query): \(reply.text)")
            return try reply.decode(FeedbackPage.self)
        }
        #expect(try await list("category=bug").items.count == 2)
        #expect(try await list("platform=android&category=bug").items.count == 1)
        #expect(try await list("ratingMin=2&ratingMax=4").items.count == 2)
        #expect(try await list("appVersion=2.1").items.count == 2)
        #expect(try await list("q=checkout").items.count == 2)
        #expect(try await list("q=\(tag)").items.count == 1)
        #expect(try await list("status=new,triaged&includeTotal=true").total == 3)
        #expect(try await list("createdFrom=2000-01-01&createdTo=2000-01-02").items.isEmpty)
        let paged = try await list("limit=2&includeTotal=true")
        #expect(paged.items.count == 2 && paged.total == 3 && paged.nextCursor != nil)
        for bad in ["status=open", "ratingMin=0", "ratingMax=six", "createdFrom=yesterday", "moderation=maybe", "category="] {
            #expect(try await feedback.send("GET", "/feedback?\(bad)", token: admin).status == 422, "\(bad)")
        }
        let statsReply = try await feedback.send("GET", "/feedback/stats", token: admin)
        #expect(statsReply.status == 200, "\(statsReply.text)")
        let stats = try statsReply.decode(FeedbackStats.self)
        #expect(stats.total == 3)
        #expect(stats.byCategory == ["bug": 2, "idea": 1])
        #expect(stats.byPlatform == ["ios": 1, "android": 2])
        #expect(stats.byStatus == ["new": 3])
        let v21 = try #require(stats.ratingByAppVersion.first { $0.appVersion == "2.1" })
        #expect(v21.averageRating == 3 && v21.ratings == 2)
        #expect(try await feedback.send("GET", "/feedback/stats?from=2030-01-01&to=2020-01-01", token: admin).status == 422)
        let empty = try await feedback.send("GET", "/feedback/stats?from=2000-01-01&to=2000-02-01", token: admin).decode(
            FeedbackStats.self)
        #expect(empty.total == 0)
        await feedback.stop()
    }

    @Test func exportStreamsNDJSONAndCSV() async throws {
        let feedback = try await FeedbackHarness.start(database: "pier_test_feedback_export_small")
        let admin = try feedback.admin()
        try await feedback.post(#"{"message":"=HYPERLINK(\"evil\"), with \"quotes\"\nand a newline","rating":3}"#)
        try await feedback.post(#"{"message":"plain","category":"praise"}"#)
        let ndjson = try await feedback.send("GET", "/feedback/export", token: admin)
        #expect(ndjson.headers["Content-Type"] == "application/x-ndjson")
        let lines = ndjson.text.split(separator: "\n")
        #expect(lines.count == 2)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        #expect(try decoder.decode(FeedbackItem.self, from: Data(lines[1].utf8)).message.hasPrefix("=HYPERLINK"))
        let csv = try await feedback.send("GET", "/feedback/export?format=csv&category=other", token: admin)
        #expect(csv.headers["Content-Type"] == "text/csv; charset=utf-8")
        #expect(csv.text.hasPrefix("id,createdAt,status"))
        #expect(csv.text.contains(#""'=HYPERLINK(""evil""), with ""quotes"""#))
        #expect(!csv.text.contains("plain"))
        #expect(try await feedback.send("GET", "/feedback/export?format=xml", token: admin).fields == ["format"])
        await feedback.stop()
    }

    @Test func deletedAccountsAreAnonymized() async throws {
        let feedback = try await feedback
        let user = UUID()
        // The token the app holds when the account is deleted.
        let held = try feedback.token(user)
        let item = try await feedback.post(
            #"{"message":"from a soon deleted account","name":"Grace"}"#, token: feedback.token(user))
        let kept = try await feedback.post(#"{"message":"someone else"}"#, token: feedback.token(UUID()))
        try await feedback.pool.withTransaction { connection in
            try await EventLog.append("account.deleted", payload: AccountDeleted(userId: user), on: connection)
        }
        #expect(
            try await eventually {
                let rows = try await feedback.pool.query("SELECT user_id FROM feedback.items WHERE id = \(item.id)")
                return try rows[0].decode("user_id", as: UUID?.self) == nil
            })
        let rows = try await feedback.pool.query("SELECT message, name FROM feedback.items WHERE id = \(item.id)")
        #expect(try rows[0].decode("message", as: String.self) == "from a soon deleted account")
        #expect(try rows[0].decode("name", as: String?.self) == nil)  // the name they gave goes with them
        // The account's tokens are refused from then on: nothing more is read or sent in its name.
        #expect(try await eventually { try await feedback.send("GET", "/feedback/mine", token: held).status == 401 })
        let late = try await feedback.send("POST", "/feedback", json: #"{"message":"after deletion"}"#, token: held)
        #expect(late.status == 401)
        let other = try await feedback.pool.query("SELECT user_id FROM feedback.items WHERE id = \(kept.id)")
        #expect(try other[0].decode("user_id", as: UUID?.self) != nil)
        // Applying the same event again changes nothing (the cursor moved with the effect): what
        // is left to read are events of other types (the item's own `feedback.created`).
        while try await feedback.service.worker.consumer.consumeBatch() > 0 {}
        let after = try await feedback.pool.query("SELECT user_id FROM feedback.items WHERE id = \(kept.id)")
        #expect(try after[0].decode("user_id", as: UUID?.self) != nil)
    }
}

/// 100,000 rows exported with the server's memory staying flat. Runs on its own (it measures
/// this process's memory), after the other suites.
/// Measures this process's memory, so the test script runs it alone, after the others.
@Suite(.enabled(if: TestEnvironment.runsAlone, "measures this process's memory: scripts/test.sh runs it alone"))
struct FeedbackExportMemoryTests {
    /// Rows of ~1.35 KB each, as a long feedback message would be.
    static let rows = Int(ProcessInfo.processInfo.environment["PIER_TEST_EXPORT_ROWS"] ?? "") ?? 35_000

    @Test func exportingManyRowsStreamsInBoundedMemory() async throws {
        let feedback = try await FeedbackHarness.start(database: "pier_test_feedback_export")
        // Written in batches without the request path's statement timeout: how long the
        // full-text index takes to maintain depends on the machine.
        let batch = 5_000
        try await TestDatabase.setUp(
            feedback.pool.configuration.url,
            stride(from: 0, to: Self.rows, by: batch).map { start in
                """
                INSERT INTO feedback.items (id, message, category, app_version, created_at)
                SELECT gen_random_uuid(), repeat('feedback ', 150) || i, 'other',
                       CASE WHEN i <= 2000 THEN 'warm-up' ELSE 'bulk' END, now() - i * interval '1 second'
                FROM generate_series(\(start + 1)::int, \(min(start + batch, Self.rows))::int) AS i
                """
            })
        // A first, small export (the first 2,000 rows, two batches) sets up the working set that any export uses
        // (buffers, thread stacks, allocator arenas): what the large one adds is then its own.
        _ = try await Self.export(feedback, appVersion: "warm-up")
        let (bytes, rows, grown) = try await Self.export(feedback, appVersion: "bulk")
        #expect(rows == Self.rows - 2000 + 1)  // the header and every row
        #expect(bytes > (Self.rows - 2000) * 1_300)
        // A process that held the export whole (its rows, or the bytes made of them) would grow
        // by more than the body; streaming adds a fixed working set (16-22 MB measured from 14
        // to 84 MB of body), so the body is sized at about twice that.
        print("export: \(bytes / 1_000_000) MB streamed, the process grew \(grown / 1_000_000) MB")
        #expect(grown < bytes, "grew \(grown / 1_000_000) MB while streaming \(bytes / 1_000_000) MB")
        await feedback.stop()
    }

    /// Exports the items of one app version as CSV: the body's bytes, its lines, and how much
    /// this process grew meanwhile.
    static func export(_ feedback: FeedbackHarness, appVersion: String) async throws -> (Int, Int, Int) {
        let client = try RawClient(port: feedback.port, receiveTimeout: 120)
        let before = System.residentMemoryBytes()
        client.send(
            "GET /feedback/export?format=csv&appVersion=\(appVersion) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(try feedback.admin())\r\n\r\n"
        )
        let (bytes, rows, peak) = await RawClient.readers.runDraining(client.fd)
        return (bytes, rows, peak - before)
    }
}

extension BlockingPool {
    /// Reads a chunked response to its end: the body's bytes, its rows (lines ending in
    /// "\r\n" inside the de-chunked body), and the peak resident memory seen meanwhile.
    func runDraining(_ fd: Int32) async -> (Int, Int, Int) {
        (try? await run {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var body = 0, rows = 0, peak = System.residentMemoryBytes()
            var headerDone = false, pending = [UInt8]()
            var remaining = 0, previous: UInt8 = 0, sizeLine = [UInt8]()
            var skipCRLF = 0, finished = false
            while !finished {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count <= 0 { break }
                var bytes = buffer[0..<count][...]
                if !headerDone {
                    pending += bytes
                    guard let end = pending.indices.first(where: { pending[$0...].starts(with: Array("\r\n\r\n".utf8)) }) else {
                        continue
                    }
                    headerDone = true
                    bytes = pending[(end + 4)...]
                }
                var index = bytes.startIndex
                while index < bytes.endIndex {
                    if skipCRLF > 0 {
                        skipCRLF -= 1
                        index += 1
                    } else if remaining > 0 {
                        let take = min(remaining, bytes.endIndex - index)
                        for byte in bytes[index..<(index + take)] {
                            if byte == UInt8(ascii: "\n") && previous == UInt8(ascii: "\r") { rows += 1 }
                            previous = byte
                        }
                        body += take
                        remaining -= take
                        index += take
                        if remaining == 0 { skipCRLF = 2 }
                    } else {
                        let byte = bytes[index]
                        index += 1
                        if byte == UInt8(ascii: "\n") {
                            let size =
                                Int(String(decoding: sizeLine.filter { $0 != UInt8(ascii: "\r") }, as: UTF8.self), radix: 16) ?? 0
                            sizeLine = []
                            if size == 0 { finished = true; break }
                            remaining = size
                        } else {
                            sizeLine.append(byte)
                        }
                    }
                }
                peak = max(peak, System.residentMemoryBytes())
            }
            return (body, rows, peak)
        }) ?? (0, 0, 0)
    }
}
