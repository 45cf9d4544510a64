import PierHTML
import PierHTTP
import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The plans: every one, on sale or not, for the team; created, edited and taken off sale by
/// admins. A change of what subscribers pay (price, currency, period) is confirmed with the
/// admin's password, or the code of their authenticator app when they have one (Pier's step-up,
/// `POST /auth/reauthenticate`). A refused form comes back with what was typed and each field's
/// message beside it.
struct PlanScreens: Sendable {
    let console: Console

    /// The billing periods offered, in words.
    static let periods = ["P1W", "P1M", "P2M", "P3M", "P6M", "P1Y"]
    /// The free trials offered, in words ("" is none).
    static let trials = ["", "P3D", "P1W", "P2W", "P1M", "P3M"]

    /// The plans with their subscribers now, and what became of the latest App Store
    /// notifications.
    func list(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        try await list(request, session, form: FormState(values: ["currency": "USD", "billingPeriod": "P1M"]))
    }

    func list(_ request: Request, _ session: ConsoleSession, form: FormState) async throws -> Response {
        async let listed = console.fetch(SubscriptionsAPI.plans, PlansQuery(all: true), as: session, request)
        async let counted = console.fetch(SubscriptionsAPI.subscribers, NoParameters(), as: session, request)
        async let received = console.fetch(SubscriptionsAPI.notifications, LimitQuery(limit: 20), as: session, request)
        async let fromGoogle = console.fetch(SubscriptionsAPI.googleNotifications, LimitQuery(limit: 20), as: session, request)
        let (plans, subscribers, notifications) = try await (listed.items, counted.items, received.items)
        let googleNotifications = try await fromGoogle.items
        let rows = HTML.join(
            plans.map { plan in
                let path = ConsolePath("plans", plan.id)
                let counts =
                    subscribers.first { $0.planId == plan.id }
                    ?? PlanSubscribers(planId: plan.id, name: plan.name, onSale: plan.active)
                return """
                    <tr data-href="\(path)"><td><a href="\(path)">\(plan.name)</a></td><td class="muted">\(plan.id)</td>
                    <td>\(plan.amount.description)</td><td>\(Labels.english.period(plan.billingPeriod))</td><td>\(plan.trialPeriod.map(Labels.english.duration) ?? "none")</td>
                    <td>\(plan.entitlements.joined(separator: ", "))</td><td>\(plan.appStoreProductIds.joined(separator: ", "))</td>
                    <td>\(plan.googleProductIds.joined(separator: ", "))</td>
                    <td>\(plan.active ? "on sale" : "off sale")</td>
                    <td data-subscribers="\(plan.id)">\(counts.appStore)</td><td data-google="\(plan.id)">\(counts.googlePlay)</td>
                    <td>\(counts.introductoryOffer)</td><td>\(counts.gracePeriod)</td>
                    <td>\(counts.billingRetry)</td><td>\(counts.paused)</td><td>\(counts.grants)</td></tr>
                    """
            })
        let arrivals = HTML.join(
            notifications.map { entry in
                """
                <tr><td class="muted when">\(Layout.date(entry.receivedAt))</td><td>\(entry.notificationType ?? "-") \(entry.subtype ?? "")</td>
                <td>\(entry.environment ?? "-")</td><td><span class="badge\(entry.outcome == "refused" ? " bad" : "")">\(entry.outcome)</span></td>
                <td>\(entry.reason ?? "")</td><td><code>\(entry.originalTransactionId ?? "")</code></td></tr>
                """
            })
        let create: HTML =
            session.isAdmin
            ? """
            <div class="card" data-admin-only>
            <h2>New plan</h2>
            <form method="post" action="/console/plans" data-plan-form>\(Layout.csrf(session))
            \(form.banner)
            \(form.input("id", "Id (letters, digits and dashes: pro-monthly)", extra: " required"))
            \(Self.inputs(form))
            <button type="submit">Create the plan</button>
            </form>
            </div>
            """ : HTML.empty
        return console.page(
            status: form.isValid ? 200 : 422, title: "Plans", session: session,
            """
            <h1>Plans and subscribers</h1>
            <table><thead><tr><th>Name</th><th>Id</th><th>Price</th><th>Period</th><th>Trial</th><th>Gives access to</th><th>App Store products</th><th>Google Play products</th><th></th>
            <th title="Current App Store subscriptions">App Store</th><th title="Current Google Play subscriptions">Google Play</th>
            <th title="Of those, in an introductory offer">Intro offer</th>
            <th title="Expired, served in the billing grace period">Grace</th><th title="Expired, the store retrying to bill">Billing retry</th>
            <th title="Paused by the subscriber (Google Play)">Paused</th><th title="Current grants">Grants</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            \(create)
            <h2>Recent App Store notifications</h2>
            <table data-notifications><thead><tr><th>Received</th><th>Type</th><th>Environment</th><th>Outcome</th><th>Why</th><th>Subscription</th></tr></thead>
            <tbody>\(arrivals)</tbody></table>
            \(notifications.isEmpty ? "<p class=\"muted\">None received yet.</p>" : HTML.empty)
            \(Self.googleTable(googleNotifications))
            """)
    }

    /// The newest Google Play notifications, each with its type in words and what became of it.
    static func googleTable(_ entries: [GoogleNotificationEntry]) -> HTML {
        let rows = HTML.join(
            entries.map { entry in
                """
                <tr><td class="muted when">\(Layout.date(entry.receivedAt))</td><td>\(Labels.english.googleNotification(entry.kind, entry.notificationType))</td>
                <td><span class="badge">\(entry.outcome)</span></td><td>\(entry.reason ?? "")</td><td><code>\(entry.purchase ?? "")</code></td></tr>
                """
            })
        return """
            <h2>Recent Google Play notifications</h2>
            <table data-google-notifications><thead><tr><th>Received</th><th>Type</th><th>Outcome</th><th>Why</th><th>Purchase</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            \(entries.isEmpty ? "<p class=\"muted\">None received yet.</p>" : HTML.empty)
            """
    }

    func plan(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        try await plan(parameters["id"] ?? "", request, session, form: nil)
    }

    /// A plan's page; its form filled with `form` (what was typed, refused) or the plan's values.
    func plan(_ id: String, _ request: Request, _ session: ConsoleSession, form: FormState?, saved: Bool = false)
        async throws -> Response
    {
        let plans = try await console.fetch(SubscriptionsAPI.plans, PlansQuery(all: true), as: session, request).items
        guard let plan = plans.first(where: { $0.id == id }) else {
            return console.page(status: 404, title: "Not found", session: session, "<h1>No such plan</h1>")
        }
        let form = form ?? FormState(values: Self.formValues(plan))
        let own = try await console.fetch(AuthAPI.secondFactorStatus, NoParameters(), as: session, request)
        let path = ConsolePath("plans", plan.id)
        let edit: HTML =
            session.isAdmin
            ? """
            <div class="card" data-admin-only>
            <h2>Change</h2>
            <form method="post" action="\(path)" data-plan-form>\(Layout.csrf(session))
            \(form.banner)
            \(Self.inputs(form))
            <fieldset><legend>To change the price, currency or period</legend>
            \(UserScreens.confirmation(own: own))\(form.message("password"))\(form.message("code"))</fieldset>
            <button type="submit">Save</button>
            </form>
            <form class="actions" method="post" action="\(ConsolePath("plans", plan.id, "active"))">\(Layout.csrf(session))
            <input type="hidden" name="active" value="\(plan.active ? "false" : "true")">
            <button class="\(plan.active ? "danger" : "plain")" type="submit">\(plan.active ? "Take off sale" : "Put on sale")</button>
            </form>
            </div>
            """ : HTML.empty
        return console.page(
            status: form.isValid ? 200 : 422, title: plan.name, session: session,
            """
            <p><a href="/console/plans">← Plans</a></p>
            \(saved || request.query("done") == "saved" ? "<p class=\"notice\" role=\"status\">Saved.</p>" : HTML.empty)
            <h1>\(plan.name) <span class="badge">\(plan.active ? "on sale" : "off sale")</span></h1>
            <dl class="facts">
            <dt>Id</dt><dd>\(plan.id)</dd><dt>Price</dt><dd>\(plan.amount.description) \(Labels.english.period(plan.billingPeriod))</dd>
            <dt>Free trial</dt><dd>\(plan.trialPeriod.map(Labels.english.duration) ?? "none")</dd><dt>Gives access to</dt><dd>\(plan.entitlements.joined(separator: ", "))</dd>
            <dt>App Store products</dt><dd>\(plan.appStoreProductIds.joined(separator: ", "))</dd>\
            <dt>Google Play products</dt><dd>\(plan.googleProductIds.joined(separator: ", "))</dd><dt>Description</dt><dd>\(plan.description)</dd>
            </dl>
            <p><a href="\(ConsolePath("audit", query: [("service", "subscriptions"), ("target", plan.id)]))">Its changes in the audit log</a></p>
            \(edit)
            """)
    }

    /// `POST /console/plans`: a new plan, as the API checks it; refused, the list again with
    /// the form as typed.
    func create(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        var form = FormState(values: try request.form() ?? [:])
        guard var body = Self.body(&form, keepingEmpty: false) else { return try await list(request, session, form: form) }
        body["id"] = .string(form.value("id").trimmingWhitespace())
        // Sent as the form has it (fields left empty are left out): the API names what is wrong.
        let reply = try await console.call(
            SubscriptionsAPI.createPlan.method, SubscriptionsAPI.createPlan.path,
            json: try console.api.json(JSONValue.object(body)), as: session, request)
        guard reply.ok else {
            guard reply.status == 422 || reply.status == 409 else { return console.problem(reply, session: session) }
            if reply.problem?.code == .conflict, let detail = reply.problem?.detail {
                form.refuse(
                    detail.contains("App Store product")
                        ? "appStoreProductIds" : detail.contains("Google Play product") ? "googleProductIds" : "id", detail)
            } else {
                form.take(reply.problem, status: reply.status)
            }
            return try await list(request, session, form: form)
        }
        return console.redirect(ConsolePath("plans", form.value("id").trimmingWhitespace(), query: [("done", "saved")]))
    }

    /// `POST /console/plans/{id}`: the fields changed; confirmed (password or code) when what
    /// subscribers pay changes. Refused, the page again with the form as typed.
    func update(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let id = (parameters["id"] ?? "")
        var form = FormState(values: try request.form() ?? [:])
        let plans = try await console.fetch(SubscriptionsAPI.plans, PlansQuery(all: true), as: session, request).items
        guard let current = plans.first(where: { $0.id == id }) else {
            return console.page(status: 404, title: "Not found", session: session, "<h1>No such plan</h1>")
        }
        guard let typed = Self.body(&form, keepingEmpty: true) else {
            return try await plan(id, request, session, form: form)
        }
        // Only what changed is sent: an unchanged price asks for no confirmation.
        var unchanged = FormState(values: Self.formValues(current))
        let before = Self.body(&unchanged, keepingEmpty: true) ?? [:]
        let body = typed.filter { before[$0.key] != $0.value }
        guard !body.isEmpty else { return console.redirect(ConsolePath("plans", id, query: [("done", "saved")])) }
        var token = session.accessToken
        let confirmation = UserScreens.confirmation(form.values)
        if confirmation.password != nil || confirmation.code != nil {
            let reply = try await console.call(AuthAPI.reauthenticate, NoParameters(), body: confirmation, as: session, request)
            guard reply.ok, let stepUp = try? reply.decode(StepUpToken.self) else {
                guard reply.status < 500 else { return console.problem(reply, session: session) }
                let field = confirmation.code == nil ? "password" : "code"
                form.refuse(field, Labels.english.problem(reply.problem, status: reply.status).message)
                return try await plan(id, request, session, form: form)
            }
            token = stepUp.accessToken
        }
        let reply = try await console.api.send(
            SubscriptionsAPI.updatePlan.method, SubscriptionsAPI.updatePlan.target(PlanID(id)),
            json: try console.api.json(JSONValue.object(body)), token: token, from: request)
        guard reply.ok else {
            guard reply.status < 500, reply.status != 401 || reply.problem?.code == .reauthenticationRequired else {
                return console.problem(reply, session: session)
            }
            form.take(reply.problem, status: reply.status)
            if reply.problem?.code == .reauthenticationRequired {
                form.refuse(confirmation.code == nil ? "password" : "code", "Needed to change what subscribers pay.")
            }
            return try await plan(id, request, session, form: form)
        }
        return console.redirect(ConsolePath("plans", id, query: [("done", "saved")]))
    }

    /// `POST /console/plans/{id}/active`: on or off sale.
    func setActive(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let id = parameters["id"] ?? ""
        let active = (try request.form() ?? [:])["active"] == "true"
        let reply = try await console.call(
            SubscriptionsAPI.updatePlan.method, SubscriptionsAPI.updatePlan.target(PlanID(id)),
            json: try console.api.json(JSONValue.object(["active": .bool(active)])), as: session, request)
        guard reply.ok else { return console.problem(reply, session: session) }
        return console.redirect(ConsolePath("plans", id, query: [("done", "saved")]))
    }

    // MARK: - Helpers

    /// The plan's form fields, filled with what `form` holds, each with its message.
    static func inputs(_ form: FormState) -> HTML {
        let currency = form.value("currency").isEmpty ? "USD" : form.value("currency")
        return """
            \(form.input("name", "Name", extra: " required"))
            \(form.input("description", "Description"))
            \(form.input("price", "Price, digits and a point (59.99; 500 for yen)", extra: " inputmode=\"decimal\" required"))
            \(form.input("currency", "Currency (USD, EUR, JPY)", extra: " maxlength=\"3\" required"))
            \(choice("billingPeriod", "Billed", periods, form, words: Labels.english.period))
            \(choice("trialPeriod", "Free trial", trials, form) { $0.isEmpty ? "none" : Labels.english.duration($0) })
            \(form.input("entitlements", "Gives access to (entitlements, comma-separated: pro)"))
            \(form.input("appStoreProductIds", "App Store product ids (comma-separated)"))
            \(form.input("googleProductIds", "Google Play product ids (comma-separated; productId or productId:basePlanId)"))
            <p class="muted" data-currency="\(currency)">\(currency) has \(Price.exponent(of: currency)) decimals.</p>
            """
    }

    /// A `<select>` of `values` in words, the form's value chosen (kept even when it is none of
    /// them: a plan made through the API).
    static func choice(
        _ name: String, _ label: String, _ values: [String], _ form: FormState, words: (String) -> String
    ) -> HTML {
        let chosen = form.value(name)
        let offered = values.contains(chosen) ? values : values + [chosen]
        let options = HTML.join(
            offered.map { value in
                "<option value=\"\(value)\"\(value == chosen ? " selected" : "")>\(words(value))</option>"
            })
        return "<label>\(label) <select name=\"\(name)\"\(form.invalid(name))>\(options)</select>\(form.message(name))</label>"
    }

    /// `plan` as its form shows it: the price in the currency's own decimals.
    static func formValues(_ plan: Plan) -> [String: String] {
        let amount = plan.amount.description
        return [
            "name": plan.name, "description": plan.description,
            "price": String(amount.dropLast(plan.currency.count + 1)), "currency": plan.currency,
            "billingPeriod": plan.billingPeriod, "trialPeriod": plan.trialPeriod ?? "",
            "entitlements": plan.entitlements.joined(separator: ", "),
            "appStoreProductIds": plan.appStoreProductIds.joined(separator: ", "),
            "googleProductIds": plan.googleProductIds.joined(separator: ", "),
        ]
    }

    /// The API body of a plan's form: the price read as typed in the currency's decimals (nil,
    /// and the field refused, when it cannot be), lists split at commas; empty fields left out
    /// unless kept.
    static func body(_ form: inout FormState, keepingEmpty: Bool) -> [String: JSONValue]? {
        var body: [String: JSONValue] = [:]
        let currency = form.value("currency").trimmingWhitespace().uppercased()
        for name in [
            "name", "description", "price", "currency", "billingPeriod", "trialPeriod", "entitlements", "appStoreProductIds",
            "googleProductIds",
        ] {
            let raw = form.value(name).trimmingWhitespace()
            guard !raw.isEmpty || keepingEmpty else { continue }
            switch name {
            case "price":
                guard let price = Price(typed: raw, currency: currency.isEmpty ? "USD" : currency) else {
                    let decimals = Price.exponent(of: currency.isEmpty ? "USD" : currency)
                    form.refuse(
                        "price",
                        decimals == 0
                            ? "Type the price in whole \(currency), digits only, like 500: no decimals, no commas or spaces."
                            : "Type the price with a point before the decimals, like 59.99 (at most \(decimals) decimals, no commas or spaces)."
                    )
                    continue
                }
                body[name] = .number(Double(price.minorUnits))
            case "currency": body[name] = .string(currency)
            case "entitlements", "appStoreProductIds", "googleProductIds":
                body[name] = .array(
                    raw.split(separator: ",").map { .string($0.trimmingWhitespace()) }.filter { $0 != .string("") })
            case "trialPeriod" where raw.isEmpty: body[name] = .string("")  // none
            default:
                if !raw.isEmpty { body[name] = .string(raw) }
            }
        }
        return form.isValid ? body : nil
    }
}
