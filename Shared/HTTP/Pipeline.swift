import PierRuntime

/// What a server answers with, independent of any transport: the request is routed, then runs
/// through the server-wide middleware (outermost first) to its route's responder. The HTTP
/// adapter (``HTTPServer``) and the in-process test client both call ``respond(to:)``.
public struct HTTPPipeline: Sendable {
    public let routes: Routes
    public let middleware: [any RouterMiddleware<BasicRequestContext>]
    let logger: Logger

    /// - Parameter middleware: outermost first; an ``ErrorMiddleware`` among them turns errors
    ///   into problems for the middleware outside it (metrics, access log, CORS see the status).
    public init(routes: Routes, middleware: [any RouterMiddleware<BasicRequestContext>], logger: Logger) {
        self.routes = routes
        self.middleware = middleware
        self.logger = logger
    }

    /// The constant answer (``Routes/constant(_:_:)``) for a GET or HEAD of exactly `target`.
    func constant(method: String, target: String) -> Response? {
        guard method == "GET" || method == "HEAD" else { return nil }
        return routes.constants[target]
    }

    /// A request's route (or the error to answer), and where its task prefers to run.
    struct Match: Sendable {
        let result: Result<(Routes.Route, [String: String]), HTTPError>
        var executor: (any TaskExecutor)? { try? result.get().0.executor }
    }

    func match(_ request: Request) -> Match {
        Match(result: routes.match(method: request.method, path: request.path))
    }

    /// The response to `request`, errors answered as problems; `X-Request-ID` always set, and
    /// on every line logged meanwhile.
    public func respond(to request: Request) async -> Response {
        await respond(to: request, match(request))
    }

    func respond(to request: Request, _ match: Match) async -> Response {
        var request = request
        var source = RequestSource(requestID: request.requestID, logger: logger)
        if case .success(let (route, parameters)) = match.result {
            request.route = route.pattern
            source = RequestSource(
                requestID: request.requestID, route: route.pattern, parameters: Parameters(parameters), logger: logger)
        }
        var response = await Logger.$requestID.withValue(request.requestID) { [request, source] in
            do {
                return try await middleware.run(request, BasicRequestContext(source: source)) { request, context in
                    switch match.result {
                    case .success(let (route, _)): try await route.respond(request, context.source)
                    case .failure(let error): throw error
                    }
                }
            } catch {
                // Only without an ErrorMiddleware in the chain, or from middleware outside it.
                return ErrorMiddleware.response(for: error, request: request, logger: logger)
            }
        }
        response.headers.set("X-Request-ID", request.requestID)
        return response
    }
}

/// Turns every error thrown inside it into a response: problems as they are, other layers'
/// errors through `map` (the database away is a 503), the rest a 500 whose detail goes only to
/// the log, with the request id to find it.
public struct ErrorMiddleware: RouterMiddleware {
    let map: @Sendable (any Error) -> (any HTTPResponseError)?
    let logger: Logger

    public init(logger: Logger, map: @escaping @Sendable (any Error) -> (any HTTPResponseError)? = { _ in nil }) {
        self.logger = logger
        self.map = map
    }

    public func handle(
        _ request: Request, context: BasicRequestContext,
        next: (Request, BasicRequestContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            return Self.response(for: error, request: request, logger: logger, map: map)
        }
    }

    static func response(
        for error: any Error, request: Request, logger: Logger,
        map: @Sendable (any Error) -> (any HTTPResponseError)? = { _ in nil }
    ) -> Response {
        if let error = error as? any HTTPResponseError { return .problem(error, requestID: request.requestID) }
        if let mapped = map(error) { return .problem(mapped, requestID: request.requestID) }
        if error is BlockingPool.Overloaded {
            return .problem(
                HTTPError.unavailable(retryAfter: 1, "The server is busy; try again shortly."), requestID: request.requestID)
        }
        logger.error(
            "unhandled error", [("error", .string(String(describing: error)))])
        return .problem(
            HTTPError(500, detail: "Something went wrong on our side; the request id helps us find it."),
            requestID: request.requestID)
    }
}

/// One log line per request: id, method, path, status, duration, client. Passing readiness
/// probes (a gateway checks every second) are left out: they would drown the log.
public struct AccessLogMiddleware: RouterMiddleware {
    let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    public func handle(
        _ request: Request, context: BasicRequestContext,
        next: (Request, BasicRequestContext) async throws -> Response
    ) async throws -> Response {
        let response = try await next(request, context)
        if !(request.path == "/readyz" && response.status == 200) {
            let milliseconds = (MonotonicClock.seconds() - request.startedAt) * 1000
            logger.info(
                "request",
                [
                    ("method", .string(request.method)),
                    ("path", .string(request.path)), ("status", .int(response.status)),
                    ("duration_ms", .double((milliseconds * 1000).rounded() / 1000)),
                    ("client", .string(request.clientAddress)),
                ])
        }
        return response
    }
}
