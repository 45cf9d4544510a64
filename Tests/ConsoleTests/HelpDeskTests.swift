import Foundation
import PierHTTP
import PierModels
import PierTestSupport
import Testing

@testable import ConsoleService

/// The habits of a help desk, through the console as a browser uses it: the inbox's filters in
/// words with "open" and "mine", how many match, saved views, bulk triage with select-all that
/// comes back to the same filters, assignment, saved replies with placeholders, a reply that
/// moves a new item, and who else has an item open.
extension ConsoleTests {
    @Test func theHelpDeskWorksAsSupportExpects() async throws {
        try await withStack { stack in
            let (sam, samEmail) = try await account(stack, .support, name: "Sam Support")
            let (alex, alexEmail) = try await account(stack, .support, name: "Alex Agent")
            let (customer, _) = try await account(stack, .user, name: "Casey Zielińska")
            var ids: [UUID] = []
            for message in [
                "The app crashes when I export", "Crashing on launch since 2.1", "Please add dark mode",
                "Payment failed twice",
            ] {
                let posted = try await stack.api.send(
                    "POST", "/feedback", json: #"{"message":"\#(message)","category":"bug","platform":"ios"}"#,
                    token: customer.accessToken)
                ids.append(try posted.decode(FeedbackItem.self).id)
            }
            let samBrowser = Browser(base: stack.base)
            _ = try await samBrowser.signIn(samEmail, Self.password)
            // Search by stem, with the count; filters in words.
            let crash = try await samBrowser.get("/console/inbox?q=crash")
            #expect(crash.text.contains(#"data-total="2""#) && crash.text.contains(">2 items<"), "\(crash.text)")
            #expect(crash.text.contains(#"<option value="in_progress">In progress</option>"#))
            #expect(crash.text.contains(#"<option value="ipados">iPad</option>"#) && !crash.text.contains(">ipados<"))
            let csrf = try #require(crash.field("csrf"))
            // Bulk: nothing selected says so beside the form and keeps the filters.
            let nothing = try await samBrowser.post(
                "/console/inbox", [("csrf", csrf), ("back", "q=crash"), ("status", "triaged")])
            #expect(nothing.status == 422 && nothing.text.contains("Select the items first"))
            #expect(nothing.text.contains(#"name="q" value="crash""#))
            // Select both, triage them and assign them to me: back to the same search, saying so.
            let bulk = try await samBrowser.post(
                "/console/inbox",
                [
                    ("csrf", csrf), ("back", "q=crash"), ("id", ids[0].uuidString), ("id", ids[1].uuidString),
                    ("status", "triaged"), ("tags", "crash"), ("assignee", "mine"),
                ])
            #expect(bulk.status == 303 && bulk.location == "/console/inbox?q=crash&done=bulk&changed=2", "\(bulk.location ?? "")")
            let mine = try await samBrowser.get("/console/inbox?assignee=mine&status=open")
            #expect(mine.text.contains(#"data-total="2""#) && mine.text.contains("Sam Support"))
            #expect(mine.text.contains(#"<span class="badge tag">crash</span>"#))
            // A saved view of it, listed and followed.
            let saved = try await samBrowser.post(
                "/console/inbox/views", [("csrf", csrf), ("back", "assignee=mine&status=open"), ("name", "My open items")])
            #expect(saved.status == 303)
            let withView = try await samBrowser.get(try #require(saved.location))
            #expect(withView.text.contains(">My open items</a>") && withView.text.contains("View saved."))
            #expect(withView.text.contains(#"href="/console/inbox?status=open&amp;assignee=mine""#), "\(withView.text)")
            // A signed-in sender is found by the account's name, beside the items.
            let byName = try await samBrowser.get("/console/inbox?q=casey")
            #expect(byName.text.contains("data-accounts") && byName.text.contains("Casey Zielińska &lt;"), "\(byName.text)")
            // A view without a name (or of 61 characters) is refused beside the inbox, filters kept.
            for name in ["  ", String(repeating: "v", count: 61)] {
                let unnamed = try await samBrowser.post(
                    "/console/inbox/views", [("csrf", csrf), ("back", "tag=crash"), ("name", name)])
                #expect(unnamed.status == 422 && unnamed.text.contains("Give the view a name"), "\(unnamed.status)")
                #expect(unnamed.text.contains(#"name="tag" value="crash""#))
            }
            // A tag filter; a hostile view name is text.
            #expect(try await samBrowser.get("/console/inbox?tag=crash").text.contains(#"data-total="2""#))
            _ = try await samBrowser.post(
                "/console/inbox/views", [("csrf", csrf), ("back", "tag=crash"), ("name", "<script>x</script>")])
            #expect(!(try await samBrowser.get("/console/inbox").text.contains("<script>x</script>")))

            // A saved reply with placeholders, used on a new item: filled in, and the reply moves
            // the item to Triaged.
            let template = try await samBrowser.post(
                "/console/replies",
                [
                    ("csrf", csrf), ("id", ""), ("title", "Payment help"),
                    ("body", "Hi {first name}, {agent} here about {platform}."),
                ])
            #expect(template.status == 303)
            let duplicate = try await samBrowser.post(
                "/console/replies", [("csrf", csrf), ("id", ""), ("title", "Payment help"), ("body", "again")])
            #expect(duplicate.status == 422 && duplicate.text.contains(#"data-error-for="title""#))
            let tooLong = try await samBrowser.post(
                "/console/replies",
                [("csrf", csrf), ("id", ""), ("title", ""), ("body", String(repeating: "b", count: 5001))])
            #expect(tooLong.status == 422 && tooLong.text.contains(#"data-error-for="title""#))
            #expect(tooLong.text.contains(#"data-error-for="body""#))
            // A hostile saved reply is text on every page that shows it.
            let hostile = try await samBrowser.post(
                "/console/replies",
                [
                    ("csrf", csrf), ("id", ""), ("title", "<img src=x onerror=alert(1)>"),
                    ("body", "</textarea><script>x</script>"),
                ])
            #expect(hostile.status == 303)
            let listed = try await samBrowser.get("/console/replies")
            #expect(!listed.text.contains("<img src=x") && listed.text.contains("&lt;img src=x onerror=alert(1)&gt;"))
            #expect(!listed.text.contains("</textarea><script>"))
            try await stack.pool.execute("DELETE FROM console.saved_replies WHERE title LIKE '<img%'")
            let templates = try await stack.pool.query("SELECT id FROM console.saved_replies")
            let templateID = try templates[0].decode("id", as: UUID.self)
            let payment = "/console/feedback/\(ids[3].uuidString.lowercased())"
            let started = try await samBrowser.get(payment + "?reply=\(templateID.uuidString.lowercased())")
            // {agent} is the name Sam goes by (never the address), and follows a new one.
            #expect(started.text.contains("Hi Casey, Sam Support here about iPhone."), "\(started.text)")
            #expect(!started.text.contains("\(samEmail.prefix { $0 != "@" }) here"))
            // Sam names themself at /console/me: the reply signs with the name, not the address.
            let named = try await samBrowser.post("/console/me", [("csrf", csrf), ("displayName", "Sam Okafor")])
            #expect(named.status == 303 && named.location == "/console/me?done=saved", "\(named.text)")
            #expect(try await samBrowser.get("/console/me?done=saved").text.contains(#"value="Sam Okafor""#))
            let signed = try await samBrowser.get(payment + "?reply=\(templateID.uuidString.lowercased())")
            #expect(signed.text.contains("Hi Casey, Sam Okafor here about iPhone."), "\(signed.text)")
            let refusedName = try await samBrowser.post("/console/me", [("csrf", csrf), ("displayName", "Sam\u{7}")])
            #expect(refusedName.status == 422 && refusedName.text.contains(#"data-error-for="displayName""#))
            #expect(try await samBrowser.post("/console/me", [("csrf", csrf), ("displayName", "Sam Support")]).status == 303)
            #expect(started.text.contains("Replying moves the item to Triaged."))
            let sent = try await samBrowser.post(
                payment + "/reply",
                [("csrf", csrf), ("replyId", UUID().uuidString), ("message", "Hi Casey, we refunded the second charge.")])
            #expect(sent.status == 303 && sent.location == payment + "?done=sent")
            let after = try await samBrowser.get(try #require(sent.location))
            #expect(after.text.contains("Reply sent.") && after.text.contains(#"<span class="badge">Triaged</span>"#))
            // Assigned from the item's page: the history says to whom, by name.
            let assigned = try await samBrowser.post(
                payment,
                [
                    ("csrf", csrf), ("status", ""), ("assignee", alex.user.id.uuidString.lowercased()), ("tags", ""),
                    ("internalNote", ""), ("duplicateOf", ""),
                ])
            #expect(assigned.status == 303 && assigned.location == payment + "?done=saved")
            let history = try await samBrowser.get(payment)
            #expect(history.text.contains("Assigned to: none → Alex Agent"), "\(history.text)")

            // Two people on one item: each is told of the other; one who left is not.
            let alexBrowser = Browser(base: stack.base)
            _ = try await alexBrowser.signIn(alexEmail, Self.password)
            let alexPage = try await alexBrowser.get(payment)
            let alexCSRF = try #require(alexPage.field("csrf"))
            // The page says how many replies it shows; the line tells of any after them.
            #expect(alexPage.text.contains(#"data-seen="1""#))
            let seen = "1"
            #expect(try await samBrowser.post(payment + "/presence", [("csrf", csrf), ("seen", seen)]).text.isEmpty)
            let told = try await alexBrowser.post(payment + "/presence", [("csrf", alexCSRF), ("seen", seen)])
            #expect(told.text == "Sam Support is viewing this item.", "\(told.text)")
            #expect(told.headers["Content-Type"] == "text/plain; charset=utf-8")
            // Sam replies: Alex hears of it.
            _ = try await samBrowser.post(payment + "/reply", [("csrf", csrf), ("message", "One more thing.")])
            let replied = try await alexBrowser.post(payment + "/presence", [("csrf", alexCSRF), ("seen", seen)])
            #expect(replied.text.contains("Sam Support replied just now: reload to see it."), "\(replied.text)")
            _ = try await samBrowser.post(payment + "/presence", [("csrf", csrf), ("left", "1")])
            let alone = try await alexBrowser.post(payment + "/presence", [("csrf", alexCSRF)])
            #expect(alone.text.isEmpty, "\(alone.text)")
            // Presence needs the session's form token like every POST.
            #expect(try await alexBrowser.post(payment + "/presence", [("csrf", "forged")]).status == 403)
            _ = sam
        }
    }
}

/// What a team member copies by hand: the authenticator key in groups of four, the recovery
/// codes as a file.
@Suite struct TwoStepTextTests {
    @Test func keysAreGroupedAndCodesWrittenOnePerLine() {
        #expect(TwoStepScreens.grouped("JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP") == "JBSW Y3DP EHPK 3PXP JBSW Y3DP EHPK 3PXP")
        #expect(TwoStepScreens.grouped("ABCDEF") == "ABCD EF")
        let file = TwoStepScreens.recoveryFile(["aaaa-bbbb", "cccc-dddd"], for: "sam@example.com")
        #expect(file.hasSuffix("\n\naaaa-bbbb\ncccc-dddd\n") && file.contains("sam@example.com"))
    }
}
