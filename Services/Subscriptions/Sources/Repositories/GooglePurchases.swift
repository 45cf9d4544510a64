import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The statements of Google Play purchases: each token as Google last described it, the account
/// it is bound to (never changed once bound, as an App Store subscription's link), the
/// acknowledgements owed, the notifications received.
enum GooglePurchases {
    /// Records what Google said of `token` and answers the account it is bound to. An unbound
    /// purchase is bound to `caller` (a purchase the app posts), else to the account its
    /// `obfuscatedExternalAccountId` names (the one it was merged into; never a deleted one),
    /// else to the owner of the token it replaces (`linkedPurchaseToken`), which it supersedes.
    /// A purchase granted and not acknowledged is queued for acknowledgement, when a plan offers
    /// its product: one that grants nothing is left unacknowledged, and Google refunds it.
    static func save(
        _ token: String, _ purchase: GoogleSubscription, caller: UUID?, on connection: any PostgresExecutor
    ) async throws -> Saved {
        let named = purchase.accountID.flatMap { UUID(text: $0) }
        let granted = [.active, .canceled, .inGracePeriod].contains(purchase.state) && !purchase.acknowledged
        let rows = try await connection.query(
            """
            WITH offered AS (
                SELECT EXISTS (SELECT 1 FROM subscriptions.plans p
                    WHERE \(purchase.productID) = ANY (p.google_product_ids)
                        OR \(purchase.productID) || ':' || \(purchase.basePlanID ?? "") = ANY (p.google_product_ids)) AS yes
            ), named AS (
                SELECT coalesce((SELECT into_user_id FROM subscriptions.merged_users WHERE user_id = \(named)), \(named)) AS id
            ), owner AS (
                SELECT coalesce(\(caller),
                    (SELECT n.id FROM named n
                     WHERE NOT EXISTS (SELECT 1 FROM subscriptions.deleted_users d WHERE d.user_id = n.id)),
                    (SELECT user_id FROM subscriptions.google_purchases WHERE purchase_token = \(purchase.linkedPurchaseToken)))
                    AS id
            ), superseded AS (
                UPDATE subscriptions.google_purchases SET superseded_by = \(token)
                WHERE purchase_token = \(purchase.linkedPurchaseToken) AND purchase_token <> \(token)
            ), owed AS (
                INSERT INTO subscriptions.google_acknowledgements (purchase_token, product_id)
                SELECT \(token), \(purchase.productID) FROM offered WHERE \(granted) AND offered.yes
                ON CONFLICT (purchase_token) DO NOTHING
            ), settled AS (
                DELETE FROM subscriptions.google_acknowledgements
                WHERE purchase_token = \(token) AND \(purchase.acknowledged)
            )
            INSERT INTO subscriptions.google_purchases AS g (purchase_token, user_id, product_id, base_plan_id, offer_id,
                state, start_time, expiry_time, auto_renew, trial, test, acknowledged, price, currency, paused_until,
                linked_purchase_token, latest_order_id, payload)
            SELECT \(token), o.id, \(purchase.productID), \(purchase.basePlanID), \(purchase.offerID),
                \(purchase.state.rawValue), \(purchase.startTime), \(purchase.expiryTime), \(purchase.autoRenew),
                \(purchase.trial), \(purchase.test), \(purchase.acknowledged), \(purchase.price.map(Int64.init)),
                \(purchase.currency), \(purchase.pausedUntil), \(purchase.linkedPurchaseToken), \(purchase.latestOrderID),
                -- Without the id the app set when it names a deleted account.
                CASE WHEN EXISTS (SELECT 1 FROM subscriptions.deleted_users d JOIN named n ON d.user_id = n.id)
                    THEN \(PostgresJSON(purchase.payload))::jsonb - 'externalAccountIdentifiers'
                    ELSE \(PostgresJSON(purchase.payload))::jsonb END
            FROM owner o
            ON CONFLICT (purchase_token) DO UPDATE SET
                user_id = coalesce(g.user_id, EXCLUDED.user_id), product_id = EXCLUDED.product_id,
                base_plan_id = EXCLUDED.base_plan_id, offer_id = EXCLUDED.offer_id, state = EXCLUDED.state,
                start_time = EXCLUDED.start_time, expiry_time = EXCLUDED.expiry_time, auto_renew = EXCLUDED.auto_renew,
                trial = EXCLUDED.trial, test = EXCLUDED.test, acknowledged = g.acknowledged OR EXCLUDED.acknowledged,
                price = EXCLUDED.price, currency = EXCLUDED.currency, paused_until = EXCLUDED.paused_until,
                linked_purchase_token = EXCLUDED.linked_purchase_token, latest_order_id = EXCLUDED.latest_order_id,
                payload = EXCLUDED.payload, read_at = now(), reread_at = NULL, unreadable = NULL,
                converted_at = CASE WHEN g.trial AND NOT EXCLUDED.trial AND EXCLUDED.state IN ('SUBSCRIPTION_STATE_ACTIVE',
                    'SUBSCRIPTION_STATE_CANCELED', 'SUBSCRIPTION_STATE_IN_GRACE_PERIOD') THEN coalesce(g.converted_at, now())
                    ELSE g.converted_at END
            RETURNING user_id, (SELECT yes FROM offered) AS offered
            """)
        return Saved(
            owner: try rows.first?.decode("user_id", as: UUID?.self),
            offered: try rows.first?.decode("offered", as: Bool.self) ?? false)
    }

    /// What ``save(_:_:caller:on:)`` recorded: the account the purchase is bound to, and whether
    /// a plan offers its product.
    struct Saved: Sendable {
        var owner: UUID?
        var offered: Bool
    }

    /// The purchase tokens bound to `user` that no newer token replaced.
    static func tokens(of user: UUID, on connection: any PostgresExecutor) async throws -> [String] {
        try await connection.query(
            """
            SELECT purchase_token FROM subscriptions.google_purchases
            WHERE user_id = \(user) AND superseded_by IS NULL ORDER BY created_at
            """
        ).map { try $0.decode("purchase_token") }
    }

    /// A voided purchase (refund, chargeback): no access from now on, whatever Google says of it
    /// later. Answers its owner.
    static func revoke(_ token: String, on connection: any PostgresExecutor) async throws -> UUID? {
        try await connection.query(
            """
            UPDATE subscriptions.google_purchases SET revoked_at = coalesce(revoked_at, now())
            WHERE purchase_token = \(token) RETURNING user_id
            """
        ).first?.decode("user_id", as: UUID?.self)
    }

    /// Marks a known purchase as one whose answer Pier cannot hold (`why`): the worker leaves
    /// it until a notification or support's refresh reads it again.
    static func markUnreadable(_ token: String, why: String, on connection: any PostgresExecutor) async throws {
        try await connection.execute(
            """
            UPDATE subscriptions.google_purchases SET unreadable = \(why), reread_at = NULL, read_at = now()
            WHERE purchase_token = \(token)
            """)
    }

    /// Whether a notification with this message id was stored before (then it is not followed again).
    static func isStored(messageID: String, on connection: any PostgresExecutor) async throws -> Bool {
        try await !connection.query(
            "SELECT 1 AS n FROM subscriptions.google_notifications WHERE message_id = \(messageID)"
        ).isEmpty
    }

    /// The order that paid for the purchase's current period, as last read from Google.
    static func currentOrder(of token: String, on connection: any PostgresExecutor) async throws -> String? {
        try await connection.query(
            "SELECT latest_order_id FROM subscriptions.google_purchases WHERE purchase_token = \(token)"
        ).first?.decode("latest_order_id", as: String?.self)
    }

    /// Marks a purchase to be read again (a notification that could not be followed now).
    static func rereadLater(_ token: String, on connection: any PostgresExecutor) async throws {
        try await connection.execute(
            "UPDATE subscriptions.google_purchases SET reread_at = now() WHERE purchase_token = \(token)")
    }

    /// Stores a notification once, by its Pub/Sub message id; false when it was stored before.
    static func store(
        messageID: String, kind: String, type: Int?, token: String?, ignored: Bool, reason: String?, data: JSONValue,
        on connection: any PostgresExecutor
    ) async throws -> Bool {
        try await !connection.query(
            """
            INSERT INTO subscriptions.google_notifications (message_id, kind, notification_type, purchase_token, outcome,
                reason, data)
            VALUES (\(messageID), \(kind), \(type.map(Int32.init)), \(token), \(ignored ? "ignored" : "applied"),
                \(reason), \(PostgresJSON(data))::jsonb)
            ON CONFLICT (message_id) DO NOTHING RETURNING 1 AS n
            """
        ).isEmpty
    }

    /// The newest `limit` notifications, newest first.
    static func recent(limit: Int, on connection: any PostgresExecutor) async throws -> [GoogleNotificationEntry] {
        try await connection.query(
            """
            SELECT n.received_at, n.message_id, n.kind, n.notification_type, n.outcome, n.reason,
                coalesce(g.latest_order_id, left(n.purchase_token, 12) || '…') AS purchase
            FROM subscriptions.google_notifications n
            LEFT JOIN subscriptions.google_purchases g ON g.purchase_token = n.purchase_token
            ORDER BY n.received_at DESC LIMIT \(Int64(limit))
            """
        ).map { row in
            GoogleNotificationEntry(
                receivedAt: try row.decode("received_at"), messageId: try row.decode("message_id"),
                kind: try row.decode("kind"), notificationType: try row.decode("notification_type", as: Int?.self),
                purchase: try row.decode("purchase", as: String?.self), outcome: try row.decode("outcome"),
                reason: try row.decode("reason", as: String?.self))
        }
    }

    /// Up to `limit` purchases whose state may have moved since Google was last asked: marked to
    /// be read again, or live (not revoked, not replaced) and past an expiry, a pause or a grace,
    /// and not read in the last `quiet` seconds.
    static func due(limit: Int, quiet: Int, on connection: any PostgresExecutor) async throws -> [String] {
        try await connection.query(
            """
            SELECT purchase_token FROM subscriptions.google_purchases
            WHERE superseded_by IS NULL AND revoked_at IS NULL AND unreadable IS NULL
                AND (reread_at IS NOT NULL
                    OR (state NOT IN ('SUBSCRIPTION_STATE_EXPIRED', 'SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED')
                        AND coalesce(paused_until, expiry_time, now()) <= now()
                        AND read_at < now() - make_interval(secs => \(Double(quiet)))))
            ORDER BY coalesce(reread_at, expiry_time) LIMIT \(Int64(limit))
            """
        ).map { try $0.decode("purchase_token") }
    }

    /// Acknowledgements due now, oldest first.
    static func acknowledgementsDue(limit: Int, on connection: any PostgresExecutor) async throws -> [(
        token: String, product: String
    )] {
        try await connection.query(
            """
            SELECT purchase_token, product_id FROM subscriptions.google_acknowledgements
            WHERE next_attempt_at <= now() ORDER BY next_attempt_at LIMIT \(Int64(limit))
            """
        ).map { (try $0.decode("purchase_token"), try $0.decode("product_id")) }
    }

    /// An acknowledgement done: off the outbox, the purchase marked.
    static func acknowledged(_ token: String, on connection: any PostgresExecutor) async throws {
        try await connection.execute(
            """
            WITH done AS (DELETE FROM subscriptions.google_acknowledgements WHERE purchase_token = \(token))
            UPDATE subscriptions.google_purchases SET acknowledged = true WHERE purchase_token = \(token)
            """)
    }

    /// An acknowledgement that failed: tried again later, a little later each time (at most an hour).
    static func postpone(_ token: String, error: String, on connection: any PostgresExecutor) async throws {
        try await connection.execute(
            """
            UPDATE subscriptions.google_acknowledgements SET attempts = attempts + 1, last_error = \(error),
                next_attempt_at = now() + make_interval(secs => least(3600, 10 * power(2, least(attempts, 12))))
            WHERE purchase_token = \(token)
            """)
    }
}
