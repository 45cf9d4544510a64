import PierCrypto
import PierHTTP
import PierIdentity
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
    let subscriptions: Subscriptions
    let verifier: AppStoreVerifier
    let reconciler: AppStoreReconciler
    let logger: Logger

    func transaction(_ request: Request, _ context: ServiceRequestContext, _ body: AppStoreTransactionRequest) async throws
        -> JSONResponse<SubscriptionStatus>
    {
        let principal = try context.caller()
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
        // The token names the caller, or an anonymous account merged into the caller's since.
        if let token = transaction.appAccountToken, UUID(text: token) != principal.userID {
            guard let named = UUID(text: token), try await subscriptions.account(named: named) == principal.userID else {
                throw HTTPError.forbidden("The transaction's appAccountToken belongs to another account.")
            }
        }
        guard case .recorded(let answer, let renewalKnown) = try await subscriptions.record(verified, for: principal.userID)
        else {
            throw HTTPError.conflict("This App Store subscription is already linked to another account.")
        }
        if !renewalKnown {
            // Its renewal state (auto-renew, billing retry, grace) is Apple's to tell: asked now,
            // after the answer, so the purchase never waits on Apple.
            reconciler.reconcileLater(transaction.originalTransactionId, environment: verified.environment)
        }
        logger.info(
            "appstore transaction recorded",
            [
                ("transaction_id", .string(transaction.transactionId)), ("environment", .string(verified.environment)),
            ])
        return StatusController.response(answer)
    }

    /// Stored (with the facts it carries) before the 200: Apple retries anything else.
    func notification(_ request: Request, _ context: ServiceRequestContext, _ body: AppStoreNotificationRequest)
        async throws -> EndpointReply<NoContent>
    {
        let verified:
            (
                notification: Verified<AppStoreNotification>, transaction: Verified<AppStoreTransaction>?,
                renewal: Verified<AppStoreRenewalInfo>?
            )
        do {
            verified = try await verifier.notification(body.signedPayload)
        } catch {
            // Kept for the team (what Apple, or someone posing as it, sent that did not verify).
            try? await subscriptions.refused(error.reason)
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
        let ignored: String? =
            if !Self.appliedTypes.contains(notification.notificationType) {
                "the \(notification.notificationType) type changes no status"
            } else {
                nil
            }
        let applies = ignored == nil
        let fresh = try await subscriptions.store(
            verified.notification, transaction: verified.transaction, renewal: verified.renewal, details: .object(details),
            ignored: ignored)
        logger.info(
            fresh ? "appstore notification stored" : "appstore notification repeated",
            [
                ("notification_type", .string(notification.notificationType)),
                ("subtype", .string(notification.subtype ?? "")),
                ("notification_uuid", .string(notification.notificationUUID.text())),
                ("applied", .bool(fresh && applies)),
            ])
        return EndpointReply(promised: Response(status: 200))
    }

    /// `GET /subscriptions/appstore/notifications?limit=N` (staff; 1–200, 50 by default): the
    /// newest notifications and what became of them, refused ones included.
    func recent(_ context: ServiceRequestContext, _ query: LimitQuery) async throws -> JSONResponse<
        ItemList<AppStoreNotificationEntry>
    > {
        JSONResponse(ItemList(try await subscriptions.recentNotifications(limit: query.limit ?? 50)))
    }

    /// `GET /subscriptions/subscribers` (staff): the accounts with access now, per plan.
    func subscribers(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<
        ItemList<PlanSubscribers>
    > {
        JSONResponse(ItemList(try await subscriptions.subscribers()))
    }

    /// `GET /subscriptions/stats/daily?days=N` (staff; 1–366, 30 by default): active
    /// subscriptions and introductory offers per plan at the end of each UTC day, conversions,
    /// cancellations and refunds per day.
    func daily(_ context: ServiceRequestContext, _ query: DaysQuery) async throws -> JSONResponse<SubscriptionDaily> {
        JSONResponse(try await subscriptions.daily(days: query.days ?? 30))
    }

    /// `POST /subscriptions/users/{userId}/appstore/refresh` (admins): every App Store
    /// subscription of the user read again from Apple; answers the user's status and facts.
    func refresh(_ context: ServiceRequestContext, _ user: UUID) async throws -> JSONResponse<SubscriptionHistory> {
        let admin = try context.caller()
        let outcome: AppStoreReconciler.Outcome
        do {
            outcome = try await reconciler.refresh(user: user)
        } catch .unconfigured {
            throw HTTPError(
                503, code: .appStoreAPIUnconfigured,
                detail:
                    "The App Store Server API is not configured: set PIER_SUBSCRIPTIONS_APPSTORE_KEY_FILE, _KEY_ID and _ISSUER_ID."
            )
        } catch .apple(.rateLimited(let seconds)) {
            throw HTTPError(
                503, code: .appStoreAPIFailed, detail: "Apple asked to wait before the next request.",
                headers: ["Retry-After": String(seconds)])
        } catch .apple(let failure) {
            throw HTTPError(502, code: .appStoreAPIFailed, detail: "The App Store Server API failed: \(failure).")
        } catch .database(let error) {
            throw error
        }
        logger.info(
            "appstore statuses refreshed",
            [
                ("user_id", .string(user.text())), ("by", .string(admin.userID.text())),
                ("subscriptions", .int(outcome.subscriptions)), ("transactions", .int(outcome.transactions)),
                ("refused", .int(outcome.refused)),
            ])
        return JSONResponse(try await subscriptions.history(of: user))
    }

    /// The notification types whose signed facts change a status; any other type (TEST,
    /// CONSUMPTION_REQUEST, types Apple adds later) is stored and acknowledged only.
    static let appliedTypes: Set<String> = [
        "SUBSCRIBED", "DID_RENEW", "DID_CHANGE_RENEWAL_STATUS", "DID_CHANGE_RENEWAL_PREF", "DID_FAIL_TO_RENEW",
        "GRACE_PERIOD_EXPIRED", "EXPIRED", "REFUND", "REFUND_REVERSED", "REVOKE", "RENEWAL_EXTENDED", "OFFER_REDEEMED",
        "PRICE_INCREASE",
    ]
}
