import PierHTML
import PierHTTP
import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The inbox: every item, newest first, with the API's filters in words (and "open" for the
/// statuses still being worked on, "mine" for one's own), how many match, each team member's
/// saved views, and bulk triage of the selected (or all shown) items that comes back to the same
/// filters.
struct InboxScreens: Sendable {
    let console: Console

    /// The inbox's filters, as its query string names them.
    static let filterNames = [
        "q", "status", "category", "platform", "tag", "assignee", "moderation", "ratingMin", "ratingMax", "appVersion",
    ]
    /// The statuses of items still being worked on.
    static let open: [FeedbackStatus] = [.new, .triaged, .planned, .inProgress]

    /// The filters `pairs` holds, known names only, empty values left out (what links, views
    /// and the way back after a bulk action keep).
    static func filters(_ pairs: [(name: String, value: String)]) -> [(String, String)] {
        filterNames.compactMap { name in
            pairs.first { $0.name == name }.flatMap { $0.value.isEmpty ? nil : (name, String($0.value.prefix(200))) }
        }
    }

    func inbox(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        try await inbox(request, session, refused: nil)
    }

    func inbox(_ request: Request, _ session: ConsoleSession, refused: String?) async throws -> Response {
        let kept = Self.filters(request.query)
        let value = { (name: String) in kept.first { $0.0 == name }?.1 ?? "" }
        let query = Self.apiQuery(kept, session: session, cursor: request.query("cursor"))
        let moderation = Vocabulary.moderation.contains(value("moderation")) ? value("moderation") : "approved"
        let counted = FeedbackStatsQuery(moderation: value("moderation") == "all" ? nil : moderation)
        async let listed = console.fetch(FeedbackAPI.list, query, as: session, request)
        async let countsOf = console.fetch(FeedbackAPI.stats, counted, as: session, request)
        async let teamOf = console.fetch(AuthAPI.teamMembers, NoParameters(), as: session, request)
        async let viewsOf = console.helpDesk.views(of: session.userID)
        // Signed-in senders are found by their account's name or address, which are auth's.
        async let accountsOf =
            value("q").isEmpty ? nil : try? console.fetch(AuthAPI.users, UserSearch(value("q"), limit: 5), as: session, request)
        let (page, counts, team, views) = try await (listed, countsOf, teamOf.items, viewsOf)
        let accounts = await accountsOf?.items.filter { !$0.role.isStaff } ?? []
        let names = Dictionary(team.map { ($0.id, $0.displayName ?? $0.handle) }) { first, _ in first }
        let rows = HTML.join(page.items.map { Self.row($0, names: names) })
        let next: HTML =
            page.nextCursor.map { cursor in
                "<a rel=\"next\" href=\"\(ConsolePath("inbox", query: kept + [("cursor", cursor)]))\">Older →</a>"
            } ?? .empty
        let total = page.total ?? page.items.count
        let matching = total >= 10_000 ? "More than 10,000 items" : total == 1 ? "1 item" : "\(total) items"
        return console.page(
            status: refused == nil ? 200 : 422, title: "Inbox", session: session,
            """
            <h1>Inbox <span class="muted" data-total="\(total)">\(matching)</span></h1>
            \(Self.notice(request))
            \(refused.map { "<p class=\"form-error\" role=\"alert\">\($0)</p>" } ?? HTML.empty)
            \(Self.views(views, kept: kept, session: session))
            \(Self.accounts(accounts))
            <ul class="statuses">\(Self.tabs(kept, counts: counts))</ul>
            \(Self.filterForm(value, team: team, session: session))
            \(Self.bulkForm(kept, team: team, session: session))
            <table>
            <thead><tr><th><input type="checkbox" data-select-all aria-label="Select all shown"></th><th>Message</th><th>Status</th><th>Kind</th><th>Tags</th><th>Assigned</th><th>Rating</th><th>Platform</th><th>App</th><th>Received</th></tr></thead>
            <tbody>\(rows)</tbody>
            </table>
            \(page.items.isEmpty ? "<p class=\"muted\" data-empty>No feedback matches these filters.</p>" : HTML.empty)
            <div class="pager">\(next)</div>
            <p class="muted"><kbd>j</kbd>/<kbd>k</kbd> move, <kbd>o</kbd> opens, <kbd>x</kbd> selects, <kbd>/</kbd> searches</p>
            """)
    }

    /// The API's query for the inbox's filters: "open" is the statuses still being worked on,
    /// "mine" the signed-in member's id.
    static func apiQuery(_ kept: [(String, String)], session: ConsoleSession, cursor: String?) -> FeedbackQuery {
        let value = { (name: String) in kept.first { $0.0 == name }?.1 }
        let status = value("status") == "open" ? open.map(\.rawValue).joined(separator: ",") : value("status")
        let assignee = value("assignee") == "mine" ? session.userID.uuidString.lowercased() : value("assignee")
        return FeedbackQuery(
            status: status, category: value("category"), platform: value("platform"),
            ratingMin: value("ratingMin").flatMap { Int($0) }, ratingMax: value("ratingMax").flatMap { Int($0) },
            appVersion: value("appVersion"), text: value("q"), moderation: value("moderation"), tag: value("tag"),
            assignee: assignee, includeTotal: true, limit: 50, cursor: cursor)
    }

    static func row(_ item: FeedbackItem, names: [UUID: String]) -> HTML {
        let path = ConsolePath("feedback", item.id.uuidString.lowercased())
        let sender = item.name ?? item.email ?? (item.userId == nil ? "anonymous" : "signed in")
        let tags = HTML.join((item.tags ?? []).map { "<span class=\"badge tag\">\($0)</span>" }, separator: " ")
        let assigned = item.assignee.map { names[$0] ?? "a former team member" } ?? ""
        let stars = item.rating.map { String(repeating: "★", count: $0) + String(repeating: "☆", count: 5 - $0) } ?? ""
        return """
            <tr data-href="\(path)">
            <td><input type="checkbox" name="id" value="\(item.id)" form="bulk" aria-label="Select"></td>
            <td><a href="\(path)">\(FeedbackScreens.excerpt(item.message))</a><div class="muted">\(sender)</div></td>
            <td><span class="badge">\(label: item.status)</span></td>
            <td>\(label: item.category)</td>
            <td>\(tags)</td>
            <td>\(assigned)</td>
            <td title="\(item.rating.map { "\($0) of 5" } ?? "not rated")">\(stars)</td>
            <td>\(label: item.platform, none: "")</td>
            <td>\(item.appVersion ?? "")</td>
            <td class="when">\(Layout.date(item.createdAt))</td>
            </tr>
            """
    }

    static func tabs(_ kept: [(String, String)], counts: FeedbackStats) -> HTML {
        let chosen = kept.first { $0.0 == "status" }?.1 ?? ""
        let others = kept.filter { $0.0 != "status" }
        let openCount = open.reduce(0) { $0 + (counts.byStatus[$1.rawValue] ?? 0) }
        let tabs: [(String, String, Int?)] =
            [("", "Everything", nil), ("open", "Open", openCount)]
            + FeedbackStatus.allCases.map { ($0.rawValue, Labels.english($0), counts.byStatus[$0.rawValue] ?? 0) }
        return HTML.join(
            tabs.map { wire, words, count in
                let number: HTML = count.map { "<span data-count=\"\(wire)\">\($0)</span>" } ?? .empty
                return wire == chosen
                    ? "<li><strong aria-current=\"page\">\(words) \(number)</strong></li>"
                    : "<li><a href=\"\(ConsolePath("inbox", query: others + [("status", wire)]))\">\(words)</a> \(number)</li>"
            })
    }

    static func filterForm(_ value: (String) -> String, team: [User], session: ConsoleSession) -> HTML {
        let statuses = [("", "any"), ("open", "Open")] + FeedbackStatus.allCases.map { ($0.rawValue, Labels.english($0)) }
        let categories = [("", "any")] + FeedbackCategory.allCases.map { ($0.rawValue, Labels.english($0)) }
        let platforms = [("", "any")] + Platform.allCases.map { ($0.rawValue, Labels.english($0)) }
        let reviews = [("", "Approved"), ("pending", "Waiting for review"), ("rejected", "Rejected"), ("all", "All")]
        return """
            <form class="filters" method="get" action="/console/inbox">
            <label>Search <input type="search" name="q" value="\(value("q"))" placeholder="words, a name, an address, a tag"></label>
            \(choice("status", "Status", statuses, value("status")))
            \(choice("category", "Kind", categories, value("category")))
            \(choice("platform", "Platform", platforms, value("platform")))
            <label>Tag <input name="tag" value="\(value("tag"))" placeholder="billing" size="10"></label>
            \(choice("assignee", "Assigned to", assignees(team, session: session, filter: true), value("assignee")))
            \(choice("moderation", "Review", reviews, value("moderation")))
            <button type="submit">Filter</button>
            <a href="/console/inbox">Clear</a>
            </form>
            """
    }

    static func bulkForm(_ kept: [(String, String)], team: [User], session: ConsoleSession) -> HTML {
        let statuses = [("", "(status unchanged)")] + FeedbackStatus.allCases.map { ($0.rawValue, Labels.english($0)) }
        let back = ConsolePath.query(kept)
        return """
            <form id="bulk" class="actions" method="post" action="/console/inbox">
            \(Layout.csrf(session))
            <input type="hidden" name="back" value="\(back)">
            \(choice("status", "Move the selected to", statuses, ""))
            <label>Add tags <input name="tags" placeholder="billing, crash"></label>
            \(choice("assignee", "Assign to", [("", "(unchanged)")] + assignees(team, session: session, filter: false), ""))
            <button type="submit">Apply to selected</button>
            </form>
            """
    }

    /// The team as a select's options: for the filter, also anyone, mine and nobody; for an
    /// action, also nobody (unassign).
    static func assignees(_ team: [User], session: ConsoleSession, filter: Bool) -> [(String, String)] {
        let members = team.filter { $0.id != session.userID }.map {
            ($0.id.uuidString.lowercased(), $0.displayName ?? $0.handle)
        }
        return filter
            ? [("", "anyone"), ("mine", "me"), ("none", "nobody")] + members
            : [("mine", "me"), ("none", "nobody")] + members
    }

    /// A labelled `<select>` of `(value, words)` options, `chosen` selected.
    static func choice(_ name: String, _ label: String, _ options: [(String, String)], _ chosen: String) -> HTML {
        let known = options.contains { $0.0 == chosen } ? options : options + [(chosen, chosen)]
        let list = HTML.join(
            known.map { value, words in
                "<option value=\"\(value)\"\(value == chosen ? " selected" : "")>\(words)</option>"
            })
        return "<label>\(label) <select name=\"\(name)\">\(list)</select></label>"
    }

    static func views(_ views: [HelpDesk.View], kept: [(String, String)], session: ConsoleSession) -> HTML {
        let links = HTML.join(
            views.map { view in
                """
                <li><a href="/console/inbox?\(view.query)">\(view.name)</a>
                <form class="inline" method="post" action="\(ConsolePath("inbox", "views", view.id.uuidString.lowercased(), "delete"))">\(Layout.csrf(session))<button class="plain small" type="submit" aria-label="Forget the view \(view.name)">×</button></form></li>
                """
            })
        let save: HTML =
            kept.isEmpty
            ? .empty
            : """
            <form class="inline" method="post" action="/console/inbox/views">\(Layout.csrf(session))
            <input type="hidden" name="back" value="\(ConsolePath.query(kept))">
            <input name="name" placeholder="Name this view: my open bugs" required maxlength="60" aria-label="The view's name">
            <button class="plain" type="submit">Save the view</button></form>
            """
        guard !views.isEmpty || !kept.isEmpty else { return .empty }
        return "<div class=\"views\"><span class=\"muted\">Views</span> <ul class=\"statuses\">\(links)</ul> \(save)</div>"
    }

    /// The accounts the search's words also name: their pages list their feedback.
    static func accounts(_ accounts: [User]) -> HTML {
        guard !accounts.isEmpty else { return .empty }
        let links = HTML.join(
            accounts.map { user in
                "<a href=\"\(ConsolePath("users", user.id.uuidString.lowercased()))\">\(user.displayName ?? user.handle) &lt;\(user.handle)&gt;</a>"
            }, separator: ", ")
        return "<p class=\"muted\" data-accounts>Accounts with these words in their name or address: \(links)</p>"
    }

    /// The confirmation after a bulk action or a saved view (numbers and fixed words only).
    static func notice(_ request: Request) -> HTML {
        switch request.query("done") {
        case "bulk":
            let count = request.query("changed").flatMap { Int($0) } ?? 0
            return "<p class=\"notice\" role=\"status\">Saved: \(count == 1 ? "1 item" : "\(count) items") changed.</p>"
        case "view": return "<p class=\"notice\" role=\"status\">View saved.</p>"
        default: return .empty
        }
    }

    // MARK: - Actions

    /// The filters a form came from (its `back` field), to return to them.
    static func back(_ form: [(name: String, value: String)]) -> [(String, String)] {
        let text = form.first { $0.name == "back" }?.value ?? ""
        return filters((try? URLTarget.pairs(text[...], what: "back")) ?? [])
    }

    /// Bulk triage: the selected items moved to a status, given more tags and/or assigned, each
    /// through `PATCH /feedback/{id}` (the workflow and the audit log apply to each); back to
    /// the same filters, saying how many changed.
    func bulk(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let pairs = try request.formPairs()
        let field = { (name: String) in pairs.first { $0.name == name }?.value ?? "" }
        let ids = pairs.filter { $0.name == "id" }.compactMap { UUID(uuidString: $0.value) }
        let tags = FeedbackScreens.tags(field("tags"))
        let assignee = field("assignee") == "mine" ? session.userID.uuidString.lowercased() : field("assignee")
        guard !ids.isEmpty, !field("status").isEmpty || !tags.isEmpty || !assignee.isEmpty else {
            var again = request
            again.query = Self.back(pairs).map { (name: $0.0, value: $0.1) }
            return try await inbox(
                again, session,
                refused: ids.isEmpty
                    ? "Select the items first (the box at the top selects all shown)."
                    : "Choose a status, tags or someone to assign them to.")
        }
        var refused: [HTML] = []
        for id in ids.prefix(100) {
            var change = UpdateFeedback()
            if !field("status").isEmpty { change.status = field("status") }
            if !assignee.isEmpty { change.assignee = assignee == "none" ? "" : assignee }
            if !tags.isEmpty {
                let item = try await console.fetch(FeedbackAPI.item, PathID(id), as: session, request)
                change.tags = Array(Set((item.tags ?? []) + tags)).sorted()
            }
            let reply = try await console.call(FeedbackAPI.update, PathID(id), body: change, as: session, request)
            if !reply.ok {
                let path = ConsolePath("feedback", id.uuidString.lowercased())
                let why = Labels.english.problem(reply.problem, status: reply.status).message
                refused.append("<li><a href=\"\(path)\">This item</a>: \(why)</li>")
            }
        }
        let back = Self.back(pairs)
        guard refused.isEmpty else {
            return console.page(
                status: 409, title: "Some items were not changed", session: session,
                """
                <h1>Some items were not changed</h1><ul>\(refused)</ul>
                <p><a href="\(ConsolePath("inbox", query: back))">Back to the inbox</a></p>
                """)
        }
        let changed = String(min(ids.count, 100))
        return console.redirect(ConsolePath("inbox", query: back + [("done", "bulk"), ("changed", changed)]))
    }

    /// `POST /console/inbox/views`: the filters saved under a name of the member's choosing.
    func saveView(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let pairs = try request.formPairs()
        let name = (pairs.first { $0.name == "name" }?.value ?? "").trimmingWhitespace()
        let back = Self.back(pairs)
        guard (1...60).contains(name.count), !back.isEmpty else {
            var again = request
            again.query = back.map { (name: $0.0, value: $0.1) }
            return try await inbox(again, session, refused: "Give the view a name of 1 to 60 characters.")
        }
        let query = ConsolePath.query(back)
        try await console.helpDesk.saveView(name, query: query, owner: session.userID)
        return console.redirect(ConsolePath("inbox", query: back + [("done", "view")]))
    }

    /// `POST /console/inbox/views/{id}/delete`: one of the member's own views forgotten.
    func deleteView(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        if let id = parameters["id"].flatMap(UUID.init(uuidString:)) {
            try await console.helpDesk.deleteView(id, owner: session.userID)
        }
        return console.redirect(ConsolePath("inbox"))
    }
}
