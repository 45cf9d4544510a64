import PierAudit
import PierExport
import PierHTTP
import PierIdentity
import PierJSON
import PierModels
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `GET /auth/me/export`: "download my data": everything every service holds about the caller,
/// as one JSON document, each service answering for its own part (in-process when the gateway
/// hosts it beside auth, else over HTTP with the caller's token). A part that cannot be had makes
/// the whole answer a 503: a partial export would look complete. `GET /auth/users/{id}/export`
/// is the same document of another account, for the team (recorded in the audit log).
struct ExportController: Sendable {
    let useCases: AuthUseCases
    let sources: ExportSources
    /// The process's client, for the parts fetched over HTTP.
    let client: HTTPClient
    let logger: Logger

    /// - Parameter id: the account the team exports (`GET /auth/users/{id}/export`); nil: the
    ///   caller's own (`GET /auth/me/export`).
    func export(_ request: Request, _ context: ServiceRequestContext, of id: UUID?) async throws -> EndpointReply<DataExport> {
        let principal = try context.caller()
        let user: User
        if let id {
            guard let found = try await useCases.users.user(id) else { throw HTTPError.notFound("No such account.") }
            // A team member's data is for admins, as every other staff action on them is.
            let actor = try context.auditActor()
            try await adminsForStaff { try StaffActions.mayAct(on: found, actor) }
            try await useCases.staff.recordExport(of: id, by: actor)
            user = found
        } else {
            guard let found = try await useCases.users.user(principal.userID) else {
                throw HTTPError.unauthorized("The account no longer exists.", code: .accountDeleted)
            }
            user = found
        }
        var parts: [String: JSONValue] = [
            "auth": .object([
                "user": try .encoded(user),
                "sessions": try .encoded(
                    try await useCases.sessions.list(
                        of: user.id, current: user.id == principal.userID ? principal.sessionID : nil)),
                "identities": try .encoded(try await useCases.identities.exported(of: user.id)),
                "audit": try .encoded(
                    try await AuditLog.about(
                        user.id, service: AuthService.name, schema: AuthService.schema, on: useCases.database)),
            ])
        ]
        for exporter in sources.hosted { parts[exporter.exportName] = try await exporter.exportData(of: user.id) }
        for mine in sources.remote {
            // A service's part of another account's export is its staff route.
            let url = user.id == principal.userID ? mine : ExportRoute.staffURL(mine, user: user.id)
            let part: ExportPart
            do {
                let response = try await client.send(
                    "GET", url,
                    headers: ["Authorization": request.headers["Authorization"] ?? "", "X-Request-ID": request.requestID],
                    timeout: .seconds(30), limit: 16 << 20
                ).expecting(200)
                part = try WireDecoder.decode(ExportPart.self, from: response.body)
            } catch {
                logger.warning("export part unavailable", [("url", .string(url)), ("error", .string("\(error)"))])
                throw HTTPError(
                    503, code: .unavailable, detail: "A service's part of the export cannot be had now; try again shortly.",
                    headers: ["Retry-After": "5"])
            }
            parts[part.service] = part.data
        }
        let now = Date()
        logger.info("data exported", [("user_id", .string(user.id.text())), ("services", .int(parts.count))])
        let day = CivilDate.iso8601(secondsSince1970: now.timeIntervalSince1970).prefix(10)
        return try .json(
            DataExport(userId: user.id, exportedAt: now, services: parts),
            headers: [
                "Cache-Control": "no-store", "Content-Disposition": "attachment; filename=\"pier-export-\(day).json\"",
            ])
    }
}
