import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Every SQL statement of the subscriptions service and how its rows become wire types (with
/// ``SubscriptionFacts`` for App Store facts): the controller gets domain outcomes, never an
/// HTTP error, and builds no SQL.
struct SubscriptionsRepository: Sendable {
    let database: PostgresPool
    /// How soon a client should ask again at most (`checkAgainAt`).
    let recheckSeconds: Int

    // MARK: - Plans

    static let planColumns = """
        id, name, description, price, currency, billing_period, trial_period, entitlements, appstore_product_ids, active
        """

    static func plan(_ row: PostgresRow) throws -> Plan {
        Plan(
            id: try row.decode("id"), name: try row.decode("name"), description: try row.decode("description"),
            price: try row.decode("price"), currency: try row.decode("currency"),
            billingPeriod: try row.decode("billing_period"), trialPeriod: try row.decode("trial_period"),
            entitlements: (try row.decode("entitlements", as: PostgresTextArray.self)).values,
            appStoreProductIds: (try row.decode("appstore_product_ids", as: PostgresTextArray.self)).values,
            active: try row.decode("active"))
    }

    /// Active plans, by price; `includingInactive` adds the others.
    func plans(includingInactive: Bool) async throws -> [Plan] {
        try await database.query(
            """
            SELECT \(unsafeSQL: Self.planColumns) FROM subscriptions.plans WHERE active OR \(includingInactive) ORDER BY price, id
            """
        ).map(Self.plan)
    }

    enum PlanChange: Sendable {
        case saved(Plan)
        case deleted
        case missing
        case idTaken
        /// One of the plan's App Store products belongs to another plan.
        case productTaken(product: String, plan: String)
        /// Someone had the plan (a grant, a purchase): it can only be deactivated.
        case inUse
    }

    func create(_ plan: Plan) async throws -> PlanChange {
        try await database.withTransaction { connection in
            if let taken = try await Self.productOwner(plan, on: connection) { return taken }
            let rows = try await connection.query(
                """
                INSERT INTO subscriptions.plans (\(unsafeSQL: Self.planColumns))
                VALUES (\(plan.id), \(plan.name), \(plan.description), \(plan.price), \(plan.currency), \(plan.billingPeriod),
                    \(plan.trialPeriod), \(PostgresTextArray(plan.entitlements))::text[],
                    \(PostgresTextArray(plan.appStoreProductIds))::text[], \(plan.active))
                ON CONFLICT (id) DO NOTHING
                RETURNING \(unsafeSQL: Self.planColumns)
                """)
            guard let row = rows.first else { return .idTaken }
            return .saved(try Self.plan(row))
        }
    }

    /// Replaces plan `id` by what `change` makes of it, under its row lock. `change` is pure (the
    /// controller's validation); what it throws comes back unchanged.
    func updatePlan(_ id: String, _ change: @escaping @Sendable (Plan) throws -> Plan) async throws -> PlanChange {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                "SELECT \(unsafeSQL: Self.planColumns) FROM subscriptions.plans WHERE id = \(id) FOR UPDATE")
            guard let row = rows.first else { return .missing }
            let plan = try change(try Self.plan(row))
            if let taken = try await Self.productOwner(plan, on: connection) { return taken }
            try await connection.execute(
                """
                UPDATE subscriptions.plans SET name = \(plan.name), description = \(plan.description), price = \(plan.price),
                    currency = \(plan.currency), billing_period = \(plan.billingPeriod), trial_period = \(plan.trialPeriod),
                    entitlements = \(PostgresTextArray(plan.entitlements))::text[],
                    appstore_product_ids = \(PostgresTextArray(plan.appStoreProductIds))::text[], active = \(plan.active),
                    updated_at = now()
                WHERE id = \(id)
                """)
            return .saved(plan)
        }
    }

    /// A product id belongs to one plan at most; plans are few, so one lock keeps it exact.
    private static func productOwner(_ plan: Plan, on connection: PostgresConnection) async throws -> PlanChange? {
        try await connection.execute("SELECT pg_advisory_xact_lock(hashtext('subscriptions-plan-products'))")
        let taken = try await connection.query(
            """
            SELECT id, appstore_product_ids FROM subscriptions.plans
            WHERE id <> \(plan.id) AND appstore_product_ids && \(PostgresTextArray(plan.appStoreProductIds))::text[]
            LIMIT 1
            """)
        guard let row = taken.first else { return nil }
        let products = Set((try row.decode("appstore_product_ids", as: PostgresTextArray.self)).values)
        return .productTaken(
            product: plan.appStoreProductIds.first { products.contains($0) } ?? "", plan: try row.decode("id"))
    }

    /// Deletes a plan nobody ever had.
    func deletePlan(_ id: String) async throws -> PlanChange {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                "SELECT appstore_product_ids FROM subscriptions.plans WHERE id = \(id) FOR UPDATE")
            guard let row = rows.first else { return .missing }
            let products = try row.decode("appstore_product_ids", as: PostgresTextArray.self)
            let used = try await connection.query(
                """
                SELECT EXISTS (SELECT 1 FROM subscriptions.grants WHERE plan_id = \(id))
                    OR EXISTS (SELECT 1 FROM subscriptions.appstore_transactions WHERE product_id = ANY (\(products)::text[]))
                    AS used
                """)[0]
            if try used.decode("used") { return .inUse }
            try await connection.execute("DELETE FROM subscriptions.plans WHERE id = \(id)")
            return .deleted
        }
    }

    // MARK: - Status

    /// The user's status now, from their facts (one statement).
    func status(of user: UUID, on connection: PostgresConnection) async throws -> SubscriptionStatus {
        let now = Date()
        let rows = try await connection.query(SubscriptionFacts.sourcesQuery(user: user, at: now))
        return StatusResolver.resolve(try SubscriptionFacts.sources(rows), at: now, recheckSeconds: recheckSeconds)
    }

    func status(of user: UUID) async throws -> SubscriptionStatus {
        try await database.withConnection { connection in try await status(of: user, on: connection) }
    }

    /// Turns renewal off on the user's running grants.
    func cancelGrants(of user: UUID) async throws {
        try await database.execute(
            """
            UPDATE subscriptions.grants SET cancelled_at = coalesce(cancelled_at, now())
            WHERE user_id = \(user) AND revoked_at IS NULL AND ends_at > now()
            """)
    }

    /// The status with the facts it comes from.
    func history(of user: UUID) async throws -> SubscriptionHistory {
        try await database.withConnection { connection in
            SubscriptionHistory(
                userId: user, subscription: try await status(of: user, on: connection),
                facts: try await SubscriptionFacts.history(of: user, on: connection))
        }
    }

    // MARK: - App Store

    enum Recorded: Sendable {
        /// `renewalKnown`: Pier holds a renewal info for the subscription.
        case recorded(SubscriptionStatus, renewalKnown: Bool)
        /// The subscription belongs to another account.
        case linkedElsewhere
    }

    /// Links a verified transaction's subscription to `user` (unless another account has it)
    /// and records its facts; answers the status they make.
    func record(_ verified: Verified<AppStoreTransaction>, for user: UUID) async throws -> Recorded {
        try await database.withTransaction { connection in
            let owner = try await SubscriptionFacts.link(
                verified.value.originalTransactionId, environment: verified.environment, to: user, on: connection)
            guard owner == user else { return .linkedElsewhere }
            try await SubscriptionFacts.record(verified, on: connection)
            let renewal = try await connection.query(
                """
                SELECT EXISTS (SELECT 1 FROM subscriptions.appstore_renewals
                    WHERE original_transaction_id = \(verified.value.originalTransactionId)
                        AND environment = \(verified.environment)) AS known
                """)
            return .recorded(try await status(of: user, on: connection), renewalKnown: try renewal[0].decode("known"))
        }
    }

    /// Stores a notification once (by its UUID) with, when `applies`, the facts it carries;
    /// false when it was stored before.
    func store(
        _ notification: Verified<AppStoreNotification>, transaction: Verified<AppStoreTransaction>?,
        renewal: Verified<AppStoreRenewalInfo>?, details: JSONValue, applies: Bool
    ) async throws -> Bool {
        let value = notification.value
        let original = transaction?.value.originalTransactionId ?? renewal?.value.originalTransactionId
        return try await database.withTransaction { connection in
            let inserted = try await connection.query(
                """
                INSERT INTO subscriptions.appstore_notifications (notification_uuid, notification_type, subtype,
                    original_transaction_id, environment, signed_date, data)
                VALUES (\(value.notificationUUID), \(value.notificationType), \(value.subtype),
                    \(original), \(notification.environment), \(notification.signedAt),
                    \(PostgresJSON(details))::jsonb)
                ON CONFLICT (notification_uuid) DO NOTHING
                RETURNING notification_uuid
                """)
            guard !inserted.isEmpty else { return false }
            if applies { try await Self.apply(transaction, renewal, on: connection) }
            return true
        }
    }

    /// Records facts Apple signed (a notification's, or the App Store Server API's answer): the
    /// transaction, linked to the account its `appAccountToken` names, and the renewal info.
    func apply(_ transaction: Verified<AppStoreTransaction>?, _ renewal: Verified<AppStoreRenewalInfo>?) async throws {
        try await database.withTransaction { connection in try await Self.apply(transaction, renewal, on: connection) }
    }

    private static func apply(
        _ transaction: Verified<AppStoreTransaction>?, _ renewal: Verified<AppStoreRenewalInfo>?,
        on connection: PostgresConnection
    ) async throws {
        if let transaction, transaction.value.type == AppStoreTransaction.autoRenewable {
            try await SubscriptionFacts.record(transaction, on: connection)
            if let token = transaction.value.appAccountToken, let user = UUID(text: token) {
                _ = try await SubscriptionFacts.link(
                    transaction.value.originalTransactionId, environment: transaction.environment, to: user, on: connection)
            }
        }
        if let renewal { try await SubscriptionFacts.record(renewal, on: connection) }
    }

    /// The App Store subscriptions linked to `user`: each one's original transaction id and
    /// environment.
    func appStoreSubscriptions(of user: UUID) async throws -> [(originalTransactionID: String, environment: String)] {
        try await database.query(
            """
            SELECT o.original_transaction_id, o.environment FROM subscriptions.appstore_owners o
            WHERE o.user_id = \(user)
            ORDER BY o.original_transaction_id, o.environment
            """
        ).map { (try $0.decode("original_transaction_id"), try $0.decode("environment")) }
    }

    // MARK: - Grants

    static let grantColumns = """
        id, user_id, plan_id, starts_at, ends_at, reason, granted_by, created_at, revoked_at, cancelled_at
        """

    static func grant(_ row: PostgresRow) throws -> Grant {
        Grant(
            id: try row.decode("id"), userId: try row.decode("user_id"), planId: try row.decode("plan_id"),
            startsAt: try row.decode("starts_at"), endsAt: try row.decode("ends_at"), reason: try row.decode("reason"),
            grantedBy: try row.decode("granted_by"), createdAt: try row.decode("created_at"),
            revokedAt: try row.decode("revoked_at"), cancelledAt: try row.decode("cancelled_at"))
    }

    /// A grant of `request.planId` from now; nil when no such plan exists.
    func grant(_ request: CreateGrant, reason: String, by admin: UUID) async throws -> Grant? {
        let rows = try await database.query(
            """
            INSERT INTO subscriptions.grants (id, user_id, plan_id, starts_at, ends_at, reason, granted_by)
            SELECT \(UUID()), \(request.userId), p.id, now(), coalesce(\(request.until), now() + \(request.duration)::interval),
                \(reason), \(admin)
            FROM subscriptions.plans p WHERE p.id = \(request.planId)
            RETURNING \(unsafeSQL: Self.grantColumns)
            """)
        return try rows.first.map(Self.grant)
    }

    func grants(of user: UUID) async throws -> [Grant] {
        try await database.query(
            "SELECT \(unsafeSQL: Self.grantColumns) FROM subscriptions.grants WHERE user_id = \(user) ORDER BY created_at DESC"
        ).map(Self.grant)
    }

    /// Ends a grant at once (it stays in the history); nil when there is no such grant.
    func revokeGrant(_ id: UUID, by admin: UUID) async throws -> Grant? {
        try await database.query(
            """
            UPDATE subscriptions.grants SET revoked_at = coalesce(revoked_at, now()), revoked_by = coalesce(revoked_by, \(admin))
            WHERE id = \(id) RETURNING \(unsafeSQL: Self.grantColumns)
            """
        ).first.map(Self.grant)
    }
}
