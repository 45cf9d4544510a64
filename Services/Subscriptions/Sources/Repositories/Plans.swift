import PierModels
import PierPostgres

/// The statements of the plan catalogue (`subscriptions.plans`).
struct Plans: Sendable {
    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    static let columns = """
        id, name, description, price, currency, billing_period, trial_period, entitlements, appstore_product_ids,
        google_product_ids, active
        """

    /// Active plans, by price; `includingInactive` adds the others.
    func list(includingInactive: Bool) async throws -> [Plan] {
        try await database.query(
            """
            SELECT \(unsafeSQL: Self.columns) FROM subscriptions.plans WHERE active OR \(includingInactive) ORDER BY price, id
            """
        ).decode(Plan.self)
    }

    /// Inserts the plan; nil when a plan has its id.
    func insert(_ plan: Plan) async throws -> Plan? {
        try await database.query(
            """
            INSERT INTO subscriptions.plans (\(unsafeSQL: Self.columns))
            VALUES (\(plan.id), \(plan.name), \(plan.description), \(plan.price), \(plan.currency), \(plan.billingPeriod),
                \(plan.trialPeriod), \(PostgresTextArray(plan.entitlements))::text[],
                \(PostgresTextArray(plan.appStoreProductIds))::text[], \(PostgresTextArray(plan.googleProductIds))::text[],
                \(plan.active))
            ON CONFLICT (id) DO NOTHING
            RETURNING \(unsafeSQL: Self.columns)
            """
        ).first?.decode(Plan.self)
    }

    /// The plan, its row locked until the transaction ends.
    func lock(_ id: String) async throws -> Plan? {
        try await database.query("SELECT \(unsafeSQL: Self.columns) FROM subscriptions.plans WHERE id = \(id) FOR UPDATE")
            .first?.decode(Plan.self)
    }

    func update(_ plan: Plan) async throws {
        try await database.execute(
            """
            UPDATE subscriptions.plans SET name = \(plan.name), description = \(plan.description), price = \(plan.price),
                currency = \(plan.currency), billing_period = \(plan.billingPeriod), trial_period = \(plan.trialPeriod),
                entitlements = \(PostgresTextArray(plan.entitlements))::text[],
                appstore_product_ids = \(PostgresTextArray(plan.appStoreProductIds))::text[],
                google_product_ids = \(PostgresTextArray(plan.googleProductIds))::text[], active = \(plan.active),
                updated_at = now()
            WHERE id = \(plan.id)
            """)
    }

    /// Another plan that has one of `plan`'s App Store or Google Play products: its id and the
    /// product. Plans are few, so one lock (until the transaction ends) keeps "a product belongs
    /// to one plan at most" exact.
    /// The product is named with its store ("Google Play product pro_monthly").
    func productOwner(of plan: Plan) async throws -> ProductOwner? {
        try await database.execute("SELECT pg_advisory_xact_lock(hashtext('subscriptions-plan-products'))")
        guard
            let row = try await database.query(
                """
                SELECT id, appstore_product_ids || google_product_ids AS products FROM subscriptions.plans
                WHERE id <> \(plan.id) AND (appstore_product_ids && \(PostgresTextArray(plan.appStoreProductIds))::text[]
                    OR google_product_ids && \(PostgresTextArray(plan.googleProductIds))::text[])
                LIMIT 1
                """
            ).first
        else { return nil }
        let products = Set((try row.decode("products", as: PostgresTextArray.self)).values)
        let named =
            plan.appStoreProductIds.first(where: products.contains).map { "App Store product " + $0 }
            ?? plan.googleProductIds.first(where: products.contains).map { "Google Play product " + $0 } ?? "product"
        return ProductOwner(plan: try row.decode("id"), product: named)
    }

    /// The plan that has a product another plan asked for, and the product in words.
    struct ProductOwner: Sendable {
        var plan: String
        var product: String
    }

    /// Whether anyone ever had the plan: a grant of it, or a purchase of one of its products.
    func isUsed(_ plan: Plan) async throws -> Bool {
        try await database.query(
            """
            SELECT EXISTS (SELECT 1 FROM subscriptions.grants WHERE plan_id = \(plan.id))
                OR EXISTS (SELECT 1 FROM subscriptions.appstore_transactions
                    WHERE product_id = ANY (\(PostgresTextArray(plan.appStoreProductIds))::text[]))
                OR EXISTS (SELECT 1 FROM subscriptions.google_purchases
                    WHERE product_id = ANY (\(PostgresTextArray(plan.googleProductIds))::text[])
                        OR product_id || ':' || base_plan_id = ANY (\(PostgresTextArray(plan.googleProductIds))::text[]))
                AS used
            """)[0].decode("used")
    }

    func delete(_ id: String) async throws {
        try await database.execute("DELETE FROM subscriptions.plans WHERE id = \(id)")
    }
}

/// A plan, read from ``Plans/columns``.
extension Plan: PostgresRowDecodable {
    public init(row: PostgresRow) throws {
        self.init(
            id: try row.decode("id"), name: try row.decode("name"), description: try row.decode("description"),
            price: try row.decode("price"), currency: try row.decode("currency"),
            billingPeriod: try row.decode("billing_period"), trialPeriod: try row.decode("trial_period"),
            entitlements: (try row.decode("entitlements", as: PostgresTextArray.self)).values,
            appStoreProductIds: (try row.decode("appstore_product_ids", as: PostgresTextArray.self)).values,
            googleProductIds: (try row.decode("google_product_ids", as: PostgresTextArray.self)).values,
            active: try row.decode("active"))
    }
}
