import PierHTML
import PierModels
import PierService
import RemoteConfigAPI

extension ConfigForm {
    // MARK: - Drawing the form

    /// The form with the draft's values and problems; read-only for support.
    func page(_ key: String?, _ draft: Draft, status: Int) async throws -> ConsoleReply {
        let admin = request.staff.isAdmin
        let action = "/console/config/parameters/" + (key ?? "new")
        let general: HTML =
            draft.problems["general"].map { "<p class=\"problem\" role=\"alert\">\($0)</p>" }
            ?? (draft.problems.isEmpty
                ? .empty : "<p class=\"problem\" role=\"alert\">Check the fields marked below: nothing was published.</p>")
        let kinds = HTML.join(
            ConfigParameter.Kind.allCases.map { kind in
                kind.rawValue == draft["type"]
                    ? "<option value=\"\(kind.rawValue)\" selected>\(ConfigWords.kind(kind))</option>"
                    : "<option value=\"\(kind.rawValue)\">\(ConfigWords.kind(kind))</option>"
            })
        let keyField: HTML =
            key == nil
            ? field("key", "Key (what the app asks for)", draft, hint: "new_paywall")
            : "<p>Key <code>\(key)</code></p>"
        let blocks = HTML.join((0..<(draft.rules < 50 ? draft.rules + 1 : draft.rules)).map { rule($0, draft) })
        let entitlements = await knownEntitlements()
        let hint: HTML =
            entitlements.isEmpty
            ? .empty : "<p class=\"muted\">The plans give these entitlements: \(entitlements.joined(separator: ", ")).</p>"
        let submit: HTML =
            admin
            ? "\(field("note", "Why (shown in the history)", draft))<button type=\"submit\">Publish</button>"
            : "<p class=\"muted\">Only admins publish changes.</p>"
        return .page(
            title: key.map { "Parameter \($0)" } ?? "New parameter",
            content: """
                <h1>\(key.map { "Parameter \($0)" } ?? "New parameter")</h1>
                \(general)
                <form method="post" action="\(action)" data-parameter>
                \(request.csrfField)
                <input type="hidden" name="basedOn" value="\(draft["basedOn"])">
                <fieldset class="card fields"\(admin ? HTML.empty : " disabled")>
                \(keyField)
                <label>Kind <select name="type">\(kinds)</select>\(problem("type", draft))</label>
                \(field("default", "Everyone gets", draft, hint: "text, a number, on or off, or JSON", area: draft["type"] == "json"))
                \(field("description", "Description (for the team)", draft))
                </fieldset>
                <h2>Except (the first rule that holds wins)</h2>
                \(hint)
                \(blocks)
                \(submit)
                </form>
                \(key != nil && admin ? deleteForm(key ?? "") : HTML.empty)
                <p><a href="/console/config">Back to remote config</a></p>
                """, status: status)
    }

    /// Rule block `index`: the draft's, or an empty one to add a rule.
    func rule(_ index: Int, _ draft: Draft) -> HTML {
        let prefix = "rule\(index)."
        let adding = index >= draft.rules
        let chosen = draft[prefix + "signedIn"]
        let signedIn = HTML.join(
            [("", "anyone"), ("yes", "signed in"), ("no", "signed out")].map { value, words in
                value == chosen
                    ? "<option value=\"\(value)\" selected>\(words)</option>" : "<option value=\"\(value)\">\(words)</option>"
            })
        let fields = HTML.join(Self.ruleFields.map { name, label in field(prefix + name, label, draft) })
        let remove: HTML =
            adding ? .empty : "<label>Remove this rule <input type=\"checkbox\" name=\"\(prefix)remove\" value=\"yes\"></label>"
        let disabled: HTML = request.staff.isAdmin ? .empty : " disabled"
        return """
            <fieldset class="card rule"\(disabled)><legend>\(adding ? "Add a rule" : "Rule \(index + 1)")</legend>
            <div class="fields">\(fields)
            <label>Who <select name="\(prefix)signedIn">\(signedIn)</select></label>
            \(remove)</div>
            </fieldset>
            """
    }

    /// A labelled input (or text area) with its value and, when refused, its problem beside it.
    func field(_ name: String, _ label: String, _ draft: Draft, hint: String = "", area: Bool = false) -> HTML {
        let invalid: HTML =
            draft.problems[name] == nil ? .empty : " aria-invalid=\"true\" aria-describedby=\"\(name)-problem\""
        let input: HTML =
            area
            ? "<textarea name=\"\(name)\" placeholder=\"\(hint)\"\(invalid)>\(draft[name])</textarea>"
            : "<input name=\"\(name)\" value=\"\(draft[name])\" placeholder=\"\(hint)\"\(invalid)>"
        return "<label>\(label) \(input)\(problem(name, draft))</label>"
    }

    func problem(_ name: String, _ draft: Draft) -> HTML {
        draft.problems[name].map { "<span class=\"problem\" role=\"alert\" id=\"\(name)-problem\">\($0)</span>" } ?? .empty
    }

    func deleteForm(_ key: String) -> HTML {
        """
        <form class="actions" method="post" action="/console/config/parameters/\(key)/delete" data-confirm="Remove \(key) for every app? Apps then use the default in their code.">
        \(request.csrfField)
        <label>Why <input name="note"></label>
        <button class="danger" type="submit">Remove this parameter</button>
        </form>
        """
    }

    /// The entitlements the plans give (a hint beside the rules); none when they cannot be read.
    func knownEntitlements() async -> [String] {
        guard let reply = try? await request.call(SubscriptionsAPI.plans, PlansQuery(all: true)), reply.ok,
            let plans = try? reply.decode(ItemList<Plan>.self)
        else { return [] }
        return Set(plans.items.flatMap(\.entitlements)).sorted()
    }
}
