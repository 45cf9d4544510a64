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

/// The team's web console at `/console/`: server-rendered pages over Pier's own API, signed in
/// with the same accounts (support and admin roles). Hosted by the gateway (it calls the
/// process's routes in-process), or alone as `pier-console` (it calls the API at
/// `PIER_CONSOLE_API_URL`, which it then requires).
public struct ConsoleService: Service {
    public static let name = "console"
    public static let prefix = "/console"
    public static let schema = "console"
    public static let defaultPort = 8084
    public static let migrations = [
        Migration(
            version: 1, name: "create_console", sql: String(decoding: PackageResources._001_create_console_sql, as: UTF8.self)),
        Migration(version: 2, name: "help_desk", sql: String(decoding: PackageResources._002_help_desk_sql, as: UTF8.self)),
    ]

    let console: Console
    let sweeper: Sweeper
    let configuration: ConsoleConfiguration

    public static func make(context: ServiceContext) async throws -> ConsoleService {
        let configuration = try ConsoleConfiguration(
            environment: context.configuration.environment)
        let sessions = ConsoleSessions(
            database: context.database, idleSeconds: configuration.idleMinutes * 60,
            absoluteSeconds: configuration.absoluteHours * 3600)
        let console = Console(
            sessions: sessions, helpDesk: HelpDesk(database: context.database),
            // Hosted beside the services, the console calls their routes in-process (unless told
            // an API's address).
            api: PierAPI(
                baseURL: configuration.apiURL, http: context.http,
                local: configuration.apiURL == nil ? context.capabilities.first(.localAPI) : nil),
            authenticator: context.authenticator, secureCookies: configuration.secureCookies, origin: configuration.origin,
            additions: try ConsoleAdditions(context.plugins), logger: context.logger)
        return ConsoleService(
            console: console,
            sweeper: Sweeper(sessions: sessions, helpDesk: console.helpDesk, logger: context.logger),
            configuration: configuration)
    }

    public func routes(into routes: inout Routes) { console.routes(into: &routes) }

    public var background: [any LifecycleService] { [sweeper] }

    /// The process's own routes, answered in-process.
    public static var needs: [String] { [Capability<LocalAPI>.localAPI.name] }
}

/// The console's settings, from `PIER_CONSOLE_*`.
///
/// The variables and their defaults are declared in ``ConsoleService/settings`` (docs/settings.md).
struct ConsoleConfiguration: Sendable {
    var idleMinutes: Int
    var absoluteHours: Int
    var secureCookies: Bool
    var apiURL: String?
    var origin: String?

    init(environment: Environment) throws(Environment.Failure) {
        idleMinutes = try environment.int("PIER_CONSOLE_IDLE_MINUTES", default: 30, in: 1...1440)
        absoluteHours = try environment.int("PIER_CONSOLE_ABSOLUTE_HOURS", default: 12, in: 1...720)
        secureCookies = try environment.bool(
            "PIER_CONSOLE_SECURE_COOKIES", default: environment.string("PIER_ENV") == "production")
        if var url = environment.string("PIER_CONSOLE_API_URL") {
            while url.hasSuffix("/") { url.removeLast() }
            guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
                throw Environment.Failure(variable: "PIER_CONSOLE_API_URL", problem: "must start with https:// or http://")
            }
            apiURL = url
        }
        if var origin = environment.string("PIER_CONSOLE_ORIGIN") {
            while origin.hasSuffix("/") { origin.removeLast() }
            guard origin.hasPrefix("http://") || origin.hasPrefix("https://"),
                !origin.dropFirst(8).contains("/")
            else {
                throw Environment.Failure(
                    variable: "PIER_CONSOLE_ORIGIN", problem: "must be a scheme and host only, such as https://admin.example.com")
            }
            self.origin = origin
        }
    }
}

/// Forgets the sessions past their timeouts, and who left an item's page without saying, every
/// minute.
struct Sweeper: LifecycleService {
    var lifecycleName: String { "console sessions sweep" }
    let sessions: ConsoleSessions
    let helpDesk: HelpDesk
    let logger: Logger

    func run() async {
        while !Task.isCancelled {
            if let swept = try? await sessions.sweep(), swept > 0 {
                logger.info("console sessions timed out", [("sessions", .int(swept))])
            }
            try? await helpDesk.sweep()
            try? await Task.sleep(for: .seconds(60))
        }
    }
}
