import Foundation
import Testing

@testable import PierClient

/// What an app decodes from a server newer than itself, and the prices and periods it shows.
@Suite struct WireModelTests {
    @Test func valuesFromANewerServerDecodeAsUnknownAndWriteBackAsTheyCame() throws {
        let item = Data(
            #"""
            {"id":"7d0d2a52-91a3-4c43-a3a5-3a0f6b6f1f10","message":"m","category":"feature_request","status":"in_review",
             "platform":"harmonyos","moderation":"quarantined","requestIds":[],"metadata":{},
             "createdAt":"2026-12-01T10:00:00Z","updatedAt":"2026-12-01T10:00:00Z"}
            """#.utf8)
        let decoded = try Transport.decoder.decode(FeedbackItem.self, from: item)
        #expect(decoded.category == .unknown("feature_request") && decoded.category.isUnknown)
        #expect(decoded.status == .unknown("in_review") && decoded.status.next.isEmpty)
        #expect(decoded.platform == .unknown("harmonyos") && decoded.moderation == .unknown("quarantined"))
        let again = try Transport.decoder.decode(FeedbackItem.self, from: try Transport.encoder.encode(decoded))
        #expect(again == decoded && again.status.rawValue == "in_review")

        let known = try Transport.decoder.decode(
            FeedbackItem.self,
            from: Data(
                String(decoding: item, as: UTF8.self).replacingOccurrences(of: "feature_request", with: "idea")
                    .replacingOccurrences(of: "in_review", with: "in_progress").replacingOccurrences(of: "harmonyos", with: "ios")
                    .utf8))
        #expect(known.category == .idea && known.status == .inProgress && known.platform == .ios && !known.status.isUnknown)
        #expect(known.status == "in_progress")  // as the strings read before

        let user = Data(
            #"{"id":"7d0d2a52-91a3-4c43-a3a5-3a0f6b6f1f10","email":"a@example.com","role":"owner","createdAt":"2026-12-01T10:00:00Z","emailVerified":true}"#
                .utf8)
        let owner = try Transport.decoder.decode(User.self, from: user)
        #expect(owner.role == .unknown("owner") && !owner.role.isStaff)

        let status = Data(
            #"{"status":"paused","active":false,"entitlements":[],"willRenew":false,"source":"play_store","expirationReason":"family_left","offer":{"type":"loyalty"},"checkAgainAt":"2026-12-01T10:00:00Z"}"#
                .utf8)
        let paused = try Transport.decoder.decode(SubscriptionStatus.self, from: status)
        #expect(paused.status == .unknown("paused") && !paused.status.givesAccess && paused.source == .unknown("play_store"))
        #expect(paused.expirationReason == .unknown("family_left") && paused.offer?.type == .unknown("loyalty"))
    }

    /// What the server validates with takes only the values it knows.
    @Test func onlyKnownValuesAreAcceptedByName() {
        #expect(FeedbackStatus(rawValue: "in_progress") == .inProgress && FeedbackStatus(rawValue: "in_review") == nil)
        #expect(AccountRole(rawValue: "admin") == .admin && AccountRole(rawValue: "owner") == nil)
        #expect(FeedbackStatus.allCases.allSatisfy { FeedbackStatus(rawValue: $0.rawValue) == $0 })
        #expect(Platform.allCases.count == Set(Platform.allCases.map(\.rawValue)).count)
        #expect(SubscriptionState.allCases.filter(\.givesAccess) == [.active, .trialing, .gracePeriod])
    }

    /// Prices as people type them, in the currency's own decimals.
    /// Money as people type it: the console's decimal separator is a point, and nothing else is
    /// guessed (a comma or a space between groups is refused, never read as a thousand).
    @Test func pricesAreReadAsTyped() {
        let cents = { (text: String) in Price(typed: text, currency: "USD")?.minorUnits }
        #expect(cents("59.99") == 5999)
        #expect(cents("59") == 5900)
        #expect(cents("59.9") == 5990)
        #expect(cents("$ 59.99") == 5999)
        #expect(cents(" 59.99 usd ") == 5999)
        for wrong in [
            "", ".", "5.", ".5", "abc", "-1", "-5", "+5", "1e3", "2.495", "2,49", "1.234,56", "1,250.50", "1 250.50", "1,000",
            "4.999", "5.999.9", "4.9999", "59.99.99", "9999999999", "٥٩",
        ] {
            #expect(cents(wrong) == nil, "\(wrong)")
        }
        #expect(Price(typed: "500", currency: "JPY")?.minorUnits == 500)
        #expect(Price(typed: "¥500", currency: "JPY")?.minorUnits == 500)
        #expect(Price(typed: "5.5", currency: "JPY") == nil)
        #expect(Price(typed: "500.0", currency: "JPY") == nil)
        #expect(Price(typed: "1.250", currency: "KWD")?.minorUnits == 1250)
        #expect(Price(typed: "1.2505", currency: "KWD") == nil)
        #expect(Price(typed: "1,5", currency: "KWD") == nil)
    }

    @Test func pricesKeepTheirCurrencysDecimals() {
        #expect(Price(minorUnits: 499, currency: "usd").amount == Decimal(string: "4.99"))
        #expect(Price(minorUnits: 500, currency: "JPY").amount == 500)
        #expect(Price(minorUnits: 1250, currency: "KWD").amount == Decimal(string: "1.25"))
        #expect(Price(minorUnits: 1, currency: "CLF").amount == Decimal(string: "0.0001"))
        // Apple's milliunits: 4990 is 4.99 in any currency; 500000 is 500 yen.
        #expect(Price(milliunits: 4990, currency: "EUR") == Price(minorUnits: 499, currency: "EUR"))
        #expect(Price(milliunits: 500_000, currency: "JPY") == Price(minorUnits: 500, currency: "JPY"))
        #expect(Price(milliunits: 1_255, currency: "KWD") == Price(minorUnits: 1_255, currency: "KWD"))
        #expect(Price(milliunits: 4_995, currency: "USD")?.minorUnits == 500)  // half a cent rounds up
        #expect(Price(milliunits: Int.max, currency: "CLF") == nil)

        let plan = Plan(
            id: "pro", name: "Pro", description: "", price: 500, currency: "JPY", billingPeriod: "P3M", trialPeriod: "P1W",
            entitlements: ["pro"], appStoreProductIds: [], active: true)
        #expect(plan.amount.formatted(locale: Locale(identifier: "ja_JP")).contains("500"))
        #expect(!plan.amount.formatted(locale: Locale(identifier: "ja_JP")).contains("5.00"))
        #expect(Price(minorUnits: 499, currency: "USD").formatted(locale: Locale(identifier: "en_US")) == "$4.99")
        let euros = Price(minorUnits: 499, currency: "EUR").formatted(locale: Locale(identifier: "fr_FR"))
        #expect(euros.contains("4,99") && euros.contains("€"))
        #expect(Price(minorUnits: 1250, currency: "KWD").formatted(locale: Locale(identifier: "en_US")).contains("1.250"))
        #expect(plan.amount.description == "500 JPY" && Price(minorUnits: -5, currency: "USD").description == "-0.05 USD")
        #expect(Price(minorUnits: 1250, currency: "KWD").description == "1.250 KWD")
        #expect(plan.period == BillingPeriod(iso8601: "P3M") && plan.period.count == 3 && plan.period.unit == .month)
        #expect(plan.trial?.unit == .week && plan.trial?.count == 1)
        #expect(BillingPeriod(iso8601: "P1Y2M").unit == nil && BillingPeriod(iso8601: "P0D").unit == nil)
    }
}

/// The client's reading of server-sent events, as the specification frames them.
/// The links Pier mails, read as the app receives them (a universal link): the path's end and
/// the token, whatever the host or a prefix before the path.
@Suite struct MailedLinkTests {
    @Test func theFourLinksAreReadAndOthersAreNot() throws {
        let read: [(String, MailedLink?)] = [
            ("https://example.com/auth/email/verify?token=v1", .verifyEmail(token: "v1")),
            ("https://example.com/api/auth/password/reset?token=r%2B1", .resetPassword(token: "r+1")),
            ("https://example.com/auth/email/change/confirm?lang=en&token=c1", .confirmEmailChange(token: "c1")),
            ("https://example.com/auth/email/change/cancel?token=x1", .cancelEmailChange(token: "x1")),
            ("https://example.com/auth/email/verify", nil),
            ("https://example.com/auth/email/verify?token=", nil),
            ("https://example.com/auth/email/verify/resend?token=v1", nil),
            ("https://example.com/auth/password/forgot?token=v1", nil),
            ("https://example.com/pricing?token=v1", nil),
        ]
        for (text, expected) in read {
            #expect(MailedLink(try #require(URL(string: text))) == expected, "\(text)")
        }
    }
}

@Suite struct ServerSentEventParsingTests {
    @Test func messagesAreTakenWholeAsTheyComplete() {
        var buffer = Array("retry: 3000\nid: a1\nevent: status\ndata: {\"x\":1}\n\n: heartbeat \n\nid: b2\nda".utf8)
        #expect(
            ServerSentEvent.take(from: &buffer) == [
                ServerSentEvent(id: "a1", event: "status", data: #"{"x":1}"#, retry: 3000),
                ServerSentEvent(comments: ["heartbeat"]),
            ])
        // The rest waits for its end.
        #expect(String(decoding: buffer, as: UTF8.self) == "id: b2\nda")
        buffer += Array("ta: first\ndata:second\r\n\n".utf8)
        #expect(ServerSentEvent.take(from: &buffer) == [ServerSentEvent(id: "b2", data: "first\nsecond")])
        #expect(buffer.isEmpty)
        // A block without data has none (the client passes it over); a field without a value is empty.
        #expect(ServerSentEvent.parse("id: only\nevent: status").data == nil)
        #expect(ServerSentEvent.parse("data") == ServerSentEvent(data: ""))
        #expect(ServerSentEvent.parse(": heartbeat").isHeartbeat)
    }

    @Test func reconnectionsBackOffWithJitterAndComeBackAfterAMessage() {
        var backoff = LiveBackoff()
        let waits = (0..<8).map { _ in backoff.delay(after: nil) }
        #expect((0.5...1).contains(waits[0]) && (1...2).contains(waits[1]) && (2...4).contains(waits[2]))
        #expect(waits.allSatisfy { $0 <= LiveBackoff.longest })
        #expect((30...60).contains(waits[7]))
        #expect(backoff.delay(after: PierError(kind: .server, status: 429, detail: "limited", retryAfter: 7)) == 7)
        backoff.reset()
        #expect((0.5...1).contains(backoff.delay(after: nil)))
    }
}
