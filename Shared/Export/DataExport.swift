import PierHTTP
import PierIdentity
import PierJSON
import PierModels
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A service that holds data about users answers for its own part of "download my data"
/// (`GET /auth/me/export`): in-process when the gateway hosts it beside auth, and over HTTP at
/// `GET /<prefix>/me/export` (``ExportPart``) when it runs on its own.
public protocol DataExporter: Sendable {
    /// The key of the service's part in the export (its name).
    var exportName: String { get }
    /// Everything the service holds about `user`, as the API shapes it.
    func exportData(of user: UUID) async throws -> JSONValue
}

extension ExportPart {
    /// The part of `exporter` for `user`.
    public static func of(_ exporter: any DataExporter, user: UUID) async throws -> ExportPart {
        ExportPart(service: exporter.exportName, data: try await exporter.exportData(of: user))
    }
}

/// The services auth gathers an export from besides itself: those the gateway hosts in the same
/// process (given once they exist), and the URLs of those that run elsewhere
/// (`PIER_AUTH_EXPORT_URLS`).
public struct ExportSources: Sendable {
    public let hosted: [any DataExporter]
    public let remote: [String]

    public init(hosted: [any DataExporter] = [], remote: [String]) {
        self.hosted = hosted
        self.remote = remote
    }
}

/// `GET /<prefix>/me/export`: a service's part of the caller's export, signed in.
/// and `GET /<prefix>/users/{id}/export`: another account's part, for the team (auth's staff export).
public enum ExportRoute {
    public static func routes(for exporter: any DataExporter, prefix: String, authenticator: Authenticator) -> Routes {
        let router = Router<ServiceRequestContext>()
        let service = String(prefix.dropFirst())
        router.group(Authentication(authenticator, .required)).get(ExportAPI.mine(of: service).template) { _, context in
            try Response.json(try await ExportPart.of(exporter, user: try context.caller().userID))
        }
        router.group(Authentication(authenticator, .staff)).get(ExportAPI.user(of: service).template) { _, context in
            try Response.json(
                try await ExportPart.of(exporter, user: try context.parameters.require("userId", as: UUID.self)))
        }
        return router.routes
    }

    /// The staff route of a service's part for `user`, from the URL of its own-account route
    /// (`…/me/export` → `…/users/{id}/export`).
    public static func staffURL(_ mine: String, user: UUID) -> String {
        let suffix = "/me/export"
        guard mine.hasSuffix(suffix) else { return mine }
        return String(mine.dropLast(suffix.count)) + "/users/\(user.text())/export"
    }
}

extension Capability where Value == any DataExporter {
    /// A part of "download my data" (each plugin that keeps a user's data).
    public static var dataExport: Capability { Capability("data-export") }
}
