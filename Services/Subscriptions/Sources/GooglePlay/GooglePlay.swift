import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Google Play purchases: read from Google (never taken from the app or a notification alone),
/// bound to the account that made them, acknowledged, and read again whenever their state may
/// have moved. Each change publishes the owner's status (`subscription.updated`, live streams).
struct GooglePlay: Sendable {
    let api: GooglePlayAPI
    let subscriptions: Subscriptions
    let logger: Logger
    /// Wakes the worker (acknowledgements owed, purchases due) before its interval ends.
    let wakeup = Wakeup()

    enum Recorded: Sendable {
        case recorded(SubscriptionStatus)
        /// The purchase is bound to another account, or names another in its
        /// `obfuscatedExternalAccountId`.
        case ownedElsewhere
        /// Google says the token is a purchase of another product.
        case otherProduct(String)
    }

    /// The app's purchase: read from Google, checked against the caller, recorded and bound to them.
    func purchase(_ token: String, product: String, by user: UUID) async throws -> Recorded {
        let purchase = try await api.subscription(token)
        guard purchase.productID == product else { return .otherProduct(purchase.productID) }
        if let named = purchase.accountID.flatMap({ UUID(text: $0) }),
            try await subscriptions.account(named: named) != user
        {
            return .ownedElsewhere
        }
        let outcome: Recorded = try await subscriptions.database.withTransaction { connection in
            guard try await GooglePurchases.save(token, purchase, caller: user, on: connection) == user else {
                return .ownedElsewhere
            }
            return .recorded(try await subscriptions.publish(user, reason: "google_play", on: connection))
        }
        if !purchase.acknowledged { wakeup.wake() }
        return outcome
    }

    /// Reads `token` from Google again and records it; publishes its owner's status.
    @discardableResult
    func refresh(_ token: String, revoking: Bool = false) async throws -> UUID? {
        let purchase = try await api.subscription(token)
        return try await subscriptions.database.withTransaction { connection in
            var owner = try await GooglePurchases.save(token, purchase, caller: nil, on: connection)
            if revoking { owner = try await GooglePurchases.revoke(token, on: connection) }
            if let owner { try await subscriptions.publish(owner, reason: "google_play", on: connection) }
            return owner
        }
    }

    /// Every purchase of `user` read again from Google (a purchase Google no longer knows is
    /// skipped); answers how many were read.
    func refresh(user: UUID) async throws -> Int {
        var read = 0
        for token in try await GooglePurchases.tokens(of: user, on: subscriptions.database) {
            do {
                try await refresh(token)
                read += 1
            } catch GooglePlayAPI.Failure.notFound {
                continue
            }
        }
        return read
    }

    /// A notification, once per message id: stored with what became of it and, unless
    /// `ignored`, applied: the purchase as Google described it just now recorded, and revoked for
    /// a voided purchase or a revocation. False when the message was applied before.
    func follow(
        messageID: String, kind: String, type: Int?, token: String?, data: JSONValue, ignored: String?,
        purchase: GoogleSubscription?, revoking: Bool
    ) async throws -> Bool {
        try await subscriptions.database.withTransaction { connection in
            guard
                try await GooglePurchases.store(
                    messageID: messageID, kind: kind, type: type, token: token, ignored: ignored, data: data, on: connection)
            else { return false }
            guard ignored == nil, let token else { return true }
            var owner: UUID? = nil
            if let purchase { owner = try await GooglePurchases.save(token, purchase, caller: nil, on: connection) }
            if revoking { owner = try await GooglePurchases.revoke(token, on: connection) }
            if let owner { try await subscriptions.publish(owner, reason: "google_play", on: connection) }
            return true
        }
    }

    /// Marks a known purchase to be read again by the worker (Google could not be read now).
    func rereadLater(_ token: String) async {
        try? await GooglePurchases.rereadLater(token, on: subscriptions.database)
    }

    /// One round of the worker: acknowledgements owed, then purchases whose state may have moved.
    func round(quiet: Int) async {
        do {
            for (token, product) in try await GooglePurchases.acknowledgementsDue(limit: 50, on: subscriptions.database) {
                do {
                    try await api.acknowledge(product: product, purchaseToken: token)
                    try await GooglePurchases.acknowledged(token, on: subscriptions.database)
                    logger.info("google play purchase acknowledged", [("purchase", .string(Self.short(token)))])
                } catch let failure as GooglePlayAPI.Failure {
                    try await GooglePurchases.postpone(token, error: failure.description, on: subscriptions.database)
                    logger.warning(
                        "google play acknowledgement failed",
                        [("purchase", .string(Self.short(token))), ("error", .string(failure.description))])
                }
            }
            for token in try await GooglePurchases.due(limit: 50, quiet: quiet, on: subscriptions.database) {
                do {
                    try await refresh(token)
                } catch let failure as GooglePlayAPI.Failure {
                    logger.warning(
                        "google play purchase could not be read again",
                        [("purchase", .string(Self.short(token))), ("error", .string(failure.description))])
                    if failure == .notFound { continue }
                    break  // Google is away: the rest waits for the next round
                }
            }
        } catch {
            logger.error("google play round failed", [("error", .string("\(error)"))])
        }
    }

    /// What logs show of a purchase token (the whole one is a secret of the purchase).
    static func short(_ token: String) -> String { String(token.prefix(12)) + "…" }
}
