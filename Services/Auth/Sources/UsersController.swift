import PierHTTP
import PierModels
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `/auth/users…`: the team finds an account (admins): by its address or the start of it, the
/// start of its display name, or its id.
struct UsersController: Sendable {
    let useCases: AuthUseCases
    let logger: Logger

    /// The longest query: an address's limit.
    static let queryLimit = 254

    /// `GET /auth/users?q=…&limit=…` (limit 1–100, default 20), by address.
    func search(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<UserList> {
        let principal = try context.caller()
        var errors: [Problem.FieldError] = []
        let query = (request.query("q") ?? "").trimmingWhitespace()
        if query.isEmpty {
            errors.append(.init(field: "q", message: "is required: an address or its start, a display name's start, or an id"))
        } else if query.count > Self.queryLimit {
            errors.append(.init(field: "q", message: "must be at most \(Self.queryLimit) characters"))
        } else if query.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            errors.append(.init(field: "q", message: "must not contain control characters"))
        }
        let limit = request.query("limit", in: 1...100, into: &errors) ?? 20
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        let found = try await useCases.users.search(query, limit: limit)
        // Who looked, and how much they saw; never what they typed (an address).
        logger.info(
            "accounts looked up", [("admin_id", .string(principal.userID.text())), ("found", .int(min(found.count, limit)))])
        return JSONResponse(UserList(items: Array(found.prefix(limit)), more: found.count > limit))
    }

    /// `GET /auth/users/{id}`: one account as its owner sees it, with its role.
    func user(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<User> {
        _ = try context.caller()
        let id = try context.parameters.require("id", as: UUID.self)
        guard let user = try await useCases.users.user(id) else { throw HTTPError.notFound("No such account.") }
        return JSONResponse(user)
    }
}
