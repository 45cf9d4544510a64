import PierHTML
import PierHTTP
import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Webhooks (admins): the endpoints the settings configure, the deliveries newest first with
/// their attempts, one delivery with the body it sends, and a replay of it.
struct WebhookScreens: Sendable {
    let console: Console

    static let states = ["", "pending", "delivered", "failed"]
    /// The event types the filter offers: Pier's, then those the plugins declare.
    var types: [String] {
        ["", "user.created", "user.deleted", "user.merged", "feedback.created", "feedback.updated", "subscription.updated"]
            + console.additions.events
    }

    func list(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        guard session.isAdmin else { return adminsOnly(session) }
        let query: [(String, String)] = ["endpoint", "state", "type", "subject", "cursor"].compactMap { name in
            guard let value = request.query(name)?.trimmingWhitespace(), !value.isEmpty else { return nil }
            return (name, value)
        }
        let values = Dictionary(query, uniquingKeysWith: { first, _ in first })
        let filter = WebhookDeliveryQuery(
            endpoint: values["endpoint"], state: values["state"].map(WebhookDeliveryState.init(wire:)), type: values["type"],
            subject: values["subject"], cursor: values["cursor"])
        async let listed = console.fetch(AuthAPI.webhookEndpoints, NoParameters(), as: session, request)
        async let paged = console.fetch(AuthAPI.webhookDeliveries, filter, as: session, request)
        let (endpoints, page) = try await (listed.items, paged)
        let endpointRows = HTML.join(
            endpoints.map { endpoint in
                """
                <tr><td>\(endpoint.name)</td><td><code>\(endpoint.url)</code></td><td>\(endpoint.events.joined(separator: ", "))</td>
                <td>\(endpoint.secrets == 2 ? "2 (rotating)" : "1")</td><td>\(endpoint.pending)</td>
                <td>\(endpoint.failed > 0 ? "<span class=\"badge bad\">\(endpoint.failed)</span>" : "0")</td>
                <td class="muted when">\(Layout.date(endpoint.lastDeliveredAt))</td></tr>
                """
            })
        let rows = HTML.join(
            page.items.map { delivery in
                let path = ConsolePath("webhooks", String(delivery.id))
                return """
                    <tr data-href="\(path)"><td><a href="\(path)">\(delivery.id)</a></td><td class="muted when">\(Layout.date(delivery.createdAt))</td>
                    <td>\(delivery.endpoint)</td><td><code>\(delivery.type)</code></td><td>\(Self.subject(delivery.subject))</td>
                    <td>\(Self.state(delivery))</td><td>\(delivery.attempts)</td>
                    <td>\(Self.lastAnswer(delivery))</td></tr>
                    """
            })
        let filters = query.filter { $0.0 != "cursor" }
        let more: HTML =
            page.nextCursor.map {
                "<a rel=\"next\" href=\"\(ConsolePath("webhooks", query: filters + [("cursor", $0)]))\">Older →</a>"
            }
            ?? .empty
        let endpointNames = [""] + endpoints.map(\.name)
        return console.page(
            title: "Webhooks", session: session,
            """
            <h1>Webhooks</h1>
            <table data-endpoints><thead><tr><th>Endpoint</th><th>URL</th><th>Events</th><th>Secrets</th><th>Pending</th><th>Given up</th><th>Last delivered</th></tr></thead>
            <tbody>\(endpointRows)</tbody></table>
            \(endpoints.isEmpty ? "<p class=\"muted\">No endpoint is configured: set PIER_WEBHOOKS (see docs/webhooks.md).</p>" : HTML.empty)
            <h2>Deliveries</h2>
            <form class="filters" method="get" action="/console/webhooks">
            \(InboxScreens.choice("endpoint", "Endpoint", endpointNames.map { ($0, $0.isEmpty ? "any" : $0) }, request.query("endpoint") ?? ""))
            \(InboxScreens.choice("state", "State", Self.states.map { ($0, $0.isEmpty ? "any" : Labels.english(WebhookDeliveryState(wire: $0))) }, request.query("state") ?? ""))
            \(InboxScreens.choice("type", "Event", types.map { ($0, $0.isEmpty ? "any" : $0) }, request.query("type") ?? ""))
            <label>Subject (user:id or feedback:id) <input name="subject" value="\(request.query("subject"))"></label>
            <button type="submit">Filter</button>
            </form>
            <table data-deliveries><thead><tr><th>Id</th><th>Queued</th><th>Endpoint</th><th>Event</th><th>Subject</th><th>State</th><th>Attempts</th><th>Last answer</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            \(page.items.isEmpty ? "<p class=\"muted\">No delivery.</p>" : HTML.empty)
            <div class="pager">\(more)</div>
            """)
    }

    func delivery(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        guard session.isAdmin else { return adminsOnly(session) }
        guard let id = parameters["id"].flatMap({ Int($0) }), id > 0 else {
            return console.page(status: 404, title: "Not found", session: session, "<h1>No such delivery</h1>")
        }
        let delivery = try await console.fetch(AuthAPI.webhookDelivery, DeliveryID(id), as: session, request)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let body = delivery.payload.flatMap { try? encoder.encode($0) }.map { String(decoding: $0, as: UTF8.self) } ?? ""
        let original: HTML =
            delivery.replayOf.map { "<dt>Replay of</dt><dd><a href=\"\(ConsolePath("webhooks", String($0)))\">\($0)</a></dd>" }
            ?? .empty
        return console.page(
            title: "Delivery \(delivery.id)", session: session,
            """
            <h1>Delivery \(delivery.id) <span class="muted">\(delivery.type)</span></h1>
            <dl class="facts">
            <dt>State</dt><dd>\(Self.state(delivery))</dd>
            <dt>Endpoint</dt><dd>\(delivery.endpoint)</dd>
            <dt>Message id (webhook-id)</dt><dd><code>\(delivery.messageId)</code></dd>
            <dt>Subject</dt><dd>\(Self.subject(delivery.subject))</dd>
            <dt>Queued</dt><dd>\(Layout.date(delivery.createdAt))</dd>
            <dt>Attempts</dt><dd>\(delivery.attempts) (last \(Layout.date(delivery.lastAttemptAt)))</dd>
            <dt>Next attempt</dt><dd>\(Layout.date(delivery.nextAttemptAt))</dd>
            <dt>Last answer</dt><dd>\(Self.lastAnswer(delivery))</dd>
            <dt>Delivered</dt><dd>\(Layout.date(delivery.deliveredAt))</dd>
            \(original)
            </dl>
            <form method="post" action="\(ConsolePath("webhooks", String(delivery.id), "replay"))">\(Layout.csrf(session))
            <button type="submit">Send again</button>
            <span class="muted">The same message and webhook-id, after what is pending for its subject.</span>
            </form>
            <h2>Body</h2>
            <pre data-payload>\(body)</pre>
            <p><a href="/console/webhooks">← Every delivery</a></p>
            """)
    }

    func replay(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        guard let id = parameters["id"].flatMap({ Int($0) }), id > 0 else {
            return console.page(status: 404, title: "Not found", session: session, "<h1>No such delivery</h1>")
        }
        let reply = try await console.call(AuthAPI.replayWebhook, DeliveryID(id), as: session, request)
        guard reply.ok else { return console.problem(reply, session: session) }
        return console.redirect(ConsolePath("webhooks", String(try reply.decode(WebhookDelivery.self).id)))
    }

    private func adminsOnly(_ session: ConsoleSession) -> Response {
        console.page(
            status: 403, title: "Webhooks", session: session,
            "<h1>Webhooks</h1><p class=\"problem\">Webhook deliveries carry the users' data: admins only.</p>")
    }

    static func state(_ delivery: WebhookDelivery) -> HTML {
        switch delivery.state {
        case .failed: "<span class=\"badge bad\">\(label: delivery.state)</span>"
        case .pending: "<span class=\"badge\">\(label: delivery.state)</span>"
        default: "\(label: delivery.state)"
        }
    }

    /// The receiver's status, or what went wrong when none came (a timeout, a refused connection).
    static func lastAnswer(_ delivery: WebhookDelivery) -> String {
        delivery.lastStatus.map(String.init) ?? delivery.lastError ?? "-"
    }

    /// A subject, linked to its account or item.
    static func subject(_ subject: String) -> HTML {
        if subject.hasPrefix("user:") {
            let id = String(subject.dropFirst(5))
            return "<a href=\"\(ConsolePath("users", id))\">\(subject)</a>"
        }
        if subject.hasPrefix("feedback:") {
            let id = String(subject.dropFirst(9))
            return "<a href=\"\(ConsolePath("feedback", id))\">\(subject)</a>"
        }
        return "\(subject)"
    }
}
