import Foundation
import PierModels
import PierRuntime
import PierTestSupport
import Synchronization
import Testing

@testable import PierHTTP

struct Item: Codable, ResponseConvertible {
    var id: String
    var q: String
}

struct Greeting: Codable, Sendable {
    var name: String
    var count: Int
    var tags: [String]?
}

struct DatabaseDown: Error, CustomStringConvertible {
    var description: String { "connection to server at 10.0.0.5 failed: password authentication failed for user secret" }
}

func makeServer(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in }, logs: LogLines = LogLines()) throws
    -> HTTPServer
{
    let router = Router<BasicRequestContext>()
    router.get("/healthz") { _, _ in Response.text("ok") }
    router.get("/items/{id}") { request, context in Item(id: try context.parameters.require("id"), q: request.query("q") ?? "") }
    router.post("/echo", body: Greeting.self) { _, _, greeting in JSONResponse(greeting, status: 201) }
    router.on("POST", "/raw") { request, _ in Response(status: 200, body: request.body) }
    router.get("/slow") { _, _ in
        try await Task.sleep(for: .milliseconds(300))
        return Response.text("done")
    }
    router.get("/boom") { _, _ -> Response in throw DatabaseDown() }
    router.get("/stream") { request, _ in
        let count = Int(request.query("lines") ?? "10") ?? 10
        return Response.streaming(headers: ["Content-Type": "application/x-ndjson"]) { writer in
            for index in 0..<count {
                try await writer.write("{\"line\":\(index),\"pad\":\"\(String(repeating: "x", count: 100))\"}\n")
                if index % 1000 == 0 { await Task.yield() }
            }
        }
    }
    router.get("/events") { _, _ in
        // A stream that never ends by itself, as a live feed's.
        Response.streaming(headers: ["Content-Type": "text/event-stream"]) { writer in
            try await writer.write("data: first\n\n")
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
    }
    router.get("/conflict") { _, _ -> Response in throw HTTPError.conflict("Already there.") }
    router.get("/busy") { _, _ -> Response in throw BlockingPool.Overloaded(pool: "password hashing") }
    var configuration = HTTPServer.Configuration(port: 0, threads: 2)
    configure(&configuration)
    let logger = Logger(service: "test", sink: { logs.append($0) })
    var middleware: [any RouterMiddleware<BasicRequestContext>] = []
    if configuration.accessLog { middleware.append(AccessLogMiddleware(logger: logger)) }
    middleware += [CORSMiddleware(allowedOrigins: ["https://app.example"]), ErrorMiddleware(logger: logger)]
    var routes = router.routes
    routes.constant("/alive", Response(status: 200, headers: ["Content-Type": "application/json"], body: Array("{}".utf8)))
    let server = HTTPServer(
        configuration: configuration, pipeline: HTTPPipeline(routes: routes, middleware: middleware, logger: logger),
        logger: logger)
    try server.listen()
    return server
}

@Suite struct HTTPServerTests {
    /// An event stream never finishes: shutdown cuts it at once rather than waiting out its
    /// grace period (an hour here) for it; its client reconnects to another instance.
    @Test func shutdownCutsEventStreamsAtOnce() async throws {
        let server = try makeServer { $0.shutdownGracePeriod = .seconds(3600) }
        let stream = try await EventStream.open("http://127.0.0.1:\(server.port)/events")
        #expect(try await stream.next()?.data == "first")
        await server.shutdown()
        // Cut (the body unfinished) or ended: no message after.
        #expect((try? await stream.next()).flatMap { $0 } == nil)
    }

    @Test func keepAliveAndPipelining() async throws {
        let server = try makeServer()
        let client = try RawClient(port: server.port)
        client.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(await client.responses(1).first?.status == 200)
        client.send("GET /items/42?q=a%20b HTTP/1.1\r\nHost: x\r\n\r\n")
        let second = await client.responses(1)
        #expect(second.first?.body == #"{"id":"42","q":"a b"}"#)
        // Three requests in one write: three answers, in order.
        let pipelined = try RawClient(port: server.port)
        pipelined.send(
            "GET /items/1 HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /items/3 HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        let answers = await pipelined.responses(3)
        #expect(answers.map(\.status) == [200, 200, 200])
        #expect(
            answers.count == 3 && answers[0].body.contains("\"1\"") && answers[1].body == "ok"
                && answers[2].body.contains("\"3\""))
        await server.shutdown()
    }

    @Test func constantAnswersAreQueuedPastThePipeline() async throws {
        let logs = LogLines()
        let server = try makeServer({ $0.accessLog = true }, logs: logs)
        let client = try RawClient(port: server.port)
        // Kept alive and pipelined with routed requests, in order; the given request id echoed.
        client.send(
            "GET /alive HTTP/1.1\r\nHost: x\r\nX-Request-ID: probe-1\r\n\r\nGET /items/7 HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /alive HTTP/1.1\r\nHost: x\r\n\r\n")
        let answers = await client.responses(3)
        try #require(answers.count == 3)
        #expect(answers.map(\.status) == [200, 200, 200])
        #expect(answers[0].body == "{}" && answers[0].headers["content-type"] == "application/json")
        #expect(answers[0].headers["x-request-id"] == "probe-1")
        #expect(answers[1].body.contains("\"7\""))
        // A generated id: the process's 16 hex digits, then a counter in hex.
        let generated = try #require(answers[2].headers["x-request-id"])
        let parts = generated.split(separator: "-")
        #expect(parts.count == 2 && parts[0].count == 16 && parts.allSatisfy { $0.allSatisfy(\.isHexDigit) })
        // Anything but exactly the path, or another method, takes the pipeline's way.
        client.send("GET /alive?probe=1 HTTP/1.1\r\nHost: x\r\n\r\nDELETE /alive HTTP/1.1\r\nHost: x\r\n\r\n")
        let routed = await client.responses(2)
        #expect(routed.map(\.status) == [200, 405])
        #expect(routed.first?.body == "{}")
        // The limits hold for it too; a body announced is read (and ignored) as for any route,
        // and the answer comes the pipeline's way (logged).
        let oversized = try RawClient(port: server.port)
        oversized.send("GET /alive HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 9000))\r\n\r\n")
        let refused = await oversized.responses(1)
        #expect(refused.first?.status == 431 && refused.first?.headers["content-type"] == "application/problem+json")
        client.send("GET /alive HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET /alive HTTP/1.1\r\nHost: x\r\n\r\n")
        let withBody = await client.responses(2)
        #expect(withBody.map(\.status) == [200, 200] && withBody.allSatisfy { $0.body == "{}" })
        // Only the routed ones were logged (a probe every second would drown the log): /items/7,
        // /alive?probe=1, DELETE /alive and the one with a body.
        let logged = { logs.all.filter { $0.contains(#""msg":"request""#) } }
        #expect(await eventually { logged().count == 4 })
        #expect(logged().filter { $0.contains(#""path":"/alive""#) }.count == 3)
        await server.shutdown()
    }

    @Test func chunkedBodiesAndExpectContinue() async throws {
        let server = try makeServer()
        let client = try RawClient(port: server.port)
        client.send("POST /raw HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        #expect(await client.responses(1).first?.body == "hello world")
        let expecting = try RawClient(port: server.port)
        expecting.send("POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        let interim = await expecting.receive { $0.contains("100 Continue\r\n\r\n") }
        #expect(interim.hasPrefix("HTTP/1.1 100 Continue"))
        expecting.send("ping")
        #expect(await expecting.responses(1).first?.body == "ping")
        await server.shutdown()
    }

    @Test func ambiguousFramingIsRefused() async throws {
        let server = try makeServer()
        for request in [
            "POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            "POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
            "POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
            "POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\nhello",
        ] {
            let client = try RawClient(port: server.port)
            client.send(request)
            let response = await client.receive()
            #expect(response.hasPrefix("HTTP/1.1 400"), "\(request.debugDescription) → \(response.prefix(40))")
            // The connection is closed: the body can never be read as a second request.
            #expect(ParsedResponse.parseAll(response).count == 1)
        }
        // Malformed requests get a 400 or, where nothing sensible can be said (not even a
        // request line), a closed connection — never a handler call.
        for request in [
            "BLAH\r\n\r\n", "GET /healthz HTTP/1.1\r\nBad Header Without Colon\r\n\r\n",
            "GET /healthz HTTP/1.1\r\n\r\n", "GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n",
            "POST /raw HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nabc",
        ] {
            let client = try RawClient(port: server.port)
            client.send(request)
            let answer = await client.receive()
            #expect(
                answer.isEmpty || answer.hasPrefix("HTTP/1.1 4") || answer.hasPrefix("HTTP/1.1 505"),
                "\(request.debugDescription)")
        }
        await server.shutdown()
    }

    @Test func limitsAnswerWithTheirStatus() async throws {
        let server = try makeServer {
            $0.maxBodyBytes = 1000; $0.maxURLBytes = 200; $0.maxHeaderBytes = 8192
        }
        func send(_ text: String) async throws -> String {
            let client = try RawClient(port: server.port)
            client.send(text)
            // Until one whole response (or the connection's end), not the receive timeout.
            return await client.receive { !ParsedResponse.parseAll($0).isEmpty }
        }
        #expect(try await send("POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n").hasPrefix("HTTP/1.1 413"))
        let chunk = String(repeating: "a", count: 600)
        let chunked = try await send(
            "POST /raw HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n")
        #expect(chunked.hasPrefix("HTTP/1.1 413"))
        #expect(
            try await send("GET /items/\(String(repeating: "x", count: 300)) HTTP/1.1\r\nHost: x\r\n\r\n").hasPrefix(
                "HTTP/1.1 414"))
        let bigHeader = try await send(
            "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 20000))\r\n\r\n")
        #expect(bigHeader.hasPrefix("HTTP/1.1 431"))
        // Up to twice the limit, the 431 is Pier's own problem+json, not the library's HTML.
        let overLimit = try await send(
            "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 10000))\r\n\r\n")
        #expect(overLimit.hasPrefix("HTTP/1.1 431") && overLimit.lowercased().contains("application/problem+json"))
        #expect(
            try await send("POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n\(String(repeating: "z", count: 1000))")
                .hasPrefix("HTTP/1.1 200"))
        await server.shutdown()
    }

    /// Dot segments are removed before routing (RFC 3986 §5.2.4); encodings that servers read
    /// differently are refused rather than guessed.
    @Test func pathsAreNormalizedBeforeRouting() async throws {
        let server = try makeServer()
        func status(_ target: String) async throws -> (Int, String) {
            let client = try RawClient(port: server.port)
            client.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = await client.responses(1).first
            return (response?.status ?? 0, response?.body ?? "")
        }
        for target in ["/nowhere/../healthz", "/./healthz", "/items/a/../../healthz", "/../../healthz", "/items/./../healthz"] {
            let (code, body) = try await status(target)
            #expect(code == 200 && body == "ok", "\(target) → \(code)")
        }
        #expect(try await status("/items/x/../y?q=1").1.contains(#""id":"y""#))
        // Segments that only start with dots are names (`/.well-known/`), kept as they are.
        #expect(try await status("/items/.y").1.contains(#""id":".y""#))
        #expect(try await status("/items/..y").1.contains(#""id":"..y""#))
        #expect(try await status("/items/x/../.z").1.contains(#""id":".z""#))
        for target in ["/healthz/x/..", "/healthz/."] { #expect(try await status(target).1 == "ok", "\(target)") }
        for target in [
            "/items/%2e%2e/healthz", "/items/.%2E/healthz", "/items/%2e/x", "/items/a%2Fb", "/items/a%2fb", "/items/a%5cb",
            "/items/a%00b", "/items/x?q=a%00b", "/items/x?a%00=b",
        ] {
            #expect(try await status(target).0 == 400, "\(target)")
        }
        await server.shutdown()
    }

    @Test func routingProblemsAndRequestIDs() async throws {
        let server = try makeServer()
        let client = try RawClient(port: server.port)
        client.send("GET /nowhere HTTP/1.1\r\nHost: x\r\nX-Request-ID: trace-123\r\n\r\n")
        let notFound = try #require(await client.responses(1).first)
        #expect(notFound.status == 404)
        #expect(notFound.headers["content-type"] == "application/problem+json")
        #expect(notFound.headers["x-request-id"] == "trace-123")
        let problem = try JSONDecoder().decode(Problem.self, from: Data(notFound.body.utf8))
        #expect(problem.status == 404 && problem.requestId == "trace-123")

        client.send("DELETE /echo HTTP/1.1\r\nHost: x\r\n\r\n")
        let wrongMethod = try #require(await client.responses(1).first)
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers["allow"] == "POST")

        client.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-ID: has space\r\n\r\n")
        let generated = try #require(await client.responses(1).first)
        let id = try #require(generated.headers["x-request-id"])
        #expect(id.count > 17 && id != "has space")
        client.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(await client.responses(1).first?.headers["x-request-id"] != id)
        await server.shutdown()
    }

    @Test func jsonBodiesNameTheFieldThatIsWrong() async throws {
        let server = try makeServer()
        func post(_ body: String, contentType: String = "application/json") async throws -> ParsedResponse {
            let client = try RawClient(port: server.port)
            client.send(
                "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            )
            return await client.responses(1).first ?? ParsedResponse(status: 0, headers: [:], body: "")
        }
        let ok = try await post(#"{"name":"Ada ✨","count":2,"tags":["a"]}"#)
        #expect(ok.status == 201)
        #expect(try JSONDecoder().decode(Greeting.self, from: Data(ok.body.utf8)).name == "Ada ✨")
        #expect(try await post(#"{"name":"Ada","#).status == 400)
        #expect(try await post("").status == 400)
        #expect(try await post("[1,2]").status == 400)
        let missing = try await post(#"{"name":"Ada"}"#)
        #expect(missing.status == 422)
        #expect(try JSONDecoder().decode(Problem.self, from: Data(missing.body.utf8)).errors?.first?.field == "count")
        let wrongType = try await post(#"{"name":"Ada","count":"two"}"#)
        #expect(wrongType.status == 422)
        #expect(
            try JSONDecoder().decode(Problem.self, from: Data(wrongType.body.utf8)).errors?.first
                == Problem.FieldError(field: "count", message: "must be an integer"))
        let nested = try await post(#"{"name":"Ada","count":1,"tags":["a",3]}"#)
        #expect(try JSONDecoder().decode(Problem.self, from: Data(nested.body.utf8)).errors?.first?.field == "tags[1]")
        #expect(try await post(#"{"name":"Ada","count":1}"#, contentType: "text/plain").status == 415)
        await server.shutdown()
    }

    @Test func unexpectedErrorsAre500WithoutDetailButLogged() async throws {
        let logs = LogLines()
        let server = try makeServer(logs: logs)
        let client = try RawClient(port: server.port)
        client.send("GET /boom HTTP/1.1\r\nHost: x\r\nX-Request-ID: r-500\r\n\r\n")
        let response = try #require(await client.responses(1).first)
        #expect(response.status == 500)
        #expect(!response.body.contains("10.0.0.5") && !response.body.contains("password"))
        #expect(logs.all.contains { $0.contains("r-500") && $0.contains("10.0.0.5") && $0.contains("\"level\":\"error\"") })
        client.send("GET /busy HTTP/1.1\r\nHost: x\r\n\r\n")
        let busy = try #require(await client.responses(1).first)
        #expect(busy.status == 503 && busy.headers["retry-after"] == "1")
        client.send("GET /conflict HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(await client.responses(1).first?.status == 409)
        #expect(logs.all.contains { $0.contains("\"path\":\"/conflict\"") && $0.contains("\"status\":409") })
        await server.shutdown()
    }

    @Test func corsIsOptInPerOrigin() async throws {
        let server = try makeServer()
        let client = try RawClient(port: server.port)
        client.send(
            "OPTIONS /echo HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\nAccess-Control-Request-Method: POST\r\n\r\n")
        let preflight = try #require(await client.responses(1).first)
        #expect(preflight.status == 204 && preflight.headers["access-control-allow-origin"] == "https://app.example")
        client.send("GET /healthz HTTP/1.1\r\nHost: x\r\nOrigin: https://evil.example\r\n\r\n")
        #expect(await client.responses(1).first?.headers["access-control-allow-origin"] == nil)
        await server.shutdown()
    }

    @Test func idleAndSlowClientsAreCutOff() async throws {
        let server = try makeServer {
            $0.idleTimeoutSeconds = 1; $0.bodyTimeoutSeconds = 1
        }
        let idle = try RawClient(port: server.port, receiveTimeout: 20)
        #expect(await idle.isClosedByPeer())
        // A body trickling in a byte at a time, each within the idle timeout, still meets the body deadline.
        let slow = try RawClient(port: server.port, receiveTimeout: 4)
        slow.send("POST /raw HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        // The body deadline is not reset by each byte: the server closes within about a
        // second however the bytes keep coming.
        #expect(await slow.isCut(whileTrickling: "a"))
        await server.shutdown()
    }

    /// A head trickling in a line at a time never lets the idle timeout fire, but it meets the
    /// head deadline; so does a keep-alive connection that sends nothing after its response.
    @Test func aRequestHeadMustArriveWithinItsDeadline() async throws {
        let server = try makeServer {
            $0.headTimeoutSeconds = 1; $0.idleTimeoutSeconds = 60
        }
        let trickling = try RawClient(port: server.port, receiveTimeout: 20)
        trickling.send("GET /healthz HTTP/1.1\r\nHost: x\r\n")
        #expect(await trickling.isCut(whileTrickling: "X-More: a\r\n"))
        let idle = try RawClient(port: server.port, receiveTimeout: 20)
        idle.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(await idle.responses(1).first?.status == 200)
        #expect(await idle.isClosedByPeer())
        // A slow handler is not a slow head: the deadline does not run while a request is answered.
        let patient = try RawClient(port: server.port, receiveTimeout: 20)
        patient.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(await patient.responses(1).first?.body == "done")
        #expect(server.connections.statistics.timedOut >= 2)
        await server.shutdown()
        // Each answered request restarts the deadline: a connection in use for longer than it
        // (a gateway's pooled connection) is never cut. A deadline of 2 s against pauses of
        // 200 ms leaves a busy machine room; 15 rounds outlast the deadline.
        let pooled = try makeServer {
            $0.headTimeoutSeconds = 2; $0.idleTimeoutSeconds = 60
        }
        let busy = try RawClient(port: pooled.port, receiveTimeout: 20)
        for round in 0..<15 {
            busy.send("GET /\(round % 2 == 0 ? "healthz" : "alive") HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(await busy.responses(1).first?.status == 200, "round \(round)")
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(pooled.connections.statistics.timedOut == 0)
        await pooled.shutdown()
    }

    /// One address cannot hold every connection: past its share, its new connections are cut at
    /// once while another address is served; a trusted proxy (the gateway) is not capped.
    @Test func connectionsPerClientAreCapped() async throws {
        // No deadline frees a place while a loaded machine gets round to the checks.
        let server = try makeServer {
            $0.maxConnectionsPerClient = 3; $0.headTimeoutSeconds = 600; $0.idleTimeoutSeconds = 600
        }
        let held = try (0..<3).map { _ in try RawClient(port: server.port, from: "127.0.0.3") }
        #expect(await eventually { server.connections.statistics.open == 3 })
        let fourth = try RawClient(port: server.port, receiveTimeout: 5, from: "127.0.0.3")
        #expect(await fourth.isClosedByPeer())
        let other = try RawClient(port: server.port, from: "127.0.0.4")
        other.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(await other.responses(1).first?.status == 200)
        // The held ones still work, and a closed one frees a place.
        held[0].send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(await held[0].responses(1).first?.status == 200)
        #expect(server.connections.statistics.refused == 1)
        await server.shutdown()

        let behindProxy = try makeServer {
            $0.maxConnectionsPerClient = 3; $0.trustedProxies = try! TrustedProxies(["127.0.0.5"])
        }
        let many = try (0..<10).map { _ in try RawClient(port: behindProxy.port, from: "127.0.0.5") }
        for client in many { client.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n") }
        var answered = 0
        for client in many where await client.responses(1).first?.status == 200 { answered += 1 }
        #expect(answered == 10)
        await behindProxy.shutdown()
    }

    @Test func connectionCapHolds() async throws {
        // A kept-alive connection waits for its next head only so long (10 s by default): on a
        // loaded machine that deadline would free a place for the third.
        let server = try makeServer {
            $0.maxConnections = 2; $0.headTimeoutSeconds = 600; $0.idleTimeoutSeconds = 600
        }
        let first = try RawClient(port: server.port)
        let second = try RawClient(port: server.port)
        first.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        second.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let firstStatus = await first.responses(1).first?.status
        let secondStatus = await second.responses(1).first?.status
        #expect(firstStatus == 200 && secondStatus == 200)
        let third = try RawClient(port: server.port, receiveTimeout: 2)
        third.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(await third.responses(1).isEmpty)
        // The first two stay open until here: released after their last use, they would close
        // their connections and make room for the third.
        withExtendedLifetime((first, second)) {}
        await server.shutdown()
    }

    @Test func shutdownLetsInFlightRequestsFinish() async throws {
        let server = try makeServer()
        let client = try RawClient(port: server.port)
        client.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(await eventually { server.inFlight == 1 })
        async let stopped: Void = server.shutdown()
        let response = await client.responses(1)
        await stopped
        #expect(response.first?.body == "done")
        #expect((try? RawClient(port: server.port)) == nil)
    }

    @Test func streamedBodiesArriveWholeAndChunked() async throws {
        let server = try makeServer()
        // The read ends when the last chunk arrives; the timeout is only for a server that stops.
        let client = try RawClient(port: server.port, receiveTimeout: 60)
        client.send("GET /stream?lines=20000 HTTP/1.1\r\nHost: x\r\n\r\n")
        let raw = await client.receive { $0.hasSuffix("\r\n0\r\n\r\n") }
        #expect(raw.hasPrefix("HTTP/1.1 200"))
        #expect(raw.lowercased().contains("transfer-encoding: chunked"))
        // De-chunk and count the lines.
        var body = Substring(raw[raw.range(of: "\r\n\r\n")!.upperBound...])
        var lines = 0
        while let end = body.range(of: "\r\n"), let size = Int(body[..<end.lowerBound], radix: 16), size > 0 {
            let start = end.upperBound
            let chunk = body.utf8[start...].prefix(size)
            lines += chunk.filter { $0 == UInt8(ascii: "\n") }.count
            body = body[body.utf8.index(start, offsetBy: size + 2)...]
        }
        #expect(lines == 20000)
        // The connection stays usable after a streamed response.
        client.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(await client.responses(1).first?.body == "ok")
        // A client that leaves in the middle stops the producer; the server carries on.
        do {
            let leaving = try RawClient(port: server.port)
            leaving.send("GET /stream?lines=2000000 HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = await leaving.receive { $0.count > 100_000 }
        }  // Closed with unread data: the server's next write meets a reset.
        #expect(await eventually { server.inFlight == 0 })
        let after = try RawClient(port: server.port)
        after.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(await after.responses(1).first?.status == 200)
        await server.shutdown()
        #expect(server.inFlight == 0)
    }

    @Test func manyConcurrentAsyncRequests() async throws {
        let server = try makeServer()
        let statuses = await withTaskGroup(of: Int.self) { group in
            for index in 0..<64 {
                group.addTask {
                    guard let client = try? RawClient(port: server.port) else { return 0 }
                    client.send("GET /items/\(index) HTTP/1.1\r\nHost: x\r\n\r\nGET /items/\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
                    return await client.responses(2).filter { $0.status == 200 && $0.body.contains("\"\(index)\"") }.count
                }
            }
            return await group.reduce(0, +)
        }
        #expect(statuses == 128)
        await server.shutdown()
    }
}
