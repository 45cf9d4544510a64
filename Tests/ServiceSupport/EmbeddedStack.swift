import Foundation
import Gateway
import PierRuntime
import PierService
import PierTestSupport

/// Auth, feedback and subscriptions hosted in one gateway, as `make run` runs them: the stack
/// a client talks to in tests.
public enum EmbeddedStack {
    /// Starts the plugins (the three services unless said) on `url` (migrated) behind one
    /// listener on `port` (0: any).
    public static func start(
        databaseURL url: String, port: Int = 0, settings: [String: String] = [:],
        plugins: [String] = ["feedback", "auth", "subscriptions"]
    ) async throws -> Hosted {
        var environment = [
            "PIER_DATABASE_URL": url, "PIER_PORT": String(port), "PIER_LOG_LEVEL": "error", "PIER_HTTP_ACCESS_LOG": "false",
            "PIER_AUTH_ARGON2_MEMORY_KIB": "1024", "PIER_AUTH_ARGON2_ITERATIONS": "1",
            // Staff without a second factor unless a test asks for the rule.
            "PIER_AUTH_REQUIRE_MFA_FOR_ROLES": "none",
            "PIER_DATA_DIR": FileManager.default.temporaryDirectory.appendingPathComponent("pier-stack-\(UUID())").path,
        ]
        environment.merge(settings) { $1 }
        let configuration = try ServiceConfiguration(
            environment: Environment(environment), defaultPort: 0, applicationName: "stack-tests")
        return Hosted(
            try await Gateway.start(
                plugins, configuration: configuration, logger: Logger(service: "gateway", level: .error), migrate: true))
    }

    /// A gateway in proxy mode with `routes` (`/prefix=http://host:port`), hosting `embed` too
    /// (on a fresh database named `database`, when given).
    public static func proxy(
        _ routes: [String], settings extra: [String: String] = [:], embed: [String] = [], database: String? = nil
    ) async throws -> Hosted {
        var values = [
            "PIER_PORT": "0", "PIER_LOG_LEVEL": "error", "PIER_HTTP_ACCESS_LOG": "false",
            "PIER_GATEWAY_ROUTES": routes.joined(separator: ","), "PIER_GATEWAY_HEALTH_INTERVAL_MS": "200",
            "PIER_AUTH_ARGON2_MEMORY_KIB": "1024", "PIER_AUTH_ARGON2_ITERATIONS": "1",
            // Staff without a second factor unless a test asks for the rule.
            "PIER_AUTH_REQUIRE_MFA_FOR_ROLES": "none",
            "PIER_DATA_DIR": FileManager.default.temporaryDirectory.appendingPathComponent("pier-proxy-\(UUID())").path,
        ]
        if let database { values["PIER_DATABASE_URL"] = try await TestDatabase.create(database) }
        values.merge(extra) { $1 }
        let environment = Environment(values)
        let configuration = try ServiceConfiguration(environment: environment, defaultPort: 0, applicationName: "proxy-tests")
        return Hosted(
            try await Gateway.start(
                embed, proxy: try ProxySettings(environment: environment), configuration: configuration,
                logger: Logger(service: "gateway", level: .error), migrate: database != nil))
    }
}
