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
    let repository: SubscriptionsRepository
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

    /// Active plans for everyone; `?all=true` adds inactive ones for admins. Cacheable: a
    /// strong `ETag` over the body answers `If-None-Match` with 304.
    func plans(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let all = request.query("all") == "true"
        let body = try JSON.encode(try await repository.plans(includingInactive: all))
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
        let change = try await repository.create(plan)
        guard case .saved(let stored) = change else { throw Self.problem(change, id: plan.id) }
        logger.info("plan created", [("plan_id", .string(plan.id)), ("request_id", .string(request.requestID))])
        return try .json(stored, status: 201, headers: ["Location": "/subscriptions/plans/\(plan.id)"])
    }

    func updatePlan(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<Plan> {
        _ = try context.admin()
        let body = try request.decodeStrictly(UpdatePlan.self)
        let id = request.parameter("id")
        let change = try await repository.updatePlan(id) { current in try ValidPlan(updating: current, with: body).plan }
        guard case .saved(let updated) = change else { throw Self.problem(change, id: id) }
        logger.info("plan updated", [("plan_id", .string(id)), ("request_id", .string(request.requestID))])
        return JSONResponse(updated)
    }

    /// Only a plan nobody ever had can be deleted; one in use is deactivated instead.
    func deletePlan(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        _ = try context.admin()
        let id = request.parameter("id")
        let change = try await repository.deletePlan(id)
        guard case .deleted = change else { throw Self.problem(change, id: id) }
        logger.info("plan deleted", [("plan_id", .string(id)), ("request_id", .string(request.requestID))])
        return .noContent
    }

    /// The problem that stopped a change of plan `id`.
    private static func problem(_ change: SubscriptionsRepository.PlanChange, id: String) -> HTTPError {
        switch change {
        case .missing: .notFound("No such plan.")
        case .productTaken(let product, let plan): .conflict("The App Store product \(product) already belongs to plan \(plan).")
        case .inUse:
            .conflict(
                "Plan \(id) is in use by a grant or a purchase and cannot be deleted; deactivate it with PATCH {\"active\": false}."
            )
        case .idTaken, .saved, .deleted: .conflict("A plan with id \(id) already exists.")
        }
    }

    // MARK: - Status

    /// The status with `Cache-Control` matching `checkAgainAt`: a client may keep it that long.
    static func response(_ status: SubscriptionStatus, code: Int = 200) throws -> Response {
        let seconds = max(0, Int(status.checkAgainAt.timeIntervalSinceNow.rounded(.down)))
        return try .json(status, status: code, headers: ["Cache-Control": "private, max-age=\(seconds)"])
    }

    func me(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let principal = try context.caller()
        return try Self.response(try await repository.status(of: principal.userID))
    }

    func entitlement(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let principal = try context.caller()
        let key = request.parameter("key")
        guard ValidPlan.isSlug(key, maximum: 64, extra: ".") else {
            throw HTTPError.invalid("key", "must be 1 to 64 lowercase letters, digits, '-', '_' or '.'")
        }
        let status = try await repository.status(of: principal.userID)
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
        let current = try await repository.status(of: principal.userID)
        guard current.active else { throw HTTPError.conflict("There is no active subscription to cancel.") }
        if current.source == AccessSource.Kind.appstore.rawValue {
            throw HTTPError.conflict(
                "This subscription renews through the App Store; cancel it in the App Store (Settings › Apple ID › Subscriptions)."
            )
        }
        try await repository.cancelGrants(of: principal.userID)
        logger.info("subscription cancelled", [("request_id", .string(request.requestID))])
        return try Self.response(try await repository.status(of: principal.userID))
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
        if let token = transaction.appAccountToken, UUID(text: token) != principal.userID {
            throw HTTPError.forbidden("The transaction's appAccountToken belongs to another account.")
        }
        guard case .recorded(let answer) = try await repository.record(verified, for: principal.userID) else {
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
        // What the notification says beside the signed data; the signed blobs are recorded as
        // the facts they carry, not twice.
        var details = verified.notification.payload.objectValue ?? [:]
        for key in ["notificationType", "subtype", "notificationUUID", "signedDate"] { details[key] = nil }
        if var inner = details["data"]?.objectValue {
            inner["signedTransactionInfo"] = nil
            inner["signedRenewalInfo"] = nil
            details["data"] = .object(inner)
        }
        let applies = Self.appliedTypes.contains(notification.notificationType)
        let fresh = try await repository.store(
            verified.notification, transaction: verified.transaction, renewal: verified.renewal, details: .object(details),
            applies: applies)
        logger.info(
            fresh ? "appstore notification stored" : "appstore notification repeated",
            [
                ("notification_type", .string(notification.notificationType)),
                ("subtype", .string(notification.subtype ?? "")),
                ("notification_uuid", .string(notification.notificationUUID.text())),
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
        guard let grant = try await repository.grant(body, reason: reason, by: admin.userID) else {
            throw HTTPError.invalid("planId", "names no plan")
        }
        logger.info(
            "grant created",
            [
                ("grant_id", .string(grant.id.text())), ("plan_id", .string(body.planId)),
                ("request_id", .string(request.requestID)),
            ])
        return try .json(grant, status: 201, headers: ["Location": "/subscriptions/grants/\(grant.id.text())"])
    }

    func grants(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<[Grant]> {
        _ = try context.admin()
        guard let text = request.query("userId"), let user = UUID(text: text) else {
            throw HTTPError.invalid("userId", "is required: the user whose grants to list (a UUID)")
        }
        return JSONResponse(try await repository.grants(of: user))
    }

    /// Ends a grant at once; it stays in the history.
    func revokeGrant(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<Grant> {
        let admin = try context.admin()
        guard let id = UUID(text: request.parameter("id")), let grant = try await repository.revokeGrant(id, by: admin.userID)
        else { throw HTTPError.notFound("No such grant.") }
        logger.info("grant revoked", [("grant_id", .string(id.text())), ("request_id", .string(request.requestID))])
        return JSONResponse(grant)
    }

    func user(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<SubscriptionHistory> {
        _ = try context.admin()
        guard let user = UUID(text: request.parameter("userId")) else { throw HTTPError.invalid("userId", "must be a UUID") }
        let history = try await repository.history(of: user)
        return JSONResponse(history)
    }
}
