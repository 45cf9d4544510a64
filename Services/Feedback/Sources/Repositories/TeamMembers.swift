import PierModels
import PierPostgres

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The statements of the team as feedback knows it (`feedback.team`), kept from auth's events:
/// who an item may be assigned to.
struct TeamMembers: Sendable {
    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    /// The account's role now: kept when it is one of the team's, forgotten otherwise.
    func follow(_ user: UUID, role: String) async throws {
        guard AccountRole(rawValue: role)?.isStaff == true else { return try await forget(user) }
        try await database.execute(
            """
            INSERT INTO feedback.team (user_id, role) VALUES (\(user), \(role))
            ON CONFLICT (user_id) DO UPDATE SET role = EXCLUDED.role
            """)
    }

    func forget(_ user: UUID) async throws {
        try await database.execute("DELETE FROM feedback.team WHERE user_id = \(user)")
    }

    /// Whether the account is one of the team.
    func isMember(_ user: UUID) async throws -> Bool {
        try await !database.query("SELECT 1 AS n FROM feedback.team WHERE user_id = \(user)").isEmpty
    }
}
