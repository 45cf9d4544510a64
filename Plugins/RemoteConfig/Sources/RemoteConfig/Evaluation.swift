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
        values(parameters, choices: choices(parameters, for: caller))
    }

    /// The values and reasons of `choices` (``choices(_:for:)``).
    public static func values(_ parameters: [ConfigParameter], choices: [Int]) -> (
        values: [String: JSONValue], reasons: [String: String]
    ) {
        var values: [String: JSONValue] = [:]
        var reasons: [String: String] = [:]
        for (parameter, choice) in zip(parameters, choices) {
            if choice >= 0 {
                values[parameter.key] = parameter.rules[choice].value
                reasons[parameter.key] = parameter.rules[choice].name
            } else {
                values[parameter.key] = parameter.defaultValue
                reasons[parameter.key] = "default"
            }
        }
        return (values, reasons)
    }

    /// For each parameter, the index of the first rule that holds for `caller`, or -1 (the
    /// default): all an answer depends on, so callers with the same choices share one answer.
    public static func choices(_ parameters: [ConfigParameter], for caller: ConfigCaller) -> [Int] {
        Compiled(parameters).choices(for: caller)
    }

    /// Whether `condition` holds for `caller` (of parameter `key`, whose rollout it is).
    public static func holds(_ condition: ConfigCondition, for caller: ConfigCaller, key: String) -> Bool {
        Compiled.Rule(condition, key: key).holds(for: Judged(caller))
    }

    /// What the rules read of a caller, read once per request rather than once per rule.
    struct Judged {
        let user: UUID?
        let installation: String?
        let entitlements: Set<String>
        let platform: String?
        let version: Version?
        let locale: String
        let country: String?

        init(_ caller: ConfigCaller) {
            (user, installation, entitlements) = (caller.userID, caller.installationID, caller.entitlements)
            platform = caller.platform?.lowercased()
            version = caller.appVersion.map(Version.init)
            let tag = (caller.locale ?? "").lowercased()
            locale = tag.contains("_") ? tag.replacing("_", with: "-") : tag
            country = caller.country?.uppercased()
        }
    }

    /// A config made ready to judge: every rule's lists as sets, its versions parsed, its
    /// locales normalized, once per version rather than per request.
    struct Compiled: Sendable {
        /// A class: judging passes it around without retaining each of its lists.
        final class Rule: Sendable {
            let key: String
            let platforms: Set<String>?
            let least: Version?
            let below: Version?
            let locales: [String]?
            /// Each locale followed by `-` (`fr-` starts `fr-CA`).
            let localeStarts: [String]
            let countries: Set<String>?
            let signedIn: Bool?
            let entitlements: Set<String>?
            let users: Set<UUID>?
            let percent: Double?

            init(_ condition: ConfigCondition, key: String) {
                self.key = key
                platforms = condition.platforms.map { Set($0.map { $0.lowercased() }) }
                least = condition.appVersionAtLeast.map(Version.init)
                below = condition.appVersionBelow.map(Version.init)
                locales = condition.locales?.map { $0.lowercased().replacing("_", with: "-") }
                localeStarts = (locales ?? []).map { $0 + "-" }
                countries = condition.countries.map { Set($0.map { $0.uppercased() }) }
                signedIn = condition.signedIn
                entitlements = condition.entitlements.map(Set.init)
                users = condition.userIds.map(Set.init)
                percent = condition.rolloutPercent
            }

            func holds(for judged: Judged) -> Bool {
                if let platforms {
                    guard let platform = judged.platform, platforms.contains(platform) else { return false }
                }
                if let least {
                    guard let version = judged.version, version.compare(least) >= 0 else { return false }
                }
                if let below {
                    guard let version = judged.version, version.compare(below) < 0 else { return false }
                }
                if let locales {
                    let tag = judged.locale
                    guard locales.contains(tag) || localeStarts.contains(where: { tag.hasPrefix($0) }) else { return false }
                }
                if let countries {
                    guard let country = judged.country, countries.contains(country) else { return false }
                }
                if let signedIn, signedIn != (judged.user != nil) { return false }
                if let entitlements, judged.entitlements.isDisjoint(with: entitlements) { return false }
                if let users {
                    guard let user = judged.user, users.contains(user) else { return false }
                }
                if let percent {
                    guard let installation = judged.installation, Double(bucket(key, installation)) < percent * 100 else {
                        return false
                    }
                }
                return true
            }
        }

        /// Each parameter's rules, in order.
        let rules: [[Rule]]

        init(_ parameters: [ConfigParameter]) {
            rules = parameters.map { parameter in parameter.rules.map { Rule($0.when, key: parameter.key) } }
        }

        func choices(for caller: ConfigCaller) -> [Int] {
            let judged = Judged(caller)
            var chosen = [Int](repeating: -1, count: rules.count)
            for index in rules.indices {
                let parameter = rules[index]
                for number in parameter.indices where parameter[number].holds(for: judged) {
                    chosen[index] = number
                    break
                }
            }
            return chosen
        }
    }

    /// The installation's place in `0..<10_000` for parameter `key`: FNV-1a (64 bits) of
    /// `key:installation`, the same on every replica and every release.
    public static func bucket(_ key: String, _ installation: String) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func add(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        for byte in key.utf8 { add(byte) }
        add(UInt8(ascii: ":"))
        for byte in installation.utf8 { add(byte) }
        return Int(hash % 10_000)
    }

    /// Semantic versions compared part by part (`2.10.0` after `2.9.1`; a missing part is 0; a
    /// pre-release suffix such as `-beta.1` comes before its release).
    public static func compare(_ left: String, _ right: String) -> Int { Version(left).compare(Version(right)) }

    /// A version's numbers, and whether it is a pre-release.
    struct Version {
        let numbers: [Int]
        let prerelease: Bool

        init(_ text: String) {
            let core = text.split(separator: "-", maxSplits: 1)
            numbers = (core.first ?? "").split(separator: ".").map { Int($0.prefix { $0.isNumber }) ?? 0 }
            prerelease = core.count > 1
        }

        func compare(_ other: Version) -> Int {
            for index in 0..<max(numbers.count, other.numbers.count) {
                let x = index < numbers.count ? numbers[index] : 0
                let y = index < other.numbers.count ? other.numbers[index] : 0
                if x != y { return x < y ? -1 : 1 }
            }
            if prerelease != other.prerelease { return prerelease ? -1 : 1 }
            return 0
        }
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
