import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The statements of the team's grants of a plan (`subscriptions.grants`).
struct Grants: Sendable {
    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    static let columns = """
        id, user_id, plan_id, starts_at, ends_at, reason, granted_by, created_at, revoked_at, cancelled_at
        """

    /// A grant of `request.planId` from now; nil when no such plan exists.
    func insert(_ request: CreateGrant, reason: String, by admin: UUID) async throws -> Grant? {
        try await database.query(
            """
            INSERT INTO subscriptions.grants (id, user_id, plan_id, starts_at, ends_at, reason, granted_by)
            SELECT \(UUID.random()), \(request.userId), p.id, now(), coalesce(\(request.until), now() + \(request.duration)::interval),
                \(reason), \(admin)
            FROM subscriptions.plans p WHERE p.id = \(request.planId)
            RETURNING \(unsafeSQL: Self.columns)
            """
        ).first?.decode(Grant.self)
    }

    func list(of user: UUID) async throws -> [Grant] {
        try await database.query(
            "SELECT \(unsafeSQL: Self.columns) FROM subscriptions.grants WHERE user_id = \(user) ORDER BY created_at DESC"
        ).decode(Grant.self)
    }

    /// The grant, its row locked until the transaction ends.
    func lock(_ id: UUID) async throws -> Grant? {
        try await database.query("SELECT \(unsafeSQL: Self.columns) FROM subscriptions.grants WHERE id = \(id) FOR UPDATE")
            .first?.decode(Grant.self)
    }

    /// Ends a grant at once (it stays in the history); nil when there is no such grant.
    func revoke(_ id: UUID, by admin: UUID) async throws -> Grant? {
        try await database.query(
            """
            UPDATE subscriptions.grants SET revoked_at = coalesce(revoked_at, now()), revoked_by = coalesce(revoked_by, \(admin))
            WHERE id = \(id) RETURNING \(unsafeSQL: Self.columns)
            """
        ).first?.decode(Grant.self)
    }

    /// Turns renewal off on the user's running grants.
    func cancelRunning(of user: UUID) async throws {
        try await database.execute(
            """
            UPDATE subscriptions.grants SET cancelled_at = coalesce(cancelled_at, now())
            WHERE user_id = \(user) AND revoked_at IS NULL AND ends_at > now()
            """)
    }

    /// The grants of a deleted account stay (accounting), pointing to nobody.
    func detach(_ user: UUID) async throws {
        try await database.execute("UPDATE subscriptions.grants SET user_id = NULL WHERE user_id = \(user)")
    }
}

/// A grant, read from ``Grants/columns``.
extension Grant: PostgresRowDecodable {
    public init(row: PostgresRow) throws {
        self.init(
            id: try row.decode("id"), userId: try row.decode("user_id"), planId: try row.decode("plan_id"),
            startsAt: try row.decode("starts_at"), endsAt: try row.decode("ends_at"), reason: try row.decode("reason"),
            grantedBy: try row.decode("granted_by"), createdAt: try row.decode("created_at"),
            revokedAt: try row.decode("revoked_at"), cancelledAt: try row.decode("cancelled_at"))
    }
}
