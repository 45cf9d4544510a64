import Foundation
import PierJSON
import PierModels
import Testing

@testable import FeedbackService

/// Feedback's wire types written member by member are the same JSON as the `Encodable` path,
/// byte for byte: the answers clients get do not change with the path taken.
@Suite struct FeedbackJSONTests {
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

    /// An idempotency key's request hash is of every field `CreateFeedback` declares, read from
    /// the type: two submissions that differ in any one field hash apart (a field added to the
    /// type without a variant here fails the first expectation), and one submission spelled
    /// otherwise (`feedback` for `message`, members in another order) hashes the same.
    @Test func theRequestHashCoversEveryDeclaredField() throws {
        let base = CreateFeedback(
            id: UUID(), message: "m", name: "n", rating: 3, category: "bug", email: "a@example.com", appVersion: "1",
            build: "b", platform: "ios", osVersion: "18", device: "d", locale: "fr", requestIds: ["r"],
            metadata: ["k": .string("v"), "n": .number(1)])
        let variants: [String: @Sendable (inout CreateFeedback) -> Void] = [
            "id": { $0.id = nil }, "message": { $0.message = "m " }, "name": { $0.name = "n2" }, "rating": { $0.rating = 4 },
            "category": { $0.category = "idea" }, "email": { $0.email = nil }, "appVersion": { $0.appVersion = "1.0" },
            "build": { $0.build = "b2" }, "platform": { $0.platform = "android" }, "osVersion": { $0.osVersion = "17" },
            "device": { $0.device = "e" }, "locale": { $0.locale = "de" }, "requestIds": { $0.requestIds = [] },
            "metadata": { $0.metadata?["n"] = .string("1") },
        ]
        #expect(Set(variants.keys) == Set(Mirror(reflecting: base).children.compactMap(\.label)))
        let hash = CanonicalForm.bytes(of: base)
        for (field, change) in variants {
            var other = base
            change(&other)
            #expect(CanonicalForm.bytes(of: other) != hash, "\(field) is not in the request hash")
        }
        let one = try JSONDecoder().decode(
            CreateFeedback.self, from: Data(#"{"feedback":"m","metadata":{"a":1,"b":"x"},"requestIds":["p","q"]}"#.utf8))
        let same = try JSONDecoder().decode(
            CreateFeedback.self, from: Data(#"{"requestIds":["p","q"],"metadata":{"b":"x","a":1},"message":"m"}"#.utf8))
        #expect(CanonicalForm.bytes(of: one) == CanonicalForm.bytes(of: same))
        let reordered = try JSONDecoder().decode(
            CreateFeedback.self, from: Data(#"{"message":"m","metadata":{"a":1,"b":"x"},"requestIds":["q","p"]}"#.utf8))
        #expect(CanonicalForm.bytes(of: one) != CanonicalForm.bytes(of: reordered), "a list's order is its meaning")
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
}
