import PierHTML
import PierJSON
import PierModels
import PierRuntime
import RemoteConfigAPI

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The config as the console says it: kinds, values and conditions in words.
enum ConfigWords {
    static func kind(_ kind: ConfigParameter.Kind) -> String {
        switch kind {
        case .string: "Text"
        case .number: "Number"
        case .bool: "On or off"
        case .json: "JSON"
        }
    }

    /// A value as a person reads it: text in quotes, on/off, a number, JSON as code.
    static func value(_ value: JSONValue) -> HTML {
        switch value {
        case .string(let text): "“\(text)”"
        case .bool(let flag): flag ? "on" : "off"
        case .number(let number): "\(JSONValue.text(of: number))"
        case .null: "<span class=\"muted\">none</span>"
        case .array, .object: "<code>\(json(value))</code>"
        }
    }

    /// A value as typed in a form: text as it is, on/off as `true`/`false`, JSON compact.
    static func typed(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): text
        case .bool(let flag): flag ? "true" : "false"
        case .number(let number): JSONValue.text(of: number)
        default: json(value)
        }
    }

    static func json(_ value: JSONValue) -> String { (try? JSON.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "" }

    /// Each rule on a line: its name, what it gives, and to whom.
    static func rules(_ rules: [ConfigRule]) -> HTML {
        guard !rules.isEmpty else { return "<span class=\"muted\">no rule</span>" }
        return HTML.join(
            rules.map { rule in "<div>“\(rule.name)”: \(value(rule.value)) for \(condition(rule.when))</div>" })
    }

    /// Who a condition holds for, in words.
    static func condition(_ when: ConfigCondition) -> String {
        var parts: [String] = []
        if let platforms = when.platforms { parts.append("on " + platforms.joined(separator: " or ")) }
        switch (when.appVersionAtLeast, when.appVersionBelow) {
        case (let low?, let high?): parts.append("app version \(low) up to before \(high)")
        case (let low?, nil): parts.append("app version \(low) or later")
        case (nil, let high?): parts.append("app versions before \(high)")
        case (nil, nil): break
        }
        if let locales = when.locales { parts.append("in " + locales.joined(separator: " or ")) }
        if let countries = when.countries { parts.append("from " + countries.joined(separator: " or ")) }
        if let signedIn = when.signedIn { parts.append(signedIn ? "signed in" : "signed out") }
        if let entitlements = when.entitlements { parts.append("with " + entitlements.joined(separator: " or ")) }
        if let users = when.userIds { parts.append(users.count == 1 ? "1 chosen account" : "\(users.count) chosen accounts") }
        if let percent = when.rolloutPercent { parts.append("\(JSONValue.text(of: percent)) % of installations") }
        return parts.isEmpty ? "everyone" : parts.joined(separator: ", ")
    }

    /// A date as the console shows it (UTC, to the minute).
    static func date(_ date: Date) -> String { CivilDate.minute(secondsSince1970: date.timeIntervalSince1970) }
}

/// What a version changed from the one before, parameter by parameter.
enum ConfigDiff {
    /// The keys added, removed or changed.
    static func keys(_ old: [ConfigParameter], _ new: [ConfigParameter]) -> [String] { ConfigStore.changedKeys(old, new) }

    /// A table: each changed key, what of it changed, before and now.
    static func html(_ old: [ConfigParameter], _ new: [ConfigParameter]) -> HTML {
        let before = Dictionary(old.map { ($0.key, $0) }) { first, _ in first }
        let after = Dictionary(new.map { ($0.key, $0) }) { first, _ in first }
        let rows = keys(old, new).flatMap { key -> [HTML] in
            switch (before[key], after[key]) {
            case (nil, let added?):
                return [row(key, "Added", "", summary(added))]
            case (let removed?, nil):
                return [row(key, "Removed", summary(removed), "")]
            case (let was?, let now?):
                var rows: [HTML] = []
                if was.type != now.type {
                    rows.append(row(key, "Kind", "\(ConfigWords.kind(was.type))", "\(ConfigWords.kind(now.type))"))
                }
                if was.defaultValue != now.defaultValue {
                    rows.append(
                        row(key, "Everyone gets", ConfigWords.value(was.defaultValue), ConfigWords.value(now.defaultValue)))
                }
                if was.description != now.description {
                    rows.append(row(key, "Description", "\(was.description ?? "")", "\(now.description ?? "")"))
                }
                if was.rules != now.rules {
                    rows.append(row(key, "Rules", ConfigWords.rules(was.rules), ConfigWords.rules(now.rules)))
                }
                return rows
            case (nil, nil):
                return []
            }
        }
        guard !rows.isEmpty else { return "<p class=\"muted\">Nothing: the same parameters as the version before.</p>" }
        return """
            <table data-diff><thead><tr><th>Key</th><th>What</th><th>Before</th><th>Now</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            """
    }

    static func row(_ key: String, _ what: String, _ before: HTML, _ now: HTML) -> HTML {
        "<tr><td><code>\(key)</code></td><td>\(what)</td><td>\(before)</td><td>\(now)</td></tr>"
    }

    static func summary(_ parameter: ConfigParameter) -> HTML {
        "\(ConfigWords.kind(parameter.type)), everyone gets \(ConfigWords.value(parameter.defaultValue))<br>\(ConfigWords.rules(parameter.rules))"
    }
}
