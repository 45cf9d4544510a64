import PierPostgres

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Accounts merged into others (``Subscriptions/merge(_:on:)``): their facts moved, and the
/// `appAccountToken` of their purchases names the account they went into from then on.
extension SubscriptionFacts {
    /// Moves `user`'s App Store ownership and grants to `into`, and remembers where it went
    /// (once: an event read again moves nothing more).
    static func move(_ user: UUID, to into: UUID, on connection: any PostgresExecutor) async throws {
        try await connection.execute(
            """
            INSERT INTO subscriptions.merged_users (user_id, into_user_id) VALUES (\(user), \(into))
            ON CONFLICT (user_id) DO NOTHING
            """)
        try await connection.execute("UPDATE subscriptions.appstore_owners SET user_id = \(into) WHERE user_id = \(user)")
        try await connection.execute("UPDATE subscriptions.grants SET user_id = \(into) WHERE user_id = \(user)")
        try await connection.execute("UPDATE subscriptions.google_purchases SET user_id = \(into) WHERE user_id = \(user)")
    }

    /// The account a purchase's `appAccountToken` names: the account it was merged into, or itself.
    static func account(named token: UUID, on connection: any PostgresExecutor) async throws -> UUID {
        try await connection.query(
            "SELECT into_user_id FROM subscriptions.merged_users WHERE user_id = \(token)"
        ).first.map { try $0.decode("into_user_id") } ?? token
    }
}
