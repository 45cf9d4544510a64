/// What runs statements: a pool (each statement on a connection of its own, committed at once)
/// or a connection (inside a transaction its caller opened). Repositories take one, so that
/// their caller, a use case, decides what commits together.
public protocol PostgresExecutor: Sendable {
    @discardableResult func query(_ query: PostgresQuery) async throws -> [PostgresRow]
    @discardableResult func execute(_ query: PostgresQuery) async throws -> Int
}

extension PostgresPool: PostgresExecutor {}
extension PostgresConnection: PostgresExecutor {}
