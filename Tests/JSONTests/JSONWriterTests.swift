import Foundation
import PierModels
import Testing

@testable import PierJSON

/// The writer that wire types write themselves with is the same JSON as the `Encodable` path,
/// byte for byte: the answers clients get do not change with the path taken.
@Suite struct JSONWriterTests {
    func tree<T: Encodable>(_ value: T) throws -> String { String(decoding: try WireEncoder.encode(value), as: UTF8.self) }
    func written<T: JSONWritable>(_ value: T) -> String { String(decoding: JSON.write(value), as: UTF8.self) }

    static let awkward = [
        "", "plain", "quote \" backslash \\ slash /", "new\nline\r\ttab", "bell \u{07} nul \u{00} unit \u{1F} del \u{7F}",
        "é 😀 \u{2028} \u{202E}", String(repeating: "x", count: 300) + "\"",
    ]

    static func item(_ n: Int, admin: Bool) -> FeedbackItem {
        var generator = SystemRandomNumberGenerator()
        let text = awkward[n % awkward.count]
        return FeedbackItem(
            id: UUID(), message: "message \(n) " + text, rating: n % 3 == 0 ? nil : n % 5 + 1, category: .bug,
            status: .new, duplicateOf: n % 4 == 0 ? UUID() : nil, appVersion: n % 2 == 0 ? "2.3.\(n)" : nil,
            build: n % 3 == 0 ? text : nil, platform: .ios, osVersion: n % 2 == 1 ? "18.1" : nil, device: text,
            locale: n % 5 == 0 ? nil : "fr-CA", requestIds: n % 2 == 0 ? [] : ["r-\(n)", text],
            metadata: n % 3 == 0
                ? [:]
                : [
                    "screen": .string(text), "count": .number(Double(n)), "ratio": .number(0.25), "big": .number(1e20),
                    "flags": .array([.bool(true), .null, .object(["z": .string("last"), "a": .number(-3)])]),
                ],
            createdAt: Date(timeIntervalSince1970: Double(generator.next() % 4_000_000_000) + 0.999_999),
            updatedAt: Date(timeIntervalSince1970: -Double(generator.next() % 60_000_000_000) - 0.5),
            userId: admin && n % 2 == 0 ? UUID() : nil, name: admin ? text : nil, email: admin ? "a\(n)@example.com" : nil,
            moderation: admin ? .pending : nil, tags: admin ? (n % 2 == 0 ? [] : ["x", text]) : nil,
            internalNote: admin && n % 3 == 1 ? text : nil,
            history: admin && n % 4 == 1
                ? [
                    FeedbackChange(
                        actor: UUID(), changedAt: Date(timeIntervalSince1970: 1_764_547_200),
                        changes: [
                            "status": .init(from: .string("new"), to: .string("triaged")),
                            "tags": .init(from: .array([]), to: .null),
                        ])
                ] : nil)
    }

    /// An idempotency key's request hash is of this output: it stays the encoder's, byte for byte.
    @Test func aSentFeedbackIsWrittenAsEncodableWritesIt() throws {
        for (n, text) in Self.awkward.enumerated() {
            let full = CreateFeedback(
                id: UUID(), message: text, name: text, rating: n, category: "bug", email: "a@example.com", appVersion: "1",
                build: text, platform: "ios", osVersion: "18", device: text, locale: "fr", requestIds: [text, "r"],
                metadata: ["k": .string(text), "n": .number(Double(n) + 0.5)])
            #expect(written(full) == (try tree(full)))
            let bare = CreateFeedback(message: text, requestIds: n % 2 == 0 ? [] : nil, metadata: n % 2 == 0 ? [:] : nil)
            #expect(written(bare) == (try tree(bare)))
        }
    }

    @Test func itemsAndPagesAreWrittenAsEncodableWritesThem() throws {
        for n in 0..<60 {
            for admin in [false, true] {
                let item = Self.item(n, admin: admin)
                #expect(written(item) == (try tree(item)), "item \(n) admin \(admin)")
            }
        }
        let items = (0..<25).map { Self.item($0, admin: $0 % 2 == 0) }
        for page in [
            FeedbackPage(items: items), FeedbackPage(items: [], nextCursor: "djE6MTIz", total: 0),
            FeedbackPage(items: items, nextCursor: "next", total: 1_000_000),
        ] {
            #expect(written(page) == (try tree(page)))
        }
        #expect(written(ItemList(items)) == (try tree(ItemList(items))))
        // JSON.encode takes the writer for a writable value: the same bytes either way.
        #expect(try JSON.encode(items[3]) == WireEncoder.encode(items[3]))
    }

    @Test func subscriptionStatusesAreWrittenAsEncodableWritesThem() throws {
        let plan = PlanReference(id: "pro-monthly", name: "Pro \"monthly\" é")
        let date = Date(timeIntervalSince1970: 1_764_547_200.25)
        let bare = SubscriptionStatus(
            status: .none, active: false, plan: nil, entitlements: [], currentPeriodStart: nil, currentPeriodEnd: nil,
            graceUntil: nil, willRenew: false, source: nil, environment: nil, checkAgainAt: date)
        var full = SubscriptionStatus(
            status: .trialing, active: true, plan: plan,
            entitlements: [Entitlement(key: "pro", expiresAt: date), Entitlement(key: "pro.export", expiresAt: .distantFuture)],
            currentPeriodStart: Date(timeIntervalSince1970: 0), currentPeriodEnd: date, graceUntil: date, willRenew: true,
            source: .appstore, environment: "sandbox",
            offer: SubscriptionOffer(type: .introductory, discountType: "free_trial", identifier: "intro-1"), checkAgainAt: date)
        full.renewsTo = PlanReference(id: "pro-yearly", name: "Pro yearly")
        full.expirationReason = .billingError
        full.priceIncrease = .pending
        full.price = 4990
        full.currency = "EUR"
        full.familyShared = false
        full.revocation = SubscriptionRevocation(reason: "other", type: "refund_full")
        var partial = full
        partial.offer = SubscriptionOffer(type: .promotional)
        partial.expirationReason = .unknown("a reason of a later version")  // written back as it came
        partial.revocation = SubscriptionRevocation(reason: "app_issue")
        partial.familyShared = true
        partial.plan = nil
        for status in [bare, full, partial] {
            #expect(written(status) == (try tree(status)))
        }
        for entitlement in [
            EntitlementStatus(key: "pro", active: true, expiresAt: date),
            EntitlementStatus(key: "x", active: false, expiresAt: nil),
        ] {
            #expect(written(entitlement) == (try tree(entitlement)))
        }
    }

    @Test func valuesAreFormattedInPlaceAsTheEncoderFormatsThem() throws {
        struct Box<T: Encodable>: Encodable { var value: T }
        func check(_ value: JSONValue) throws {
            var writer = JSONWriter()
            writer.write(value)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == (try tree(value)), "\(value)")
        }
        for number in [0, 1, -1, 42, -9_007_199_254_740_991, 1e15 - 1, 1e15, 1e300, 0.1, -2.5, 123_456_789.125] {
            try check(.number(number))
        }
        for text in Self.awkward { try check(.string(text)) }
        // Each character that needs escaping, at every offset around the eight-byte scan, and
        // bytes near them that do not (0x20, '!', '#', '[', ']', DEL, UTF-8 continuation bytes).
        for special in ["\"", "\\", "\n", "\u{00}", "\u{1F}", "\u{01}"] {
            for offset in 0..<20 { try check(.string(String(repeating: "a", count: offset) + special + "tail")) }
        }
        for near in [" ", "!", "#", "[", "]", "\u{7F}", "é", "😀"] {
            try check(.string(String(repeating: near, count: 19)))
        }
        try check(.object([:]))
        try check(.array([]))
        try check(.object(["b": .null, "a": .bool(false), "B": .array([.string("x")]), "é": .number(2)]))
        // Integers across the range, dates across the years, ids.
        for integer in [0, 7, -7, 10, 99, 100, Int.max, Int.min, Int(Int32.max)] {
            var writer = JSONWriter()
            writer.write(integer)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == String(integer))
        }
        for seconds in [
            0, -0.5, 1_764_547_200.999, -62_135_596_800, -62_135_596_801, 253_402_300_799.5, 253_402_300_800, 951_782_400,
        ] {
            let date = Date(timeIntervalSince1970: seconds)
            var writer = JSONWriter()
            writer.write(date)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == (try tree(date)), "\(seconds)")
        }
        for _ in 0..<100 {
            let id = UUID()
            var writer = JSONWriter()
            writer.write(id)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == "\"\(id.uuidString.lowercased())\"")
        }
    }

    /// The writer owns its memory and grows it: from the smallest start, through many
    /// doublings and one write far larger than all before, nothing written is lost or moved.
    @Test func theBufferGrowsWithoutLosingAByte() throws {
        let texts = (0..<300).map { index in String(repeating: index % 7 == 0 ? "\"é\n" : "ab", count: index) }
        let large = String(repeating: "x\u{01}", count: 40_000)
        var writer = JSONWriter(capacity: 1)
        writer.beginArray()
        for text in texts {
            writer.element()
            writer.write(text)
        }
        writer.element()
        writer.write(large)
        writer.endArray()
        #expect(String(decoding: writer.bytes, as: UTF8.self) == (try tree(texts + [large])))
    }

    /// Commas fall where they belong whatever is left out, nested or not.
    @Test func commasFollowWhatIsWritten() {
        let a = JSONKey("a"), b = JSONKey("b"), c = JSONKey("c")
        var writer = JSONWriter()
        writer.beginObject()
        writer.member(a, ifPresent: String?.none)
        writer.member(b)
        writer.beginArray()
        writer.element()
        writer.beginObject()
        writer.endObject()
        writer.element()
        writer.write(["x"])
        writer.endArray()
        writer.member(c, ifPresent: 3)
        writer.endObject()
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #"{"b":[{},["x"]],"c":3}"#)
    }
}
