import PierHTML
import PierHTTP
import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The team's saved replies (written once, used from any item's page with its placeholders
/// filled), and who else has an item open.
struct SavedReplyScreens: Sendable {
    let console: Console

    /// What a saved reply may say of the item and the people: filled in when it is used.
    static let placeholders = [
        ("{name}", "the sender's name (\"there\" when unknown)"), ("{first name}", "the first word of it"),
        ("{agent}", "you, the one replying"), ("{app version}", "the app's version"), ("{platform}", "the device"),
    ]

    /// `GET /console/replies`: the list, and the form (filled with `?edit=` one's text).
    func list(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let saved = try await console.helpDesk.savedReplies()
        let editing = request.query("edit").flatMap(UUID.init(uuidString:)).flatMap { id in saved.first { $0.id == id } }
        let form = FormState(values: [
            "id": editing?.id.uuidString.lowercased() ?? "", "title": editing?.title ?? "", "body": editing?.body ?? "",
        ])
        return try await page(request, session, saved: saved, form: form)
    }

    func page(_ request: Request, _ session: ConsoleSession, saved: [HelpDesk.SavedReply], form: FormState) async throws
        -> Response
    {
        let rows = HTML.join(
            saved.map { reply in
                let path = ConsolePath("replies", reply.id.uuidString.lowercased())
                return """
                    <tr><td><strong>\(reply.title)</strong></td><td><div class="message">\(reply.body)</div></td>
                    <td><a href="\(ConsolePath("replies", query: [("edit", reply.id.uuidString.lowercased())]))">Edit</a>
                    <form class="inline" method="post" action="\(path)/delete" data-confirm="Delete the saved reply “\(reply.title)” for the whole team?">\(Layout.csrf(session))<button class="plain" type="submit">Delete</button></form></td></tr>
                    """
            })
        let notice: HTML =
            switch request.query("done") {
            case "saved": "<p class=\"notice\" role=\"status\">Saved reply saved.</p>"
            case "deleted": "<p class=\"notice\" role=\"status\">Saved reply deleted.</p>"
            default: .empty
            }
        let hints = HTML.join(Self.placeholders.map { "<li><code>\($0.0)</code> \($0.1)</li>" })
        return console.page(
            status: form.isValid ? 200 : 422, title: "Saved replies", session: session,
            """
            <h1>Saved replies</h1>
            \(notice)
            <p class="muted">The team's answers to what is asked often, to start a reply from on any item's page.</p>
            <table><thead><tr><th>Title</th><th>Text</th><th></th></tr></thead><tbody>\(rows)</tbody></table>
            \(saved.isEmpty ? "<p class=\"muted\" data-empty>None yet: write the first below.</p>" : HTML.empty)
            <div class="card">
            <h2>\(form.value("id").isEmpty ? "New saved reply" : "Change the saved reply")</h2>
            <form method="post" action="/console/replies">\(Layout.csrf(session))
            \(form.banner)
            <input type="hidden" name="id" value="\(form.value("id"))">
            \(form.input("title", "Title (what the team picks it by: Refund how-to)", extra: " required maxlength=\"80\""))
            <label>Text <textarea name="body" required maxlength="5000"\(form.invalid("body"))>\(form.value("body"))</textarea>\(form.message("body"))</label>
            <p class="muted">Placeholders, filled in when the reply is used:</p><ul class="muted">\(hints)</ul>
            <button type="submit">Save</button>
            </form>
            </div>
            """)
    }

    /// `POST /console/replies`: a saved reply created or changed.
    func save(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        var form = FormState(values: try request.form() ?? [:])
        let title = form.value("title").trimmingWhitespace()
        let body = form.value("body").trimmingWhitespace()
        if !(1...80).contains(title.count) { form.refuse("title", "Give it a title of 1 to 80 characters.") }
        if !(1...5000).contains(body.count) { form.refuse("body", "Write the reply (at most 5000 characters).") }
        if form.isValid {
            let id = UUID(uuidString: form.value("id"))
            if try await console.helpDesk.saveReply(id, title: title, body: body, by: session.userID) {
                return console.redirect(ConsolePath("replies", query: [("done", "saved")]))
            }
            form.refuse("title", "Another saved reply has this title; choose another.")
        }
        return try await page(request, session, saved: try await console.helpDesk.savedReplies(), form: form)
    }

    /// `POST /console/replies/{id}/delete`.
    func delete(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        if let id = parameters["id"].flatMap(UUID.init(uuidString:)) { try await console.helpDesk.deleteReply(id) }
        return console.redirect(ConsolePath("replies", query: [("done", "deleted")]))
    }

    /// `POST /console/feedback/{id}/presence` (every few seconds from an open item's page, and
    /// `left=1` when it closes): who else has the item open, and who replied since the page was
    /// drawn (`seen`: the number of replies it shows), as one line of plain text.
    func presence(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        guard let id = parameters["id"].flatMap(UUID.init(uuidString:)) else {
            return console.page(status: 404, title: "Not found", session: session, "<h1>No such feedback</h1>")
        }
        let form = try request.form() ?? [:]
        if form["left"] == "1" {
            try await console.helpDesk.left(session.userID, item: id)
            return Self.text("")
        }
        let me = await console.names([session.userID], as: session, request)[session.userID] ?? session.email
        let others = try await console.helpDesk.present(session.userID, name: me, at: id)
        var lines: [String] = []
        if !others.isEmpty {
            let names = others.map(\.name)
            lines.append(
                (names.count == 1 ? names[0] + " is" : names.dropLast().joined(separator: ", ") + " and " + names.last! + " are")
                    + " viewing this item.")
        }
        if let seen = form["seen"].flatMap({ Int($0) }), seen >= 0 {
            let item = try await console.fetch(FeedbackAPI.item, PathID(id), as: session, request)
            let newer = (item.replies ?? []).dropFirst(seen).filter { $0.authorId != session.userID }
            if let last = newer.last {
                var who = "Someone"
                if let author = last.authorId, let name = await console.names([author], as: session, request)[author] {
                    who = name
                }
                let minutes = max(0, Int(Date().timeIntervalSince(last.createdAt) / 60))
                lines.append(
                    "\(who) replied \(minutes == 0 ? "just now" : minutes == 1 ? "a minute ago" : "\(minutes) minutes ago"): reload to see it."
                )
            }
        }
        return Self.text(lines.joined(separator: " "))
    }

    static func text(_ line: String) -> Response {
        var headers = Console.securityHeaders
        headers.set("Content-Type", "text/plain; charset=utf-8")
        return Response(status: 200, headers: headers, body: Array(line.utf8))
    }
}
