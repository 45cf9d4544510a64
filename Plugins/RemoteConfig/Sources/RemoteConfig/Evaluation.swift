import PierModels
import RemoteConfigAPI

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Who asks for the config: what the app says of itself, who is signed in, and what they may use.
public struct ConfigCaller: Sendable, Equatable {
    public var userID: UUID?
    public var installationID: String?
    public var platform: String?
    public var appVersion: String?
    public var locale: String?
    public var country: String?
    public var entitlements: Set<String>

    public init(
        userID: UUID? = nil, installationID: String? = nil, platform: String? = nil, appVersion: String? = nil,
        locale: String? = nil, country: String? = nil, entitlements: Set<String> = []
    ) {
        (self.userID, self.installationID, self.platform, self.appVersion) = (userID, installationID, platform, appVersion)
        (self.locale, self.country, self.entitlements) = (locale, country, entitlements)
    }
}

/// The rules, judged: pure functions of a config and a caller.
public enum Evaluation {
    /// Every parameter's value for `caller`, with the reason (`default` or the rule's name).
    public static func values(_ parameters: [ConfigParameter], for caller: ConfigCaller) -> (
        values: [String: JSONValue], reasons: [String: String]
    ) {
        var values: [String: JSONValue] = [:]
        var reasons: [String: String] = [:]
        for parameter in parameters {
            if let rule = parameter.rules.first(where: { holds($0.when, for: caller, key: parameter.key) }) {
                values[parameter.key] = rule.value
                reasons[parameter.key] = rule.name
            } else {
                values[parameter.key] = parameter.defaultValue
                reasons[parameter.key] = "default"
            }
        }
        return (values, reasons)
    }

    /// Whether `condition` holds for `caller` (of parameter `key`, whose rollout it is).
    public static func holds(_ condition: ConfigCondition, for caller: ConfigCaller, key: String) -> Bool {
        if let platforms = condition.platforms, !platforms.contains(where: { $0.lowercased() == caller.platform?.lowercased() }) {
            return false
        }
        if let least = condition.appVersionAtLeast {
            guard let version = caller.appVersion, compare(version, least) >= 0 else { return false }
        }
        if let below = condition.appVersionBelow {
            guard let version = caller.appVersion, compare(version, below) < 0 else { return false }
        }
        if let locales = condition.locales {
            let tag = (caller.locale ?? "").lowercased().replacing("_", with: "-")
            guard
                locales.contains(where: { prefix in
                    let start = prefix.lowercased().replacing("_", with: "-")
                    return tag == start || tag.hasPrefix(start + "-")
                })
            else { return false }
        }
        if let countries = condition.countries,
            !countries.contains(where: { $0.uppercased() == caller.country?.uppercased() })
        {
            return false
        }
        if let signedIn = condition.signedIn, signedIn != (caller.userID != nil) { return false }
        if let wanted = condition.entitlements, caller.entitlements.isDisjoint(with: wanted) { return false }
        if let users = condition.userIds {
            guard let user = caller.userID, users.contains(user) else { return false }
        }
        if let percent = condition.rolloutPercent {
            guard let installation = caller.installationID, Double(bucket(key, installation)) < percent * 100 else {
                return false
            }
        }
        return true
    }

    /// The installation's place in `0..<10_000` for parameter `key`: FNV-1a (64 bits) of
    /// `key:installation`, the same on every replica and every release.
    public static func bucket(_ key: String, _ installation: String) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (key + ":" + installation).utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return Int(hash % 10_000)
    }

    /// Semantic versions compared part by part (`2.10.0` after `2.9.1`; a missing part is 0; a
    /// pre-release suffix such as `-beta.1` comes before its release).
    public static func compare(_ left: String, _ right: String) -> Int {
        func parts(_ text: String) -> (numbers: [Int], prerelease: Bool) {
            let core = text.split(separator: "-", maxSplits: 1)
            let numbers = (core.first ?? "").split(separator: ".").map { Int($0.prefix { $0.isNumber }) ?? 0 }
            return (numbers, core.count > 1)
        }
        let (a, b) = (parts(left), parts(right))
        for index in 0..<max(a.numbers.count, b.numbers.count) {
            let x = index < a.numbers.count ? a.numbers[index] : 0
            let y = index < b.numbers.count ? b.numbers[index] : 0
            if x != y { return x < y ? -1 : 1 }
        }
        if a.prerelease != b.prerelease { return a.prerelease ? -1 : 1 }
        return 0
    }

    /// Why `parameters` cannot be published, each problem naming its field; empty when they can.
    public static func problems(_ parameters: [ConfigParameter]) -> [Problem.FieldError] {
        var errors: [Problem.FieldError] = []
        var seen: Set<String> = []
        if parameters.count > 500 { errors.append(.init(field: "parameters", message: "must hold at most 500 parameters")) }
        for (index, parameter) in parameters.enumerated() {
            let field = "parameters[\(index)]"
            let allowed = parameter.key.unicodeScalars.allSatisfy {
                ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || "_.-".unicodeScalars.contains($0)
            }
            if !(1...64).contains(parameter.key.count) || !allowed {
                errors.append(.init(field: field + ".key", message: "must be 1 to 64 letters, digits, _, . or -"))
            }
            if !seen.insert(parameter.key).inserted {
                errors.append(.init(field: field + ".key", message: "is the key of another parameter"))
            }
            if !fits(parameter.defaultValue, parameter.type) {
                errors.append(.init(field: field + ".defaultValue", message: "must be a \(parameter.type.rawValue)"))
            }
            if parameter.rules.count > 50 { errors.append(.init(field: field + ".rules", message: "must be at most 50")) }
            for (number, rule) in parameter.rules.enumerated() {
                let ruleField = field + ".rules[\(number)]"
                if !fits(rule.value, parameter.type) {
                    errors.append(.init(field: ruleField + ".value", message: "must be a \(parameter.type.rawValue)"))
                }
                if rule.name.isEmpty || rule.name.count > 80 {
                    errors.append(.init(field: ruleField + ".name", message: "must be 1 to 80 characters"))
                }
                if let percent = rule.when.rolloutPercent, !(0...100).contains(percent) {
                    errors.append(.init(field: ruleField + ".when.rolloutPercent", message: "must be 0 to 100"))
                }
                for (name, version) in [
                    ("appVersionAtLeast", rule.when.appVersionAtLeast), ("appVersionBelow", rule.when.appVersionBelow),
                ]
                where version.map({ !isVersion($0) }) ?? false {
                    errors.append(.init(field: ruleField + ".when." + name, message: "must be a version such as 2.4.1"))
                }
            }
        }
        return errors
    }

    static func isVersion(_ text: String) -> Bool {
        let core = text.split(separator: "-", maxSplits: 1).first ?? ""
        let parts = core.split(separator: ".", omittingEmptySubsequences: false)
        return (1...4).contains(parts.count) && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
    }

    static func fits(_ value: JSONValue, _ kind: ConfigParameter.Kind) -> Bool {
        switch (kind, value) {
        case (.string, .string), (.number, .number), (.bool, .bool): true
        case (.json, _): true
        default: false
        }
    }
}
