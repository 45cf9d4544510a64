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
}
