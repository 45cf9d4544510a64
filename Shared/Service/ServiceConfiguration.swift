import PierHTTP
import PierLive
import PierPostgres
import PierRuntime

/// What every service reads from the environment. Each service adds its own struct for the rest.
///
/// The variables and their defaults are declared in ``ServiceConfiguration/settings`` (docs/settings.md).
public struct ServiceConfiguration: Sendable {
    public var production: Bool
    public var http: HTTPServer.Configuration
    /// The operator listener (`PIER_ADMIN_PORT`), when set: `/readyz` and `/metrics` are served
    /// there only, so a public port never shows readiness details or metrics.
    public var admin: HTTPServer.Configuration?
    public var database: PostgresConfiguration
    /// `PIER_DB_STARTUP_WAIT_S`: how long `migrate` waits for the database to come up.
    public var databaseStartupWaitSeconds: Int
    public var logLevel: Logger.Level
    public var corsOrigins: [String]
    public var tokenIssuer: String
    public var tokenAudience: String
    public var jwksURL: String
    /// The bounds and pace of live streams (``LiveFeed``).
    public var live: LiveSettings
    /// The whole environment, for the service's own settings.
    public var environment: Environment

    /// `PIER_TRUSTED_PROXIES`: the addresses or CIDR blocks whose `X-Forwarded-For` is believed.
    static func trustedProxies(_ environment: Environment) throws(Environment.Failure) -> TrustedProxies {
        do {
            return try TrustedProxies(environment.list("PIER_TRUSTED_PROXIES"))
        } catch {
            throw Environment.Failure(variable: "PIER_TRUSTED_PROXIES", problem: error.description)
        }
    }

    /// The default development database: the cluster that `scripts/postgres.sh` starts.
    public static let developmentDatabaseURL = "postgresql://postgres@127.0.0.1:15432/pier"

    /// - Parameter needsDatabase: false for a process that opens no database (a gateway that
    ///   only proxies): production then does not require `PIER_DATABASE_URL`.
    public init(
        environment: Environment, defaultPort: Int, applicationName: String, needsDatabase: Bool = true
    ) throws(Environment.Failure) {
        self.environment = environment
        let mode = environment.string("PIER_ENV", default: "development")
        guard mode == "development" || mode == "production" else {
            throw Environment.Failure(variable: "PIER_ENV", problem: "must be development or production, got \"\(mode)\"")
        }
        production = mode == "production"
        let databaseURL =
            production && needsDatabase
            ? try environment.required("PIER_DATABASE_URL")
            : environment.string("PIER_DATABASE_URL", default: Self.developmentDatabaseURL)
        var database = PostgresConfiguration(
            url: databaseURL,
            poolSize: try environment.int("PIER_DB_POOL_SIZE", default: 10, in: 1...500),
            acquireTimeout: .milliseconds(try environment.int("PIER_DB_ACQUIRE_TIMEOUT_MS", default: 5000, in: 1...600_000)),
            statementTimeoutMilliseconds: try environment.int("PIER_DB_STATEMENT_TIMEOUT_MS", default: 10_000),
            connectTimeoutSeconds: try environment.int("PIER_DB_CONNECT_TIMEOUT_S", default: 15, in: 1...300),
            applicationName: applicationName)
        if let file = environment.string("PIER_DATABASE_PASSWORD_FILE") {
            do {
                database.password = try readFile(file).trimmingWhitespace()
            } catch {
                throw Environment.Failure(variable: "PIER_DATABASE_PASSWORD_FILE", problem: "\(error)")
            }
        }
        self.database = database
        databaseStartupWaitSeconds = try environment.int("PIER_DB_STARTUP_WAIT_S", default: 60, in: 0...3600)
        http = HTTPServer.Configuration(
            host: environment.string("PIER_HOST", default: "127.0.0.1"),
            port: try environment.int("PIER_PORT", default: defaultPort, in: 0...65535),
            threads: try environment.int("PIER_HTTP_THREADS", default: 2 * System.coreCount, in: 1...1024),
            maxConnections: try environment.int("PIER_HTTP_MAX_CONNECTIONS", default: 16_384, in: 1...1_000_000),
            maxConnectionsPerClient: try environment.int("PIER_HTTP_MAX_CONNECTIONS_PER_CLIENT", default: 256, in: 0...1_000_000),
            headTimeoutSeconds: Double(try environment.int("PIER_HTTP_HEAD_TIMEOUT_S", default: 10, in: 1...3600)),
            maxBodyBytes: try environment.int("PIER_HTTP_MAX_BODY_BYTES", default: 1 << 20, in: 1...(1 << 30)),
            idleTimeoutSeconds: try environment.int("PIER_HTTP_IDLE_TIMEOUT_S", default: 30, in: 1...3600),
            accessLog: try environment.bool("PIER_HTTP_ACCESS_LOG", default: true),
            trustedProxies: try Self.trustedProxies(environment))
        if let port = try environment.optionalInt("PIER_ADMIN_PORT", in: 0...65535) {
            admin = HTTPServer.Configuration(
                host: environment.string("PIER_ADMIN_HOST", default: http.host), port: port, threads: 1, maxConnections: 64,
                accessLog: false)
        }
        let levelName = environment.string("PIER_LOG_LEVEL", default: "info")
        guard let level = Logger.Level(name: levelName) else {
            throw Environment.Failure(variable: "PIER_LOG_LEVEL", problem: "must be debug, info, warning or error")
        }
        logLevel = level
        corsOrigins = environment.list("PIER_CORS_ORIGINS")
        tokenIssuer = environment.string("PIER_TOKEN_ISSUER", default: "pier")
        tokenAudience = environment.string("PIER_TOKEN_AUDIENCE", default: "pier")
        jwksURL = environment.string("PIER_JWKS_URL", default: "http://127.0.0.1:8081/auth/.well-known/jwks.json")
        live = LiveSettings(
            heartbeat: .seconds(try environment.int("PIER_LIVE_HEARTBEAT_S", default: 15, in: 1...300)),
            limit: try environment.int("PIER_LIVE_STREAMS", default: 20_000, in: 1...1_000_000),
            limitPerUser: try environment.int("PIER_LIVE_STREAMS_PER_USER", default: 8, in: 1...1000))
    }
}
