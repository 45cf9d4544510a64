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

/// The subscriptions endpoints of the HTTP contract.
struct SubscriptionsController: Sendable {
    let database: PostgresPool
    let configuration: SubscriptionsConfiguration
    let verifier: AppStoreVerifier
    let authenticator: Authenticator
    let logger: Logger

    func routes(into routes: inout Routes) {
        let router = Router<ServiceRequestContext>()
        let signedIn = router.group(Authentication(authenticator, .required))
        let admins = router.group(Authentication(authenticator, .admin))
        // Public; its `?all=true` view (inactive plans too) is for admins.
        router.group(Authentication(authenticator, .admin, when: { $0.query("all") == "true" }))
            .get("/subscriptions/plans") { try await self.plans($0, $1) }
        admins.post("/subscriptions/plans") { try await self.createPlan($0, $1) }
        admins.patch("/subscriptions/plans/{id}") { try await self.updatePlan($0, $1) }
        admins.delete("/subscriptions/plans/{id}") { try await self.deletePlan($0, $1) }
        signedIn.get("/subscriptions/me") { try await self.me($0, $1) }
        signedIn.get("/subscriptions/me/entitlements/{key}") { try await self.entitlement($0, $1) }
        signedIn.post("/subscriptions/me/cancel") { try await self.cancel($0, $1) }
        signedIn.post("/subscriptions/appstore/transactions") { try await self.transaction($0, $1) }
        // Apple's server calls this: the signed payload is the credential.
        router.post("/subscriptions/appstore/notifications") { try await self.notification($0, $1) }
        admins.post("/subscriptions/grants") { try await self.grant($0, $1) }
        admins.get("/subscriptions/grants") { try await self.grants($0, $1) }
        admins.delete("/subscriptions/grants/{id}") { try await self.revokeGrant($0, $1) }
        admins.get("/subscriptions/users/{userId}") { try await self.user($0, $1) }
        routes.merge(router.routes)
    }

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

    /// Active plans for everyone; `?all=true` adds inactive ones for admins. Cacheable: a
    /// strong `ETag` over the body answers `If-None-Match` with 304.
    func plans(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let all = request.query("all") == "true"
        let rows = try await database.query(
            """
            SELECT \(unsafeSQL: Self.planColumns) FROM subscriptions.plans WHERE active OR \(all) ORDER BY price, id
            """)
        let body = try JSON.encode(try rows.map(Self.plan))
        let tag = "\"" + hexString(SHA256.hash(body).prefix(16)) + "\""
        let headers: HTTPHeaders = [
            "ETag": tag, "Cache-Control": all ? "private, no-cache" : "public, max-age=60", "Vary": "Authorization",
        ]
        if let match = request.headers["If-None-Match"],
            match.split(separator: ",").contains(where: { $0.trimmingWhitespace() == tag || $0.trimmingWhitespace() == "*" })
        {
            return Response(status: 304, headers: headers)
        }
        var response = Response(status: 200, headers: headers, body: body)
        response.headers.set("Content-Type", "application/json")
        return response
    }

    func createPlan(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        _ = try context.admin()
        let plan = try ValidPlan(creating: try request.decodeStrictly(CreatePlan.self)).plan
        let stored = try await database.withTransaction { connection -> Plan in
            try Self.claimProducts(plan, on: connection)
            let rows = try connection.query(
                """
                INSERT INTO subscriptions.plans (\(unsafeSQL: Self.planColumns))
                VALUES (\(plan.id), \(plan.name), \(plan.description), \(plan.price), \(plan.currency), \(plan.billingPeriod),
                    \(plan.trialPeriod), \(PostgresTextArray(plan.entitlements))::text[],
                    \(PostgresTextArray(plan.appStoreProductIds))::text[], \(plan.active))
                ON CONFLICT (id) DO NOTHING
                RETURNING \(unsafeSQL: Self.planColumns)
                """)
            guard let row = rows.first else { throw HTTPError.conflict("A plan with id \(plan.id) already exists.") }
            return try Self.plan(row)
        }
        logger.info("plan created", [("plan_id", .string(plan.id)), ("request_id", .string(request.requestID))])
        return try .json(stored, status: 201, headers: ["Location": "/subscriptions/plans/\(plan.id)"])
    }

    func updatePlan(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<Plan> {
        _ = try context.admin()
        let body = try request.decodeStrictly(UpdatePlan.self)
        let id = request.parameter("id")
        let updated = try await database.withTransaction { connection -> Plan in
            let rows = try connection.query(
                "SELECT \(unsafeSQL: Self.planColumns) FROM subscriptions.plans WHERE id = \(id) FOR UPDATE")
            guard let row = rows.first else { throw HTTPError.notFound("No such plan.") }
            let plan = try ValidPlan(updating: try Self.plan(row), with: body).plan
            try Self.claimProducts(plan, on: connection)
            try connection.execute(
                """
                UPDATE subscriptions.plans SET name = \(plan.name), description = \(plan.description), price = \(plan.price),
                    currency = \(plan.currency), billing_period = \(plan.billingPeriod), trial_period = \(plan.trialPeriod),
                    entitlements = \(PostgresTextArray(plan.entitlements))::text[],
                    appstore_product_ids = \(PostgresTextArray(plan.appStoreProductIds))::text[], active = \(plan.active),
                    updated_at = now()
                WHERE id = \(id)
                """)
            return plan
        }
        logger.info("plan updated", [("plan_id", .string(id)), ("request_id", .string(request.requestID))])
        return JSONResponse(updated)
    }

    /// A product id belongs to one plan at most; plans are few, so one lock keeps it exact.
    static func claimProducts(_ plan: Plan, on connection: PostgresConnection) throws {
        try connection.execute("SELECT pg_advisory_xact_lock(hashtext('subscriptions-plan-products'))")
        let taken = try connection.query(
            """
            SELECT id, appstore_product_ids FROM subscriptions.plans
            WHERE id <> \(plan.id) AND appstore_product_ids && \(PostgresTextArray(plan.appStoreProductIds))::text[]
            LIMIT 1
            """)
        if let row = taken.first {
            let other: String = try row.decode("id")
            let products = Set((try row.decode("appstore_product_ids", as: PostgresTextArray.self)).values)
            let product = plan.appStoreProductIds.first { products.contains($0) } ?? ""
            throw HTTPError.conflict("The App Store product \(product) already belongs to plan \(other).")
        }
    }

    /// Only a plan nobody ever had can be deleted; one in use is deactivated instead.
    func deletePlan(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        _ = try context.admin()
        let id = request.parameter("id")
        let outcome = try await database.withTransaction { connection -> String in
            let rows = try connection.query(
                "SELECT appstore_product_ids FROM subscriptions.plans WHERE id = \(id) FOR UPDATE")
            guard let row = rows.first else { return "missing" }
            let products = try row.decode("appstore_product_ids", as: PostgresTextArray.self)
            let used = try connection.query(
                """
                SELECT EXISTS (SELECT 1 FROM subscriptions.grants WHERE plan_id = \(id))
                    OR EXISTS (SELECT 1 FROM subscriptions.appstore_transactions WHERE product_id = ANY (\(products)::text[]))
                    AS used
                """)[0]
            if try used.decode("used") { return "used" }
            try connection.execute("DELETE FROM subscriptions.plans WHERE id = \(id)")
            return "deleted"
        }
        switch outcome {
        case "missing": throw HTTPError.notFound("No such plan.")
        case "used":
            throw HTTPError.conflict(
                "Plan \(id) is in use by a grant or a purchase and cannot be deleted; deactivate it with PATCH {\"active\": false}."
            )
        default:
            logger.info("plan deleted", [("plan_id", .string(id)), ("request_id", .string(request.requestID))])
            return .noContent
        }
    }

    // MARK: - Status

    /// The user's status now, from their facts (one statement).
    func status(of user: UUID, on connection: PostgresConnection) throws -> SubscriptionStatus {
        let now = Date()
        let rows = try connection.query(SubscriptionFacts.sourcesQuery(user: user, at: now))
        return StatusResolver.resolve(try SubscriptionFacts.sources(rows), at: now, recheckSeconds: configuration.recheckSeconds)
    }

    func status(of user: UUID) async throws -> SubscriptionStatus {
        try await database.withConnection { connection in try status(of: user, on: connection) }
    }

    /// The status with `Cache-Control` matching `checkAgainAt`: a client may keep it that long.
    static func response(_ status: SubscriptionStatus, code: Int = 200) throws -> Response {
        let seconds = max(0, Int(status.checkAgainAt.timeIntervalSinceNow.rounded(.down)))
        return try .json(status, status: code, headers: ["Cache-Control": "private, max-age=\(seconds)"])
    }

    func me(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let principal = try context.caller()
        return try Self.response(try await status(of: principal.userID))
    }

    func entitlement(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let principal = try context.caller()
        let key = request.parameter("key")
        guard ValidPlan.isSlug(key, maximum: 64, extra: ".") else {
            throw HTTPError.invalid("key", "must be 1 to 64 lowercase letters, digits, '-', '_' or '.'")
        }
        let status = try await status(of: principal.userID)
        let expiresAt = status.entitlements.first { $0.key == key }?.expiresAt
        let seconds = max(0, Int(status.checkAgainAt.timeIntervalSinceNow.rounded(.down)))
        return try .json(
            EntitlementStatus(key: key, active: expiresAt != nil, expiresAt: expiresAt),
            headers: ["Cache-Control": "private, max-age=\(seconds)"])
    }

    /// Turns renewal off where Pier is the one renewing: grants. App Store renewals are the
    /// user's to cancel in the App Store.
    func cancel(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let principal = try context.caller()
        let current = try await status(of: principal.userID)
        guard current.active else { throw HTTPError.conflict("There is no active subscription to cancel.") }
        if current.source == AccessSource.Kind.appstore.rawValue {
            throw HTTPError.conflict(
                "This subscription renews through the App Store; cancel it in the App Store (Settings › Apple ID › Subscriptions)."
            )
        }
        try await database.execute(
            """
            UPDATE subscriptions.grants SET cancelled_at = coalesce(cancelled_at, now())
            WHERE user_id = \(principal.userID) AND revoked_at IS NULL AND ends_at > now()
            """)
        logger.info("subscription cancelled", [("request_id", .string(request.requestID))])
        return try Self.response(try await status(of: principal.userID))
    }

    // MARK: - App Store

    func transaction(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let principal = try context.caller()
        let body = try request.decodeStrictly(AppStoreTransactionRequest.self)
        let verified: Verified<AppStoreTransaction>
        do {
            verified = try verifier.transaction(body.signedTransaction)
        } catch {
            throw HTTPError.invalid("signedTransaction", error.reason)
        }
        let transaction = verified.value
        guard transaction.type == AppStoreTransaction.autoRenewable else {
            throw HTTPError.invalid(
                "signedTransaction", "is a \(transaction.type) transaction; only auto-renewable subscriptions are tracked")
        }
        if let token = transaction.appAccountToken, UUID(uuidString: token) != principal.userID {
            throw HTTPError.forbidden("The transaction's appAccountToken belongs to another account.")
        }
        let user = principal.userID
        let answer = try await database.withTransaction { connection -> SubscriptionStatus? in
            let owner = try SubscriptionFacts.link(transaction.originalTransactionId, to: user, on: connection)
            guard owner == user else { return nil }
            try SubscriptionFacts.record(verified, on: connection)
            return try status(of: user, on: connection)
        }
        guard let answer else {
            throw HTTPError.conflict("This App Store subscription is already linked to another account.")
        }
        logger.info(
            "appstore transaction recorded",
            [
                ("transaction_id", .string(transaction.transactionId)), ("environment", .string(verified.environment)),
                ("request_id", .string(request.requestID)),
            ])
        return try Self.response(answer)
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
            verified = try verifier.notification(body.signedPayload)
        } catch {
            throw HTTPError.invalid("signedPayload", error.reason)
        }
        let notification = verified.notification.value
        let original = verified.transaction?.value.originalTransactionId ?? verified.renewal?.value.originalTransactionId
        // The signed blobs are recorded as the facts they carry, not twice.
        // What the notification says beside the signed data (kept as the facts it carries).
        var details = verified.notification.payload.objectValue ?? [:]
        for key in ["notificationType", "subtype", "notificationUUID", "signedDate"] { details[key] = nil }
        if var inner = details["data"]?.objectValue {
            inner["signedTransactionInfo"] = nil
            inner["signedRenewalInfo"] = nil
            details["data"] = .object(inner)
        }
        let stored = PostgresJSON(JSONValue.object(details))
        let applies = Self.appliedTypes.contains(notification.notificationType)
        let fresh = try await database.withTransaction { connection -> Bool in
            let inserted = try connection.query(
                """
                INSERT INTO subscriptions.appstore_notifications (notification_uuid, notification_type, subtype,
                    original_transaction_id, environment, signed_date, data)
                VALUES (\(notification.notificationUUID), \(notification.notificationType), \(notification.subtype),
                    \(original), \(verified.notification.environment), \(SubscriptionFacts.date(notification.signedDate)),
                    \(stored)::jsonb)
                ON CONFLICT (notification_uuid) DO NOTHING
                RETURNING notification_uuid
                """)
            guard !inserted.isEmpty else { return false }
            guard applies else { return true }
            if let transaction = verified.transaction, transaction.value.type == AppStoreTransaction.autoRenewable {
                try SubscriptionFacts.record(transaction, on: connection)
                if let token = transaction.value.appAccountToken, let user = UUID(uuidString: token) {
                    _ = try SubscriptionFacts.link(transaction.value.originalTransactionId, to: user, on: connection)
                }
            }
            if let renewal = verified.renewal { try SubscriptionFacts.record(renewal, on: connection) }
            return true
        }
        logger.info(
            fresh ? "appstore notification stored" : "appstore notification repeated",
            [
                ("notification_type", .string(notification.notificationType)),
                ("subtype", .string(notification.subtype ?? "")),
                ("notification_uuid", .string(notification.notificationUUID.uuidString.lowercased())),
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

    func grant(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let admin = try context.admin()
        let body = try request.decodeStrictly(CreateGrant.self)
        var errors: [Problem.FieldError] = []
        let reason = body.reason.trimmingWhitespace()
        if reason.isEmpty || reason.unicodeScalars.count > 500 {
            errors.append(.init(field: "reason", message: "must be 1 to 500 characters"))
        }
        switch (body.duration, body.until) {
        case (nil, nil), (.some, .some):
            errors.append(.init(field: "duration", message: "give either duration (ISO 8601, such as P1M) or until, not both"))
        case (let duration?, nil) where !ValidPlan.isDuration(duration):
            errors.append(.init(field: "duration", message: "must be an ISO 8601 duration such as P1M or P14D"))
        case (nil, let until?) where until <= Date():
            errors.append(.init(field: "until", message: "must be in the future"))
        case (nil, let until?) where until > Date().addingTimeInterval(100 * 366 * 86_400):
            errors.append(.init(field: "until", message: "must be within 100 years"))
        default: break
        }
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        let id = UUID()
        let rows = try await database.query(
            """
            INSERT INTO subscriptions.grants (id, user_id, plan_id, starts_at, ends_at, reason, granted_by)
            SELECT \(id), \(body.userId), p.id, now(), coalesce(\(body.until), now() + \(body.duration)::interval), \(reason),
                \(admin.userID)
            FROM subscriptions.plans p WHERE p.id = \(body.planId)
            RETURNING \(unsafeSQL: Self.grantColumns)
            """)
        guard let row = rows.first else { throw HTTPError.invalid("planId", "names no plan") }
        logger.info(
            "grant created",
            [
                ("grant_id", .string(id.uuidString.lowercased())), ("plan_id", .string(body.planId)),
                ("request_id", .string(request.requestID)),
            ])
        return try .json(
            try Self.grant(row), status: 201, headers: ["Location": "/subscriptions/grants/\(id.uuidString.lowercased())"])
    }

    func grants(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<[Grant]> {
        _ = try context.admin()
        guard let text = request.query("userId"), let user = UUID(uuidString: text) else {
            throw HTTPError.invalid("userId", "is required: the user whose grants to list (a UUID)")
        }
        let rows = try await database.query(
            """
            SELECT \(unsafeSQL: Self.grantColumns) FROM subscriptions.grants WHERE user_id = \(user) ORDER BY created_at DESC
            """)
        return JSONResponse(try rows.map(Self.grant))
    }

    /// Ends a grant at once; it stays in the history.
    func revokeGrant(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<Grant> {
        let admin = try context.admin()
        guard let id = UUID(uuidString: request.parameter("id")) else { throw HTTPError.notFound("No such grant.") }
        let rows = try await database.query(
            """
            UPDATE subscriptions.grants SET revoked_at = coalesce(revoked_at, now()), revoked_by = coalesce(revoked_by, \(admin.userID))
            WHERE id = \(id) RETURNING \(unsafeSQL: Self.grantColumns)
            """)
        guard let row = rows.first else { throw HTTPError.notFound("No such grant.") }
        logger.info(
            "grant revoked", [("grant_id", .string(id.uuidString.lowercased())), ("request_id", .string(request.requestID))])
        return JSONResponse(try Self.grant(row))
    }

    func user(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<SubscriptionHistory> {
        _ = try context.admin()
        guard let user = UUID(uuidString: request.parameter("userId")) else {
            throw HTTPError.invalid("userId", "must be a UUID")
        }
        let history = try await database.withConnection { connection -> SubscriptionHistory in
            SubscriptionHistory(
                userId: user, subscription: try self.status(of: user, on: connection),
                facts: try SubscriptionFacts.history(of: user, on: connection))
        }
        return JSONResponse(history)
    }
}
