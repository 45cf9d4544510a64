import PierService

extension Gateway {
    /// The settings the gateway reads (its proxy's and the app association files'), declared
    /// once:
    /// docs/settings.md is made of these.
    public static let settings: [SettingDeclaration] = [
        .init(
            "PIER_GATEWAY_EMBED", default: "every plugin the build has, unless a route is given",
            "plugins to host, comma-separated (`--embed`)"),
        .init(
            "PIER_GATEWAY_ROUTES", default: "none",
            "proxied routes, comma-separated (`--route` adds one), each as `--route` takes it (operating.md, The gateway)"),
        .init(
            "PIER_<NAME>_DATABASE_URL", default: "`PIER_DATABASE_URL`",
            "an embedded plugin's own role"),
        .init(
            "PIER_<NAME>_DATABASE_PASSWORD_FILE", default: "none",
            #"""
            a file holding that role's password (a container secret), when its URL has none; never
            the shared one
            """#),
        .init(
            "PIER_GATEWAY_BALANCE", default: "`round-robin`",
            "or `least-busy`"),
        .init(
            ["PIER_GATEWAY_RATE_LIMIT", "PIER_GATEWAY_RATE_BURST"], default: "`100` / `200`",
            "requests per second per client address, and the burst; `0` turns limiting off"),
        .init(
            ["PIER_GATEWAY_EJECT_AFTER", "PIER_GATEWAY_EJECT_S"], default: "`3` / `10`",
            "consecutive failures that take an upstream out, and for how long"),
        .init(
            "PIER_GATEWAY_HEALTH_INTERVAL_MS", default: "`1000`",
            "active checks of each upstream's `/readyz`"),
        .init(
            "PIER_GATEWAY_MAX_IN_FLIGHT", default: "`4096`",
            #"""
            exchanges with upstreams at once (a streamed body counts until its end, live streams
            aside); beyond, 503
            """#),
        .init(
            "PIER_GATEWAY_MAX_STREAMS", default: "`10000`",
            "live streams (`text/event-stream`) relayed at once, a budget of their own; beyond, 503"),
        .init(
            "PIER_GATEWAY_STREAMS_PER_CLIENT", default: "`32`",
            #"""
            live streams one client address (IPv6: its /64) holds at once, whatever its accounts;
            beyond, 429 `too_many_streams`
            """#),
        .init(
            "PIER_APPLE_APP_IDS", default: "none",
            #"""
            the iOS apps that open this domain's mailed links and use its passkeys, comma-separated
            `TEAMID.bundle.id`: served as `/.well-known/apple-app-site-association` (404 without)
            """#),
        .init(
            ["PIER_ANDROID_PACKAGE", "PIER_ANDROID_CERT_SHA256"], default: "none",
            #"""
            the Android app and the SHA-256 fingerprints of its signing certificates
            (comma-separated, colons or not): served as `/.well-known/assetlinks.json` (404 without)
            """#),
    ]
}
