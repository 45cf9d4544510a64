import PierHTML
import PierHTTP
import PierModels
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The audit log: what the team did, newest first, from each service's log merged by time, in
/// words: who by name, what as a sentence's verb, on what by name, and only the fields that
/// changed. Filtered by the account concerned or the team member (an address, a name's start
/// or an id), by action and by date; paged per service.
struct AuditScreens: Sendable {
    let console: Console

    /// Pier's logs, by the API's path segment, with their titles.
    static let builtIn = [("auth", "Accounts"), ("feedback", "Feedback"), ("subscriptions", "Subscriptions")]

    /// Every log read: Pier's, then the plugins'.
    var logs: [(service: String, title: String)] {
        Self.builtIn + console.additions.auditLogs.map { ($0.service, $0.declaration.title) }
    }

    /// Whether `service`'s log may hold `action` (a plugin's log holds its own actions, Pier's
    /// the others): the logs asked, so none refuses an action it does not know.
    func log(_ service: String, mayHold action: String?) -> Bool {
        guard let action else { return true }
        if let plugin = console.additions.auditLogs.first(where: { $0.service == service }) {
            return plugin.declaration.actions.contains { $0.action == action }
        }
        return console.additions.words(for: action) == nil
    }

    /// Every action the filter offers: Pier's and the plugins'.
    var actions: [AuditAction] {
        AuditAction.allCases + console.additions.auditLogs.flatMap { $0.declaration.actions.map { AuditAction(wire: $0.action) } }
    }

    /// An action in words: the console's own, or the plugin's that declares it.
    func words(_ action: AuditAction) -> String {
        Labels.english.knows(action)
            ? Labels.english(action) : console.additions.words(for: action.rawValue) ?? Labels.english(action)
    }

    /// The account `text` names: an id, its address, or the one account whose address (or
    /// display name) starts with it.
    func account(_ text: String, _ session: ConsoleSession, _ request: Request) async throws -> AccountLookup.Found {
        try await AccountLookup.find(text) { try await console.fetch(AuthAPI.users, $0, as: session, request) }
    }

    func list(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let typed = { (name: String) -> String? in
            guard let value = request.query(name)?.trimmingWhitespace(), !value.isEmpty else { return nil }
            return value
        }
        var problems: [String: String] = [:]
        var filter = AuditQuery(limit: 100)
        for (field, keyPath) in [("subject", \AuditQuery.subject), ("actor", \AuditQuery.actor)] {
            guard let text = typed(field) else { continue }
            switch try await account(text, session, request) {
            case .account(let id): filter[keyPath: keyPath] = id
            case .nobody(let why): problems[field] = why
            }
        }
        filter.target = typed("target")
        filter.action = typed("action").flatMap { typed in actions.first { $0.rawValue == typed }?.rawValue }
        filter.since = typed("since").flatMap { CivilDate.parse($0) == nil ? nil : $0 }
        filter.until = typed("until").flatMap { CivilDate.parse($0) == nil ? nil : $0 }
        if typed("since") != nil && filter.since == nil { problems["since"] = "Not a date." }
        if typed("until") != nil && filter.until == nil { problems["until"] = "Not a date." }
        filter.before = typed("before").flatMap { Int64($0) }
        let service = request.query("service").flatMap { name in logs.contains { $0.service == name } ? name : nil }
        var entries: [AuditEntry] = []
        var cursor: Int64?
        // A log that cannot be read now (its part of Pier not running, or away) is named; the
        // others are shown.
        var unread: [String] = []
        if problems.isEmpty {
            for name in service.map({ [$0] }) ?? logs.map(\.service)
            where log(name, mayHold: filter.action) {
                let endpoint = AuditAPI.log(of: name)
                let reply = try await console.call(endpoint.method, endpoint.target(filter), as: session, request)
                if [404, 502, 503, 504].contains(reply.status) {
                    unread.append(logs.first { $0.service == name }?.title ?? name)
                    continue
                }
                guard reply.ok else { throw Console.Failed(reply: reply) }
                let list = try reply.decode(AuditList.self)
                entries += list.items
                if service != nil { cursor = list.next }
            }
        }
        entries.sort { $0.at > $1.at }
        entries = Array(entries.prefix(100))
        let people = Set(entries.flatMap { [$0.actorId, $0.subjectId] }.compactMap { $0 })
        async let namesOf = console.names(people, as: session, request)
        async let plansOf = console.fetch(SubscriptionsAPI.plans, PlansQuery(all: true), as: session, request)
        let names = await namesOf
        let plans = Dictionary(((try? await plansOf)?.items ?? []).map { ($0.id, $0.name) }) { first, _ in first }
        let rows = HTML.join(entries.map { row($0, names: names, plans: plans) })
        let query = ["subject", "actor", "target", "action", "since", "until"].compactMap { name in
            typed(name).map { (name, $0) }
        }
        let more: HTML =
            cursor.map {
                "<a rel=\"next\" href=\"\(ConsolePath("audit", query: query + [("service", service ?? ""), ("before", String($0))]))\">Older →</a>"
            } ?? .empty
        return console.page(
            status: problems.isEmpty ? 200 : 422, title: "Audit log", session: session,
            """
            <h1>Audit log</h1>
            \(filters(typed, service: service, problems: problems))
            <table><thead><tr><th>When</th><th>Who</th><th>What</th><th>On</th><th>Changed</th></tr></thead><tbody data-empty="Nothing the team did matches.">\(rows)</tbody></table>
            \(entries.isEmpty && problems.isEmpty ? "<p class=\"muted\">Nothing recorded that matches.</p>" : HTML.empty)
            \(unread.isEmpty ? HTML.empty : "<p class=\"problem\" role=\"status\">Not shown: what was done in \(unread.joined(separator: ", ")), which cannot be read right now.</p>")
            <div class="pager">\(more)</div>
            <p class="muted">Entries are never changed or removed. Paging goes by part of Pier.</p>
            """)
    }

    /// The filter form, what was typed kept, each field's problem beside it.
    func filters(_ typed: (String) -> String?, service: String?, problems: [String: String]) -> HTML {
        func field(_ name: String, _ title: String, type: String = "text") -> HTML {
            let problem: HTML = problems[name].map { "<span class=\"problem\" role=\"alert\">\($0)</span>" } ?? .empty
            return "<label>\(title) <input type=\"\(type)\" name=\"\(name)\" value=\"\(typed(name))\">\(problem)</label>"
        }
        let chosen = typed("action")
        let actions = HTML.join(
            actions.sorted { words($0) < words($1) }.map { action in
                action.rawValue == chosen
                    ? "<option value=\"\(wire: action)\" selected>\(words(action))</option>"
                    : "<option value=\"\(wire: action)\">\(words(action))</option>"
            })
        let services = HTML.join(
            ([("", "every part of Pier")] + logs).map { name, title in
                return name == (service ?? "")
                    ? "<option value=\"\(name)\" selected>\(title)</option>" : "<option value=\"\(name)\">\(title)</option>"
            })
        return """
            <form class="filters" method="get" action="/console/audit">
            \(field("subject", "Account concerned (address or name)"))
            \(field("actor", "Team member (address or name)"))
            <label>What <select name="action"><option value="">anything</option>\(actions)</select></label>
            \(field("since", "From", type: "date"))
            \(field("until", "Until", type: "date"))
            <label>Part of Pier <select name="service">\(services)</select></label>
            <input type="hidden" name="target" value="\(typed("target"))">
            <button type="submit">Filter</button>
            </form>
            """
    }

    /// One entry in words.
    func row(_ entry: AuditEntry, names: [UUID: String], plans: [String: String]) -> HTML {
        func person(_ id: UUID) -> HTML {
            "<a href=\"\(ConsolePath("users", id.uuidString.lowercased()))\">\(names[id] ?? "an account since deleted")</a>"
        }
        let who: HTML =
            entry.actorId.map { "\(person($0)) <span class=\"muted\">(\(label: AccountRole(wire: entry.actorRole)))</span>" }
            ?? "an operator on the server"
        let on: HTML =
            switch entry.targetType {
            case "user": UUID(uuidString: entry.targetId).map(person) ?? "an account"
            case "feedback": "<a href=\"\(ConsolePath("feedback", entry.targetId))\">a feedback item</a>"
            case "plan": "the plan \(plans[entry.targetId] ?? entry.targetId)"
            case "grant": entry.subjectId.map { "a grant to \(person($0))" } ?? "a grant"
            case "webhook_delivery": "a webhook delivery"
            default: target(entry)
            }
        return """
            <tr><td class="muted when">\(Layout.date(entry.at))</td><td>\(who)</td><td>\(words(entry.action))</td>
            <td>\(on)</td><td>\(Self.change(entry.before, entry.after))</td></tr>
            """
    }

    /// The target of a plugin's entry: in its words, a link to its page when it has one
    /// (a path under `/console/`, the id encoded).
    func target(_ entry: AuditEntry) -> HTML {
        guard let declared = console.additions.target(entry.targetType) else { return "\(entry.targetType) \(entry.targetId)" }
        guard let page = declared.page, page.hasPrefix("/console/"), !page.contains("//") else {
            return "\(declared.words) \(entry.targetId)"
        }
        return
            "<a href=\"\(ConsolePath(rawPath: page + ConsolePath.encode(entry.targetId)))\">\(declared.words) \(entry.targetId)</a>"
    }

    /// The fields an entry changed, `Field: before → after` in words: what stayed as it was is
    /// left out, a value set where there was none reads "set to", a value removed "removed".
    static func change(_ before: JSONValue?, _ after: JSONValue?, names: [UUID: String] = [:]) -> HTML {
        let old = before?.objectValue ?? [:]
        let new = after?.objectValue ?? [:]
        return HTML.join(
            Set(old.keys).union(new.keys).subtracting(shownElsewhere).sorted().compactMap { key -> HTML? in
                let from = old[key].map { words(key, $0, names: names) }
                let to = new[key].map { words(key, $0, names: names) }
                guard from != to else { return nil }
                let field = Labels.english.field(key)
                switch (from, to) {
                case (nil, let to?): return "<div>\(field): \(String(to.prefix(80)))</div>"
                case (let from?, nil): return "<div>\(field): \(String(from.prefix(80))) → removed</div>"
                case (let from?, let to?): return "<div>\(field): \(String(from.prefix(80))) → \(String(to.prefix(80)))</div>"
                case (nil, nil): return nil
                }
            })
    }

    /// A recorded value in words: statuses and roles by their labels, nothing as "none".
    static func words(_ field: String, _ value: JSONValue, names: [UUID: String] = [:]) -> String {
        switch (field, value) {
        case ("assignee", .string(let id)): UUID(uuidString: id).flatMap { names[$0] } ?? "a team member"
        case ("moderation", .string(let wire)): Labels.english(Moderation(wire: wire))
        case ("status", .string(let wire)): Labels.english(FeedbackStatus(wire: wire))
        case ("role", .string(let wire)): Labels.english(AccountRole(wire: wire))
        case (_, .null): "none"
        case (_, .bool(let flag)): flag ? "yes" : "no"
        case (_, .array(let values)) where values.isEmpty: "none"
        case (_, .string(let text)) where text.count >= 20 && text.contains("T"):
            CivilDate.parse(text).map { Layout.date(Date(timeIntervalSince1970: $0)) } ?? text
        default: FeedbackScreens.text(value)
        }
    }

    /// Fields an entry records that the row shows otherwise (who, on what) or that say nothing
    /// to a person (ids of replies and grants, when the record was made).
    static let shownElsewhere: Set<String> = ["id", "userId", "grantedBy", "reply", "createdAt"]
}
