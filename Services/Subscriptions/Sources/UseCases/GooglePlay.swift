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
        /// No plan offers the purchase's product: recorded for the team, bound to the caller,
        /// and not acknowledged (Google refunds it after three days).
        case notOffered(String)
    }

    /// The app's purchase: read from Google (once: the app retries), checked against the
    /// caller, recorded and bound to them.
    func purchase(_ token: String, product: String, by user: UUID) async throws -> Recorded {
        let purchase: GoogleSubscription
        do {
            purchase = try await api.subscription(token, once: true)
        } catch let failure {
            try await markIfUnreadable(token, failure)
            throw failure
        }
        guard purchase.productID == product else { return .otherProduct(purchase.productID) }
        if let named = purchase.accountID.flatMap({ UUID(text: $0) }),
            try await subscriptions.account(named: named) != user
        {
            return .ownedElsewhere
        }
        let outcome: Recorded = try await subscriptions.database.withTransaction { connection in
            let saved = try await GooglePurchases.save(token, purchase, caller: user, on: connection)
            guard saved.owner == user else { return .ownedElsewhere }
            guard saved.offered else { return .notOffered(purchase.productID) }
            return .recorded(try await subscriptions.publish(user, reason: "google_play", on: connection))
        }
        if !purchase.acknowledged, case .recorded = outcome { wakeup.wake() }
        return outcome
    }

    /// Reads `token` from Google again and records it; publishes its owner's status. A purchase
    /// Pier cannot hold is marked so (and the failure thrown).
    @discardableResult
    func refresh(_ token: String, revoking: Bool = false) async throws -> UUID? {
        let purchase: GoogleSubscription
        do {
            purchase = try await api.subscription(token)
        } catch let failure {
            try await markIfUnreadable(token, failure)
            throw failure
        }
        return try await subscriptions.database.withTransaction { connection in
            var owner = try await GooglePurchases.save(token, purchase, caller: nil, on: connection).owner
            if revoking { owner = try await GooglePurchases.revoke(token, on: connection) }
            if let owner { try await subscriptions.publish(owner, reason: "google_play", on: connection) }
            return owner
        }
    }

    /// A purchase Google described with a number Pier cannot hold is marked so: the worker
    /// leaves it until a notification or support reads it again.
    func markIfUnreadable(_ token: String, _ failure: GooglePlayAPI.Failure) async throws {
        guard case .unreadable(let why) = failure else { return }
        logger.warning(
            "google play purchase cannot be held", [("purchase", .string(Self.short(token))), ("error", .string(why))])
        try await GooglePurchases.markUnreadable(token, why: why, on: subscriptions.database)
    }

    /// Every purchase of `user` read again from Google (a purchase Google no longer knows, or
    /// one Pier cannot hold, is skipped); answers how many were read.
    func refresh(user: UUID) async throws -> Int {
        var read = 0
        for token in try await GooglePurchases.tokens(of: user, on: subscriptions.database) {
            do {
                try await refresh(token)
                read += 1
            } catch GooglePlayAPI.Failure.notFound {
                continue
            } catch GooglePlayAPI.Failure.unreadable {
                continue
            }
        }
        return read
    }

    /// What became of a notification.
    struct Outcome: Sendable {
        /// Stored only: nothing in it changes anything.
        var ignored: Bool
        /// Why (ignored), or what was left undone (applied).
        var reason: String?
        /// The purchase as Google described it just now, to record.
        var purchase: GoogleSubscription?
        var revoking: Bool
    }

    /// A notification, once per message id: stored with what became of it and, unless
    /// ignored, applied: the purchase as Google described it just now recorded, and revoked for
    /// a voided purchase or a revocation. False when the message was applied before.
    func follow(
        messageID: String, kind: String, type: Int?, token: String?, data: JSONValue, outcome: Outcome
    ) async throws -> Bool {
        try await subscriptions.database.withTransaction { connection in
            guard
                try await GooglePurchases.store(
                    messageID: messageID, kind: kind, type: type, token: token, ignored: outcome.ignored,
                    reason: outcome.reason, data: data, on: connection)
            else { return false }
            guard !outcome.ignored, let token else { return true }
            var owner: UUID? = nil
            if let purchase = outcome.purchase {
                owner = try await GooglePurchases.save(token, purchase, caller: nil, on: connection).owner
            }
            if outcome.revoking { owner = try await GooglePurchases.revoke(token, on: connection) }
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
                    if case .unreadable = failure { continue }
                    break  // Google is away, or asked to wait: the rest waits for the next round
                }
            }
        } catch {
            logger.error("google play round failed", [("error", .string("\(error)"))])
        }
    }

    /// What logs show of a purchase token (the whole one is a secret of the purchase).
    static func short(_ token: String) -> String { String(token.prefix(12)) + "…" }
}
