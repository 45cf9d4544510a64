import Foundation
import PierClient
import PierModels

/// `feedback send | list`: what a user of the app sends, and reads back.
enum FeedbackCommands {
    static func run(_ arguments: inout Arguments, _ pier: PierClient, _ output: Output) async throws {
        switch try arguments.next("send or list") {
        case "send":
            let message = try arguments.next("the message")
            let rating = try arguments.int("rating", in: 1...5)
            let category = arguments.option("category")
            let platform = arguments.option("platform")
            try arguments.finish()
            let item = try await pier.feedback.send(
                NewFeedback(message: message, rating: rating, category: category, platform: platform))
            try output.show(item) { print("Sent: \($0.id.uuidString.lowercased())") }
        case "list":
            let limit = try arguments.int("limit", in: 1...100)
            let cursor = arguments.option("cursor")
            try arguments.finish()
            try output.show(try await pier.feedback.mine(limit: limit ?? 20, cursor: cursor)) { page in
                printPage(page, admin: false)
                // The team's replies under the table, newest item first.
                for item in page.items {
                    for reply in item.replies ?? [] {
                        print("reply to \(item.id.uuidString.lowercased()) on \(shortDate(reply.createdAt)): \(reply.message)")
                    }
                }
            }
        case let other:
            throw CLIError.usage("unknown feedback command \"\(other)\"")
        }
    }

    /// A page as a table (the triage columns for the team), and how to get the next one.
    static func printPage(_ page: FeedbackPage, admin: Bool) {
        let headers =
            admin
            ? ["id", "created", "status", "category", "rating", "moderation", "message"]
            : ["id", "created", "status", "category", "rating", "message"]
        table(
            headers,
            page.items.map { item in
                let message = item.message.count > 60 ? String(item.message.prefix(59)) + "…" : item.message
                var row = [
                    item.id.uuidString.lowercased(), shortDate(item.createdAt), item.status.rawValue, item.category.rawValue,
                    item.rating.map(String.init) ?? "",
                ]
                if admin { row.append(item.moderation?.rawValue ?? "") }
                return row + [message.replacingOccurrences(of: "\n", with: " ")]
            })
        if let next = page.nextCursor { print("more: --cursor \(next)") }
    }
}
