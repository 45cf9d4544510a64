import PierHTML
import PierHTTP
import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The inbox (every item, newest first, with the API's filters, keyset paging and bulk triage)
/// and an item's page (the message, its sender and context, its history, and its triage: only
/// the status moves the workflow allows are offered).
struct FeedbackScreens: Sendable {
    let console: Console

    /// The filters the inbox passes on to `GET /feedback`, as the page's query has them.
    static let filters = ["status", "category", "platform", "q", "moderation", "ratingMin", "ratingMax", "appVersion"]

    func inbox(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let filterQuery: [(String, String)] = Self.filters.compactMap { name in request.query(name).map { (name, $0) } }
            .filter { !$0.1.isEmpty }
        let given = { (name: String) in request.query(name).flatMap { $0.isEmpty ? nil : $0 } }
        let filter = FeedbackQuery(
            status: given("status"), category: given("category"), platform: given("platform"),
            ratingMin: given("ratingMin").flatMap { Int($0) }, ratingMax: given("ratingMax").flatMap { Int($0) },
            appVersion: given("appVersion"), text: given("q"), moderation: given("moderation"), limit: 50,
            cursor: given("cursor"))
        // The page and the counts per status (of the moderation state shown) together.
        let moderation = request.query("moderation").flatMap { Vocabulary.moderation.contains($0) ? $0 : nil } ?? "approved"
        let counted = FeedbackStatsQuery(moderation: request.query("moderation") == "all" ? nil : moderation)
        async let listed = console.fetch(FeedbackAPI.list, filter, as: session, request)
        async let countsOf = console.fetch(FeedbackAPI.stats, counted, as: session, request)
        let (page, counts) = try await (listed, countsOf)
        let value = { (name: String) in request.query(name) ?? "" }
        let tabs = HTML.join(
            FeedbackStatus.allCases.map { status in
                let chosen = value("status") == status.rawValue
                let path = ConsolePath("inbox", query: filterQuery.filter { $0.0 != "status" } + [("status", status.rawValue)])
                return chosen
                    ? "<li><strong>\(label: status) \(counts.byStatus[status.rawValue] ?? 0)</strong></li>"
                    : "<li><a href=\"\(path)\">\(label: status)</a> <span data-count=\"\(wire: status)\">\(counts.byStatus[status.rawValue] ?? 0)</span></li>"
            })
        let rows = HTML.join(
            page.items.map { item in
                let path = ConsolePath("feedback", item.id.uuidString.lowercased())
                return """
                    <tr data-href="\(path)">
                    <td><input type="checkbox" name="id" value="\(item.id)" form="bulk" aria-label="select"></td>
                    <td><a href="\(path)">\(Self.excerpt(item.message))</a><div class="muted">\(item.name ?? item.email ?? (item.userId == nil ? "anonymous" : "signed in"))</div></td>
                    <td><span class="badge">\(label: item.status)</span></td>
                    <td>\(label: item.category)</td>
                    <td>\(item.rating.map { String(repeating: "★", count: $0) } ?? "")</td>
                    <td>\(label: item.platform, none: "")</td>
                    <td>\(item.appVersion ?? "")</td>
                    <td class="muted">\(Layout.date(item.createdAt))</td>
                    </tr>
                    """
            })
        let next: HTML =
            page.nextCursor.map { cursor in
                "<a rel=\"next\" href=\"\(ConsolePath("inbox", query: filterQuery + [("cursor", cursor)]))\">Older →</a>"
            } ?? .empty
        let statuses = HTML.join(
            FeedbackStatus.allCases.map { status in "<option value=\"\(wire: status)\">\(label: status)</option>" })
        return console.page(
            title: "Inbox", session: session,
            """
            <h1>Inbox</h1>
            <ul class="statuses">\(tabs)</ul>
            <form class="filters" method="get" action="/console/inbox">
            <label>Search <input type="search" name="q" value="\(value("q"))" placeholder="words in the message"></label>
            \(Self.select("status", ["", "new", "triaged", "planned", "in_progress", "done", "closed", "duplicate"], value("status")))
            \(Self.select("category", [""] + Vocabulary.categories.sorted(), value("category")))
            \(Self.select("platform", [""] + Vocabulary.platforms.sorted(), value("platform")))
            \(Self.select("moderation", ["", "pending", "rejected", "all"], value("moderation"), any: "approved"))
            <button type="submit">Filter</button>
            </form>
            <form id="bulk" class="actions" method="post" action="/console/inbox">
            \(Layout.csrf(session))
            <label>Move the selected to <select name="status"><option value="">(status unchanged)</option>\(statuses)</select></label>
            <label>Add tags <input name="tags" placeholder="billing, crash"></label>
            <button type="submit">Apply to selected</button>
            </form>
            <table>
            <thead><tr><th></th><th>Message</th><th>Status</th><th>Category</th><th>Rating</th><th>Platform</th><th>App</th><th>Received</th></tr></thead>
            <tbody>\(rows)</tbody>
            </table>
            \(page.items.isEmpty ? "<p class=\"muted\">Nothing matches.</p>" : HTML.empty)
            <div class="pager">\(next)</div>
            <p class="muted"><kbd>j</kbd>/<kbd>k</kbd> move, <kbd>o</kbd> opens, <kbd>x</kbd> selects, <kbd>/</kbd> searches</p>
            """)
    }

    /// Bulk triage: the selected items moved to a status and/or given more tags, each through
    /// `PATCH /feedback/{id}` (the workflow and the audit log apply to each).
    func bulk(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let pairs = try request.formPairs()
        let ids = pairs.filter { $0.name == "id" }.compactMap { UUID(uuidString: $0.value) }
        let status = pairs.first { $0.name == "status" }?.value ?? ""
        let tags = Self.tags(pairs.first { $0.name == "tags" }?.value ?? "")
        guard !ids.isEmpty, !status.isEmpty || !tags.isEmpty else {
            return console.page(
                status: 422, title: "Nothing to do", session: session,
                "<h1>Nothing to do</h1><p>Select items and a status or tags. <a href=\"/console/inbox\">Back to the inbox</a></p>"
            )
        }
        var refused: [HTML] = []
        for id in ids.prefix(100) {
            var change = UpdateFeedback()
            if !status.isEmpty { change.status = status }
            if !tags.isEmpty {
                let item = try await console.fetch(FeedbackAPI.item, PathID(id), as: session, request)
                change.tags = Array(Set((item.tags ?? []) + tags)).sorted()
            }
            let reply = try await console.call(FeedbackAPI.update, PathID(id), body: change, as: session, request)
            if !reply.ok {
                refused.append(
                    "<li><a href=\"\(ConsolePath("feedback", id.uuidString.lowercased()))\">\(id)</a>: \(reply.problem?.detail ?? "refused")</li>"
                )
            }
        }
        guard refused.isEmpty else {
            return console.page(
                status: 409, title: "Some items were not changed", session: session,
                """
                <h1>Some items were not changed</h1><ul>\(refused)</ul>
                <p><a href="/console/inbox">Back to the inbox</a></p>
                """)
        }
        return console.redirect(ConsolePath("inbox"))
    }

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
        let triageForm =
            triageForm
            ?? FormState(values: [
                "tags": (item.tags ?? []).joined(separator: ", "), "internalNote": item.internalNote ?? "",
                "duplicateOf": item.duplicateOf.map { $0.uuidString.lowercased() } ?? "",
            ])
        let replyForm = replyForm ?? FormState(values: ["message": "", "replyId": UUID.random().text()])
        let notice: HTML =
            switch request.query("done") {
            case "saved": "<p class=\"notice\" role=\"status\">Saved.</p>"
            case "sent": "<p class=\"notice\" role=\"status\">Reply sent.</p>"
            default: .empty
            }
        let sender = await sender(of: item, as: session, request)
        let rows = Self.facts(of: item)
        let moves = item.status.next.sorted { $0.rawValue < $1.rawValue }
        let options = HTML.join(moves.map { "<option value=\"\(wire: $0)\">\(label: $0)</option>" })
        // Who triaged and who replied, by name.
        let staff = await console.names(
            Set((item.history ?? []).map(\.actor) + (item.replies ?? []).compactMap(\.authorId)), as: session, request)
        let history = HTML.join(
            (item.history ?? []).reversed().map { change in
                let fields = HTML.join(
                    change.changes.keys.sorted().map { key in
                        "<li><code>\(key)</code> \(Self.text(change.changes[key]?.from ?? .null)) → \(Self.text(change.changes[key]?.to ?? .null))</li>"
                    })
                return
                    "<li>\(Layout.date(change.changedAt)) by <a href=\"\(ConsolePath("users", change.actor.uuidString.lowercased()))\">\(staff[change.actor] ?? change.actor.uuidString.lowercased())</a><ul>\(fields)</ul></li>"
            })
        let path = ConsolePath("feedback", id.uuidString.lowercased())
        let replies = HTML.join(
            (item.replies ?? []).map { reply in
                let author: HTML =
                    if let author = reply.authorId {
                        "<a href=\"\(ConsolePath("users", author.uuidString.lowercased()))\">\(staff[author] ?? author.uuidString.lowercased())</a>"
                    } else { "the team" }
                return
                    "<li class=\"reply\"><p class=\"muted\">\(Layout.date(reply.createdAt)) by \(author), \(Self.delivered(reply.delivery))</p><div class=\"message\">\(reply.message)</div></li>"
            })
        let reach: HTML =
            if item.userId != nil {
                "Shown in the sender's app with the item, and mailed to their address if it is verified."
            } else if let email = item.email {
                "Mailed to the address the sender gave, \(email)."
            } else {
                "The sender is anonymous without an address: the reply is only kept with the item."
            }
        return console.page(
            status: triageForm.isValid && replyForm.isValid ? 200 : 422, title: "Feedback", session: session,
            """
            <p><a href="/console/inbox">← Inbox</a></p>
            \(notice)
            <h1>Feedback <span class="badge">\(label: item.status)</span></h1>
            <div class="columns">
            <div>
            <p class="muted">From \(sender)</p>
            <div class="message" data-message>\(item.message)</div>
            <h2>Replies</h2>
            <ul class="replies">\(replies)</ul>
            <form method="post" action="\(path)/reply" class="card" data-reply>
            \(Layout.csrf(session))
            \(replyForm.banner)
            <input type="hidden" name="replyId" value="\(replyForm.value("replyId"))">
            <label>Reply to the sender <textarea name="message" required maxlength="5000"\(replyForm.invalid("message"))>\(replyForm.value("message"))</textarea>\(replyForm.message("message"))</label>
            <p class="muted">\(reach)</p>
            <button type="submit">Send the reply</button>
            </form>
            <h2>History</h2>
            <ul>\(history)</ul>
            </div>
            <div>
            <dl class="facts">\(rows)</dl>
            <div class="card">
            <h2>Triage</h2>
            <form method="post" action="\(path)" data-triage>
            \(Layout.csrf(session))
            \(triageForm.banner)
            <label>Status <select name="status"\(triageForm.invalid("status"))><option value="">(unchanged)</option>\(options)</select>\(triageForm.message("status"))</label>
            \(triageForm.input("duplicateOf", "Duplicate of (the original's link or id, with status Duplicate)"))
            \(triageForm.input("tags", "Tags (comma-separated)"))
            <label>Internal note <textarea name="internalNote"\(triageForm.invalid("internalNote"))>\(triageForm.value("internalNote"))</textarea>\(triageForm.message("internalNote"))</label>
            <button type="submit">Save</button>
            </form>
            </div>
            </div>
            </div>
            """)
    }

    /// Who sent `item`: the account as it is now (its name and address are the auth service's),
    /// or the anonymous sender's name and address.
    func sender(of item: FeedbackItem, as session: ConsoleSession, _ request: Request) async -> HTML {
        if let user = item.userId {
            // The account as it is now (its name and address are the auth service's).
            if let account = try? await console.fetch(AuthAPI.user, PathID(user), as: session, request) {
                "<a href=\"\(ConsolePath("users", user.uuidString.lowercased()))\">\(account.displayName ?? account.email)</a> &lt;\(account.email)&gt;"
            } else {
                "<a href=\"\(ConsolePath("users", user.uuidString.lowercased()))\">the account \(user)</a>"
            }
        } else {
            "anonymous \(item.name ?? "") \(item.email.map { "<\($0)>" } ?? "")"
        }
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
            ("Duplicate of", item.duplicateOf?.uuidString.lowercased()),
        ]
        let metadata = item.metadata.keys.sorted().map { key in (key, Self.text(item.metadata[key] ?? .null)) }
        return HTML.join(
            (facts + metadata).filter { !($0.1 ?? "").isEmpty }.map { "<dt>\($0.0)</dt><dd>\($0.1)</dd>" })
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

    /// A labelled `<select>` of `values` (the empty value shown as `any`); the label is the
    /// field's name unless `label` says otherwise.
    static func select(_ name: String, _ values: [String], _ chosen: String, any: String = "any", label: String? = nil)
        -> HTML
    {
        let options = HTML.join(
            values.map { value in
                value == chosen
                    ? "<option value=\"\(value)\" selected>\(value.isEmpty ? any : value)</option>"
                    : "<option value=\"\(value)\">\(value.isEmpty ? any : value)</option>"
            })
        return "<label>\(label ?? name) <select name=\"\(name)\">\(options)</select></label>"
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
        case .number(let number): number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .string(let text): text
        case .array(let items): items.map(text).joined(separator: ", ")
        case .object(let members): members.keys.sorted().map { "\($0): \(text(members[$0]!))" }.joined(separator: ", ")
        }
    }
}
