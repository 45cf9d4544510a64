import PierHTTP
import PierModels
import PierRuntime
import PierService
import Synchronization

/// Forwards the requests of proxied routes to their upstreams: chooses a healthy upstream,
/// rewrites the forwarding headers, retries what is safe to retry, streams the response back.
final class Proxy: Sendable {
    struct RouteState: Sendable {
        let route: ProxyRoute
        let balancer: Balancer
    }

    let routes: [RouteState]
    let settings: ProxySettings
    /// The process's client, and the proxy's share of it.
    let client: HTTPClient
    let inFlight: HTTPClient.Limit
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
        inFlight = HTTPClient.Limit(maximum: settings.maximumInFlight)
        self.trusted = trusted
        self.logger = logger
    }

    /// Each proxied prefix, behind the token check its `bearer` setting asks for.
    func routes(into table: inout Routes, authenticator: Authenticator) {
        let router = Router<ServiceRequestContext>()
        for state in routes {
            let relay: Handler<ServiceRequestContext> = { [self] request, _ in try await forward(request, state) }
            switch state.route.bearer {
            case .pass: router.prefix(state.route.prefix, relay)
            case .verify: router.group(Authentication(authenticator, .optional)).prefix(state.route.prefix, relay)
            case .require: router.group(Authentication(authenticator, .required)).prefix(state.route.prefix, relay)
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
        if !host.isEmpty, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-:[]".contains($0)) }) {
            element += ";host=\"\(host)\""
        }
        let priorForwarded = fromTrusted ? request.headers.list("Forwarded") : nil
        headers.set("Forwarded", priorForwarded.map { $0 + ", " + element } ?? element)
        headers.set("X-Request-ID", request.requestID)
        return headers
    }

    /// The upstream's answer; the transfer thread resumes the request with it.
    func forward(_ request: Request, _ state: RouteState) async throws -> Response {
        try await withUnsafeThrowingContinuation { continuation in
            attempt(
                request, state, { continuation.resume(with: $0) }, headers: upstreamHeaders(request), tried: [], number: 0,
                last: nil)
        }
    }

    /// How an attempt answers: exactly once, from any thread.
    typealias Answer = @Sendable (Result<Response, any Error>) -> Void

    /// One attempt on a healthy upstream not tried yet; on a failure without a response, the
    /// next, while retries remain and retrying is safe.
    private func attempt(
        _ request: Request, _ state: RouteState, _ answer: @escaping Answer, headers: HTTPHeaders, tried: Set<String>,
        number: Int, last: HTTPClient.Failure?
    ) {
        let route = state.route
        guard number <= route.retries, let upstream = state.balancer.choose(excluding: tried) else {
            return answer(.failure(Self.problem(for: last, route: route)))
        }
        upstream.begin(retry: number > 0)
        let started = MonotonicClock.seconds()
        let target = request.target.isEmpty ? request.path : request.target
        client.stream(
            HTTPClient.Request(
                method: request.method, url: upstream.base + target, headers: headers, body: request.body,
                connectTimeoutMilliseconds: route.connectTimeoutMilliseconds, timeoutMilliseconds: route.timeoutMilliseconds,
                limit: inFlight)
        ) { [self] result in
            let seconds = MonotonicClock.seconds() - started
            switch result {
            case .success(let response):
                upstream.end(
                    success: true, seconds: seconds, ejectAfter: settings.ejectAfter, ejectSeconds: settings.ejectSeconds)
                answer(.success(relay(response, request: request)))
            case .failure(let failure):
                upstream.end(
                    success: false, seconds: seconds, ejectAfter: settings.ejectAfter, ejectSeconds: settings.ejectSeconds)
                logger.warning(
                    "upstream failed",
                    [
                        ("route", .string(route.prefix)), ("upstream", .string(upstream.base)),
                        ("error", .string(failure.description)),
                    ])
                // Nothing of a response was seen. Retry what is idempotent; anything else only
                // when the connection was never made (the request cannot have reached it).
                var retry = Self.isIdempotent(request)
                if case .connect = failure { retry = true }
                guard retry else { return answer(.failure(Self.problem(for: failure, route: route))) }
                attempt(
                    request, state, answer, headers: headers, tried: tried.union([upstream.base]), number: number + 1,
                    last: failure)
            }
        }
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
    /// bodies came whole, others stream.
    func relay(_ upstream: HTTPClient.StreamedResponse, request: Request) -> Response {
        let listed = Self.connectionListed(upstream.headers)
        var headers = HTTPHeaders()
        for (name, value) in upstream.headers {
            let lower = name.lowercased()
            if Self.hopByHop.contains(lower) || Self.responseOwn.contains(lower) || listed.contains(lower) { continue }
            headers.add(name, value)
        }
        if let whole = upstream.wholeBody {
            return Response(status: upstream.status, headers: headers, body: request.method == "HEAD" ? [] : whole)
        }
        let body = upstream.body
        // No body by definition (RFC 9110 §6.4.1): answered as such, never as an empty stream.
        if request.method == "HEAD" || upstream.status == 204 || upstream.status == 304 {
            body.cancel()
            return Response(status: upstream.status, headers: headers)
        }
        return Response.streaming(status: upstream.status, headers: headers) { writer in
            do {
                while let chunk = try await body.next() { try await writer.write(chunk) }
            } catch {
                body.cancel()
                throw error
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
