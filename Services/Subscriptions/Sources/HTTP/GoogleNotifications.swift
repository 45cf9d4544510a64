import PierCrypto
import PierHTTP
import PierIdentity
import PierJSON
import PierModels
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension GooglePlayController {
    /// A Real-time developer notification, decoded.
    struct Notification: Sendable {
        var kind: String
        var type: Int?
        var token: String?
        /// A voided purchase's order (`orderId`): the one refunded.
        var order: String?
        /// Why it changes nothing, when it does not.
        var ignored: String?
        var revokes = false
        var data: JSONValue
    }

    /// `POST /subscriptions/google/notifications` (Cloud Pub/Sub push) → 204 once applied.
    /// Anything short of that (a token refused, Google unreachable) is not a 2xx, so Pub/Sub
    /// delivers the message again.
    func notification(_ request: Request, _ context: ServiceRequestContext, _ body: GooglePushRequest) async throws
        -> EndpointReply<NoContent>
    {
        guard let play, let push else { throw Self.unconfigured }
        try await authenticate(request, push)
        guard let messageID = body.message.messageId ?? body.message.message_id, !messageID.isEmpty,
            messageID.utf8.count <= 256, messageID.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { throw HTTPError.invalid("message.messageId", "must be Pub/Sub's message id") }
        let notification = try Self.decode(body.message.data, package: play.api.settings.package)
        // A message delivered again is answered from what was stored: Google is not asked twice.
        if try await GooglePurchases.isStored(messageID: messageID, on: database) {
            logger.info("google play notification repeated", [("message_id", .string(messageID))])
            return .noContent()
        }
        let outcome = try await outcome(of: notification, play: play)
        let fresh = try await play.follow(
            messageID: messageID, kind: notification.kind, type: notification.type, token: notification.token,
            data: notification.data, outcome: outcome)
        logger.info(
            fresh ? "google play notification applied" : "google play notification repeated",
            [
                ("message_id", .string(messageID)), ("kind", .string(notification.kind)),
                ("type", .int(notification.type ?? 0)), ("ignored", .bool(outcome.ignored)),
                ("reason", .string(outcome.reason ?? "")),
            ])
        return .noContent()
    }

    /// What to do with a notification: the purchase it names read from Google (a subscription
    /// notification's and a voided purchase's), and a voided purchase revoked when its order paid
    /// for the current period. Google knowing no such token, or describing a purchase Pier cannot
    /// hold, is final (stored, acknowledged); Google unreachable is not (thrown: Pub/Sub retries).
    private func outcome(of notification: Notification, play: GooglePlay) async throws -> GooglePlay.Outcome {
        var outcome = GooglePlay.Outcome(
            ignored: notification.ignored != nil, reason: notification.ignored, purchase: nil, revoking: notification.revokes)
        guard !outcome.ignored, let token = notification.token else { return outcome }
        do {
            outcome.purchase = try await play.api.subscription(token)
        } catch .notFound {
            // A voided purchase Google no longer shows is still revoked below.
            if notification.kind == "subscription" {
                return .init(ignored: true, reason: "Google knows no such purchase", revoking: false)
            }
        } catch let failure {
            if case .unreadable(let why) = failure {
                try await play.markIfUnreadable(token, failure)
                return .init(ignored: true, reason: why, revoking: false)
            }
            await play.rereadLater(token)
            logger.warning("google play notification could not be followed", [("error", .string(failure.description))])
            throw Self.failed(failure)
        }
        if notification.kind == "voided", let order = notification.order {
            var current = outcome.purchase?.latestOrderID
            if current == nil { current = try await GooglePurchases.currentOrder(of: token, on: database) }
            if let current, current != order {
                // A refund of an earlier renewal: the current period was paid by another order.
                outcome.revoking = false
                outcome.reason = "a refund of order \(order), not of \(current), which pays for the current period"
            }
        }
        return outcome
    }

    /// The push's OIDC token: Google's, for the configured audience, signed as the configured
    /// service account.
    private func authenticate(
        _ request: Request, _ push: (verifier: IdentityTokenVerifier, serviceAccount: String)
    ) async throws {
        guard let header = request.headers["Authorization"], header.hasPrefix("Bearer "), header.count > 7 else {
            throw HTTPError.unauthorized(
                "A push needs Google's OIDC token (Authorization: Bearer).", code: .authenticationRequired)
        }
        do {
            _ = try await push.verifier.verify(String(header.dropFirst(7)), .serviceAccount(email: push.serviceAccount))
        } catch .invalid(let why) {
            logger.info("google play push refused", [("reason", .string(why))])
            throw HTTPError.unauthorized("The push token was refused: \(why).", code: .tokenInvalid)
        } catch .unavailable(let why) {
            throw HTTPError.unavailable(retryAfter: 30, "Google's keys cannot be read now: \(why).")
        }
    }

    /// Reads the base64 JSON of a developer notification.
    static func decode(_ data: String?, package: String) throws(HTTPError) -> Notification {
        guard let data, let bytes = Base64.decoded(data),
            let json = try? WireDecoder.decode(JSONValue.self, from: bytes), let object = json.objectValue
        else { throw .invalid("message.data", "must be a developer notification (base64 JSON)") }
        var notification = Notification(kind: "other", data: json)
        if let inner = object["subscriptionNotification"]?.objectValue {
            notification.kind = "subscription"
            notification.type = inner["notificationType"].flatMap(Self.integer)
            notification.token = inner["purchaseToken"]?.stringValue
            notification.revokes = notification.type == 12  // SUBSCRIPTION_REVOKED
        } else if let inner = object["voidedPurchaseNotification"]?.objectValue {
            notification.kind = "voided"
            notification.token = inner["purchaseToken"]?.stringValue
            notification.order = inner["orderId"]?.stringValue
            notification.revokes = inner["productType"].flatMap(Self.integer) == 1
            if !notification.revokes { notification.ignored = "a one-time product's voided purchase" }
        } else if object["testNotification"] != nil {
            notification.kind = "test"
            notification.ignored = "a test notification"
        } else {
            notification.ignored = "a notification of a kind Pier does not follow (one-time products)"
        }
        if object["packageName"]?.stringValue != package {
            notification.ignored = "for another app than \(package)"
        } else if notification.ignored == nil, !(notification.token.map(isPurchaseToken) ?? false) {
            throw .invalid("message.data", "holds no valid purchaseToken")
        }
        return notification
    }

    /// A whole number, as JSON or as a decimal string (Google writes both).
    static func integer(_ value: JSONValue) -> Int? {
        switch value {
        case .number(let number): number.rounded() == number && abs(number) < 1e9 ? Int(number) : nil
        case .string(let text): Int(text)
        default: nil
        }
    }
}
