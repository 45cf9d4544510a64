import Foundation

/// App Store payloads as Apple shapes them (dates in milliseconds).
public enum AppStorePayload {
    /// The app the test payloads are of.
    public static let bundleID = "dev.pier.tests"
    public static let appAppleID = 1_234_567_890

    public static func ms(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

    public static func transaction(
        id: String, original: String, product: String = "pier.pro.monthly", purchased: Date, expires: Date,
        signed: Date = Date(), revoked: Date? = nil, user: UUID? = nil, environment: String = "Sandbox",
        bundle: String = AppStorePayload.bundleID, offerType: Int? = nil,
        type: String = "Auto-Renewable Subscription"
    ) -> [String: Any] {
        var payload: [String: Any] = [
            "transactionId": id, "originalTransactionId": original, "webOrderLineItemId": id + "0", "bundleId": bundle,
            "productId": product, "subscriptionGroupIdentifier": "21000000", "purchaseDate": ms(purchased),
            "originalPurchaseDate": ms(purchased), "expiresDate": ms(expires), "quantity": 1, "type": type,
            "inAppOwnershipType": "PURCHASED", "signedDate": ms(signed), "environment": environment, "storefront": "USA",
            "storefrontId": "143441", "transactionReason": "PURCHASE", "price": 4990, "currency": "USD",
        ]
        if let revoked {
            payload["revocationDate"] = ms(revoked)
            payload["revocationReason"] = 0
        }
        if let user { payload["appAccountToken"] = user.uuidString.lowercased() }
        if let offerType { payload["offerType"] = offerType }
        return payload
    }

    public static func renewal(
        original: String, autoRenew: Bool = true, signed: Date = Date(), billingRetry: Bool = false, graceUntil: Date? = nil,
        environment: String = "Sandbox"
    ) -> [String: Any] {
        var payload: [String: Any] = [
            "originalTransactionId": original, "autoRenewProductId": "pier.pro.monthly", "productId": "pier.pro.monthly",
            "autoRenewStatus": autoRenew ? 1 : 0, "isInBillingRetryPeriod": billingRetry, "signedDate": ms(signed),
            "environment": environment, "recentSubscriptionStartDate": ms(signed),
        ]
        if let graceUntil { payload["gracePeriodExpiresDate"] = ms(graceUntil) }
        return payload
    }

    public static func notification(
        _ type: String, subtype: String? = nil, uuid: UUID = UUID(), signed: Date = Date(), transaction: String?,
        renewal: String?, environment: String = "Sandbox", bundle: String = AppStorePayload.bundleID,
        appAppleID: Int = AppStorePayload.appAppleID
    ) -> [String: Any] {
        var data: [String: Any] = [
            "appAppleId": appAppleID, "bundleId": bundle, "bundleVersion": "42", "environment": environment, "status": 1,
        ]
        if let transaction { data["signedTransactionInfo"] = transaction }
        if let renewal { data["signedRenewalInfo"] = renewal }
        var payload: [String: Any] = [
            "notificationType": type, "notificationUUID": uuid.uuidString.lowercased(), "version": "2.0",
            "signedDate": ms(signed), "data": data,
        ]
        if let subtype { payload["subtype"] = subtype }
        return payload
    }
}
