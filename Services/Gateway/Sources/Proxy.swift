import PierHTTP
import PierIdentity
import PierModels
import PierRuntime
import PierService
import Synchronization

/// Forwards the requests of proxied routes to their upstreams: chooses a healthy upstream (any,
/// when none is), rewrites the forwarding headers, retries what is safe to retry, streams the
/// response back.
final class Proxy: Sendable {
    struct RouteState: Sendable {
        let route: ProxyRoute
        let balancer: Balancer
    }

    let routes: [RouteState]
    let settings: ProxySettings
    /// The process's client, for the upstreams' health checks (exchanges have their own
    /// connections: ``UpstreamEndpoint``).
    let client: HTTPClient
    /// Exchanges with upstreams at once, at most `maximumInFlight`.
    let inFlight: InFlight
    /// Live streams relayed, a budget apart: an open stream gives its exchange's slot back.
    let streams: StreamBudget
    let trusted: TrustedProxies
    let logger: Logger

    init(settings: ProxySettings, http: HTTPClient, trusted: TrustedProxies, logger: Logger) {
        self.settings = settings
        routes = settings.routes.map { route in
            RouteState(
                route: route,
                balancer: Balancer(
                    upstreams: route.upstreams.map { Upstream(base: $0, route: route.prefix) }, balance: settings.balance))
        }
        client = http
        inFlight = InFlight(maximum: settings.maximumInFlight)
        streams = StreamBudget(limit: settings.maximumStreams, perClient: settings.streamsPerClient)
        self.trusted = trusted
        self.logger = logger
    }

    /// Each proxied prefix, behind the token check its `bearer` setting asks for.
    func routes(into table: inout Routes, authenticator: Authenticator) {
        let router = Router<ServiceRequestContext>()
        for state in routes {
            let relay: Handler<ServiceRequestContext> = { [self] request, _ in try await forward(request, state) }
            // What follows the upstream's answer runs on the thread that saw it come: no
            // hand-over to the cooperative pool per request (measured: +15-20% requests/s).
            let prefix = state.route.prefix
            let waiter = SocketWaiter.shared
            switch state.route.bearer {
            case .pass: router.prefix(prefix, on: waiter, relay)
            case .verify: router.group(Authentication(authenticator, .optional)).prefix(prefix, on: waiter, relay)
            case .require: router.group(Authentication(authenticator, .required)).prefix(prefix, on: waiter, relay)
            }
        }
        table.merge(router.routes)
    }

    // MARK: - Health

    /// Its part: a check of every upstream's `/readyz` every interval (one second to answer).
    var background: [any LifecycleService] {
        let upstreams = routes.flatMap(\.balancer.upstreams)
        let (checker, logger) = (client, logger)
        let checks = Periodic("upstream checks", every: .milliseconds(settings.healthIntervalMilliseconds)) {
            await withTaskGroup(of: Void.self) { group in
                for upstream in upstreams {
                    group.addTask {
                        let passed = (try? await checker.get(upstream.base + "/readyz", timeout: .seconds(1)))?.status == 200
                        let before = upstream.snapshot.checkPassed
                        let now = upstream.checked(passed: passed)
                        if before != now {
                            logger.warning(
                                now ? "upstream healthy" : "upstream unhealthy",
                                [("route", .string(upstream.route)), ("upstream", .string(upstream.base))])
                        }
                    }
                }
            }
        }
        return [checks]
    }

    /// `/readyz` entries: each route (has a healthy upstream), each upstream (is healthy).
    func readiness() -> [String: Bool] {
        var checks: [String: Bool] = [:]
        let now = MonotonicClock.seconds()
        for state in routes {
            let healthy = state.balancer.hasAvailable()
            // An optional route's state is shown without making the gateway unready.
            checks["route \(state.route.prefix)"] = healthy || !state.route.required
            for upstream in state.balancer.upstreams {
                checks["upstream \(state.route.prefix) \(upstream.base)"] = upstream.isAvailable(at: now)
            }
        }
        return checks
    }

    // MARK: - Forwarding

    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te", "trailer",
        "transfer-encoding", "upgrade",
    ]
    /// Set by the gateway itself, never passed on as received.
    static let rewritten: Set<String> = [
        "host", "content-length", "expect", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "forwarded",
        "x-request-id",
    ]
    /// The gateway's server adds its own.
    static let responseOwn: Set<String> = ["content-length", "date", "x-request-id", "server"]

    static func isIdempotent(_ request: Request) -> Bool {
        ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"].contains(request.method) || request.headers["Idempotency-Key"] != nil
    }

    /// Headers named by `Connection` are hop-by-hop too (RFC 9110 §7.6.1).
    static func connectionListed(_ headers: HTTPHeaders) -> Set<String> {
        Set(
            headers.values("Connection").flatMap { $0.split(separator: ",") }.map {
                $0.trimmingWhitespace().lowercased()
            })
    }

    func upstreamHeaders(_ request: Request) -> HTTPHeaders {
        let listed = Self.connectionListed(request.headers)
        var headers = HTTPHeaders()
        for (name, value) in request.headers {
            let lower = name.lowercased()
            if Self.hopByHop.contains(lower) || Self.rewritten.contains(lower) || listed.contains(lower) { continue }
            headers.add(name, value)
        }
        // What trusted proxies in front said is kept; anything else a client sent is dropped.
        let fromTrusted = trusted.contains(request.peerAddress)
        let host = request.headers["Host"] ?? ""
        let priorFor = fromTrusted ? request.headers.list("X-Forwarded-For") : nil
        headers.set("X-Forwarded-For", priorFor.map { $0 + ", " + request.peerAddress } ?? request.peerAddress)
        let proto = (fromTrusted ? request.headers["X-Forwarded-Proto"] : nil) ?? "http"
        headers.set("X-Forwarded-Proto", proto)
        headers.set("X-Forwarded-Host", (fromTrusted ? request.headers["X-Forwarded-Host"] : nil) ?? host)
        let node = request.peerAddress.contains(":") ? "\"[\(request.peerAddress)]\"" : request.peerAddress
        var element = "for=\(node);proto=\(proto)"
        if !host.isEmpty,
            host.utf8.allSatisfy({ byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: ":"),
                    UInt8(ascii: "["), UInt8(ascii: "]"):
                    true
                default: false
                }
            })
        {
            element += ";host=\"\(host)\""
        }
        let priorForwarded = fromTrusted ? request.headers.list("Forwarded") : nil
        headers.set("Forwarded", priorForwarded.map { $0 + ", " + element } ?? element)
        headers.set("X-Request-ID", request.requestID)
        return headers
    }

    /// The request as the upstream gets it: its head (`Host` the upstream's own) and its body.
    static func serialize(_ request: Request, headers: HTTPHeaders, authority: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256 + request.body.count + headers.fields.count * 48)
        bytes += request.method.utf8
        bytes.append(0x20)
        // Whatever the client's parser let through, the upstream gets one request line and
        // only whole header lines: controls and spaces in the target are percent-encoded,
        // fields with CR, LF or NUL are not passed on.
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in (request.target.isEmpty ? request.path : request.target).utf8 {
            if byte <= 0x20 || byte >= 0x7F {
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            } else {
                bytes.append(byte)
            }
        }
        bytes += " HTTP/1.1\r\nHost: ".utf8
        bytes += authority.utf8
        bytes += "\r\n".utf8
        for (name, value) in headers {
            let breaks: (UInt8) -> Bool = { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
            if name.utf8.contains(where: breaks) || value.utf8.contains(where: breaks) { continue }
            bytes += name.utf8
            bytes += ": ".utf8
            bytes += value.utf8
            bytes += "\r\n".utf8
        }
        if !request.body.isEmpty || ["POST", "PUT", "PATCH"].contains(request.method) {
            bytes += "Content-Length: ".utf8
            bytes += String(request.body.count).utf8
            bytes += "\r\n".utf8
        }
        bytes += "\r\n".utf8
        bytes += request.body
        return bytes
    }

    /// The upstream's answer: tried on a healthy upstream not tried yet; after a failure
    /// without a response, on the next, while retries remain and retrying is safe.
    func forward(_ request: Request, _ state: RouteState) async throws -> Response {
        let route = state.route
        let headers = upstreamHeaders(request)
        guard let lease = inFlight.take() else {
            throw HTTPError.unavailable(retryAfter: 1, "The gateway is busy; try again shortly.")
        }
        var tried: Set<String> = []
        var last: HTTPClient.Failure?
        for number in 0...route.retries {
            guard let upstream = state.balancer.choose(excluding: tried) else { break }
            tried.insert(upstream.base)
            upstream.begin(retry: number > 0)
            let started = ContinuousClock.now
            let answer: UpstreamResponse
            do {
                answer = try await upstream.endpoint.exchange(
                    Self.serialize(request, headers: headers, authority: upstream.endpoint.authority),
                    method: request.method,
                    connectBy: started.advanced(by: .milliseconds(route.connectTimeoutMilliseconds)),
                    by: started.advanced(by: .milliseconds(route.timeoutMilliseconds)),
                    eventStreamIdle: .milliseconds(route.timeoutMilliseconds))
            } catch {
                upstream.end(
                    success: false, seconds: Self.seconds(since: started), ejectAfter: settings.ejectAfter,
                    ejectSeconds: settings.ejectSeconds)
                logger.warning(
                    "upstream failed",
                    [
                        ("route", .string(route.prefix)), ("upstream", .string(upstream.base)),
                        ("error", .string(error.description)),
                    ])
                last = error
                // Nothing of a response was seen. Retry what is idempotent; anything else only
                // when the connection was never made (the request cannot have reached it).
                if case .connect = error { continue }
                guard Self.isIdempotent(request) else { break }
                continue
            }
            upstream.end(
                success: true, seconds: Self.seconds(since: started), ejectAfter: settings.ejectAfter,
                ejectSeconds: settings.ejectSeconds)
            return try relay(answer, request: request, lease: lease)
        }
        throw Self.problem(for: last, route: route)
    }

    private static func seconds(since start: ContinuousClock.Instant) -> Double {
        let (seconds, attoseconds) = (ContinuousClock.now - start).components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    static func problem(for failure: HTTPClient.Failure?, route: ProxyRoute) -> HTTPError {
        switch failure {
        case .timeout?:
            HTTPError(504, detail: "The \(route.prefix) service did not answer in time.")
        case .reset?:
            HTTPError(
                502, detail: "The \(route.prefix) service closed the connection before answering; try again.",
                headers: ["Retry-After": "1"])
        default:
            HTTPError.unavailable(retryAfter: 1, "The \(route.prefix) service is unavailable; try again shortly.")
        }
    }

    /// The upstream's response, with its own framing and hop-by-hop headers removed: small
    /// bodies came whole, others stream (the lease held until their end). A live stream
    /// (`text/event-stream`) trades the exchange's lease for one of the stream budget, refused
    /// (429 for the client's address, 503 for the gateway) when that is spent; it ends, and its
    /// upstream connection with it, as soon as its client hangs up.
    func relay(_ upstream: UpstreamResponse, request: Request, lease: InFlight.Lease) throws -> Response {
        let listed = Self.connectionListed(upstream.headers)
        var headers = HTTPHeaders()
        for (name, value) in upstream.headers {
            let lower = name.lowercased()
            if Self.hopByHop.contains(lower) || Self.responseOwn.contains(lower) || listed.contains(lower) { continue }
            headers.add(name, value)
        }
        switch upstream.body {
        case .whole(let body):
            return Response(status: upstream.status, headers: headers, body: request.method == "HEAD" ? [] : body)
        case .stream(let body):
            // No body by definition (RFC 9110 §6.4.1): answered as such, never as an empty stream.
            if request.method == "HEAD" || upstream.status == 204 || upstream.status == 304 {
                return Response(status: upstream.status, headers: headers)
            }
            let held: any Sendable
            if upstream.status == 200, headers["Content-Type"]?.hasPrefix("text/event-stream") == true {
                switch streams.take(for: request.clientAddress) {
                case .success(let stream): held = stream
                case .failure(.tooManyForClient):
                    throw HTTPError(
                        429, code: .tooManyStreams,
                        detail:
                            "This address holds \(streams.perClient) live streams already; close one before opening another.",
                        headers: ["Retry-After": "5"])
                case .failure(.tooMany):
                    throw HTTPError.unavailable(
                        retryAfter: 5, "The gateway holds all the live streams it can; try again shortly.")
                }
            } else {
                held = lease
            }
            return Response.streaming(status: upstream.status, headers: headers) { writer in
                // Cancelled when the client hangs up: the upstream connection is cut, which ends
                // the read waiting on it at once.
                try await withTaskCancellationHandler {
                    try await body.relay { try await writer.write($0) }
                } onCancel: {
                    body.cancel()
                }
                withExtendedLifetime(held) {}
            }
        }
    }

    // MARK: - Metrics

    func renderMetrics() -> String {
        let now = MonotonicClock.seconds()
        let snapshots = routes.flatMap(\.balancer.upstreams).map { ($0, $0.snapshot, $0.isAvailable(at: now)) }
        func labels(_ upstream: Upstream) -> String { "route=\"\(upstream.route)\",upstream=\"\(upstream.base)\"" }
        let series: [(name: String, type: String, help: String, value: (Upstream.State, Bool) -> String)] = [
            ("requests_total", "counter", "Exchanges with each upstream.", { state, _ in "\(state.requests)" }),
            ("failures_total", "counter", "Exchanges that got no response head.", { state, _ in "\(state.failures)" }),
            ("retries_total", "counter", "Exchanges that were retries of a failed one.", { state, _ in "\(state.retries)" }),
            ("in_flight", "gauge", "Exchanges in progress.", { state, _ in "\(state.inFlight)" }),
            ("healthy", "gauge", "1 when the upstream takes requests.", { _, healthy in healthy ? "1" : "0" }),
        ]
        var text = ""
        for entry in series {
            text += "# HELP pier_gateway_upstream_\(entry.name) \(entry.help)\n"
            text += "# TYPE pier_gateway_upstream_\(entry.name) \(entry.type)\n"
            for (upstream, state, healthy) in snapshots {
                text += "pier_gateway_upstream_\(entry.name){\(labels(upstream))} \(entry.value(state, healthy))\n"
            }
        }
        text += "# HELP pier_gateway_upstream_head_seconds Time to the upstream's response head.\n"
        text += "# TYPE pier_gateway_upstream_head_seconds histogram\n"
        for (upstream, state, _) in snapshots {
            var cumulative = 0
            for (index, bound) in Upstream.buckets.enumerated() {
                cumulative += state.latency[index]
                text += "pier_gateway_upstream_head_seconds_bucket{\(labels(upstream)),le=\"\(bound)\"} \(cumulative)\n"
            }
            text += "pier_gateway_upstream_head_seconds_bucket{\(labels(upstream)),le=\"+Inf\"} \(state.ended)\n"
            text += "pier_gateway_upstream_head_seconds_sum{\(labels(upstream))} \(state.latencySum)\n"
            text += "pier_gateway_upstream_head_seconds_count{\(labels(upstream))} \(state.ended)\n"
        }
        return text
    }
}

/// A count of exchanges in progress with a cap: each holds a lease, given back when it goes.
final class InFlight: Sendable {
    let maximum: Int
    private let count = Atomic<Int>(0)

    init(maximum: Int) { self.maximum = maximum }

    var current: Int { count.load(ordering: .relaxed) }

    final class Lease: Sendable {
        private let owner: InFlight
        fileprivate init(_ owner: InFlight) { self.owner = owner }
        deinit { owner.count.subtract(1, ordering: .relaxed) }
    }

    /// A lease, or nil at the cap.
    func take() -> Lease? {
        guard count.add(1, ordering: .relaxed).newValue <= maximum else {
            count.subtract(1, ordering: .relaxed)
            return nil
        }
        return Lease(self)
    }
}
