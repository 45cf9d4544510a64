import PierHTML
import PierHTTP
import PierJSON
import PierModels
import PierService
import RemoteConfigAPI

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension ConfigForm {
    // MARK: - Reading the form

    /// The parameter the draft describes, and for each of its rules the form's block it came
    /// from; nil with the draft's problems set when a field cannot be read.
    func parse(_ draft: inout Draft, key: String?) async throws -> (ConfigParameter?, [Int]) {
        let name = key ?? draft["key"].trimmingWhitespace()
        guard let kind = ConfigParameter.Kind(rawValue: draft["type"]) else {
            draft.problems["type"] = "Choose a kind."
            return (nil, [])
        }
        let fallback = Self.value(draft["default"], kind)
        if case .failure(let why) = fallback { draft.problems["default"] = why.description }
        let description = draft["description"].trimmingWhitespace()
        if description.count > 500 { draft.problems["description"] = "must be at most 500 characters" }
        if draft["note"].count > 500 { draft.problems["note"] = "must be at most 500 characters" }
        var rules: [ConfigRule] = []
        var order: [Int] = []
        for index in 0..<draft.rules {
            let prefix = "rule\(index)."
            let typed = Self.ruleFields.map { draft[prefix + $0.0].trimmingWhitespace() } + [draft[prefix + "signedIn"]]
            guard draft[prefix + "remove"].isEmpty, typed.contains(where: { !$0.isEmpty }) else { continue }
            if let rule = try await rule(&draft, index, kind: kind) {
                rules.append(rule)
                order.append(index)
            }
        }
        guard case .success(let value) = fallback, draft.problems.isEmpty else { return (nil, order) }
        return (
            ConfigParameter(
                key: String(name), type: kind, defaultValue: value, description: description.isEmpty ? nil : String(description),
                rules: rules), order
        )
    }

    /// Rule `index` of the draft (its problems set on the draft).
    func rule(_ draft: inout Draft, _ index: Int, kind: ConfigParameter.Kind) async throws -> ConfigRule? {
        let prefix = "rule\(index)."
        func list(_ field: String) -> [String]? {
            let items = draft[prefix + field].split { $0 == "," || $0.isWhitespace }.map(String.init)
            return items.isEmpty ? nil : items
        }
        func text(_ field: String) -> String? {
            let value = draft[prefix + field].trimmingWhitespace()
            return value.isEmpty ? nil : String(value)
        }
        var when = ConfigCondition(
            platforms: list("platforms")?.map { $0.lowercased() }, appVersionAtLeast: text("versionFrom"),
            appVersionBelow: text("versionBelow"), locales: list("locales"),
            countries: list("countries")?.map { $0.uppercased() },
            signedIn: ["yes": true, "no": false][draft[prefix + "signedIn"]], entitlements: list("entitlements"))
        if let rollout = text("rollout") {
            let number = Double(String(rollout.filter { $0 != "%" }.map { $0 == "," ? "." : $0 }).trimmingWhitespace())
            if let number, (0...100).contains(number) {
                when.rolloutPercent = number
            } else {
                draft.problems[prefix + "rollout"] = "must be a number from 0 to 100"
            }
        }
        if let accounts = list("accounts") {
            when.userIds = try await userIDs(accounts, problem: &draft.problems[prefix + "accounts"])
        }
        let name = draft[prefix + "name"].trimmingWhitespace()
        if name.isEmpty { draft.problems[prefix + "name"] = "Name the rule: it says why someone got its value." }
        var value = JSONValue.null
        switch Self.value(draft[prefix + "value"], kind) {
        case .success(let read): value = read
        case .failure(let why): draft.problems[prefix + "value"] = why.description
        }
        return ConfigRule(name: String(name), when: when, value: value)
    }

    /// The accounts typed (addresses or ids), as ids; an address without an account is a problem.
    func userIDs(_ typed: [String], problem: inout String?) async throws -> [UUID] {
        guard typed.count <= 200 else {
            problem = "at most 200 accounts: target more with an entitlement"
            return []
        }
        var ids: [UUID] = []
        var unknown: [String] = []
        for text in typed {
            switch try await request.account(text, exactly: true) {
            case .account(let id): ids.append(id)
            case .nobody: unknown.append(text)
            }
        }
        if !unknown.isEmpty { problem = "No account has the address \(unknown.prefix(5).joined(separator: ", "))." }
        return ids
    }

    /// A value typed for `kind`: text as it is, a number ("2.5" or "2,5"), on or off, JSON.
    static func value(_ text: String, _ kind: ConfigParameter.Kind) -> Result<JSONValue, Refused> {
        let trimmed = text.trimmingWhitespace().lowercased()
        switch kind {
        case .string:
            return text.count <= 10_000 ? .success(.string(text)) : .failure(Refused("must be at most 10,000 characters"))
        case .number:
            let number = Double(trimmed.contains(".") ? trimmed : String(trimmed.map { $0 == "," ? "." : $0 }))
            guard let number, number.isFinite else { return .failure(Refused("must be a number, such as 3 or 2.5")) }
            return .success(.number(number))
        case .bool:
            if ["true", "on", "yes", "1"].contains(trimmed) { return .success(.bool(true)) }
            if ["false", "off", "no", "0"].contains(trimmed) { return .success(.bool(false)) }
            return .failure(Refused("must be on or off (true or false)"))
        case .json:
            guard let value = try? WireDecoder.decode(JSONValue.self, from: Array(text.utf8)) else {
                return .failure(Refused("is not JSON, such as {\"limit\": 3} or [1, 2]"))
            }
            return .success(value)
        }
    }

    /// Why a typed value was refused.
    struct Refused: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
