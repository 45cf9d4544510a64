import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One user's history for the team: every fact recorded, in the words the API answers with.
extension SubscriptionFacts {
    /// Everything recorded about one user, oldest first, for admins.
    static func history(of user: UUID, on connection: any PostgresExecutor) async throws -> [SubscriptionFact] {
        var facts = try await grants(of: user, on: connection)
        for (kind, query) in stores(of: user) {
            for row in try await connection.query(query) {
                var details = try row.decode("details", as: PostgresJSON<[String: JSONValue]>.self).value
                if kind.hasPrefix("appstore.") { Self.inMinorUnits(&details) }
                facts.append(
                    SubscriptionFact(
                        kind: kind, reference: try row.decode("reference"), at: try row.decode("at"), details: details))
            }
        }
        return facts.sorted { ($0.at, $0.kind) < ($1.at, $1.kind) }
    }

    /// The team's grants of `user`, each with who granted it and when it was revoked or cancelled.
    static func grants(of user: UUID, on connection: any PostgresExecutor) async throws -> [SubscriptionFact] {
        var facts: [SubscriptionFact] = []
        for row in try await connection.query(
            """
            SELECT id, plan_id, starts_at, ends_at, reason, granted_by, created_at, revoked_at, cancelled_at
            FROM subscriptions.grants WHERE user_id = \(user)
            """)
        {
            var details: [String: JSONValue] = [
                "planId": .string(try row.decode("plan_id")), "reason": .string(try row.decode("reason")),
                "startsAt": .string(iso(try row.decode("starts_at"))), "endsAt": .string(iso(try row.decode("ends_at"))),
                "grantedBy": .string((try row.decode("granted_by", as: UUID.self)).text()),
            ]
            if let revoked = try row.decode("revoked_at", as: Date?.self) { details["revokedAt"] = .string(iso(revoked)) }
            if let cancelled = try row.decode("cancelled_at", as: Date?.self) { details["cancelledAt"] = .string(iso(cancelled)) }
            facts.append(
                SubscriptionFact(
                    kind: "grant", reference: (try row.decode("id", as: UUID.self)).text(),
                    at: try row.decode("created_at"), details: details))
        }
        return facts
    }

    /// The stores' facts about `user`: each kind's query, answering `reference`, `at` and
    /// `details` (JSON text).
    static func stores(of user: UUID) -> [(String, PostgresQuery)] {
        [
            (
                "appstore.transaction",
                """
                SELECT transaction_id AS reference, signed_date AS at, payload::text AS details
                FROM subscriptions.appstore_transactions WHERE (original_transaction_id, environment) IN (
                    SELECT original_transaction_id, environment FROM subscriptions.appstore_owners WHERE user_id = \(user))
                """
            ),
            (
                "appstore.renewal",
                """
                SELECT original_transaction_id AS reference, signed_date AS at, payload::text AS details
                FROM subscriptions.appstore_renewals WHERE (original_transaction_id, environment) IN (
                    SELECT original_transaction_id, environment FROM subscriptions.appstore_owners WHERE user_id = \(user))
                """
            ),
            (
                "appstore.notification",
                """
                SELECT notification_uuid::text AS reference, signed_date AS at,
                    jsonb_build_object('notificationType', notification_type, 'subtype', subtype,
                        'originalTransactionId', original_transaction_id, 'environment', environment)::text AS details
                FROM subscriptions.appstore_notifications WHERE (original_transaction_id, environment) IN (
                    SELECT original_transaction_id, environment FROM subscriptions.appstore_owners WHERE user_id = \(user))
                """
            ),
            (
                // Google's order id, what Google's support asks for; the token itself is the
                // purchase's secret: its first characters name it when there is no order yet.
                "googleplay.purchase",
                """
                SELECT coalesce(latest_order_id, left(purchase_token, 12) || '…') AS reference, read_at AS at,
                    jsonb_strip_nulls(jsonb_build_object('productId', product_id, 'basePlanId', base_plan_id,
                        'offerId', offer_id, 'state', state, 'startTime', start_time, 'expiryTime', expiry_time,
                        'autoRenew', auto_renew, 'trial', trial, 'testPurchase', test, 'acknowledged', acknowledged,
                        'price', price, 'currency', currency, 'pausedUntil', paused_until, 'revokedAt', revoked_at,
                        'superseded', superseded_by IS NOT NULL, 'orderId', latest_order_id, 'unreadable', unreadable,
                        -- A product no plan offers: the purchase gives nothing and is not acknowledged.
                        'offered', EXISTS (SELECT 1 FROM subscriptions.plans p WHERE product_id = ANY (p.google_product_ids)
                            OR product_id || ':' || coalesce(base_plan_id, '') = ANY (p.google_product_ids))))::text AS details
                FROM subscriptions.google_purchases WHERE user_id = \(user)
                """
            ),
            (
                "googleplay.notification",
                """
                SELECT n.message_id AS reference, n.received_at AS at,
                    jsonb_strip_nulls(jsonb_build_object('kind', n.kind, 'notificationType', n.notification_type,
                        'outcome', n.outcome, 'reason', n.reason))::text AS details
                FROM subscriptions.google_notifications n
                JOIN subscriptions.google_purchases g ON g.purchase_token = n.purchase_token
                WHERE g.user_id = \(user)
                """
            ),
        ]
    }

    static func iso(_ date: Date) -> String { date.postgresText }

    /// Apple's `price` and `renewalPrice` (milliunits) in the currency's minor units, as every
    /// price Pier answers is; one that is not a whole number in range is left out.
    static func inMinorUnits(_ details: inout [String: JSONValue]) {
        guard case .string(let currency)? = details["currency"] else { return }
        for key in ["price", "renewalPrice"] {
            guard let value = details[key] else { continue }
            let minor: Int? =
                if case .number(let number) = value, number.rounded() == number, abs(number) < 1e18 {
                    Price(milliunits: Int(number), currency: currency)?.minorUnits
                } else { nil }
            details[key] = minor.map { .number(Double($0)) }
        }
    }
}
