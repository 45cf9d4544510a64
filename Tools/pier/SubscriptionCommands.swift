import Foundation
import PierClient
import PierModels

/// `status`, `plans`: the signed-in user's subscription, and what is on sale.
enum SubscriptionCommands {
    static func run(_ command: String, _ arguments: inout Arguments, _ pier: PierClient, _ output: Output) async throws {
        let watch = command == "status" && arguments.flag("watch")
        try arguments.finish()
        switch command {
        case "status" where watch:
            // The live stream PierClient gives an app (`subscriptions.updates`): a line per change,
            // until interrupted or signed out.
            for await status in pier.subscriptions.updates {
                try output.show(status, printStatus)
                fflush(nil)  // every stream: a line per change, even into a pipe
            }
        case "status": try output.show(try await pier.subscriptions.status().value, printStatus)
        default: try output.show(ItemList(try await pier.subscriptions.plans())) { printPlans($0.items) }
        }
    }

    static func printStatus(_ status: SubscriptionStatus) {
        table(
            ["status", "plan", "entitlements", "until", "renews", "source"],
            [
                [
                    status.status.rawValue, status.plan?.name ?? "", status.entitlements.map(\.key).joined(separator: ","),
                    shortDate(status.currentPeriodEnd), status.willRenew ? "yes" : "no", status.source?.rawValue ?? "",
                ]
            ])
    }

    static func printPlans(_ plans: [Plan]) {
        table(
            ["id", "name", "price", "period", "entitlements", "app store", "google play", "active"],
            plans.map { plan in
                [
                    plan.id, plan.name, plan.amount.description, plan.billingPeriod,
                    plan.entitlements.joined(separator: ","), plan.appStoreProductIds.joined(separator: ","),
                    plan.googleProductIds.joined(separator: ","), plan.active ? "yes" : "no",
                ]
            })
    }
}
