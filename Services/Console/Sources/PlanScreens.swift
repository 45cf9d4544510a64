import PierHTML
import PierHTTP
import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The plans: every one, on sale or not, for the team; created, edited and taken off sale by
/// admins. A change of what subscribers pay (price, currency, period) asks for the admin's
/// password, given to Pier's step-up (`POST /auth/reauthenticate`) before the change.
struct PlanScreens: Sendable {
    let console: Console

    /// The form's fields, as the API names them.
    static let fields = [
        ("name", "Name"), ("description", "Description"),
        ("price", "Price (the currency's minor units: 499 USD is 4.99, 500 JPY is 500)"),
        ("currency", "Currency (ISO 4217)"), ("billingPeriod", "Billing period (P1M, P1Y)"),
        ("trialPeriod", "Free trial (P1W; empty: none)"), ("entitlements", "Entitlements (comma-separated)"),
        ("appStoreProductIds", "App Store product ids (comma-separated)"),
    ]

    /// The plans with their subscribers now, and what became of the latest App Store
    /// notifications.
    func list(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        async let listed = console.fetch(SubscriptionsAPI.plans, PlansQuery(all: true), as: session, request)
        async let counted = console.fetch(SubscriptionsAPI.subscribers, NoParameters(), as: session, request)
        async let received = console.fetch(SubscriptionsAPI.notifications, LimitQuery(limit: 20), as: session, request)
        let (plans, subscribers, notifications) = try await (listed.items, counted.items, received.items)
        let rows = HTML.join(
            plans.map { plan in
                let path = ConsolePath("plans", plan.id)
                let counts =
                    subscribers.first { $0.planId == plan.id }
                    ?? PlanSubscribers(planId: plan.id, name: plan.name, onSale: plan.active)
                return """
                    <tr data-href="\(path)"><td><a href="\(path)">\(plan.id)</a></td><td>\(plan.name)</td>
                    <td>\(plan.amount.description)</td><td>\(Labels.english.period(plan.billingPeriod))</td><td>\(plan.trialPeriod.map(Labels.english.duration) ?? "none")</td>
                    <td>\(plan.entitlements.joined(separator: ", "))</td><td>\(plan.appStoreProductIds.joined(separator: ", "))</td>
                    <td>\(plan.active ? "on sale" : "off sale")</td>
                    <td data-subscribers="\(plan.id)">\(counts.appStore)</td><td>\(counts.introductoryOffer)</td><td>\(counts.gracePeriod)</td>
                    <td>\(counts.billingRetry)</td><td>\(counts.grants)</td></tr>
                    """
            })
        let arrivals = HTML.join(
            notifications.map { entry in
                """
                <tr><td class="muted">\(Layout.date(entry.receivedAt))</td><td>\(entry.notificationType ?? "-") \(entry.subtype ?? "")</td>
                <td>\(entry.environment ?? "-")</td><td><span class="badge\(entry.outcome == "refused" ? " bad" : "")">\(entry.outcome)</span></td>
                <td>\(entry.reason ?? "")</td><td><code>\(entry.originalTransactionId ?? "")</code></td></tr>
                """
            })
        let create: HTML =
            session.isAdmin
            ? """
            <div class="card" data-admin-only>
            <h2>New plan</h2>
            <form method="post" action="/console/plans">\(Layout.csrf(session))
            <label>Id (a slug: pro-monthly) <input name="id" required></label>
            \(Self.inputs(nil))
            <button type="submit">Create the plan</button>
            </form>
            </div>
            """ : HTML.empty
        return console.page(
            title: "Plans", session: session,
            """
            <h1>Plans and subscribers</h1>
            <table><thead><tr><th>Id</th><th>Name</th><th>Price</th><th>Period</th><th>Trial</th><th>Entitlements</th><th>Products</th><th></th>
            <th title="Current App Store subscriptions">App Store</th><th title="Of those, in an introductory offer">Intro offer</th>
            <th title="Expired, served in the billing grace period">Grace</th><th title="Expired, Apple retrying to bill">Billing retry</th>
            <th title="Current grants">Grants</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            \(create)
            <h2>Recent App Store notifications</h2>
            <table data-notifications><thead><tr><th>Received</th><th>Type</th><th>Environment</th><th>Outcome</th><th>Why</th><th>Subscription</th></tr></thead>
            <tbody>\(arrivals)</tbody></table>
            \(notifications.isEmpty ? "<p class=\"muted\">None received yet.</p>" : HTML.empty)
            """)
    }

    func plan(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let id = (parameters["id"] ?? "")
        let plans = try await console.fetch(SubscriptionsAPI.plans, PlansQuery(all: true), as: session, request).items
        guard let plan = plans.first(where: { $0.id == id }) else {
            return console.page(status: 404, title: "Not found", session: session, "<h1>No such plan</h1>")
        }
        let path = ConsolePath("plans", plan.id)
        let edit: HTML =
            session.isAdmin
            ? """
            <div class="card" data-admin-only>
            <h2>Change</h2>
            <form method="post" action="\(path)">\(Layout.csrf(session))
            \(Self.inputs(plan))
            <label>Your password (to change price, currency or period) <input type="password" name="password" autocomplete="current-password"></label>
            <button type="submit">Save</button>
            </form>
            <form class="actions" method="post" action="\(ConsolePath("plans", plan.id, "active"))">\(Layout.csrf(session))
            <input type="hidden" name="active" value="\(plan.active ? "false" : "true")">
            <button class="\(plan.active ? "danger" : "plain")" type="submit">\(plan.active ? "Take off sale" : "Put on sale")</button>
            </form>
            </div>
            """ : HTML.empty
        return console.page(
            title: plan.name, session: session,
            """
            <p><a href="/console/plans">← Plans</a></p>
            <h1>\(plan.name) <span class="badge">\(plan.active ? "on sale" : "off sale")</span></h1>
            <dl class="facts">
            <dt>id</dt><dd>\(plan.id)</dd><dt>price</dt><dd>\(plan.amount.description) \(Labels.english.period(plan.billingPeriod))</dd>
            <dt>trial</dt><dd>\(plan.trialPeriod.map(Labels.english.duration) ?? "none")</dd><dt>entitlements</dt><dd>\(plan.entitlements.joined(separator: ", "))</dd>
            <dt>products</dt><dd>\(plan.appStoreProductIds.joined(separator: ", "))</dd><dt>description</dt><dd>\(plan.description)</dd>
            </dl>
            <p><a href="\(ConsolePath("audit", query: [("service", "subscriptions"), ("target", plan.id)]))">Its changes in the audit log</a></p>
            \(edit)
            """)
    }

    /// `POST /console/plans`: a new plan, as the API checks it.
    func create(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let form = try request.form() ?? [:]
        var body = Self.body(form, keepingEmpty: false)
        body["id"] = .string(form["id"] ?? "")
        // Sent as the form has it (fields left empty are left out): the API names what is wrong.
        let reply = try await console.call(
            SubscriptionsAPI.createPlan.method, SubscriptionsAPI.createPlan.path,
            json: try console.api.json(JSONValue.object(body)), as: session, request)
        guard reply.ok else { return console.problem(reply, session: session) }
        return console.redirect(ConsolePath("plans", form["id"] ?? ""))
    }

    /// `POST /console/plans/{id}`: the fields changed; with the password when what subscribers
    /// pay changes.
    func update(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let id = (parameters["id"] ?? "")
        let form = try request.form() ?? [:]
        var token = session.accessToken
        if let password = form["password"], !password.isEmpty {
            let reply = try await console.call(
                AuthAPI.reauthenticate, NoParameters(), body: ReauthenticationRequest(password: password), as: session,
                request)
            guard reply.ok, let stepUp = try? reply.decode(StepUpToken.self) else {
                return console.problem(reply, session: session)
            }
            token = stepUp.accessToken
        }
        let plans = try await console.fetch(SubscriptionsAPI.plans, PlansQuery(all: true), as: session, request).items
        guard let current = plans.first(where: { $0.id == id }) else {
            return console.page(status: 404, title: "Not found", session: session, "<h1>No such plan</h1>")
        }
        // Only what changed is sent: an unchanged price asks for no password.
        let before = Self.body(Self.formValues(current), keepingEmpty: true)
        let body = Self.body(form, keepingEmpty: true).filter { before[$0.key] != $0.value }
        guard !body.isEmpty else { return console.redirect(ConsolePath("plans", id)) }
        let reply = try await console.api.send(
            SubscriptionsAPI.updatePlan.method, SubscriptionsAPI.updatePlan.target(PlanID(id)),
            json: try console.api.json(JSONValue.object(body)), token: token, from: request)
        guard reply.ok else { return console.problem(reply, session: session) }
        return console.redirect(ConsolePath("plans", id))
    }

    /// `POST /console/plans/{id}/active`: on or off sale.
    func setActive(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let id = parameters["id"] ?? ""
        let active = (try request.form() ?? [:])["active"] == "true"
        let reply = try await console.call(
            SubscriptionsAPI.updatePlan.method, SubscriptionsAPI.updatePlan.target(PlanID(id)),
            json: try console.api.json(JSONValue.object(["active": .bool(active)])), as: session, request)
        guard reply.ok else { return console.problem(reply, session: session) }
        return console.redirect(ConsolePath("plans", id))
    }

    // MARK: - Helpers

    /// The plan's form fields, filled with `plan`'s values.
    static func inputs(_ plan: Plan?) -> HTML {
        let values = plan.map(formValues) ?? ["currency": "USD", "billingPeriod": "P1M"]
        return HTML.join(
            fields.map { name, label in "<label>\(label) <input name=\"\(name)\" value=\"\(values[name] ?? "")\"></label>" })
    }

    /// `plan` as its form shows it.
    static func formValues(_ plan: Plan) -> [String: String] {
        [
            "name": plan.name, "description": plan.description, "price": String(plan.price), "currency": plan.currency,
            "billingPeriod": plan.billingPeriod, "trialPeriod": plan.trialPeriod ?? "",
            "entitlements": plan.entitlements.joined(separator: ", "),
            "appStoreProductIds": plan.appStoreProductIds.joined(separator: ", "),
        ]
    }

    /// The API body of a plan's form: numbers as numbers (anything else is sent as typed, for
    /// the API to name the field), lists split at commas; empty fields left out unless kept.
    static func body(_ form: [String: String], keepingEmpty: Bool) -> [String: JSONValue] {
        var body: [String: JSONValue] = [:]
        for (name, _) in fields {
            guard let raw = form[name]?.trimmingWhitespace(), !raw.isEmpty || keepingEmpty else { continue }
            switch name {
            case "price": body[name] = Int(raw).map { .number(Double($0)) } ?? .string(raw)
            case "entitlements", "appStoreProductIds":
                body[name] = .array(
                    raw.split(separator: ",").map { .string($0.trimmingWhitespace()) }.filter { $0 != .string("") })
            default:
                if !raw.isEmpty { body[name] = .string(raw) }
            }
        }
        return body
    }
}
