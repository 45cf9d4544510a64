import Foundation
import PierHTTP
import PierTestSupport
import Synchronization
import Testing

@testable import Gateway

/// An upstream that speaks HTTP/1.1 from a script: each request's line is answered with the
/// bytes `answer` gives, and the connection is closed after them when it says so (whatever the
/// bytes said). Counts the connections that carried a request other than `/readyz`.
final class ScriptedUpstream: Sendable {
    let fd: Int32
    let port: Int
    private let serving = EchoUpstream.Hits()
    var connections: Int { serving.value.load(ordering: .relaxed) }

    init(_ answer: @escaping @Sendable (String) -> (bytes: String, close: Bool)) throws {
        (fd, port) = try listeningOnLoopback()
        let fd = fd
        let serving = serving
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { return }
                Thread.detachNewThread { Self.serve(client, answer, serving) }
            }
        }
    }

    private static func serve(
        _ client: Int32, _ answer: @Sendable (String) -> (bytes: String, close: Bool), _ serving: EchoUpstream.Hits
    ) {
        defer { close(client) }
        var pending: [UInt8] = []
        var counted = false
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            // One request: its head, then as many body bytes as it announced.
            var headEnd: Range<Int>?
            while true {
                headEnd = pending.firstRange(of: Array("\r\n\r\n".utf8))
                if headEnd != nil { break }
                let count = recv(client, &buffer, buffer.count, 0)
                if count <= 0 { return }
                pending += buffer[0..<count]
            }
            let head = String(decoding: pending[..<headEnd!.lowerBound], as: UTF8.self)
            let length =
                head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            while pending.count < headEnd!.upperBound + length {
                let count = recv(client, &buffer, buffer.count, 0)
                if count <= 0 { return }
                pending += buffer[0..<count]
            }
            pending.removeFirst(headEnd!.upperBound + length)
            let line = String(head.prefix { $0 != "\r" })
            if line.hasPrefix("GET /readyz ") {
                let ready = Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8)
                _ = send(client, ready, ready.count, Int32(MSG_NOSIGNAL))
                continue
            }
            if !counted {
                counted = true
                serving.value.add(1, ordering: .relaxed)
            }
            let (text, closing) = answer(line)
            let bytes = Array(text.utf8)
            _ = send(client, bytes, bytes.count, Int32(MSG_NOSIGNAL))
            if closing { return }
        }
    }

    func stop() { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
}

/// The gateway's own HTTP/1.1 client to its upstreams: connections kept and renewed, every
/// framing of a response body, and answers that are not HTTP refused.
@Suite(.serialized) struct UpstreamConnectionTests {
    static let settings = ["PIER_GATEWAY_HEALTH_INTERVAL_MS": "60000"]

    @Test func oneConnectionServesRequestAfterRequest() async throws {
        let upstream = try ScriptedUpstream { _ in ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false) }
        defer { upstream.stop() }
        let gateway = try await ProxyGatewayTests.gateway(["/svc=http://127.0.0.1:\(upstream.port)"], settings: Self.settings)
        let client = ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)")
        for index in 0..<10 {
            let reply = try await client.send(index % 2 == 0 ? "GET" : "POST", "/svc/x", json: index % 2 == 0 ? nil : "{}")
            #expect(reply.status == 200 && reply.text == "ok")
        }
        #expect(upstream.connections == 1)
        await gateway.shutdown()
        // By name: resolved off the server's threads, each address tried in turn (localhost may
        // be ::1 first, where nothing listens).
        let named = try await ProxyGatewayTests.gateway(["/svc=http://localhost:\(upstream.port)"], settings: Self.settings)
        let reply = try await ServiceClient(base: "http://127.0.0.1:\(named.server.port)").send("GET", "/svc/x")
        #expect(reply.status == 200 && reply.text == "ok")
        await named.shutdown()
    }

    /// An upstream that closes each connection after its answer without saying so (as one does
    /// when its idle timeout passes): the next request, a POST too, goes on a new connection.
    @Test func aConnectionClosedWhileIdleIsReplaced() async throws {
        let upstream = try ScriptedUpstream { _ in ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true) }
        defer { upstream.stop() }
        let gateway = try await ProxyGatewayTests.gateway(
            ["/svc=http://127.0.0.1:\(upstream.port);retries=0"], settings: Self.settings)
        let client = ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)")
        for index in 0..<6 {
            let reply = try await client.send(index % 2 == 0 ? "GET" : "POST", "/svc/x", json: index % 2 == 0 ? nil : "{}")
            #expect(reply.status == 200 && reply.text == "ok", "request \(index)")
        }
        #expect(upstream.connections == 6)
        await gateway.shutdown()
    }

    @Test func everyFramingOfABodyPassesAndBadAnswersAre502() async throws {
        let large = String(repeating: "y", count: 200_000)
        let upstream = try ScriptedUpstream { line in
            switch line.split(separator: " ")[1] {
            case "/svc/chunked":
                (
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=1\r\n world\r\n0\r\nX-T: y\r\n\r\n",
                    false
                )
            case "/svc/until-close": ("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end", true)
            case "/svc/hints":
                ("HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\nmade", false)
            case "/svc/large": ("HTTP/1.1 200 OK\r\nContent-Length: \(large.utf8.count)\r\n\r\n\(large)", false)
            case "/svc/short": ("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc", true)
            case "/svc/length": ("HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n", true)
            case "/svc/folded": ("HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 0\r\n\r\n", true)
            case "/svc/signed": ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+2\r\nok\r\n0\r\n\r\n", true)
            default: ("SSH-2.0-OpenSSH_9.2\r\n\r\n", true)
            }
        }
        defer { upstream.stop() }
        // (Not taken out after failures here: each bad answer meets it.)
        let gateway = try await ProxyGatewayTests.gateway(
            ["/svc=http://127.0.0.1:\(upstream.port)"],
            settings: Self.settings.merging(["PIER_GATEWAY_EJECT_AFTER": "1000"]) { $1 })
        let client = ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)")
        let chunked = try await client.send("GET", "/svc/chunked")
        #expect(chunked.status == 200 && chunked.text == "hello world")
        let untilClose = try await client.send("GET", "/svc/until-close")
        #expect(untilClose.status == 200 && untilClose.text == "until the end")
        #expect(untilClose.headers["Content-Type"] == "text/plain")
        let hinted = try await client.send("GET", "/svc/hints")
        #expect(hinted.status == 201 && hinted.text == "made" && hinted.headers["Link"] == nil)
        let big = try await client.send("GET", "/svc/large")
        #expect(big.status == 200 && big.body.count == 200_000 && big.body.allSatisfy { $0 == UInt8(ascii: "y") })
        for path in ["/svc/short", "/svc/length", "/svc/folded", "/svc/ssh"] {
            let reply = try await client.send("GET", path)
            #expect(reply.status == 502 && reply.headers["Content-Type"] == "application/problem+json", "\(path)")
        }
        // A chunk size with a sign: the head was relayed already, so the body ends cut short.
        let raw = try RawClient(port: gateway.server.port)
        raw.send("GET /svc/signed HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let signed = await raw.receive()
        #expect(signed.hasPrefix("HTTP/1.1 200") && !signed.contains("ok\r\n0\r\n\r\n"))
        await gateway.shutdown()
    }

    /// `PIER_GATEWAY_MAX_IN_FLIGHT` exchanges at once, a streamed body counting until its end;
    /// beyond, 503 without touching the upstream.
    @Test func exchangesBeyondTheCapAre503() async throws {
        let upstream = try EchoUpstream("one")
        let gateway = try await ProxyGatewayTests.gateway(
            ["/svc=\(upstream.base)"], settings: Self.settings.merging(["PIER_GATEWAY_MAX_IN_FLIGHT": "1"]) { $1 })
        let client = ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)")
        let slow = Task { try await client.send("GET", "/svc/slow") }
        let inFlight = #"pier_gateway_upstream_in_flight{route="/svc",upstream="\#(upstream.base)"} 1"#
        #expect(await eventually { (try? await client.send("GET", "/metrics").text.contains(inFlight)) == true })
        let refused = try await client.send("GET", "/svc/echo")
        #expect(refused.status == 503 && refused.headers["Retry-After"] == "1" && upstream.count == 0)
        #expect(try await slow.value.text == "late")
        #expect(try await client.send("GET", "/svc/echo").status == 200)
        await gateway.shutdown()
        await upstream.stop()
    }

    /// The upstream gets one request line and whole header lines, whatever came in.
    @Test func requestsAreWrittenWithoutRoomForInjection() throws {
        let request = try Request.received(
            method: "POST", target: "/svc/a b?q=é", headers: ["X-Bad": "one\r\nX-Injected: yes", "X-Good": "kept"],
            body: Array("{}".utf8), peerAddress: "127.0.0.1", trustedProxies: .none)
        let text = String(decoding: Proxy.serialize(request, headers: request.headers, authority: "auth:8081"), as: UTF8.self)
        let lines = text.components(separatedBy: "\r\n")
        #expect(lines.first == "POST /svc/a%20b?q=%C3%A9 HTTP/1.1")
        #expect(lines.contains("Host: auth:8081") && lines.contains("X-Good: kept") && lines.contains("Content-Length: 2"))
        #expect(!text.contains("X-Injected") && !text.contains("X-Bad"))
        #expect(text.hasSuffix("\r\n\r\n{}"))
    }

    @Test func endpointsSplitHostAndPort() {
        #expect(UpstreamEndpoint(base: "http://10.0.0.2:8082").host == "10.0.0.2")
        #expect(UpstreamEndpoint(base: "http://10.0.0.2:8082").port == 8082)
        #expect(UpstreamEndpoint(base: "http://[::1]:9000").host == "::1")
        #expect(UpstreamEndpoint(base: "http://[::1]:9000").port == 9000)
        #expect(UpstreamEndpoint(base: "http://auth").port == 80)
        #expect(UpstreamEndpoint(base: "http://auth:8081").authority == "auth:8081")
    }
}
