import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `/subscriptions/appstore`: signed transactions from apps and notifications from Apple.
struct AppStoreController: Sendable {
    let repository: SubscriptionsRepository
    let verifier: AppStoreVerifier
    let logger: Logger

    func transaction(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let principal = try context.caller()
        let body = try request.decodeStrictly(AppStoreTransactionRequest.self)
        let verified: Verified<AppStoreTransaction>
        do {
            verified = try await verifier.transaction(body.signedTransaction)
        } catch {
            throw HTTPError.invalid("signedTransaction", error.reason)
        }
        let transaction = verified.value
        guard transaction.type == AppStoreTransaction.autoRenewable else {
            throw HTTPError.invalid(
                "signedTransaction", "is a \(transaction.type) transaction; only auto-renewable subscriptions are tracked")
        }
        if let token = transaction.appAccountToken, UUID(text: token) != principal.userID {
            throw HTTPError.forbidden("The transaction's appAccountToken belongs to another account.")
        }
        guard case .recorded(let answer) = try await repository.record(verified, for: principal.userID) else {
            throw HTTPError.conflict("This App Store subscription is already linked to another account.")
        }
        logger.info(
            "appstore transaction recorded",
            [
                ("transaction_id", .string(transaction.transactionId)), ("environment", .string(verified.environment)),
                ("request_id", .string(request.requestID)),
            ])
        return try StatusController.response(answer)
    }

    /// Stored (with the facts it carries) before the 200: Apple retries anything else.
    func notification(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let body = try request.decodeStrictly(AppStoreNotificationRequest.self)
        let verified:
            (
                notification: Verified<AppStoreNotification>, transaction: Verified<AppStoreTransaction>?,
                renewal: Verified<AppStoreRenewalInfo>?
            )
        do {
            verified = try await verifier.notification(body.signedPayload)
        } catch {
            throw HTTPError.invalid("signedPayload", error.reason)
        }
        let notification = verified.notification.value
        // What the notification says beside the signed data; the signed blobs are recorded as
        // the facts they carry, not twice.
        var details = verified.notification.payload.objectValue ?? [:]
        for key in ["notificationType", "subtype", "notificationUUID", "signedDate"] { details[key] = nil }
        if var inner = details["data"]?.objectValue {
            inner["signedTransactionInfo"] = nil
            inner["signedRenewalInfo"] = nil
            details["data"] = .object(inner)
        }
        let applies =
            Self.appliedTypes.contains(notification.notificationType)
            && verified.notification.environment != AppStoreVerifier.unknownEnvironment
        let fresh = try await repository.store(
            verified.notification, transaction: verified.transaction, renewal: verified.renewal, details: .object(details),
            applies: applies)
        logger.info(
            fresh ? "appstore notification stored" : "appstore notification repeated",
            [
                ("notification_type", .string(notification.notificationType)),
                ("subtype", .string(notification.subtype ?? "")),
                ("notification_uuid", .string(notification.notificationUUID.text())),
                ("applied", .bool(fresh && applies)),
            ])
        return Response(status: 200)
    }

    /// The notification types whose signed facts change a status; any other type (TEST,
    /// CONSUMPTION_REQUEST, types Apple adds later) is stored and acknowledged only.
    static let appliedTypes: Set<String> = [
        "SUBSCRIBED", "DID_RENEW", "DID_CHANGE_RENEWAL_STATUS", "DID_CHANGE_RENEWAL_PREF", "DID_FAIL_TO_RENEW",
        "GRACE_PERIOD_EXPIRED", "EXPIRED", "REFUND", "REFUND_REVERSED", "REVOKE", "RENEWAL_EXTENDED", "OFFER_REDEEMED",
        "PRICE_INCREASE",
    ]
}
