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
    ) async throws -> PluginHost.Running {
        var environment = [
            "PIER_DATABASE_URL": url, "PIER_PORT": String(port), "PIER_LOG_LEVEL": "error", "PIER_HTTP_ACCESS_LOG": "false",
            "PIER_AUTH_ARGON2_MEMORY_KIB": "1024", "PIER_AUTH_ARGON2_ITERATIONS": "1",
            "PIER_DATA_DIR": FileManager.default.temporaryDirectory.appendingPathComponent("pier-stack-\(UUID())").path,
        ]
        environment.merge(settings) { $1 }
        let configuration = try ServiceConfiguration(
            environment: Environment(environment), defaultPort: 0, applicationName: "stack-tests")
        return try await Gateway.start(
            plugins, configuration: configuration,
            logger: Logger(service: "gateway", level: .error), migrate: true)
    }
}
