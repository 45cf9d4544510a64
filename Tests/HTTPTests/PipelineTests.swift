import PierModels
import PierRuntime
import Testing

@testable import PierHTTP

/// The pipeline alone, without a transport: routing answers, middleware order, and the last
/// line of defence when no error middleware is installed.
@Suite struct PipelineTests {
    struct Failure: Error {}

    /// Records the order it runs in, around the handler.
    struct Tag: RouterMiddleware {
        let name: String
        func handle(
            _ request: Request, context: BasicRequestContext, next: (Request, BasicRequestContext) async throws -> Response
        ) async throws -> Response {
            var response = try await next(request, context)
            response.headers.add("X-Order", name)
            return response
        }
    }

    let logger = Logger(service: "test", level: .error)

    func pipeline(_ middleware: [any RouterMiddleware<BasicRequestContext>]) -> HTTPPipeline {
        let router = Router<BasicRequestContext>()
        router.get("/items/{id}") { _, context in Response.text(try context.parameters.require("id")) }
        router.get("/fails") { _, _ -> Response in throw Failure() }
        return HTTPPipeline(routes: router.routes, middleware: middleware, logger: logger)
    }

    func request(_ method: String, _ target: String) throws -> Request {
        try Request.received(
            method: method, target: target, headers: [:], body: [], peerAddress: "127.0.0.1", trustedProxies: .none)
    }

    /// Literal paths are found by one lookup, parameters segment by segment, prefixes last:
    /// a path that is both literal (for some methods) and a parameter's (for others) is
    /// answered by either, and `Allow` lists them all.
    @Test func literalParameterAndPrefixRoutesShareAPath() {
        var routes = Routes()
        let answer: Routes.Responder = { _, _ in Response() }
        routes.add("GET", "/things/new", answer)
        routes.add("DELETE", "/things/new", answer)
        routes.add("POST", "/things/{id}", answer)
        routes.prefix("/things/new/parts", answer)
        func pattern(_ method: String, _ path: String) -> String? {
            try? routes.match(method: method, path: path).get().0.pattern
        }
        #expect(pattern("GET", "/things/new/") == "/things/new" && pattern("HEAD", "/things/new") == "/things/new")
        #expect(pattern("POST", "/things/new") == "/things/{id}" && pattern("POST", "/things/7") == "/things/{id}")
        #expect(pattern("PATCH", "/things/new/parts/1") == "/things/new/parts/*")
        guard case .failure(let refused) = routes.match(method: "PUT", path: "/things/new") else {
            Issue.record("PUT was routed")
            return
        }
        #expect(refused.status == 405 && refused.headers["Allow"] == "GET, DELETE, POST, HEAD")
        guard case .failure(let missing) = routes.match(method: "GET", path: "/things") else {
            Issue.record("/things was routed")
            return
        }
        #expect(missing.status == 404)
    }

    /// Which route a path takes does not depend on the order they were added: a path of literals
    /// wins over any pattern, and among patterns a literal segment over a parameter at the first
    /// segment where they differ (docs/plugins.md says so to plugin authors).
    @Test func literalSegmentsComeBeforeParameters() {
        let answer: Routes.Responder = { _, _ in Response() }
        let patterns = ["/games/{game}/{part}", "/games/{game}/best", "/games/me/{part}", "/games/{game}", "/games/me"]
        for order in [patterns, patterns.reversed()] {
            var routes = Routes()
            for pattern in order { routes.add("GET", pattern, answer) }
            func pattern(_ path: String) -> String? { try? routes.match(method: "GET", path: path).get().0.pattern }
            #expect(pattern("/games/me") == "/games/me")
            #expect(pattern("/games/chess") == "/games/{game}")
            #expect(pattern("/games/me/best") == "/games/me/{part}")
            #expect(pattern("/games/chess/best") == "/games/{game}/best")
            #expect(pattern("/games/chess/worst") == "/games/{game}/{part}")
        }
    }

    /// A path with and without its trailing slash is one route, whichever spelling was added:
    /// the console's front door once redirected `/console/` to itself because both were added.
    @Test func aTrailingSlashIsTheSameRoute() {
        let router = Router<BasicRequestContext>()
        router.get("/door/") { _, _ in Response.text("door") }
        router.get("/room") { _, _ in Response.text("room") }
        let routes = router.routes
        for path in ["/door", "/door/", "/room", "/room/"] {
            #expect((try? routes.match(method: "GET", path: path).get().0) != nil, "\(path) is routed")
        }
        #expect(routes.contains("GET", "/door") && routes.contains("GET", "/room/"))
        #expect(!routes.contains("POST", "/door"))
    }

    @Test func routesAnswerThroughTheMiddlewareInOrder() async throws {
        let pipeline = pipeline([Tag(name: "outer"), Tag(name: "inner"), ErrorMiddleware(logger: logger)])
        let found = await pipeline.respond(to: try request("GET", "/items/42"))
        #expect(found.status == 200 && String(decoding: found.body, as: UTF8.self) == "42")
        #expect(found.headers.values("X-Order") == ["inner", "outer"])
        #expect(found.headers["X-Request-ID"]?.isEmpty == false)
        let missing = await pipeline.respond(to: try request("GET", "/nowhere"))
        #expect(missing.status == 404 && missing.headers["Content-Type"] == "application/problem+json")
        let wrongMethod = await pipeline.respond(to: try request("POST", "/items/42"))
        #expect(wrongMethod.status == 405 && wrongMethod.headers["Allow"] == "GET, HEAD")
        // Errors become responses inside the error middleware: what is outside it sees them.
        let failed = await pipeline.respond(to: try request("GET", "/fails"))
        #expect(failed.status == 500 && failed.headers.values("X-Order") == ["inner", "outer"])
    }

    /// Without an error middleware, an error still becomes a 500 problem carrying the request
    /// id, never a crash or an empty answer.
    @Test func anErrorNoMiddlewareCaughtIsStillAProblem() async throws {
        let bare = pipeline([])
        let failed = await bare.respond(to: try request("GET", "/fails"))
        #expect(failed.status == 500 && failed.headers["Content-Type"] == "application/problem+json")
        #expect(String(decoding: failed.body, as: UTF8.self).contains(failed.headers["X-Request-ID"] ?? "missing"))
        #expect(await bare.respond(to: try request("GET", "/nowhere")).status == 404)
    }
}

/// Bodies are strict by default, whoever declares the type (a plugin's plain `Decodable` too):
/// an unknown member is a 422 naming it; only a body from another party (`LenientDecodable`)
/// takes members its type does not read.
@Suite struct BodyStrictnessTests {
    struct Score: Decodable {
        var points: Int
    }
    struct Envelope: LenientDecodable {
        var message: String
    }

    func request(_ json: String) throws -> Request {
        try Request.received(
            method: "POST", target: "/scores", headers: ["Content-Type": "application/json"], body: Array(json.utf8),
            peerAddress: "127.0.0.1", trustedProxies: .none)
    }

    @Test func unknownMembersAreRefusedUnlessTheTypeIsLenient() throws {
        #expect(try request(#"{"points":3}"#).body(as: Score.self).points == 3)
        do {
            _ = try request(#"{"points":3,"pionts":4}"#).body(as: Score.self)
            Issue.record("an unknown member was taken")
        } catch let error as HTTPError {
            #expect(error.status == 422 && error.problem.errors?.map(\.field) == ["pionts"], "\(error)")
        }
        #expect(try request(#"{"message":"m","subscription":"s"}"#).body(as: Envelope.self).message == "m")
    }
}
