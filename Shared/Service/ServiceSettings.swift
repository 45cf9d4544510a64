extension ServiceConfiguration {
    /// The settings every process reads (the host, the HTTP server, the database pool, live
    /// streams), declared once:
    /// docs/settings.md is made of these.
    public static let settings: [SettingDeclaration] = [
        .init(
            "PIER_ENV", default: "`development`",
            "`production` requires `PIER_DATABASE_URL` and a signing key file"),
        .init(
            "PIER_HOST", default: "`127.0.0.1`",
            "address to bind (`::` for every interface)"),
        .init(
            "PIER_PORT", default: "8081 (auth), 8082 (feedback), 8083 (subscriptions), 8080 (gateway)",
            "port"),
        .init(
            "PIER_DATABASE_URL", default: "`postgresql://postgres@127.0.0.1:15432/pier` in development",
            "libpq URL of the service's role"),
        .init(
            "PIER_DATABASE_PASSWORD_FILE", default: "none",
            "a file holding the role's password (a container secret), when the URL has none"),
        .init(
            "PIER_DB_POOL_SIZE", default: "`10`",
            "database connections"),
        .init(
            "PIER_DB_ACQUIRE_TIMEOUT_MS", default: "`5000`",
            "wait for a free connection, then 503 + `Retry-After`"),
        .init(
            "PIER_DB_CONNECT_TIMEOUT_S", default: "`15`",
            #"""
            how long opening a connection to PostgreSQL may take (libpq's `connect_timeout`); a
            request waits no longer than the acquire timeout either way
            """#),
        .init(
            "PIER_DB_STATEMENT_TIMEOUT_MS", default: "`10000`",
            "`statement_timeout` of every connection"),
        .init(
            "PIER_DB_STARTUP_WAIT_S", default: "`60`",
            #"""
            `migrate` (and `serve --migrate`) waits this long for a database that does not accept
            connections yet (a job started with it); 0 fails at once
            """#),
        .init(
            "PIER_ADMIN_PORT", default: "none",
            #"""
            a separate listener for `/readyz` and `/metrics`, which then leave the main port
            (`/healthz` stays on both); set it on whatever faces clients
            """#),
        .init(
            "PIER_ADMIN_HOST", default: "`PIER_HOST`",
            "the address the admin listener binds"),
        .init(
            "PIER_HTTP_THREADS", default: "2 × cores",
            "HTTP threads"),
        .init(
            "PIER_HTTP_MAX_CONNECTIONS", default: "`16384`",
            #"""
            open connections at most (epoll; the open-file limit is raised to its hard limit at
            start, and connections stay 256 below it)
            """#),
        .init(
            "PIER_HTTP_MAX_CONNECTIONS_PER_CLIENT", default: "`256`",
            #"""
            open connections per client address (IPv6: per /64); beyond, new ones are cut at once;
            `PIER_TRUSTED_PROXIES` are exempt (set it on the services to the gateway's addresses, or
            the gateway's own connections count as one client); 0: no cap
            """#),
        .init(
            "PIER_HTTP_HEAD_TIMEOUT_S", default: "`10`",
            #"""
            a whole request head (request line and headers) must arrive within this, counted from
            the connection's start or its previous response and not reset by each byte: a client
            trickling header lines, or an idle keep-alive connection, is cut
            """#),
        .init(
            "PIER_HTTP_IDLE_TIMEOUT_S", default: "`30`",
            "a silent connection (stalling mid-body) is closed"),
        .init(
            "PIER_HTTP_MAX_BODY_BYTES", default: "`1048576`",
            #"""
            a larger body → 413. A request's head (request line and headers) is held to 8 KiB, which
            is no setting: beyond, 431 as problem+json (over 20 KiB, libmicrohttpd answers 431 or 414
            itself, in HTML: it offers no hook for those)
            """#),
        .init(
            "PIER_HTTP_ACCESS_LOG", default: "`true`",
            "one JSON line per request"),
        .init(
            "PIER_LOG_LEVEL", default: "`info`",
            "`debug`, `info`, `warning`, `error`"),
        .init(
            "PIER_CORS_ORIGINS", default: "empty: off",
            "allowed origins, comma-separated, or `*`"),
        .init(
            "PIER_TRUSTED_PROXIES", default: "none",
            #"""
            addresses or CIDR blocks (`10.0.0.0/8`, `::1`) whose `X-Forwarded-For` names the client:
            the gateway's address for the services, a load balancer's or ingress' for the gateway
            (required on Kubernetes: the `pier-edge` ConfigMap's `trusted-proxies`; without it every
            client behind the ingress counts as one). Repeated `X-Forwarded-For` lines are read as
            one list (RFC 9110 §5.3). Per-client limits count IPv4 clients by address and IPv6
            clients by their /64
            """#),
        .init(
            ["PIER_TOKEN_ISSUER", "PIER_TOKEN_AUDIENCE"], default: "`pier` / `pier`",
            "`iss` and `aud` of access tokens"),
        .init(
            "PIER_JWKS_URL", default: "`http://127.0.0.1:8081/auth/.well-known/jwks.json`",
            #"""
            where other services fetch the auth keys (on first use, and again for an unknown `kid`
            at most every 10 s). While it cannot be reached, known keys keep verifying and a token
            with a key not yet known gets 503 + `Retry-After` (retried at most every second), never
            a 401
            """#),
        .init(
            "PIER_LIVE_HEARTBEAT_S", default: "`15`",
            #"""
            a comment line on every live stream this often (proxies keep idle streams open; a gone
            client is noticed)
            """#),
        .init(
            "PIER_LIVE_STREAMS", default: "`20000`",
            "live streams one process holds at most, per service (then 503 with `Retry-After`)"),
        .init(
            "PIER_LIVE_STREAMS_PER_USER", default: "`8`",
            #"""
            live streams of one account at most, per service: a session's new stream then pushes out
            its own oldest; another session's is refused (429 `too_many_streams`)
            """#),
        .init(
            "PIER_DATA_DIR", default: "`.pier`",
            "where a development signing key is generated"),
    ]
}
