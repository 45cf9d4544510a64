import PierHTML
import PierHTTP
import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The audit log: what the team did, newest first, from each service's log merged by time;
/// filtered by the account concerned, the staff member, or a target; paged per service.
struct AuditScreens: Sendable {
    let console: Console

    static let services = ["auth", "feedback", "subscriptions"]

    func list(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let query: [(String, String)] = ["subject", "actor", "target"].compactMap { name in
            guard let value = request.query(name)?.trimmingWhitespace(), !value.isEmpty else { return nil }
            return (name, value)
        }
        let service = request.query("service").flatMap { Self.services.contains($0) ? $0 : nil }
        let values = Dictionary(query, uniquingKeysWith: { first, _ in first })
        // What is given must be what the API takes: an id is a UUID, a page's start a number.
        let subject = values["subject"].map { UUID(uuidString: $0) }
        let actor = values["actor"].map { UUID(uuidString: $0) }
        let before = request.query("before").flatMap { $0.isEmpty ? nil : Int64($0) as Int64?? }
        guard subject != .some(nil), actor != .some(nil), before != .some(nil) else {
            return console.page(
                status: 422, title: "Not an id", session: session,
                "<h1>Not an id</h1><p>The account concerned and the staff member are ids, as an account's page shows them (such as 0f8e2c1a-…); nothing was looked up.</p>"
            )
        }
        let filter = AuditQuery(
            subject: subject ?? nil, actor: actor ?? nil, target: values["target"], before: before ?? nil, limit: 100)
        var entries: [AuditEntry] = []
        var cursor: Int64?
        for name in service.map({ [$0] }) ?? Self.services {
            let list = try await console.fetch(AuditAPI.log(of: name), filter, as: session, request)
            entries += list.items
            if service != nil { cursor = list.next }
        }
        let next = cursor
        entries.sort { $0.at > $1.at }
        let rows = HTML.join(
            entries.prefix(100).map { entry in
                let actor: HTML =
                    entry.actorId.map {
                        "<a href=\"\(ConsolePath("users", $0.uuidString.lowercased()))\">\($0)</a> (\(entry.actorRole))"
                    } ?? "operator"
                let target: HTML =
                    switch entry.targetType {
                    case "user": "<a href=\"\(ConsolePath("users", entry.targetId))\">user \(entry.targetId)</a>"
                    case "feedback": "<a href=\"\(ConsolePath("feedback", entry.targetId))\">feedback \(entry.targetId)</a>"
                    default: "\(entry.targetType) \(entry.targetId)"
                    }
                return """
                    <tr><td class="muted">\(Layout.date(entry.at))</td><td>\(actor)</td><td><code>\(entry.action)</code></td>
                    <td>\(target)</td><td>\(Self.change(entry.before, entry.after))</td></tr>
                    """
            })
        let more: HTML =
            next.map {
                "<a rel=\"next\" href=\"\(ConsolePath("audit", query: query + [("service", service ?? ""), ("before", String($0))]))\">Older →</a>"
            } ?? .empty
        let serviceOptions = HTML.join(
            ([""] + Self.services).map { name in
                name == (service ?? "")
                    ? "<option value=\"\(name)\" selected>\(name.isEmpty ? "every service" : name)</option>"
                    : "<option value=\"\(name)\">\(name.isEmpty ? "every service" : name)</option>"
            })
        return console.page(
            title: "Audit log", session: session,
            """
            <h1>Audit log</h1>
            <form class="filters" method="get" action="/console/audit">
            <label>Account concerned (id) <input name="subject" value="\(request.query("subject"))"></label>
            <label>Staff member (id) <input name="actor" value="\(request.query("actor"))"></label>
            <label>Target (id) <input name="target" value="\(request.query("target"))"></label>
            <label>Service <select name="service">\(serviceOptions)</select></label>
            <button type="submit">Filter</button>
            </form>
            <table><thead><tr><th>When</th><th>Who</th><th>What</th><th>On</th><th>Change</th></tr></thead><tbody>\(rows)</tbody></table>
            \(entries.isEmpty ? "<p class=\"muted\">Nothing recorded.</p>" : HTML.empty)
            <div class="pager">\(more)</div>
            <p class="muted">Entries are never changed or removed. Paging goes by service.</p>
            """)
    }

    /// `field: before → after` for each field an entry records.
    static func change(_ before: JSONValue?, _ after: JSONValue?) -> HTML {
        let old = before?.objectValue ?? [:]
        let new = after?.objectValue ?? [:]
        return HTML.join(
            Set(old.keys).union(new.keys).sorted().map { key in
                let from = old[key].map(FeedbackScreens.text) ?? "-"
                let to = new[key].map(FeedbackScreens.text) ?? "-"
                return "<div><code>\(key)</code> \(String(from.prefix(80))) → \(String(to.prefix(80)))</div>"
            })
    }
}
