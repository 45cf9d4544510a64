import Foundation
import PierModels
import RemoteConfigAPI
import Testing

@testable import RemoteConfig

/// The console pages' reading and words, without a server: values as people type them, the
/// API's field names mapped back to the form's, conditions and changes in words, hostile text
/// kept as text.
@Suite struct ConfigPageTests {
    func read(_ text: String, _ kind: ConfigParameter.Kind) -> JSONValue? {
        if case .success(let value) = ConfigForm.value(text, kind) { return value }
        return nil
    }

    @Test func valuesAreReadAsPeopleTypeThem() {
        #expect(read("2,5", .number) == .number(2.5))
        #expect(read(" 3 ", .number) == .number(3))
        #expect(read("1,000.5", .number) == nil)
        #expect(read("ten", .number) == nil)
        #expect(read("inf", .number) == nil)
        #expect(read("On", .bool) == .bool(true))
        #expect(read("no", .bool) == .bool(false))
        #expect(read("maybe", .bool) == nil)
        #expect(read(#"{"limit": 3}"#, .json) == .object(["limit": .number(3)]))
        #expect(read("{limit: 3}", .json) == nil)
        #expect(read("  spaced  ", .string) == .string("  spaced  "))
        #expect(read(String(repeating: "x", count: 10_001), .string) == nil)
    }

    @Test func theAPIsFieldsLandBesideTheFormsFields() {
        // The form's third block became the API's second rule (the first block was removed).
        let order = [0, 2]
        #expect(ConfigForm.formField("parameters[4].key", position: 4, order: order) == "key")
        #expect(ConfigForm.formField("parameters[4].defaultValue", position: 4, order: order) == "default")
        #expect(
            ConfigForm.formField("parameters[4].rules[1].when.appVersionBelow", position: 4, order: order) == "rule2.versionBelow"
        )
        #expect(ConfigForm.formField("parameters[4].rules[0].name", position: 4, order: order) == "rule0.name")
        #expect(ConfigForm.formField("parameters[4].rules[7].name", position: 4, order: order) == "general")
        #expect(ConfigForm.formField("parameters[3].key", position: 4, order: order) == "general")
        #expect(ConfigForm.formField("note", position: 4, order: order) == "note")
        #expect(ConfigForm.formField("parameters[4].rules[x].name", position: 4, order: order) == "general")
    }

    @Test func conditionsAndChangesReadAsWords() {
        #expect(ConfigWords.condition(ConfigCondition()) == "everyone")
        #expect(
            ConfigWords.condition(
                ConfigCondition(
                    platforms: ["ios", "android"], appVersionAtLeast: "2.0", appVersionBelow: "3.0", signedIn: true,
                    entitlements: ["pro"], userIds: [UUID(), UUID()], rolloutPercent: 12.5))
                == "on ios or android, app version 2.0 up to before 3.0, signed in, with pro, 2 chosen accounts, 12.5 % of installations"
        )
        let hostile = "<script>alert(1)</script>"
        let old = [ConfigParameter(key: "a", type: .string, defaultValue: .string(hostile), description: hostile)]
        let new = [
            ConfigParameter(key: "a", type: .string, defaultValue: .string("plain"), description: hostile),
            ConfigParameter(key: "b", type: .bool, defaultValue: .bool(true)),
        ]
        #expect(ConfigDiff.keys(old, new) == ["a", "b"])
        let table = ConfigDiff.html(old, new).text
        #expect(table.contains("&lt;script&gt;") && !table.contains("<script>"), "\(table)")
        #expect(table.contains("<td>Everyone gets</td>") && !table.contains("<td>Description</td>"), "\(table)")
        #expect(table.contains("<td>Added</td>") && table.contains("everyone gets on"), "\(table)")
        #expect(ConfigDiff.html(new, new).text.contains("Nothing: the same parameters"))
    }
}
