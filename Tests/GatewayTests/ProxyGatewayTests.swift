import Foundation
import PierHTTP
import PierModels
import PierRuntime
import PierService
import PierServiceTestSupport
import PierTestSupport
import Synchronization
import Testing

@testable import Gateway

/// An upstream made for the test: echoes what it received (method, target, headers, body) and
/// counts its requests; `/big` streams a large body, `/slow` answers late.
final class EchoUpstream: Sendable {
    let server: HTTPServer
    let name: String
    private let hits = Hits()
    var count: Int { hits.value.load(ordering: .relaxed) }

    final class Hits: Sendable { let value = Atomic<Int>(0) }
    var base: String { "http://127.0.0.1:\(server.port)" }

    struct Echo: Codable, Sendable {
        var upstream: String
        var method: String
        var target: String
        var headers: [String: String]
        var body: String
    }

    init(_ name: String, port: Int = 0, trusted: TrustedProxies = .none) throws {
        self.name = name
        let router = Router<BasicRequestContext>()
        let hits = hits
        router.get("/readyz") { _, _ in Response.text("ready") }
        let echo: Handler<BasicRequestContext> = { request, _ in
            hits.value.add(1, ordering: .relaxed)
            var headers: [String: String] = [:]
            for (field, value) in request.headers { headers[field.lowercased()] = value }
            headers["client-address"] = request.clientAddress
            return try .json(
                Echo(
                    upstream: name, method: request.method, target: request.target, headers: headers,
                    body: String(decoding: request.body, as: UTF8.self)))
        }
        for method in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
            router.on(method, "/svc/echo", echo)
            router.on(method, "/svc/echo/{rest}", echo)
        }
        router.get("/svc/cached") { request, _ in
            if request.headers["If-None-Match"] == "\"v1\"" { return Response(status: 304, headers: ["ETag": "\"v1\""]) }
            return Response(status: 200, headers: ["ETag": "\"v1\"", "Content-Type": "text/plain"], body: Array("fresh".utf8))
        }
        router.on("DELETE", "/svc/gone") { _, _ in Response.noContent }
        router.get("/svc/slow") { _, _ in
            try await Task.sleep(for: .milliseconds(1500))
            return Response.text("late")
        }
        router.get("/svc/big") { request, _ in
            let megabytes = Int(request.query("mb") ?? "1") ?? 1
            let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 64 << 10)
            return Response.streaming(headers: ["Content-Type": "application/octet-stream"]) { writer in
                for _ in 0..<(megabytes * 16) { try await writer.write(chunk) }
            }
        }
        server = HTTPServer(
            configuration: HTTPServer.Configuration(port: port, threads: 2, accessLog: false, trustedProxies: trusted),
            routes: router.routes, logger: Logger(service: name, level: .error))
        try server.listen()
    }

    func stop() async { await server.shutdown() }
}

/// A server that accepts connections and closes them without answering: an upstream that
/// resets before any response (yet passes its readiness checks, so only requests meet it).
final class ClosingListener: Sendable {
    let fd: Int32
    let port: Int

    init() throws {
        (fd, port) = try listeningOnLoopback()
        let fd = fd
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { return }
                // Read the request, then close: the client sees the connection end with no answer.
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = recv(client, &buffer, buffer.count, 0)
                if count > 0, String(decoding: buffer.prefix(count), as: UTF8.self).hasPrefix("GET /readyz ") {
                    let ready = Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
                    _ = send(client, ready, ready.count, 0)
                }
                close(client)
            }
        }
    }

    func stop() { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
}

/// A TCP socket listening on 127.0.0.1 at a free port.
func listeningOnLoopback() throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    guard bound == 0, listen(fd, 64) == 0 else { throw TestFailure("cannot listen") }
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

struct TestFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

@Suite(.serialized) struct ProxyGatewayTests {
    static func gateway(
        _ routes: [String], settings extra: [String: String] = [:], embed: [String] = [], database: String? = nil
    ) async throws -> Hosted {
        try await EmbeddedStack.proxy(routes, settings: extra, embed: embed, database: database)
    }

    /// The body of a chunked response (whole text, head included).
    static func dechunk(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        guard let start = text.utf8.firstRange(of: Array("\r\n\r\n".utf8)) else { return [] }
        var index = text.utf8.distance(from: text.utf8.startIndex, to: start.upperBound)
        var body: [UInt8] = []
        while index < bytes.count {
            guard let lineEnd = bytes[index...].firstRange(of: [13, 10]) else { break }
            let size = Int(String(decoding: bytes[index..<lineEnd.lowerBound], as: UTF8.self), radix: 16) ?? 0
            if size == 0 { break }
            body += bytes[lineEnd.upperBound..<(lineEnd.upperBound + size)]
            index = lineEnd.upperBound + size + 2
        }
        return body
    }

    @Test func routesAreParsedAndBadOnesNamed() throws {
        let route = try ProxyRoute.parse(
            "/feedback=http://a:8082|http://b:8082/;timeout=60000;connect=250;retries=2;bearer=verify;required=false",
            from: "PIER_GATEWAY_ROUTES")
        #expect(route.prefix == "/feedback" && route.upstreams == ["http://a:8082", "http://b:8082"])
        #expect(route.timeoutMilliseconds == 60000 && route.connectTimeoutMilliseconds == 250 && route.retries == 2)
        #expect(route.bearer == .verify && !route.required)
        for bad in [
            "feedback=http://a:1", "/feedback/=http://a:1", "/f=https://a:1", "/f=http://a:1/path", "/f=", "/f=http://a:1;x=1",
            "/f=http://a:1;retries=9", "/f",
        ] {
            #expect(throws: Environment.Failure.self, "\(bad)") { _ = try ProxyRoute.parse(bad, from: "--route") }
        }
        #expect(throws: Environment.Failure.self) {
            _ = try ProxySettings(environment: Environment(["PIER_GATEWAY_ROUTES": "/a=http://x:1,/a=http://y:1"]))
        }
        #expect(throws: Environment.Failure.self) {
            _ = try ProxySettings(environment: Environment(["PIER_GATEWAY_BALANCE": "random"]))
        }
    }

    @Test func trustedProxiesDecideTheClientAddress() throws {
        let trusted = try TrustedProxies(["10.0.0.0/8", "::1", "fd00::/8"])
        #expect(trusted.contains("10.1.2.3") && trusted.contains("::1") && trusted.contains("fd12::1"))
        #expect(!trusted.contains("11.0.0.1") && !trusted.contains("::2") && !trusted.contains("garbage"))
        #expect(trusted.contains("::ffff:10.0.0.1"))
        // An untrusted peer's header is ignored; a trusted one's right-most untrusted hop wins.
        #expect(trusted.clientAddress(peer: "203.0.113.9", forwardedFor: "1.2.3.4") == "203.0.113.9")
        #expect(trusted.clientAddress(peer: "10.0.0.1", forwardedFor: "1.2.3.4") == "1.2.3.4")
        #expect(trusted.clientAddress(peer: "10.0.0.1", forwardedFor: "6.6.6.6, 1.2.3.4, 10.0.0.7") == "1.2.3.4")
        #expect(trusted.clientAddress(peer: "10.0.0.1", forwardedFor: "not-an-address") == "10.0.0.1")
        for bad in ["10.0.0.0/33", "host.example", "::1/129", ""] {
            #expect(throws: TrustedProxies.InvalidEntry.self) { _ = try TrustedProxies([bad]) }
        }
        #expect(throws: Environment.Failure.self) {
            _ = try ServiceConfiguration(
                environment: Environment(["PIER_TRUSTED_PROXIES": "10.0.0.0/40"]), defaultPort: 0, applicationName: "t")
        }
    }

    @Test func forwardsWithCleanHeadersAndTheRequestID() async throws {
        let upstream = try EchoUpstream("one")
        let gateway = try await Self.gateway(["/svc=\(upstream.base)"])
        let client = ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)")
        let reply = try await client.send(
            "POST", "/svc/echo/a%20b?x=1&y=%2F", json: #"{"hello":"world"}"#,
            headers: [
                "X-Request-ID": "trace-42", "Connection": "X-Secret", "X-Secret": "hop", "Keep-Alive": "timeout=5",
                "X-Forwarded-For": "6.6.6.6", "Forwarded": "for=6.6.6.6", "X-Custom": "kept",
            ])
        #expect(reply.status == 200)
        #expect(reply.headers["X-Request-ID"] == "trace-42")
        let echo = try reply.decode(EchoUpstream.Echo.self)
        #expect(echo.method == "POST" && echo.target == "/svc/echo/a%20b?x=1&y=%2F" && echo.body == #"{"hello":"world"}"#)
        #expect(echo.headers["x-request-id"] == "trace-42")
        #expect(echo.headers["x-custom"] == "kept" && echo.headers["content-type"] == "application/json")
        #expect(echo.headers["x-secret"] == nil && echo.headers["keep-alive"] == nil)
        // The client is not a trusted proxy: what it claimed is replaced by what the gateway saw.
        #expect(echo.headers["x-forwarded-for"] == "127.0.0.1")
        #expect(echo.headers["forwarded"]?.hasPrefix("for=127.0.0.1;proto=http") == true)
        #expect(echo.headers["x-forwarded-proto"] == "http")
        #expect(try await client.send("GET", "/elsewhere").status == 404)
        // Bodiless answers pass as such: a 304 for a cached resource, a 204.
        let fresh = try await client.send("GET", "/svc/cached")
        #expect(fresh.status == 200 && fresh.text == "fresh" && fresh.headers["ETag"] == "\"v1\"")
        let cached = try await client.send("GET", "/svc/cached", headers: ["If-None-Match": "\"v1\""])
        #expect(cached.status == 304 && cached.body.isEmpty && cached.headers["Transfer-Encoding"] == nil)
        let deleted = try await client.send("DELETE", "/svc/gone")
        #expect(deleted.status == 204 && deleted.body.isEmpty && deleted.headers["Transfer-Encoding"] == nil)
        await gateway.shutdown()
        await upstream.stop()
    }

    @Test func aTrustedFrontKeepsTheChainAndServicesBelieveIt() async throws {
        // The service behind trusts the gateway (127.0.0.1); the gateway trusts its own front.
        let upstream = try EchoUpstream("one", trusted: try TrustedProxies(["127.0.0.1"]))
        let gateway = try await Self.gateway(["/svc=\(upstream.base)"], settings: ["PIER_TRUSTED_PROXIES": "127.0.0.1"])
        let client = ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)")
        let echo = try await client.send(
            "GET", "/svc/echo", headers: ["X-Forwarded-For": "198.51.100.7", "X-Forwarded-Proto": "https"]
        ).decode(EchoUpstream.Echo.self)
        #expect(echo.headers["x-forwarded-for"] == "198.51.100.7, 127.0.0.1")
        #expect(echo.headers["x-forwarded-proto"] == "https")
        #expect(echo.headers["client-address"] == "198.51.100.7")
        await gateway.shutdown()
        await upstream.stop()
    }

    /// Repeated `X-Forwarded-For` lines are one list (RFC 9110 §5.3): a line the client wrote
    /// in front of the load balancer's cannot win, at a service or at the gateway.
    @Test func repeatedForwardingLinesAreOneList() async throws {
        let upstream = try EchoUpstream("one", trusted: try TrustedProxies(["127.0.0.1"]))
        let raw = try RawClient(port: upstream.server.port)
        raw.send(
            "GET /svc/echo HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 6.6.6.6\r\nX-Forwarded-For: 198.51.100.7\r\n\r\n")
        let direct = try #require(await raw.responses(1).first)
        let echo = try JSONDecoder().decode(EchoUpstream.Echo.self, from: Data(direct.body.utf8))
        #expect(echo.headers["client-address"] == "198.51.100.7")
        let gateway = try await Self.gateway(["/svc=\(upstream.base)"], settings: ["PIER_TRUSTED_PROXIES": "127.0.0.1"])
        let viaGateway = try RawClient(port: gateway.server.port)
        viaGateway.send(
            "GET /svc/echo HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\n"
                + "X-Forwarded-For: 198.51.100.7\r\nForwarded: for=198.51.100.7\r\n\r\n")
        let forwarded = try #require(await viaGateway.responses(1).first)
        let seen = try JSONDecoder().decode(EchoUpstream.Echo.self, from: Data(forwarded.body.utf8))
        #expect(seen.headers["x-forwarded-for"] == "6.6.6.6, 198.51.100.7, 127.0.0.1")
        #expect(seen.headers["forwarded"]?.hasPrefix("for=6.6.6.6, for=198.51.100.7, for=127.0.0.1") == true)
        #expect(seen.headers["client-address"] == "198.51.100.7")
        await gateway.shutdown()
        await upstream.stop()
    }

    /// A path that climbs out of a proxied prefix is normalized before routing: it reaches
    /// what its normalized form names (the gateway's own endpoints), never another service's
    /// operator endpoints; what is forwarded is the normalized path.
    @Test func dotSegmentsCannotEscapeAPrefix() async throws {
        let upstream = try EchoUpstream("one")
        let gateway = try await Self.gateway(["/svc=\(upstream.base)"])
        func get(_ target: String) async -> ParsedResponse? {
            guard let client = try? RawClient(port: gateway.server.port) else { return nil }
            client.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
            return await client.responses(1).first
        }
        let metrics = await get("/svc/../metrics")
        #expect(metrics?.status == 200 && metrics?.body.contains("pier_gateway") == true)
        // Prometheus text of the gateway, not the upstream's JSON echo of a forwarded request.
        #expect(metrics?.body.hasPrefix("{") == false)
        let echoed = try #require(await get("/svc/a/./b/../../echo?x=1"))
        #expect(echoed.status == 200)
        #expect(try JSONDecoder().decode(EchoUpstream.Echo.self, from: Data(echoed.body.utf8)).target == "/svc/echo?x=1")
        #expect(await get("/svc/%2e%2e/metrics")?.status == 400)
        #expect(await get("/svc/a%2F..%2F..%2Fmetrics")?.status == 400)
        await gateway.shutdown()
        await upstream.stop()
    }

    /// With an admin port, readiness (which names upstream URLs) and metrics leave the public
    /// port: only `/healthz` stays there; the admin listener has all three.
    @Test func operatorEndpointsMoveToTheAdminPort() async throws {
        let upstream = try EchoUpstream("one")
        let gateway = try await Self.gateway(["/svc=\(upstream.base)"], settings: ["PIER_ADMIN_PORT": "0"])
        let admin = try #require(gateway.admin)
        let public_ = ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)")
        let operators = ServiceClient(base: "http://127.0.0.1:\(admin.port)")
        #expect(try await public_.send("GET", "/healthz").status == 200)
        for path in ["/readyz", "/metrics"] {
            let hidden = try await public_.send("GET", path)
            #expect(hidden.status == 404 && !hidden.text.contains(upstream.base), "\(path)")
        }
        #expect(try await operators.send("GET", "/healthz").status == 200)
        let ready = try await operators.send("GET", "/readyz")
        #expect(ready.status == 200 && ready.text.contains("route /svc"))
        #expect(try await operators.send("GET", "/metrics").text.contains("pier_gateway_upstream"))
        // The proxied routes are not on the admin port.
        #expect(try await operators.send("GET", "/svc/echo").status == 404)
        #expect(try await public_.send("GET", "/svc/echo").status == 200)
        #expect(throws: Environment.Failure.self) {
            _ = try ServiceConfiguration(
                environment: Environment(["PIER_ADMIN_PORT": "70000"]), defaultPort: 0, applicationName: "t")
        }
        await gateway.shutdown()
        await upstream.stop()
    }

    /// Per-client limits key IPv6 clients by their /64: one subscriber cannot take a fresh
    /// address per request to escape them.
    @Test func limitsCountIPv6ClientsByTheirSlash64() {
        let key = TrustedProxies.limitKey("2001:db8:1:2:aaaa:bbbb:cccc:dddd")
        #expect(key == "2001:db8:1:2::/64")
        #expect(TrustedProxies.limitKey("2001:db8:1:2::1") == key)
        #expect(TrustedProxies.limitKey("2001:db8:1:3::1") != key)
        #expect(TrustedProxies.limitKey("203.0.113.9") == "203.0.113.9")
        #expect(TrustedProxies.limitKey("::ffff:203.0.113.9") == "203.0.113.9")
        #expect(Request(method: "GET", path: "/", clientAddress: "2001:db8:0:0:1::9").clientKey == "2001:db8:0:0::/64")
    }

    @Test func replicasShareTheLoadAndADeadOneLosesNothingRetried() async throws {
        let one = try EchoUpstream("one")
        let two = try EchoUpstream("two")
        let gateway = try await Self.gateway(
            ["/svc=\(one.base)|\(two.base)"], settings: ["PIER_GATEWAY_HEALTH_INTERVAL_MS": "60000"])
        let client = ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)")
        for _ in 0..<20 { #expect(try await client.send("GET", "/svc/echo").status == 200) }
        #expect(one.count == 10 && two.count == 10)

        // One replica dies: every request still succeeds (refused connections are retried on the
        // other, POST included: it never reached the dead one), and it is taken out.
        await two.stop()
        for index in 0..<20 {
            let method = index % 2 == 0 ? "GET" : "POST"
            #expect(try await client.send(method, "/svc/echo", json: method == "POST" ? "{}" : nil).status == 200)
        }
        #expect(one.count == 30)
        let metrics = try await client.send("GET", "/metrics").text
        #expect(metrics.contains(#"pier_gateway_upstream_healthy{route="/svc",upstream="\#(two.base)"} 0"#))
        #expect(metrics.contains(#"pier_gateway_upstream_retries_total{route="/svc",upstream="\#(one.base)"}"#))
        await gateway.shutdown()
        await one.stop()
    }

    @Test func aDeadServiceIsA503AtOnceAndComesBackWithoutARestart() async throws {
        // The port stays this test's while the upstream is down (see PortHolder).
        let held = try PortHolder()
        defer { withExtendedLifetime(held) {} }
        let port = held.port
        let upstream = try EchoUpstream("one", port: port)
        let gateway = try await Self.gateway(["/svc=\(upstream.base)"])
        let client = ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)")
        #expect(try await client.send("GET", "/svc/echo").status == 200)
        await upstream.stop()
        let started = Date()
        let down = try await client.send("GET", "/svc/echo")
        #expect(down.status == 503 && down.headers["Retry-After"] == "1")
        #expect(down.headers["Content-Type"] == "application/problem+json")
        #expect(Date().timeIntervalSince(started) < 1)
        // Active checks (every 200 ms here) take the dead upstream out of /readyz too.
        #expect(try await eventually { try await client.send("GET", "/readyz").status == 503 })

        let again = try EchoUpstream("again", port: port)
        #expect(try await eventually { try await client.send("GET", "/svc/echo").status == 200 })
        #expect(try await eventually { try await client.send("GET", "/readyz").status == 200 })
        await gateway.shutdown()
        await again.stop()
    }

    @Test func timeoutsAre504AndNothingIsRetriedAfterAResponseBegan() async throws {
        let upstream = try EchoUpstream("one")
        let gateway = try await Self.gateway(["/svc=\(upstream.base);timeout=300;retries=0"])
        let client = ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)")
        let slow = try await client.send("GET", "/svc/slow")
        #expect(slow.status == 504 && slow.problem?.detail?.contains("/svc") == true)
        // An upstream that takes the request and closes without a word: 502, and a GET is
        // retried on the other upstream before that.
        let closing = try ClosingListener()
        let resetting = try await Self.gateway(["/svc=http://127.0.0.1:\(closing.port)"])
        let reset = try await ServiceClient(base: "http://127.0.0.1:\(resetting.server.port)").send("GET", "/svc/echo")
        #expect(reset.status == 502 && reset.headers["Retry-After"] == "1")
        #expect(reset.problem?.detail?.contains("closed the connection") == true)
        // (Not taken out after failures here, so that both kinds of request keep meeting it.)
        let mixed = try await Self.gateway(
            ["/svc=http://127.0.0.1:\(closing.port)|\(upstream.base)"], settings: ["PIER_GATEWAY_EJECT_AFTER": "1000"])
        let mixedClient = ServiceClient(base: "http://127.0.0.1:\(mixed.server.port)")
        for _ in 0..<4 { #expect(try await mixedClient.send("GET", "/svc/echo").status == 200) }
        // A POST without an Idempotency-Key may have arrived: not retried, 502.
        var posts: [Int] = []
        for _ in 0..<4 { posts.append(try await mixedClient.send("POST", "/svc/echo", json: "{}").status) }
        #expect(posts.contains(502) && posts.contains(200))
        await mixed.shutdown()
        await resetting.shutdown()
        closing.stop()
        // Nothing listens here: refused.
        let nowhere = try await Self.gateway(["/svc=http://127.0.0.1:9;retries=0"])
        let refused = try await ServiceClient(base: "http://127.0.0.1:\(nowhere.server.port)").send("GET", "/svc/echo")
        #expect(refused.status == 503 && refused.headers["Retry-After"] != nil)
        await nowhere.shutdown()
        await gateway.shutdown()
        await upstream.stop()
    }

    @Test func largeBodiesStreamThrough() async throws {
        let upstream = try EchoUpstream("one")
        let gateway = try await Self.gateway(["/svc=\(upstream.base)"])
        let client = ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)")
        // Chunked through the gateway, byte for byte (the client caps bodies at 1 MiB: ask for less).
        let reply = try await client.send("GET", "/svc/big?mb=0")
        #expect(reply.status == 200 && reply.body.isEmpty)
        let raw = try RawClient(port: gateway.server.port)
        raw.send("GET /svc/big?mb=8 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let text = await raw.receive()
        #expect(text.hasPrefix("HTTP/1.1 200"))
        #expect(text.lowercased().contains("transfer-encoding: chunked"))
        let body = Self.dechunk(text)
        #expect(body.count == 8 << 20)
        #expect(body.allSatisfy { $0 == UInt8(ascii: "x") })
        await gateway.shutdown()
        await upstream.stop()
    }

    @Test func clientsOverTheirRateGet429() async throws {
        let upstream = try EchoUpstream("one")
        let gateway = try await Self.gateway(
            ["/svc=\(upstream.base)"], settings: ["PIER_GATEWAY_RATE_LIMIT": "1", "PIER_GATEWAY_RATE_BURST": "3"])
        let client = ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)")
        // The burst passes; then, at one a second, a refusal comes before long (on a busy
        // machine a token may refill between requests, so the first refused one is awaited).
        var statuses: [Int] = []
        for _ in 0..<3 { statuses.append(try await client.send("GET", "/svc/echo").status) }
        #expect(statuses == [200, 200, 200])
        var limited = try await client.send("GET", "/svc/echo")
        for _ in 0..<50 where limited.status == 200 { limited = try await client.send("GET", "/svc/echo") }
        #expect(limited.status == 429)
        #expect(limited.headers["Retry-After"] == "1" && limited.headers["RateLimit-Limit"] == "3")
        #expect(limited.headers["RateLimit-Remaining"] == "0" && limited.problem?.status == 429)
        // Operators are never limited.
        #expect(try await client.send("GET", "/healthz").status == 200)
        await gateway.shutdown()
        await upstream.stop()
    }

    @Test func mixedModeEmbedsSomeAndProxiesOthers() async throws {
        let upstream = try EchoUpstream("feedback")
        let gateway = try await Self.gateway(
            ["/svc=\(upstream.base);bearer=require"], embed: ["auth"], database: "pier_test_proxy_mixed")
        let client = ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)")
        let registered = try await client.send(
            "POST", "/auth/register", json: #"{"email":"mixed@example.com","password":"mixed passphrase"}"#)
        #expect(registered.status == 201)
        let token = try registered.decode(AuthSession.self).accessToken
        // The edge verifies tokens with the embedded auth's keys.
        #expect(try await client.send("GET", "/svc/echo").status == 401)
        #expect(try await client.send("GET", "/svc/echo", token: token + "x").status == 401)
        let echo = try await client.send("GET", "/svc/echo", token: token)
        #expect(echo.status == 200)
        #expect(try echo.decode(EchoUpstream.Echo.self).headers["authorization"] == "Bearer \(token)")
        let ready = try await client.send("GET", "/readyz")
        #expect(ready.status == 200 && ready.text.contains(#""route /svc":true"#) && ready.text.contains("auth.database"))
        await gateway.shutdown()
        await upstream.stop()
    }
}
