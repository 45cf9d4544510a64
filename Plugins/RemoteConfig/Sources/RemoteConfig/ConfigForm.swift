import PierHTML
import PierHTTP
import PierModels
import PierService
import RemoteConfigAPI

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One parameter's form (`/console/config/parameters/<key>`, `…/new`): its kind, the value
/// everyone gets, its rules, each as typed fields; published by an admin as the next version
/// (the other parameters as they are now). A refused form is drawn again with everything typed
/// and each field's problem beside it; a change someone published meanwhile to the same
/// parameter is shown rather than overwritten.
struct ConfigForm {
    let request: ConsoleRequest

    /// The typed fields (`key`, `type`, `default`, `description`, `note`, `basedOn`, and
    /// `rule<i>.<field>`), and the problems beside them (`general` above the form).
    struct Draft {
        var values: [String: String] = [:]
        var rules = 0
        var problems: [String: String] = [:]

        subscript(_ name: String) -> String { values[name] ?? "" }
    }

    /// A rule's fields: the form's name and its label.
    static let ruleFields = [
        ("name", "Rule name"), ("value", "Gives"), ("platforms", "Platforms (ios, android, …)"),
        ("versionFrom", "App version from"), ("versionBelow", "App version below"), ("locales", "Languages (fr, pt-BR)"),
        ("countries", "Countries (FR, CA)"), ("entitlements", "Entitlements (any of)"), ("accounts", "Accounts (addresses)"),
        ("rollout", "Share of installations (%)"),
    ]

    func parameter(_ key: String) async throws -> ConsoleReply {
        let newest = try await request.fetch(RemoteConfigAPI.versions, NoParameters()).items.first
        let existing = newest?.parameters.first { $0.key == key }
        guard key == "new" || existing != nil else { throw HTTPError.notFound("No parameter has the key “\(key)”.") }
        if request.request.method == "POST" { return try await publish(key == "new" ? nil : key, newest: newest) }
        var draft = Draft()
        draft.values["basedOn"] = String(newest?.version ?? 0)
        if let existing { try await fill(&draft, from: existing) } else { draft.values["type"] = "bool" }
        return try await page(key == "new" ? nil : key, draft, status: 200)
    }

    /// The form's fields from a published parameter.
    func fill(_ draft: inout Draft, from parameter: ConfigParameter) async throws {
        draft.values["key"] = parameter.key
        draft.values["type"] = parameter.type.rawValue
        draft.values["default"] = ConfigWords.typed(parameter.defaultValue)
        draft.values["description"] = parameter.description ?? ""
        draft.rules = parameter.rules.count
        for (index, rule) in parameter.rules.enumerated() {
            let when = rule.when
            let prefix = "rule\(index)."
            draft.values[prefix + "name"] = rule.name
            draft.values[prefix + "value"] = ConfigWords.typed(rule.value)
            draft.values[prefix + "platforms"] = (when.platforms ?? []).joined(separator: ", ")
            draft.values[prefix + "versionFrom"] = when.appVersionAtLeast ?? ""
            draft.values[prefix + "versionBelow"] = when.appVersionBelow ?? ""
            draft.values[prefix + "locales"] = (when.locales ?? []).joined(separator: ", ")
            draft.values[prefix + "countries"] = (when.countries ?? []).joined(separator: ", ")
            draft.values[prefix + "entitlements"] = (when.entitlements ?? []).joined(separator: ", ")
            draft.values[prefix + "signedIn"] = when.signedIn.map { $0 ? "yes" : "no" } ?? ""
            draft.values[prefix + "rollout"] = when.rolloutPercent.map { JSONValue.text(of: $0) } ?? ""
            draft.values[prefix + "accounts"] = await addresses(when.userIds ?? []).joined(separator: ", ")
        }
    }

    /// The accounts' addresses (an id where the account cannot be read, or past 50).
    func addresses(_ ids: [UUID]) async -> [String] {
        let users = await request.users(Set(ids.prefix(50)))
        return ids.map { users[$0]?.email ?? $0.uuidString.lowercased() }
    }

    // MARK: - Publishing

    /// Publishes the posted parameter (`key` nil: a new one) over the newest version.
    func publish(_ key: String?, newest: ConfigVersion?) async throws -> ConsoleReply {
        var draft = Draft()
        for (name, value) in request.form where draft.values[name] == nil { draft.values[name] = value }
        draft.rules =
            (draft.values.keys.compactMap { name -> Int? in
                guard name.hasPrefix("rule"), name.hasSuffix(".name") else { return nil }
                return Int(name.dropFirst(4).dropLast(5))
            }.max() ?? -1) + 1
        draft.rules = min(draft.rules, 51)
        let (parsed, order) = try await parse(&draft, key: key)
        guard let parsed, draft.problems.isEmpty else { return try await page(key, draft, status: 422) }
        let current = newest?.parameters ?? []
        let basedOn = Int(draft["basedOn"]) ?? 0
        if let newest, newest.version != basedOn, try await changedSince(basedOn, key: parsed.key, newest: current) {
            draft.values["basedOn"] = String(newest.version)
            draft.problems["general"] =
                "Version \(newest.version) changed this parameter since you opened it. It is shown on the parameter's page; publish again to replace it with what is below."
            return try await page(key, draft, status: 409)
        }
        var parameters = current
        if let index = parameters.firstIndex(where: { $0.key == (key ?? parsed.key) }) {
            if key == nil {
                draft.problems["key"] = "is the key of another parameter"
                return try await page(key, draft, status: 422)
            }
            parameters[index] = parsed
        } else {
            parameters.append(parsed)
        }
        let position = parameters.firstIndex { $0.key == parsed.key } ?? 0
        return try await send(
            PublishConfig(basedOn: newest?.version ?? 0, parameters: parameters, note: draft["note"]), key: key,
            draft: draft, position: position, order: order)
    }

    /// Sends the publication; a refusal is drawn beside the fields it names.
    func send(_ body: PublishConfig, key: String?, draft: Draft, position: Int, order: [Int]) async throws -> ConsoleReply {
        var draft = draft
        let reply = try await request.call(RemoteConfigAPI.publish, NoParameters(), body: body)
        if reply.ok { return .redirect("/console/config?published=\(try reply.decode(ConfigVersion.self).version)") }
        guard reply.status == 409 || reply.status == 422, let problem = reply.problem else { throw ConsoleRefusal(reply) }
        if reply.status == 409 {
            draft.problems["general"] = "Someone published a version while you sent this: send it again."
            draft.values["basedOn"] = String(body.basedOn + 1)
        }
        for error in problem.errors ?? [] {
            let name = Self.formField(error.field, position: position, order: order)
            draft.problems[name] = [draft.problems[name], error.message].compactMap { $0 }.joined(separator: "; ")
        }
        if draft.problems.isEmpty { draft.problems["general"] = problem.detail ?? "Pier refused the change." }
        return try await page(key, draft, status: reply.status)
    }

    /// Whether the parameter `key` differs between version `basedOn` and the newest.
    func changedSince(_ basedOn: Int, key: String, newest: [ConfigParameter]) async throws -> Bool {
        var then: [ConfigParameter] = []
        if basedOn > 0 {
            let reply = try await request.call(RemoteConfigAPI.version, ConfigVersionPath(basedOn))
            then = reply.ok ? try reply.decode(ConfigVersion.self).parameters : []
        }
        return then.first { $0.key == key } != newest.first { $0.key == key }
    }

    /// The API's name of a field (`parameters[3].rules[1].when.appVersionBelow`) as the form's
    /// (`rule2.versionBelow`, the rule's block in the form): `order` maps the API's rules to them.
    static func formField(_ field: String, position: Int, order: [Int]) -> String {
        let prefix = "parameters[\(position)]."
        guard field.hasPrefix(prefix) else { return field == "note" ? "note" : "general" }
        let rest = field.dropFirst(prefix.count)
        switch rest {
        case "key": return "key"
        case "defaultValue": return "default"
        case "description": return "description"
        default: break
        }
        guard rest.hasPrefix("rules["), let close = rest.firstIndex(of: "]"),
            let number = Int(rest[rest.index(rest.startIndex, offsetBy: 6)..<close]), number < order.count
        else { return "general" }
        let part = rest[rest.index(after: close)...]
        let names = [
            ".name": "name", ".value": "value", ".when.rolloutPercent": "rollout", ".when.appVersionAtLeast": "versionFrom",
            ".when.appVersionBelow": "versionBelow",
        ]
        return names[String(part)].map { "rule\(order[number]).\($0)" } ?? "general"
    }

    func delete(_ key: String) async throws -> ConsoleReply {
        let newest = try await request.fetch(RemoteConfigAPI.versions, NoParameters()).items.first
        guard let newest, newest.parameters.contains(where: { $0.key == key }) else { return .redirect("/console/config") }
        let note = request.value("note").map { String($0.prefix(500)) }
        let reply = try await request.call(
            RemoteConfigAPI.publish, NoParameters(),
            body: PublishConfig(
                basedOn: newest.version, parameters: newest.parameters.filter { $0.key != key },
                note: note?.isEmpty == false ? note : "Removed \(key)"))
        guard reply.ok else { throw ConsoleRefusal(reply) }
        return .redirect("/console/config?published=\(try reply.decode(ConfigVersion.self).version)")
    }
}
