import Foundation
import PierModels
import RemoteConfig
import RemoteConfigAPI
import Testing

/// The rules of remote config, judged without a server: conditions one by one and together,
/// first rule wins, semantic versions, and a rollout stable per installation and spread evenly.
@Suite struct EvaluationTests {
    let paywall = ConfigParameter(
        key: "new_paywall", type: .bool, defaultValue: false,
        rules: [
            ConfigRule(name: "Pro users", when: ConfigCondition(entitlements: ["pro"]), value: true),
            ConfigRule(
                name: "iOS 2.4 and later in France",
                when: ConfigCondition(platforms: ["ios"], appVersionAtLeast: "2.4", locales: ["fr"]), value: true),
            ConfigRule(name: "Half of Android", when: ConfigCondition(platforms: ["android"], rolloutPercent: 50), value: true),
        ])

    func value(_ caller: ConfigCaller) -> JSONValue? { Evaluation.values([paywall], for: caller).values["new_paywall"] }

    @Test func conditionsDecideAndTheFirstRuleWins() {
        #expect(value(ConfigCaller()) == false)
        #expect(value(ConfigCaller(userID: UUID(), entitlements: ["pro"])) == true)
        #expect(value(ConfigCaller(platform: "ios", appVersion: "2.4.0", locale: "fr-CA")) == true)
        #expect(value(ConfigCaller(platform: "iOS", appVersion: "2.10", locale: "fr_FR")) == true)
        #expect(value(ConfigCaller(platform: "ios", appVersion: "2.3.9", locale: "fr-CA")) == false)
        #expect(value(ConfigCaller(platform: "ios", appVersion: "2.4.0", locale: "en-FR")) == false)
        #expect(value(ConfigCaller(platform: "ios", locale: "fr")) == false, "no version: not at least 2.4")
        let (_, reasons) = Evaluation.values([paywall], for: ConfigCaller(userID: UUID(), platform: "ios", entitlements: ["pro"]))
        #expect(reasons["new_paywall"] == "Pro users")
        #expect(Evaluation.values([paywall], for: ConfigCaller()).reasons["new_paywall"] == "default")
    }

    @Test func everyKindOfCondition() {
        let user = UUID()
        let cases: [(ConfigCondition, ConfigCaller, Bool)] = [
            (ConfigCondition(), ConfigCaller(), true),
            (ConfigCondition(signedIn: true), ConfigCaller(userID: user), true),
            (ConfigCondition(signedIn: true), ConfigCaller(), false),
            (ConfigCondition(signedIn: false), ConfigCaller(), true),
            (ConfigCondition(userIds: [user]), ConfigCaller(userID: user), true),
            (ConfigCondition(userIds: [user]), ConfigCaller(userID: UUID()), false),
            (ConfigCondition(countries: ["de", "AT"]), ConfigCaller(country: "DE"), true),
            (ConfigCondition(countries: ["DE"]), ConfigCaller(), false),
            (ConfigCondition(appVersionBelow: "3.0.0"), ConfigCaller(appVersion: "3.0.0-beta.2"), true),
            (ConfigCondition(appVersionBelow: "3.0.0"), ConfigCaller(appVersion: "3.0"), false),
            (ConfigCondition(appVersionAtLeast: "2.9.1"), ConfigCaller(appVersion: "2.10.0"), true),
            (ConfigCondition(entitlements: ["pro", "team"]), ConfigCaller(entitlements: ["team"]), true),
            (ConfigCondition(entitlements: ["pro"]), ConfigCaller(entitlements: []), false),
            (ConfigCondition(rolloutPercent: 100), ConfigCaller(installationID: "a"), true),
            (ConfigCondition(rolloutPercent: 0), ConfigCaller(installationID: "a"), false),
            (ConfigCondition(rolloutPercent: 100), ConfigCaller(), false),
            (ConfigCondition(locales: ["en-GB"]), ConfigCaller(locale: "en-gb"), true),
            (ConfigCondition(locales: ["en-GB"]), ConfigCaller(locale: "en"), false),
        ]
        for (index, (condition, caller, expected)) in cases.enumerated() {
            #expect(Evaluation.holds(condition, for: caller, key: "k") == expected, "case \(index)")
        }
    }

    @Test func versionsCompareAsSemanticVersions() {
        #expect(Evaluation.compare("2.10.0", "2.9.1") == 1)
        #expect(Evaluation.compare("2.4", "2.4.0") == 0)
        #expect(Evaluation.compare("3.0.0-beta", "3.0.0") == -1)
        #expect(Evaluation.compare("1", "1.0.1") == -1)
    }

    /// Over 100,000 installations a rollout of p % takes p % of them within 1 % of the whole,
    /// the same installations every time, and another parameter's rollout takes others.
    @Test func rolloutsAreStableAndEven() {
        let installations = (0..<100_000).map { "installation-\($0)" }
        for percent in [1.0, 10, 50, 90] {
            let condition = ConfigCondition(rolloutPercent: percent)
            let taken = installations.filter {
                Evaluation.holds(condition, for: ConfigCaller(installationID: $0), key: "new_paywall")
            }.count
            #expect(abs(Double(taken) / 1000 - percent) < 1, "\(percent) %: \(taken)")
        }
        let half = ConfigCondition(rolloutPercent: 50)
        let first = installations.prefix(1000).map { Evaluation.holds(half, for: ConfigCaller(installationID: $0), key: "a") }
        let again = installations.prefix(1000).map { Evaluation.holds(half, for: ConfigCaller(installationID: $0), key: "a") }
        let other = installations.prefix(1000).map { Evaluation.holds(half, for: ConfigCaller(installationID: $0), key: "b") }
        #expect(first == again && first != other)
        #expect(Evaluation.bucket("new_paywall", "installation-1") == Evaluation.bucket("new_paywall", "installation-1"))
    }

    @Test func aConfigThatCannotBePublishedSaysWhy() {
        let wrong = [
            ConfigParameter(key: "a b", type: .bool, defaultValue: "yes"),
            ConfigParameter(key: "dup", type: .number, defaultValue: 1),
            ConfigParameter(
                key: "dup", type: .string, defaultValue: "x",
                rules: [ConfigRule(name: "", when: ConfigCondition(appVersionAtLeast: "two", rolloutPercent: 150), value: 3)]),
        ]
        let fields = Set(Evaluation.problems(wrong).map(\.field))
        #expect(
            fields == [
                "parameters[0].key", "parameters[0].defaultValue", "parameters[2].key", "parameters[2].rules[0].value",
                "parameters[2].rules[0].name", "parameters[2].rules[0].when.rolloutPercent",
                "parameters[2].rules[0].when.appVersionAtLeast",
            ], "\(fields)")
        #expect(Evaluation.problems([paywall]).isEmpty)
        // The limits: 500 parameters, 50 rules each.
        let many = (0...500).map { ConfigParameter(key: "p\($0)", type: .bool, defaultValue: false) }
        #expect(Evaluation.problems(many).map(\.field) == ["parameters"])
        let rules = Array(repeating: ConfigRule(name: "r", when: ConfigCondition(), value: true), count: 51)
        let crowded = ConfigParameter(key: "crowded", type: .bool, defaultValue: false, rules: rules)
        #expect(Evaluation.problems([crowded]).map(\.field) == ["parameters[0].rules"])
    }
}
