import PierHTML
import PierHTTP
import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// An item's page: the message, its sender and context, the replies (a saved reply to start
/// from, its placeholders filled), its history, who else has it open, and its triage (only the
/// status moves the workflow allows are offered; assignment to a team member).
struct FeedbackScreens: Sendable {
    let console: Console

    func item(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        guard let id = parameters["id"].flatMap(UUID.init(uuidString:)) else {
            return console.page(status: 404, title: "Not found", session: session, "<h1>No such feedback</h1>")
        }
        return try await item(id, request, session)
    }

    /// An item's page; a refused form drawn again as it was typed (`triageForm`, `replyForm`).
    func item(
        _ id: UUID, _ request: Request, _ session: ConsoleSession, triageForm: FormState? = nil,
        replyForm: FormState? = nil
    ) async throws -> Response {
        let item = try await console.fetch(FeedbackAPI.item, PathID(id), as: session, request)
        async let teamOf = console.fetch(AuthAPI.teamMembers, NoParameters(), as: session, request)
        async let savedOf = console.helpDesk.savedReplies()
        async let senderOf = sender(of: item, as: session, request)
        let (team, saved, sender) = try await (teamOf.items, savedOf, senderOf)
        // Who triaged and who replied, by name (former members too).
        var names = Dictionary(team.map { ($0.id, $0.displayName ?? $0.handle) }) { first, _ in first }
        let unknown = Set((item.history ?? []).map(\.actor) + (item.replies ?? []).compactMap(\.authorId))
            .subtracting(names.keys)
        names.merge(await console.names(unknown, as: session, request)) { first, _ in first }
        let triageForm =
            triageForm
            ?? FormState(values: [
                "tags": (item.tags ?? []).joined(separator: ", "), "internalNote": item.internalNote ?? "",
                "duplicateOf": item.duplicateOf.map { $0.uuidString.lowercased() } ?? "",
                "assignee": item.assignee.map { $0.uuidString.lowercased() } ?? "",
            ])
        let template = request.query("reply").flatMap(UUID.init(uuidString:)).flatMap { chosen in saved.first { $0.id == chosen }
        }
        let replyForm =
            replyForm
            ?? FormState(values: [
                "message": template.map {
                    Self.fill(
                        $0.body, item: item, sender: sender.name,
                        agent: team.first { $0.id == session.userID }?.displayName
                            ?? String(session.email.prefix { $0 != "@" }))
                } ?? "",
                "replyId": UUID.random().text(),
            ])
        let notice: HTML =
            switch request.query("done") {
            case "saved": "<p class=\"notice\" role=\"status\">Saved.</p>"
            case "sent": "<p class=\"notice\" role=\"status\">Reply sent.</p>"
            default: .empty
            }
        let path = ConsolePath("feedback", id.uuidString.lowercased())
        return console.page(
            status: triageForm.isValid && replyForm.isValid ? 200 : 422, title: "Feedback", session: session,
            """
            <p><a href="/console/inbox">← Inbox</a></p>
            \(notice)
            <h1>Feedback <span class="badge">\(label: item.status)</span></h1>
            <p class="presence" data-presence="\(path)/presence" data-seen="\((item.replies ?? []).count)" role="status" aria-live="polite"></p>
            <div class="columns">
            <div class="main-column">
            <p class="muted">From \(sender.html)</p>
            <div class="message" data-message>\(item.message)</div>
            <h2>Replies</h2>
            <ul class="replies">\(Self.replies(item, names: names))</ul>
            \(Self.replyCard(item, path: path, form: replyForm, saved: saved, session: session))
            <h2>History</h2>
            <ul class="history">\(Self.history(item, names: names))</ul>
            </div>
            <div>
            <dl class="facts">\(Self.facts(of: item))</dl>
            \(Self.triageCard(item, path: path, form: triageForm, team: team, session: session))
            </div>
            </div>
            """)
    }

    /// The item's changes, newest first, in words, by whom.
    static func history(_ item: FeedbackItem, names: [UUID: String]) -> HTML {
        HTML.join(
            (item.history ?? []).reversed().map { change in
                let before = JSONValue.object(change.changes.mapValues(\.from))
                let after = JSONValue.object(change.changes.mapValues(\.to))
                let who = ConsolePath("users", change.actor.uuidString.lowercased())
                return """
                    <li><span class="when">\(Layout.date(change.changedAt))</span> by <a href="\(who)">\(names[change.actor] ?? "a former team member")</a>\(AuditScreens.change(before, after, names: names))</li>
                    """
            })
    }

    static func replies(_ item: FeedbackItem, names: [UUID: String]) -> HTML {
        HTML.join(
            (item.replies ?? []).map { reply in
                let author: HTML =
                    if let author = reply.authorId {
                        "<a href=\"\(ConsolePath("users", author.uuidString.lowercased()))\">\(names[author] ?? "a former team member")</a>"
                    } else { "the team" }
                return
                    "<li class=\"reply\"><p class=\"muted\"><span class=\"when\">\(Layout.date(reply.createdAt))</span> by \(author), \(Self.delivered(reply.delivery))</p><div class=\"message\">\(reply.message)</div></li>"
            })
    }

    static func replyCard(
        _ item: FeedbackItem, path: ConsolePath, form: FormState, saved: [HelpDesk.SavedReply], session: ConsoleSession
    ) -> HTML {
        let reach: HTML =
            if item.userId != nil {
                "Shown in the sender's app with the item, and mailed to their address if it is verified."
            } else if let email = item.email {
                "Mailed to the address the sender gave, \(email)."
            } else {
                "The sender is anonymous without an address: the reply is only kept with the item."
            }
        let templates: HTML =
            saved.isEmpty
            ? "<p class=\"muted\">No saved replies yet: <a href=\"/console/replies\">write the team's first</a>.</p>"
            : """
            <form method="get" action="\(path)" class="inline-form" data-saved-replies>
            \(InboxScreens.choice("reply", "Start from a saved reply", [("", "choose one")] + saved.map { ($0.id.uuidString.lowercased(), $0.title) }, ""))
            <button class="plain" type="submit">Use</button> <a href="/console/replies">Saved replies</a>
            </form>
            """
        return """
            <div class="card">
            \(templates)
            <form method="post" action="\(path)/reply" data-reply>
            \(Layout.csrf(session))
            \(form.banner)
            <input type="hidden" name="replyId" value="\(form.value("replyId"))">
            <label>Reply to the sender <textarea name="message" required maxlength="5000"\(form.invalid("message"))>\(form.value("message"))</textarea>\(form.message("message"))</label>
            <p class="muted">\(reach)\(item.status == .new ? " Replying moves the item to Triaged." : "")</p>
            <button type="submit">Send the reply</button>
            </form>
            </div>
            """
    }

    static func triageCard(
        _ item: FeedbackItem, path: ConsolePath, form: FormState, team: [User], session: ConsoleSession
    ) -> HTML {
        let moves =
            [("", "(unchanged)")]
            + item.status.next.sorted { $0.rawValue < $1.rawValue }.map {
                ($0.rawValue, Labels.english($0))
            }
        let members = [("", "nobody")] + team.map { ($0.id.uuidString.lowercased(), $0.displayName ?? $0.handle) }
        return """
            <div class="card">
            <h2>Triage</h2>
            <form method="post" action="\(path)" data-triage>
            \(Layout.csrf(session))
            \(form.banner)
            \(InboxScreens.choice("status", "Status", moves, form.value("status")))\(form.message("status"))
            \(InboxScreens.choice("assignee", "Assigned to", members, form.value("assignee")))\(form.message("assignee"))
            \(form.input("duplicateOf", "Duplicate of (the original's link or id, with status Duplicate)"))
            \(form.input("tags", "Tags (comma-separated)"))
            <label>Internal note <textarea name="internalNote"\(form.invalid("internalNote"))>\(form.value("internalNote"))</textarea>\(form.message("internalNote"))</label>
            <button type="submit">Save</button>
            </form>
            </div>
            """
    }

    /// A saved reply's text with its placeholders filled: `{name}` and `{first name}` (the
    /// sender's, "there" when unknown), `{agent}` (the one replying: their name, set at
    /// `/console/me`, else their address's local part), `{app version}`, `{platform}`. Anything
    /// else in braces stays as written.
    static func fill(_ body: String, item: FeedbackItem, sender: String?, agent: String) -> String {
        let name = sender?.trimmingWhitespace() ?? ""
        let values = [
            "{name}": name.isEmpty ? "there" : name,
            "{first name}": name.split(separator: " ").first.map(String.init) ?? "there",
            "{agent}": agent,
            "{app version}": item.appVersion ?? "the app", "{platform}": Labels.english(item.platform, none: "your device"),
        ]
        return fill(body, values)
    }

    /// `text` with each placeholder replaced by its value, in one pass from the start: a value is
    /// never read again as a placeholder (a sender named `{agent}` stays `{agent}`), whatever
    /// the order of `values`.
    static func fill(_ text: String, _ values: [String: String]) -> String {
        var filled = ""
        var rest = text[...]
        while let open = rest.firstIndex(of: "{") {
            filled += rest[..<open]
            rest = rest[open...]
            if let (key, value) = values.first(where: { rest.hasPrefix($0.key) }) {
                filled += value
                rest = rest.dropFirst(key.count)
            } else {
                filled.append("{")
                rest = rest.dropFirst()
            }
        }
        return filled + rest
    }

    /// Who sent `item`: the account as it is now (its name and address are the auth service's),
    /// or the anonymous sender's name and address; and the name a reply greets.
    func sender(of item: FeedbackItem, as session: ConsoleSession, _ request: Request) async -> (html: HTML, name: String?) {
        if let user = item.userId {
            let path = ConsolePath("users", user.uuidString.lowercased())
            if let account = try? await console.fetch(AuthAPI.user, PathID(user), as: session, request) {
                return (
                    "<a href=\"\(path)\">\(account.displayName ?? account.handle)</a> &lt;\(account.handle)&gt;",
                    account.displayName
                )
            }
            return ("<a href=\"\(path)\">a deleted account</a>", nil)
        }
        let anonymous: HTML = "anonymous \(item.name ?? "") \(item.email.map { "<\($0)>" } ?? "")"
        return (anonymous, item.name)
    }

    /// The item's facts, as a definition list's rows (those that are set).
    static func facts(of item: FeedbackItem) -> HTML {
        let facts: [(String, String?)] = [
            ("Status", Labels.english(item.status)), ("Kind", Labels.english(item.category)),
            ("Rating", item.rating.map { "\($0) of 5" }),
            ("Review", item.moderation.map { Labels.english($0) }), ("Platform", item.platform.map { Labels.english($0) }),
            ("OS", item.osVersion),
            ("Device", item.device),
            ("App", [item.appVersion, item.build.map { "(\($0))" }].compactMap { $0 }.joined(separator: " ")),
            ("Language", item.locale), ("Request ids", item.requestIds.joined(separator: ", ")),
            ("Received", Layout.date(item.createdAt)), ("Updated", Layout.date(item.updatedAt)),
        ]
        let metadata = item.metadata.keys.sorted().map { key in (key, Self.text(item.metadata[key] ?? .null)) }
        let original: HTML =
            item.duplicateOf.map {
                "<dt>Duplicate of</dt><dd><a href=\"\(ConsolePath("feedback", $0.uuidString.lowercased()))\">the original item</a></dd>"
            } ?? .empty
        return HTML.join(
            (facts + metadata).filter { !($0.1 ?? "").isEmpty }.map { "<dt>\($0.0)</dt><dd>\($0.1)</dd>" } + [original])
    }

    func triage(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        guard let id = parameters["id"].flatMap(UUID.init(uuidString:)) else {
            return console.page(status: 404, title: "Not found", session: session, "<h1>No such feedback</h1>")
        }
        var form = FormState(values: try request.form() ?? [:])
        var change = UpdateFeedback()
        if !form.value("status").isEmpty { change.status = form.value("status") }
        let original = form.value("duplicateOf").trimmingWhitespace()
        if !original.isEmpty {
            // The original's id, or its page's link as copied from the address bar.
            let last = original.split(separator: "/").last.map(String.init) ?? original
            if let originalID = UUID(uuidString: String(last.prefix { $0 != "?" && $0 != "#" })) {
                change.duplicateOf = originalID
            } else {
                form.refuse("duplicateOf", "Paste the original item's link or id.")
            }
        }
        if let tags = form.values["tags"] { change.tags = Self.tags(tags) }
        if let note = form.values["internalNote"] { change.internalNote = note }
        if let assignee = form.values["assignee"] { change.assignee = assignee }
        guard form.isValid else { return try await item(id, request, session, triageForm: form) }
        let reply = try await console.call(FeedbackAPI.update, PathID(id), body: change, as: session, request)
        guard reply.ok else {
            guard reply.status == 422 || reply.status == 409 else { return console.problem(reply, session: session) }
            form.take(reply.problem, status: reply.status)
            return try await item(id, request, session, triageForm: form)
        }
        return console.redirect(ConsolePath("feedback", id.uuidString.lowercased(), query: [("done", "saved")]))
    }

    /// `POST /console/feedback/{id}/reply`: the form's reply id makes a form sent twice (a
    /// reload, a double click) one reply, mailed once.
    func reply(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        guard let id = parameters["id"].flatMap(UUID.init(uuidString:)) else {
            return console.page(status: 404, title: "Not found", session: session, "<h1>No such feedback</h1>")
        }
        var form = FormState(values: try request.form() ?? [:])
        let body = CreateFeedbackReply(
            id: form.values["replyId"].flatMap(UUID.init(uuidString:)), message: form.value("message"))
        let reply = try await console.call(FeedbackAPI.reply, PathID(id), body: body, as: session, request)
        guard reply.ok else {
            guard reply.status == 422 || reply.status == 409 else { return console.problem(reply, session: session) }
            form.take(reply.problem, status: reply.status)
            return try await item(id, request, session, replyForm: form)
        }
        return console.redirect(ConsolePath("feedback", id.uuidString.lowercased(), query: [("done", "sent")]))
    }

    // MARK: - Helpers

    /// Where a reply went, in words.
    static func delivered(_ delivery: String?) -> String {
        switch delivery {
        case "account": "to the sender's account"
        case "address": "mailed to the sender's address"
        default: "kept with the item only"
        }
    }

    static func tags(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingWhitespace().lowercased() }.filter { !$0.isEmpty }
    }

    static func excerpt(_ message: String) -> String { message.count > 120 ? String(message.prefix(119)) + "…" : message }

    /// A JSON value as text.
    static func text(_ value: JSONValue) -> String {
        switch value {
        case .null: "-"
        case .bool(let flag): String(flag)
        case .number(let number): JSONValue.text(of: number)
        case .string(let text): text
        case .array(let items): items.map(text).joined(separator: ", ")
        case .object(let members): members.keys.sorted().map { "\($0): \(text(members[$0]!))" }.joined(separator: ", ")
        }
    }
}
