import PierRuntime

extension HTTPServer {
    /// Listening address, limits and timeouts. Every limit answers with a clear status.
    public struct Configuration: Sendable {
        /// Address to bind; default `127.0.0.1`. `::` or `0.0.0.0` for every interface.
        public var host: String
        /// Port; default 8080. 0 picks a free one (tests), readable from ``HTTPServer/port``.
        public var port: Int
        /// Threads that parse HTTP and run the pipeline until its first suspension; default: twice the cores (each
        /// thread owns its connections, so more threads than cores balance uneven connections;
        /// measured: 2 threads 95k req/s, 4 threads 115k on 2 cores).
        public var threads: Int
        /// Open connections at most; beyond, new ones are refused. Default 16,384 (bounded by
        /// the process's file limit, which the server raises to its hard limit).
        public var maxConnections: Int
        /// Open connections per client address (IPv6: per /64) at most; trusted proxies are not
        /// capped; 0 for no cap. Default 256.
        public var maxConnectionsPerClient: Int
        /// Seconds a connection may take to send a whole request head, from its start or from
        /// the end of its previous response, however the bytes trickle in; default 10.
        public var headTimeoutSeconds: Double
        /// Request body bytes at most (→ 413); default 1 MiB.
        public var maxBodyBytes: Int
        /// Request-target bytes at most (→ 414); default 8 KiB.
        public var maxURLBytes: Int
        /// Request line and headers bytes at most (→ 431, as problem+json up to twice this size;
        /// libmicrohttpd answers larger heads itself, in HTML); default 8 KiB (Tomcat's and Jetty's:
        /// room for tokens and cookies). Each connection's buffer is twice this, and libmicrohttpd
        /// clears it between requests: a larger limit costs every request.
        public var maxHeaderBytes: Int
        /// Seconds a connection may stay silent — idle keep-alive, or a client stalling while
        /// sending headers or body — before it is closed; default 30.
        public var idleTimeoutSeconds: Int
        /// Seconds a whole request body may take to arrive, however steadily it trickles; default 30.
        public var bodyTimeoutSeconds: Double
        /// On shutdown, how long in-flight requests may take to finish; default 10 s.
        public var shutdownGracePeriod: Duration
        /// Writes one log line per request; default true.
        public var accessLog: Bool
        /// Peers whose `X-Forwarded-For` names the client; default none.
        public var trustedProxies: TrustedProxies

        public init(
            host: String = "127.0.0.1", port: Int = 8080, threads: Int = 2 * System.coreCount,
            maxConnections: Int = 16_384, maxConnectionsPerClient: Int = 256, headTimeoutSeconds: Double = 10,
            maxBodyBytes: Int = 1 << 20,
            maxURLBytes: Int = 8192, maxHeaderBytes: Int = 8 << 10, idleTimeoutSeconds: Int = 30,
            bodyTimeoutSeconds: Double = 30, shutdownGracePeriod: Duration = .seconds(10), accessLog: Bool = true,
            trustedProxies: TrustedProxies = .none
        ) {
            self.host = host
            self.port = port
            self.threads = threads
            self.maxConnections = maxConnections
            self.maxConnectionsPerClient = maxConnectionsPerClient
            self.headTimeoutSeconds = headTimeoutSeconds
            self.maxBodyBytes = maxBodyBytes
            self.maxURLBytes = maxURLBytes
            self.maxHeaderBytes = maxHeaderBytes
            self.idleTimeoutSeconds = idleTimeoutSeconds
            self.bodyTimeoutSeconds = bodyTimeoutSeconds
            self.shutdownGracePeriod = shutdownGracePeriod
            self.accessLog = accessLog
            self.trustedProxies = trustedProxies
        }
    }
}
