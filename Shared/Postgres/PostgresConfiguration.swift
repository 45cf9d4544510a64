/// How a pool connects and how many connections it keeps.
public struct PostgresConfiguration: Sendable {
    /// A libpq connection URI or key/value string, e.g. `postgresql://pier@127.0.0.1:5432/pier`.
    public var url: String
    /// The password, when it is not in the URL (read from a secret file); never logged.
    public var password: String?
    /// Connections at most; default 8.
    public var poolSize: Int
    /// How long a request waits for a free connection before failing (→ 503); default 5 s.
    public var acquireTimeout: Duration
    /// `statement_timeout` set on every connection, in milliseconds; default 10,000; 0 disables.
    public var statementTimeoutMilliseconds: Int
    /// libpq's `connect_timeout`, in seconds; default 15: a busy machine forks a backend slowly
    /// (5 s was seen to expire under load), and a request never waits for it longer than the
    /// pool's acquire timeout.
    public var connectTimeoutSeconds: Int
    /// Reported to the server as `application_name`.
    public var applicationName: String

    public init(
        url: String, poolSize: Int = 8, acquireTimeout: Duration = .seconds(5),
        statementTimeoutMilliseconds: Int = 10_000, connectTimeoutSeconds: Int = 15,
        applicationName: String = "pier"
    ) {
        self.url = url
        self.poolSize = poolSize
        self.acquireTimeout = acquireTimeout
        self.statementTimeoutMilliseconds = statementTimeoutMilliseconds
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.applicationName = applicationName
    }
}
