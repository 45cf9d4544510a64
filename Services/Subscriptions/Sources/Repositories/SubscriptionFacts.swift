import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The statements of the facts a status is computed from (App Store transactions, renewal
/// infos, notifications, owners; grants as a source). Every recording is an upsert that a newer
/// signed fact wins: facts may arrive in any order, any number of times.
enum SubscriptionFacts {
    /// Every source of one user in one statement: grants, and per App Store subscription the
    /// transaction that decides it with its renewal info. Among the transactions giving access
    /// now, the latest purchase decides: an upgrade (a new transaction of a higher level, in the
    /// same subscription) takes over at once, before Apple re-signs the old one with `isUpgraded`,
    /// which then never decides again. Without one giving access, the latest to end.
    ///
    /// Production and sandbox are apart: one source per group *and environment*, so a sandbox
    /// purchase (App Review's, a tester's) never stands in for the production subscription of the
    /// same group. Sandbox facts count only while `sandbox` is true.
    static func sourcesQuery(user: UUID, at now: Date, sandbox: Bool = true, googleTests: Bool = true) -> PostgresQuery {
        """
        SELECT 'grant' AS kind, g.id::text AS reference, p.id AS plan_id, p.name AS plan_name, p.entitlements,
            g.starts_at AS period_start, g.ends_at AS period_end, g.revoked_at IS NOT NULL AS revoked,
            NULL::timestamptz AS grace_until, false AS billing_retry, false AS will_renew, false AS trial, NULL::text AS environment,
            NULL::int AS offer_type, NULL::text AS offer_discount_type, NULL::text AS offer_identifier,
            NULL::text AS renews_to_id, NULL::text AS renews_to_name, NULL::int AS expiration_intent,
            NULL::text AS price_increase, NULL::text AS price, NULL::text AS currency, NULL::text AS ownership,
            NULL::int AS revocation_reason, NULL::text AS revocation_type, NULL::text AS google_state,
            NULL::timestamptz AS resumes_at
        FROM subscriptions.grants g JOIN subscriptions.plans p ON p.id = g.plan_id
        WHERE g.user_id = \(user)
        UNION ALL
        -- One subscription group, one source per environment: Apple keeps one subscription of a
        -- group active at a time, and the latest purchase giving access is it.
        SELECT * FROM (
        SELECT DISTINCT ON (o.environment, coalesce(t.payload ->> 'subscriptionGroupIdentifier', o.original_transaction_id))
            'appstore', o.original_transaction_id, p.id, p.name, coalesce(p.entitlements, '{}'),
            t.purchase_date, t.expires_date, t.revocation_date IS NOT NULL,
            r.grace_period_expires_date, coalesce(r.billing_retry, false), coalesce(r.auto_renew, true),
            -- Only a free introductory offer is a trial (a payload from before Apple sent the
            -- discount type counts as one, as it did then).
            t.offer_type = 1 AND coalesce(t.payload ->> 'offerDiscountType', 'FREE_TRIAL') = 'FREE_TRIAL',
            t.environment, t.offer_type, t.payload ->> 'offerDiscountType', t.payload ->> 'offerIdentifier',
            CASE WHEN r.auto_renew_product_id <> t.product_id THEN coalesce(n.id, r.auto_renew_product_id) END,
            CASE WHEN r.auto_renew_product_id <> t.product_id THEN coalesce(n.name, r.auto_renew_product_id) END,
            r.expiration_intent, r.payload ->> 'priceIncreaseStatus', t.payload ->> 'price', t.payload ->> 'currency',
            t.payload ->> 'inAppOwnershipType', t.revocation_reason, t.payload ->> 'revocationType', NULL, NULL::timestamptz
        FROM subscriptions.appstore_owners o
        CROSS JOIN LATERAL (
            SELECT * FROM subscriptions.appstore_transactions x
            WHERE x.original_transaction_id = o.original_transaction_id AND x.environment = o.environment
            ORDER BY (x.revocation_date IS NULL AND coalesce(x.expires_date > \(now), true)
                    AND NOT coalesce((x.payload ->> 'isUpgraded')::boolean, false)) DESC,
                CASE WHEN x.revocation_date IS NULL AND coalesce(x.expires_date > \(now), true)
                    AND NOT coalesce((x.payload ->> 'isUpgraded')::boolean, false) THEN x.purchase_date END DESC NULLS LAST,
                x.expires_date DESC NULLS FIRST, x.signed_date DESC
            LIMIT 1
        ) t
        LEFT JOIN subscriptions.appstore_renewals r
            ON r.original_transaction_id = o.original_transaction_id AND r.environment = o.environment
        LEFT JOIN subscriptions.plans p ON t.product_id = ANY (p.appstore_product_ids)
        LEFT JOIN subscriptions.plans n ON r.auto_renew_product_id = ANY (n.appstore_product_ids)
        WHERE o.user_id = \(user) AND (o.environment = 'production' OR \(sandbox))
        ORDER BY o.environment, coalesce(t.payload ->> 'subscriptionGroupIdentifier', o.original_transaction_id),
            (t.revocation_date IS NULL AND coalesce(t.expires_date > \(now), true)
                AND NOT coalesce((t.payload ->> 'isUpgraded')::boolean, false)) DESC,
            t.purchase_date DESC
        ) appstore
        UNION ALL
        -- Each Google Play purchase not replaced by a newer token (an upgrade, a downgrade, a
        -- resubscription), as Google last described it; pending ones give nothing yet.
        SELECT 'googleplay', g.purchase_token, p.id, p.name, coalesce(p.entitlements, '{}'),
            g.start_time, g.expiry_time, g.revoked_at IS NOT NULL,
            CASE WHEN g.state = 'SUBSCRIPTION_STATE_IN_GRACE_PERIOD' THEN g.expiry_time END, false, g.auto_renew, g.trial,
            CASE WHEN g.test THEN 'sandbox' ELSE 'production' END,
            -- A free trial is an introductory offer; another offer of the base plan a promotional one.
            CASE WHEN g.trial THEN 1 WHEN g.offer_id IS NOT NULL THEN 2 END, CASE WHEN g.trial THEN 'FREE_TRIAL' END,
            g.offer_id, NULL, NULL, NULL, NULL,
            g.price::text, g.currency, NULL, NULL, NULL, g.state,
            CASE WHEN g.state = 'SUBSCRIPTION_STATE_PAUSED' THEN g.paused_until END
        FROM subscriptions.google_purchases g
        LEFT JOIN subscriptions.plans p
            ON g.product_id = ANY (p.google_product_ids) OR g.product_id || ':' || g.base_plan_id = ANY (p.google_product_ids)
        WHERE g.user_id = \(user) AND g.superseded_by IS NULL AND (NOT g.test OR \(googleTests))
            AND g.state NOT IN ('SUBSCRIPTION_STATE_PENDING', 'SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED',
                'SUBSCRIPTION_STATE_UNSPECIFIED')
        """
    }

    /// Apple's renewal and transaction fields, in the status's words.
    fileprivate static func details(_ row: PostgresRow) throws -> AppStoreDetails {
        let intents: [Int: ExpirationReason] = [
            1: .cancelled, 2: .billingError, 3: .priceIncreaseDeclined, 4: .productUnavailable,
        ]
        let increase = try row.decode("price_increase", as: String?.self)
        let revocationReason = try row.decode("revocation_reason", as: Int?.self)
        let ownership = try row.decode("ownership", as: String?.self)
        let currency = try row.decode("currency", as: String?.self)
        // Apple's `price` is in milliunits, Google's (already converted) in minor units: every
        // status speaks minor units, whichever store decides it.
        let price = try row.decode("price", as: String?.self).flatMap { Int($0) }
        let minorUnits =
            try row.decode("kind", as: String.self) == "appstore"
            ? price.flatMap { price in currency.flatMap { Price(milliunits: price, currency: $0)?.minorUnits } } : price
        return AppStoreDetails(
            renewsTo: try row.decode("renews_to_id", as: String?.self).map {
                PlanReference(id: $0, name: try row.decode("renews_to_name"))
            },
            expirationReason: try row.decode("expiration_intent", as: Int?.self).map { intents[$0] ?? .other },
            priceIncrease: increase.map { $0 == "1" ? .accepted : .pending },
            price: minorUnits,
            currency: currency,
            familyShared: ownership.map { $0 == "FAMILY_SHARED" },
            revocation: try revocationReason.map {
                SubscriptionRevocation(
                    reason: $0 == 1 ? "app_issue" : "other",
                    type: try row.decode("revocation_type", as: String?.self)?.lowercased())
            })
    }

    /// Apple's `offerType` and `offerDiscountType`, in the status's words.
    fileprivate static func offer(_ row: PostgresRow) throws -> SubscriptionOffer? {
        guard let type = try row.decode("offer_type", as: Int?.self) else { return nil }
        let types: [Int: OfferType] = [1: .introductory, 2: .promotional, 3: .offerCode, 4: .winBack]
        let discount = try row.decode("offer_discount_type", as: String?.self)
        return SubscriptionOffer(
            type: types[type] ?? .unknown("offer_\(type)"), discountType: discount?.lowercased(),
            identifier: try row.decode("offer_identifier", as: String?.self))
    }

    static func date(_ date: AppStoreDate?) -> Date? { date?.date }

    /// Records a transaction unless the same one, signed later, is already known.
    static func record(_ verified: Verified<AppStoreTransaction>, on connection: any PostgresExecutor) async throws {
        let transaction = verified.value
        try await connection.execute(
            """
            INSERT INTO subscriptions.appstore_transactions AS t (transaction_id, original_transaction_id, product_id,
                purchase_date, expires_date, revocation_date, revocation_reason, offer_type, environment, signed_date, payload)
            VALUES (\(transaction.transactionId), \(transaction.originalTransactionId), \(transaction.productId),
                \(date(transaction.purchaseDate)), \(date(transaction.expiresDate)), \(date(transaction.revocationDate)),
                \(transaction.revocationReason?.int32), \(transaction.offerType?.int32), \(verified.environment),
                \(verified.signedAt), subscriptions.detached(\(PostgresJSON(verified.payload))::jsonb))
            ON CONFLICT (transaction_id, environment) DO UPDATE SET
                product_id = EXCLUDED.product_id, purchase_date = EXCLUDED.purchase_date,
                expires_date = EXCLUDED.expires_date, revocation_date = EXCLUDED.revocation_date,
                revocation_reason = EXCLUDED.revocation_reason, offer_type = EXCLUDED.offer_type,
                signed_date = EXCLUDED.signed_date, payload = EXCLUDED.payload, updated_at = now()
            WHERE t.signed_date < EXCLUDED.signed_date
            """)
    }

    /// Records a renewal info unless a later-signed one is already known.
    static func record(_ verified: Verified<AppStoreRenewalInfo>, on connection: any PostgresExecutor) async throws {
        let renewal = verified.value
        try await connection.execute(
            """
            INSERT INTO subscriptions.appstore_renewals AS r (original_transaction_id, auto_renew, auto_renew_product_id,
                billing_retry, grace_period_expires_date, expiration_intent, environment, signed_date, payload)
            VALUES (\(renewal.originalTransactionId), \(renewal.autoRenewStatus.value == 1), \(renewal.autoRenewProductId),
                \(renewal.isInBillingRetryPeriod ?? false), \(date(renewal.gracePeriodExpiresDate)),
                \(renewal.expirationIntent?.int32), \(verified.environment), \(verified.signedAt),
                subscriptions.detached(\(PostgresJSON(verified.payload))::jsonb))
            ON CONFLICT (original_transaction_id, environment) DO UPDATE SET
                auto_renew = EXCLUDED.auto_renew, auto_renew_product_id = EXCLUDED.auto_renew_product_id,
                billing_retry = EXCLUDED.billing_retry, grace_period_expires_date = EXCLUDED.grace_period_expires_date,
                expiration_intent = EXCLUDED.expiration_intent, signed_date = EXCLUDED.signed_date,
                payload = EXCLUDED.payload, updated_at = now()
            WHERE r.signed_date < EXCLUDED.signed_date
            """)
    }

    /// Links an App Store subscription (of one environment) to a user (the account it was merged
    /// into, for a merged one); returns the owner it now has (another user's id when it was
    /// already linked to them). A deleted account is never linked again.
    static func link(
        _ originalTransactionID: String, environment: String, to named: UUID, on connection: any PostgresExecutor
    ) async throws -> UUID? {
        let rows = try await connection.query(
            """
            WITH target AS (
                SELECT coalesce((SELECT into_user_id FROM subscriptions.merged_users WHERE user_id = \(named)), \(named)) AS id)
            INSERT INTO subscriptions.appstore_owners AS o (original_transaction_id, environment, user_id)
            SELECT \(originalTransactionID), \(environment), t.id FROM target t
            WHERE NOT EXISTS (SELECT 1 FROM subscriptions.deleted_users d WHERE d.user_id = t.id)
            ON CONFLICT (original_transaction_id, environment) DO UPDATE SET user_id = EXCLUDED.user_id, linked_at = now()
                WHERE o.user_id IS NULL
            RETURNING user_id
            """)
        if let row = rows.first { return try row.decode("user_id") }
        return try await owner(of: originalTransactionID, environment: environment, on: connection)
    }

    /// The account an App Store subscription is linked to, if any (none once detached).
    static func owner(of originalTransactionID: String, environment: String, on connection: any PostgresExecutor)
        async throws -> UUID?
    {
        try await connection.query(
            """
            SELECT user_id FROM subscriptions.appstore_owners
            WHERE original_transaction_id = \(originalTransactionID) AND environment = \(environment)
            """
        ).first.flatMap { try $0.decode("user_id", as: UUID?.self) }
    }

    /// Every source of `user`'s access at `now`, in one statement.
    static func sources(
        of user: UUID, at now: Date, sandbox: Bool = true, googleTests: Bool = true, on connection: any PostgresExecutor
    ) async throws -> [AccessSource] {
        try await connection.query(sourcesQuery(user: user, at: now, sandbox: sandbox, googleTests: googleTests))
            .decode(AccessSource.self)
    }

    /// Whether Pier holds a renewal info for the subscription.
    static func renewalKnown(
        _ originalTransactionID: String, environment: String, on connection: any PostgresExecutor
    ) async throws -> Bool {
        try await connection.query(
            """
            SELECT EXISTS (SELECT 1 FROM subscriptions.appstore_renewals
                WHERE original_transaction_id = \(originalTransactionID) AND environment = \(environment)) AS known
            """)[0].decode("known")
    }

    /// The App Store subscriptions linked to `user`: each one's original transaction id and
    /// environment.
    static func subscriptions(of user: UUID, on connection: any PostgresExecutor) async throws -> [(
        originalTransactionID: String, environment: String
    )] {
        try await connection.query(
            """
            SELECT o.original_transaction_id, o.environment FROM subscriptions.appstore_owners o
            WHERE o.user_id = \(user)
            ORDER BY o.original_transaction_id, o.environment
            """
        ).map { (try $0.decode("original_transaction_id"), try $0.decode("environment")) }
    }

    /// Stores a notification once, by its UUID; false when it was stored before.
    static func store(
        _ notification: Verified<AppStoreNotification>, originalTransactionID original: String?, details: JSONValue,
        ignored reason: String?, on connection: any PostgresExecutor
    ) async throws -> Bool {
        let value = notification.value
        return try await !connection.query(
            """
            INSERT INTO subscriptions.appstore_notifications (notification_uuid, notification_type, subtype,
                original_transaction_id, environment, signed_date, data, outcome, reason)
            VALUES (\(value.notificationUUID), \(value.notificationType), \(value.subtype),
                \(original), \(notification.environment), \(notification.signedAt),
                \(PostgresJSON(details))::jsonb, \(reason == nil ? "applied" : "ignored"), \(reason))
            ON CONFLICT (notification_uuid) DO NOTHING
            RETURNING notification_uuid
            """
        ).isEmpty
    }

    /// Detaches the facts of a deleted account: they stay for accounting, pointing to nobody.
    /// Idempotent: a second run finds nothing left that points to the user. The account is
    /// remembered as deleted, so that facts Apple signs later for it (a renewal still carries the
    /// appAccountToken) are kept detached too.
    static func detach(_ userID: UUID, on connection: any PostgresExecutor) async throws {
        let token = userID.text()
        try await connection.execute(
            "INSERT INTO subscriptions.deleted_users (user_id) VALUES (\(userID)) ON CONFLICT DO NOTHING")
        try await connection.execute(
            """
            UPDATE subscriptions.appstore_renewals SET payload = payload - 'appAccountToken', updated_at = now()
            WHERE (original_transaction_id, environment) IN (
                SELECT original_transaction_id, environment FROM subscriptions.appstore_owners WHERE user_id = \(userID))
                OR lower(payload ->> 'appAccountToken') = \(token)
            """)
        try await connection.execute(
            """
            UPDATE subscriptions.appstore_transactions SET payload = payload - 'appAccountToken', updated_at = now()
            WHERE (original_transaction_id, environment) IN (
                SELECT original_transaction_id, environment FROM subscriptions.appstore_owners WHERE user_id = \(userID))
                OR lower(payload ->> 'appAccountToken') = \(token)
            """)
        try await connection.execute("UPDATE subscriptions.appstore_owners SET user_id = NULL WHERE user_id = \(userID)")
        // Google Play purchases stay, bound to nobody and without the id the app set.
        try await connection.execute(
            """
            UPDATE subscriptions.google_purchases SET user_id = NULL, payload = payload - 'externalAccountIdentifiers'
            WHERE user_id = \(userID)
            """)
        try await Grants(connection).detach(userID)
    }
}

/// A source of access, read from ``SubscriptionFacts/sourcesQuery(user:at:sandbox:)``'s columns.
extension AccessSource: PostgresRowDecodable {
    init(row: PostgresRow) throws {
        let planID = try row.decode("plan_id", as: String?.self)
        self.init(
            kind: AccessSource.Kind(rawValue: try row.decode("kind")) ?? .grant,
            reference: try row.decode("reference"),
            plan: try planID.map { PlanReference(id: $0, name: try row.decode("plan_name")) },
            entitlements: (try row.decode("entitlements", as: PostgresTextArray.self)).values,
            periodStart: try row.decode("period_start"), periodEnd: try row.decode("period_end"),
            revoked: try row.decode("revoked"), graceUntil: try row.decode("grace_until"),
            billingRetry: try row.decode("billing_retry"), willRenew: try row.decode("will_renew"),
            trial: try row.decode("trial", as: Bool?.self) ?? false, environment: try row.decode("environment"),
            offer: try SubscriptionFacts.offer(row), appStore: try SubscriptionFacts.details(row),
            google: try row.decode("google_state", as: String?.self).map {
                GoogleSubscription.State(rawValue: $0) ?? .unspecified
            }, resumesAt: try row.decode("resumes_at"))
    }
}
