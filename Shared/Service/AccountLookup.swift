import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Accounts as the team names them, through auth's API (`GET /auth/users`, `GET
/// /auth/users/{id}`): the console's pages and plugins' console pages find them the same way.
public enum AccountLookup {
    /// What a typed account resolves to.
    public enum Found: Sendable, Equatable {
        case account(UUID)
        /// Why none does, in words.
        case nobody(String)
    }

    /// The account `text` names: an id, the account whose address is `text` (case aside), or,
    /// unless `exactly`, the one account whose address or name starts with it.
    public static func find(
        _ text: String, exactly: Bool = false, search: (UserSearch) async throws -> UserList
    ) async throws -> Found {
        if let id = UUID(uuidString: text) { return .account(id) }
        let found = try await search(UserSearch(text, limit: 5)).items
        if let exact = found.first(where: { $0.email?.lowercased() == text.lowercased() }) { return .account(exact.id) }
        if exactly { return .nobody("No account has the address \(text).") }
        switch found.count {
        case 1: return .account(found[0].id)
        case 0: return .nobody("No account matches “\(text)”.")
        default: return .nobody("Several accounts match “\(text)”: type more of the address.")
        }
    }

    /// The accounts `ids`, read at once; one that cannot be read (deleted) is left out.
    public static func users(_ ids: Set<UUID>, read: @escaping @Sendable (UUID) async throws -> User) async -> [UUID: User] {
        await withTaskGroup(of: (UUID, User?).self) { group in
            for id in ids { group.addTask { (id, try? await read(id)) } }
            var users: [UUID: User] = [:]
            for await (id, user) in group { users[id] = user }
            return users
        }
    }

    /// The names of the accounts `ids` (display name, else address), read at once.
    public static func names(_ ids: Set<UUID>, read: @escaping @Sendable (UUID) async throws -> User) async -> [UUID: String] {
        await users(ids, read: read).mapValues { $0.displayName ?? $0.handle }
    }
}

extension ConsoleRequest {
    /// The account `text` names, as ``AccountLookup/find(_:exactly:search:)`` says.
    public func account(_ text: String, exactly: Bool = false) async throws -> AccountLookup.Found {
        try await AccountLookup.find(text, exactly: exactly) { try await fetch(AuthAPI.users, $0) }
    }

    /// The accounts `ids`, read at once as the team member; those that cannot be read left out.
    public func users(_ ids: Set<UUID>) async -> [UUID: User] {
        await AccountLookup.users(ids) { try await self.fetch(AuthAPI.user, PathID($0)) }
    }

    /// The names of the accounts `ids` (display name, else address).
    public func names(_ ids: Set<UUID>) async -> [UUID: String] {
        await AccountLookup.names(ids) { try await self.fetch(AuthAPI.user, PathID($0)) }
    }
}
