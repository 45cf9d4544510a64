import PierService

/// One proxied route: a path prefix and the upstreams that serve it.
///
/// Written `PREFIX=URL[|URL…][;option=value…]`, for example
/// `/feedback=http://10.0.0.2:8082|http://10.0.0.3:8082;timeout=60000;bearer=verify`.
///
/// | option | default | meaning |
/// |---|---|---|
/// | `connect` | `1000` | connect timeout, milliseconds |
/// | `timeout` | `30000` | whole-exchange timeout, milliseconds (a streamed export needs more) |
/// | `retries` | `1` | further attempts on other upstreams, before any byte of a response |
/// | `bearer` | `pass` | `verify`: a bearer token, when sent, must verify at the edge; `require`: one must be sent |
/// | `required` | `true` | `/readyz` answers 503 while this route has no healthy upstream |
public struct ProxyRoute: Sendable, Equatable {
    public enum Bearer: String, Sendable { case pass, verify, require }

    public var prefix: String
    public var upstreams: [String]
    public var connectTimeoutMilliseconds = 1000
    public var timeoutMilliseconds = 30_000
    public var retries = 1
    public var bearer = Bearer.pass
    public var required = true

    public init(prefix: String, upstreams: [String]) {
        self.prefix = prefix
        self.upstreams = upstreams
    }

    /// Parses one route; the failure names the variable (or flag) it came from.
    public static func parse(_ spec: String, from source: String) throws(Environment.Failure) -> ProxyRoute {
        func fail(_ problem: String) -> Environment.Failure {
            Environment.Failure(variable: source, problem: "\(problem) in \"\(spec)\"")
        }
        let parts = spec.split(separator: ";").map { $0.trimmingWhitespace() }
        guard let first = parts.first, let equals = first.firstIndex(of: "=") else {
            throw fail("a route is PREFIX=URL[|URL…][;option=value…]")
        }
        let prefix = String(first[..<equals])
        guard prefix.hasPrefix("/"), prefix.count > 1, !prefix.hasSuffix("/"), !prefix.contains(" ") else {
            throw fail("the prefix must start with / and not end with one")
        }
        let upstreams = first[first.index(after: equals)...].split(separator: "|").map { $0.trimmingWhitespace() }
        for upstream in upstreams {
            var rest = upstream.dropFirst("http://".count)
            if rest.hasSuffix("/") { rest = rest.dropLast() }
            guard upstream.hasPrefix("http://"), !rest.isEmpty, !rest.contains("/"), !rest.contains("?") else {
                throw fail("an upstream is http://host:port (no path), got \(upstream)")
            }
        }
        guard !upstreams.isEmpty else { throw fail("a route needs at least one upstream") }
        var route = ProxyRoute(prefix: prefix, upstreams: upstreams.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 })
        for option in parts.dropFirst() {
            let pair = option.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { throw fail("an option is name=value, got \(option)") }
            switch pair[0] {
            case "connect":
                guard let value = Int(pair[1]), (1...60_000).contains(value) else { throw fail("connect is 1…60000 ms") }
                route.connectTimeoutMilliseconds = value
            case "timeout":
                guard let value = Int(pair[1]), (1...86_400_000).contains(value) else { throw fail("timeout is 1…86400000 ms") }
                route.timeoutMilliseconds = value
            case "retries":
                guard let value = Int(pair[1]), (0...5).contains(value) else { throw fail("retries is 0…5") }
                route.retries = value
            case "bearer":
                guard let value = Bearer(rawValue: pair[1]) else { throw fail("bearer is pass, verify or require") }
                route.bearer = value
            case "required":
                guard let value = Bool(pair[1]) else { throw fail("required is true or false") }
                route.required = value
            default:
                throw fail("unknown option \(pair[0])")
            }
        }
        return route
    }
}

/// The gateway's proxy settings, from `PIER_GATEWAY_*`.
///
/// The variables and their defaults are declared in ``Gateway/settings`` (docs/settings.md).
public struct ProxySettings: Sendable {
    public enum Balance: String, Sendable { case roundRobin = "round-robin", leastBusy = "least-busy" }

    public var routes: [ProxyRoute]
    public var balance: Balance
    public var rateLimit: Int
    public var rateBurst: Int
    public var ejectAfter: Int
    public var ejectSeconds: Int
    public var healthIntervalMilliseconds: Int
    public var maximumInFlight: Int
    public var maximumStreams: Int
    public var streamsPerClient: Int

    public init(environment: Environment, extraRoutes: [String] = []) throws(Environment.Failure) {
        var routes: [ProxyRoute] = []
        for spec in environment.list("PIER_GATEWAY_ROUTES") {
            routes.append(try ProxyRoute.parse(spec, from: "PIER_GATEWAY_ROUTES"))
        }
        for spec in extraRoutes { routes.append(try ProxyRoute.parse(spec, from: "--route")) }
        var seen: Set<String> = []
        for route in routes where !seen.insert(route.prefix).inserted {
            throw Environment.Failure(variable: "PIER_GATEWAY_ROUTES", problem: "the prefix \(route.prefix) is routed twice")
        }
        self.routes = routes
        let balance = environment.string("PIER_GATEWAY_BALANCE", default: "round-robin")
        guard let parsed = Balance(rawValue: balance) else {
            throw Environment.Failure(variable: "PIER_GATEWAY_BALANCE", problem: "must be round-robin or least-busy")
        }
        self.balance = parsed
        rateLimit = try environment.int("PIER_GATEWAY_RATE_LIMIT", default: 100, in: 0...10_000_000)
        rateBurst = try environment.int("PIER_GATEWAY_RATE_BURST", default: 200, in: 1...10_000_000)
        ejectAfter = try environment.int("PIER_GATEWAY_EJECT_AFTER", default: 3, in: 1...1000)
        ejectSeconds = try environment.int("PIER_GATEWAY_EJECT_S", default: 10, in: 1...3600)
        healthIntervalMilliseconds = try environment.int("PIER_GATEWAY_HEALTH_INTERVAL_MS", default: 1000, in: 100...600_000)
        maximumInFlight = try environment.int("PIER_GATEWAY_MAX_IN_FLIGHT", default: 4096, in: 1...1_000_000)
        maximumStreams = try environment.int("PIER_GATEWAY_MAX_STREAMS", default: 10_000, in: 1...1_000_000)
        streamsPerClient = try environment.int("PIER_GATEWAY_STREAMS_PER_CLIENT", default: 32, in: 1...1_000_000)
    }
}
