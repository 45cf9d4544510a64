import PierModels
import Testing

@testable import ConsoleService

/// The console shows the API's values in words from one table: every value this version knows
/// of every vocabulary it shows, and every audit action, has words of its own.
@Suite struct LabelTests {
    let labels = Labels.english

    func unlabelled<Value: Labelled>(_ type: Value.Type) -> [String] {
        Value.allCases.filter { !labels.knows($0) }.map(\.rawValue)
    }

    @Test func everyKnownValueHasWords() {
        let missing =
            unlabelled(FeedbackStatus.self) + unlabelled(FeedbackCategory.self) + unlabelled(Platform.self)
            + unlabelled(Moderation.self) + unlabelled(AccountRole.self) + unlabelled(SubscriptionState.self)
            + unlabelled(SubscriptionSource.self) + unlabelled(OfferType.self) + unlabelled(ExpirationReason.self)
            + unlabelled(PriceIncrease.self) + unlabelled(WebhookDeliveryState.self) + unlabelled(AuditAction.self)
        #expect(missing.isEmpty, "no words for \(missing)")
        // No two values of one vocabulary read the same.
        #expect(Set(AuditAction.allCases.map { labels($0) }).count == AuditAction.allCases.count)
        #expect(Set(FeedbackStatus.allCases.map { labels($0) }).count == FeedbackStatus.allCases.count)
    }

    /// Every problem Pier answers with has a heading in words; none says its code.
    @Test func everyProblemIsSaidInWords() {
        let missing = ProblemCode.all.filter { labels.words["problem." + $0.rawValue] == nil }
        #expect(missing.isEmpty, "no words for \(missing)")
        for code in ProblemCode.all {
            let said = labels.problem(Problem(code: code, title: "t", status: 400), status: 400)
            #expect(!said.heading.contains("_") && !said.message.contains(code.rawValue), "\(code)")
        }
        // A detail naming a setting is never shown; the console's own sentence is.
        let unconfigured = Problem(
            code: .appStoreAPIUnconfigured, title: "t", status: 503, detail: "set PIER_SUBSCRIPTIONS_APPSTORE_KEY_FILE")
        #expect(!labels.problem(unconfigured, status: 503).message.contains("PIER_"))
        let other = Problem(code: "later_code", title: "t", status: 409, detail: "Set PIER_X first.")
        #expect(labels.problem(other, status: 409) == ("Refused", ""))
    }

    @Test func wordsReadAsPeopleSayThem() {
        #expect(labels(FeedbackStatus.inProgress) == "In progress")
        #expect(labels(Platform.ipados) == "iPad")
        #expect(labels(AuditAction.grantCreated) == "granted a plan")
        // A value of a later version is shown as it came, marked new.
        #expect(labels(FeedbackStatus(wire: "escalated")) == "“escalated” (new)")
        #expect(labels(Moderation?.none, none: "not reviewed") == "not reviewed")
    }

    @Test func periodsAreSaidInWords() {
        #expect(labels.period("P1M") == "every month")
        #expect(labels.period("P1Y") == "every year")
        #expect(labels.period("P3M") == "every 3 months")
        #expect(labels.period("P1W") == "every week")
        #expect(labels.period("PT5M") == "PT5M")
        #expect(labels.duration("P7D") == "7 days")
        #expect(labels.duration("P1M") == "1 month")
    }

    /// The audit log shows what changed alone, in words.
    @Test func anEntryShowsOnlyWhatChanged() {
        let before: JSONValue = .object(["status": .string("new"), "tags": .array([]), "internalNote": .null])
        let after: JSONValue = .object(["status": .string("in_progress"), "tags": .array([]), "internalNote": .string("seen")])
        let text = AuditScreens.change(before, after).text
        #expect(text.contains("Status: New → In progress"), "\(text)")
        #expect(text.contains("Internal note: none → seen"), "\(text)")
        #expect(!text.contains("Tags"), "\(text)")
        #expect(AuditScreens.change(nil, .object(["role": .string("admin")])).text == "<div>Role: Admin</div>")
        // Ids the row shows otherwise are left out; times are said as the console says them.
        let grant = AuditScreens.change(
            nil, .object(["id": .string("c4275"), "grantedBy": .string("6617e"), "endsAt": .string("2027-01-06T01:15:26Z")]))
        #expect(grant.text == "<div>Until: 2027-01-06 01:15 UTC</div>", "\(grant.text)")
    }

    /// A plugin's fields, which the console has no words for, read as words of their names.
    @Test func aPluginsFieldsReadAsWords() {
        #expect(Labels.english.field("rolloutPercent") == "Rollout percent")
        #expect(Labels.english.field("changed") == "Changed")
        #expect(Labels.english.field("billingPeriod") == "Billed")
        #expect(Labels.english.field("parameters[0].key") == "parameters[0].key")
        let published = AuditScreens.change(
            .object(["version": .number(3)]), .object(["version": .number(4), "changed": .array([.string("welcome")])]))
        #expect(published.text == "<div>Changed: welcome</div><div>Version: 3 → 4</div>", "\(published.text)")
    }
}

/// Saved replies' placeholders are filled in one pass: a value (a sender's name, say) is never
/// read again as a placeholder, whatever order the values come in.
@Suite struct SavedReplyFillTests {
    @Test func valuesAreNeverReadAgainAsPlaceholders() {
        let values = ["{name}": "{agent}", "{agent}": "Maya", "{first name}": "{name}"]
        #expect(FeedbackScreens.fill("Hi {name}, {first name}: {agent} here.", values) == "Hi {agent}, {name}: Maya here.")
        #expect(FeedbackScreens.fill("{unknown} {agent}{agent} {", values) == "{unknown} MayaMaya {")
        #expect(FeedbackScreens.fill("no braces", values) == "no braces")
    }
}
