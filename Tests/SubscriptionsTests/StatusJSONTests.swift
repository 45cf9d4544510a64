import Foundation
import PierJSON
import PierModels
import Testing

@testable import SubscriptionsService

/// A subscription's status written member by member is the same JSON as the `Encodable` path,
/// byte for byte.
@Suite struct StatusJSONTests {
    func tree<T: Encodable>(_ value: T) throws -> String { String(decoding: try WireEncoder.encode(value), as: UTF8.self) }
    func written<T: JSONWritable>(_ value: T) -> String { String(decoding: JSON.write(value), as: UTF8.self) }

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
}
