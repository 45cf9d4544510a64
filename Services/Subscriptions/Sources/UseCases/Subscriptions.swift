import PierAudit
import PierEvents
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The units of work of the subscriptions service: each opens its transaction (or a
/// connection, for a consistent read) and calls the repositories on it; the controllers get
/// domain outcomes, never an HTTP error, and build no SQL.
struct Subscriptions: Sendable {
    let database: PostgresPool
    /// How soon a client should ask again at most (`checkAgainAt`).
    let recheckSeconds: Int
    /// Whether sandbox purchases give access (`PIER_SUBSCRIPTIONS_APPSTORE_SANDBOX`): turned off,
    /// the sandbox facts stored while it was on are kept but no longer count.
    var sandboxCounts = true
    /// Whether Google Play licence testers' purchases give access (`PIER_SUBSCRIPTIONS_GOOGLE_TEST_PURCHASES`).
    var googleTestsCount = true

    // MARK: - Status

    /// The user's status now, from their facts.
    func status(of user: UUID, on connection: any PostgresExecutor) async throws -> SubscriptionStatus {
        let now = Date()
        let sources = try await SubscriptionFacts.sources(
            of: user, at: now, sandbox: sandboxCounts, googleTests: googleTestsCount, on: connection)
        return StatusResolver.resolve(sources, at: now, recheckSeconds: recheckSeconds)
    }

    func status(of user: UUID) async throws -> SubscriptionStatus { try await status(of: user, on: database) }

    /// What the merged account held (App Store ownership, grants) becomes the account's it went
    /// into, and later purchases naming it (their `appAccountToken`) too; its status is published
    /// (both sides' sources kept: the better status wins). On the consumer's transaction.
    func merge(_ merged: AccountMerged, on connection: PostgresConnection) async throws {
        try await SubscriptionFacts.move(merged.userId, to: merged.intoUserId, on: connection)
        try await publish(merged.intoUserId, reason: "merged", on: connection)
    }

    /// The account a purchase's `appAccountToken` names: itself, or the account it was merged into.
    func account(named token: UUID) async throws -> UUID {
        try await SubscriptionFacts.account(named: token, on: database)
    }

    /// Publishes `subscription.updated` with the status `user` now has, in the transaction of
    /// the change (webhooks send it to the app's backend).
    /// Answers that status (the caller's answer too: one read of the sources, not two).
    @discardableResult
    func publish(_ user: UUID, reason: String, on connection: PostgresConnection) async throws -> SubscriptionStatus {
        let status = try await status(of: user, on: connection)
        try await EventLog.append(
            SubscriptionUpdated.type, payload: SubscriptionUpdated(userId: user, reason: reason, status: status),
            on: connection)
        return status
    }

    /// The status with the facts it comes from, read on one connection.
    func history(of user: UUID) async throws -> SubscriptionHistory {
        try await database.withConnection { connection in
            SubscriptionHistory(
                userId: user, subscription: try await status(of: user, on: connection),
                facts: try await SubscriptionFacts.history(of: user, on: connection))
        }
    }

    // MARK: - Plans

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

    func create(_ plan: Plan, by actor: AuditActor) async throws -> PlanChange {
        try await database.withTransaction { connection in
            let plans = Plans(connection)
            if let owner = try await plans.productOwner(of: plan) {
                return .productTaken(product: owner.product, plan: owner.plan)
            }
            guard let stored = try await plans.insert(plan) else { return .idTaken }
            try await audit(.planCreated, plan: plan.id, before: nil, after: stored, by: actor, on: connection)
            return .saved(stored)
        }
    }

    /// Applies `change` to plan `id` under its row lock: the checked plan it makes of the stored
    /// one (``ValidPlan``), unless one of its products belongs to another plan.
    func updatePlan(_ id: String, with change: UpdatePlan, by actor: AuditActor) async throws -> PlanChange {
        try await database.withTransaction { connection in
            let plans = Plans(connection)
            guard let current = try await plans.lock(id) else { return .missing }
            let plan = try ValidPlan(updating: current, with: change).plan
            if let owner = try await plans.productOwner(of: plan) {
                return .productTaken(product: owner.product, plan: owner.plan)
            }
            try await plans.update(plan)
            if plan != current {
                try await audit(.planUpdated, plan: id, before: current, after: plan, by: actor, on: connection)
            }
            return .saved(plan)
        }
    }

    /// Deletes a plan nobody ever had.
    func deletePlan(_ id: String, by actor: AuditActor) async throws -> PlanChange {
        try await database.withTransaction { connection in
            let plans = Plans(connection)
            guard let plan = try await plans.lock(id) else { return .missing }
            if try await plans.isUsed(plan) { return .inUse }
            try await plans.delete(id)
            try await audit(.planDeleted, plan: id, before: plan, after: nil, by: actor, on: connection)
            return .deleted
        }
    }

    private func audit(
        _ action: AuditAction, plan id: String, before: Plan?, after: Plan?, by actor: AuditActor,
        on connection: PostgresConnection
    ) async throws {
        try await AuditLog.append(
            .init(
                action, target: ("plan", id), subject: nil, before: try before.map(JSONValue.encoded),
                after: try after.map(JSONValue.encoded)),
            by: actor, schema: SubscriptionsService.schema, on: connection)
    }

    // MARK: - Grants

    /// Gives `request.userId` the plan for a while, recorded as `actor`'s; nil when the plan is unknown.
    func grant(_ request: CreateGrant, reason: String, by actor: AuditActor) async throws -> Grant? {
        guard let staff = actor.id else { return nil }
        return try await database.withTransaction { connection in
            guard let grant = try await Grants(connection).insert(request, reason: reason, by: staff) else { return nil }
            if let user = grant.userId { try await publish(user, reason: "grant", on: connection) }
            try await AuditLog.append(
                .init(.grantCreated, target: ("grant", grant.id.text()), subject: grant.userId, after: try .encoded(grant)),
                by: actor, schema: SubscriptionsService.schema, on: connection)
            return grant
        }
    }

    /// Ends a grant at once (it stays in the history); nil when there is none. Revoking one that
    /// ended already changes nothing and records nothing.
    func revokeGrant(_ id: UUID, by actor: AuditActor) async throws -> Grant? {
        guard let staff = actor.id else { return nil }
        return try await database.withTransaction { connection in
            let grants = Grants(connection)
            guard let before = try await grants.lock(id) else { return nil }
            guard let after = try await grants.revoke(id, by: staff) else { return nil }
            if before.revokedAt == nil {
                if let user = after.userId { try await publish(user, reason: "grant_revoked", on: connection) }
                try await AuditLog.append(
                    .init(
                        .grantRevoked, target: ("grant", id.text()), subject: after.userId, before: try .encoded(before),
                        after: try .encoded(after)),
                    by: actor, schema: SubscriptionsService.schema, on: connection)
            }
            return after
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
            let (original, environment) = (verified.value.originalTransactionId, verified.environment)
            let owner = try await SubscriptionFacts.link(original, environment: environment, to: user, on: connection)
            guard owner == user else { return .linkedElsewhere }
            try await SubscriptionFacts.record(verified, on: connection)
            return .recorded(
                try await publish(user, reason: "app_store", on: connection),
                renewalKnown: try await SubscriptionFacts.renewalKnown(original, environment: environment, on: connection))
        }
    }

    /// Stores a notification once (by its UUID) with, when `applies`, the facts it carries;
    /// false when it was stored before.
    func store(
        _ notification: Verified<AppStoreNotification>, transaction: Verified<AppStoreTransaction>?,
        renewal: Verified<AppStoreRenewalInfo>?, details: JSONValue, ignored reason: String?
    ) async throws -> Bool {
        let original = transaction?.value.originalTransactionId ?? renewal?.value.originalTransactionId
        return try await database.withTransaction { connection in
            guard
                try await SubscriptionFacts.store(
                    notification, originalTransactionID: original, details: details, ignored: reason, on: connection)
            else { return false }
            if reason == nil { try await apply(transaction, renewal, on: connection) }
            return true
        }
    }

    /// A notification that did not verify, and why.
    func refused(_ reason: String) async throws { try await SubscriptionFacts.refused(reason, on: database) }

    func recentNotifications(limit: Int) async throws -> [AppStoreNotificationEntry] {
        try await SubscriptionFacts.recentNotifications(limit: limit, on: database)
    }

    func subscribers() async throws -> [PlanSubscribers] {
        try await database.withConnection { try await SubscriptionFacts.subscribers(on: $0) }
    }

    /// Subscriptions per day over the last `days`, read on one snapshot.
    func daily(days: Int) async throws -> SubscriptionDaily {
        try await database.withReport { try await SubscriptionFacts.daily(days: days, on: $0) }
    }

    /// Records facts Apple signed (a notification's, or the App Store Server API's answer): the
    /// transaction, linked to the account its `appAccountToken` names, and the renewal info.
    func apply(_ transaction: Verified<AppStoreTransaction>?, _ renewal: Verified<AppStoreRenewalInfo>?) async throws {
        try await database.withTransaction { connection in try await apply(transaction, renewal, on: connection) }
    }

    private func apply(
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
        let subscription =
            transaction.map { ($0.value.originalTransactionId, $0.environment) }
            ?? renewal.map { ($0.value.originalTransactionId, $0.environment) }
        if let (original, environment) = subscription,
            let owner = try await SubscriptionFacts.owner(of: original, environment: environment, on: connection)
        {
            try await publish(owner, reason: "app_store", on: connection)
        }
    }

    /// The App Store subscriptions linked to `user`.
    func appStoreSubscriptions(of user: UUID) async throws -> [(originalTransactionID: String, environment: String)] {
        try await SubscriptionFacts.subscriptions(of: user, on: database)
    }

    // MARK: - Reads and changes of one statement

    var plans: Plans { Plans(database) }
    var grants: Grants { Grants(database) }
}
