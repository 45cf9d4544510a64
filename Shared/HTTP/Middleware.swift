/// What travels with a request besides the request itself: state that middleware establishes
/// for the handlers behind it (the authenticated caller, say). Each service chooses its type;
/// a fresh value starts every request.
public protocol RequestContext: Sendable {
    init()
}

/// The context of the server-wide middleware (access log, metrics, errors, CORS): nothing.
public struct BasicRequestContext: RequestContext {
    public init() {}
}

/// Code around a handler, asynchronous: it may answer without calling `next` (a refusal, a
/// preflight), change the request or context it passes on, and change the response, or catch
/// the error, that comes back.
public protocol RouterMiddleware<Context>: Sendable {
    associatedtype Context: RequestContext
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response
}

extension Array {
    /// Runs the middleware from the first (outermost) to the last, then `handler`. The closures
    /// between them do not escape, so a chain allocates nothing per request.
    func run<Context>(
        from index: Int = 0, _ request: Request, _ context: Context,
        _ handler: (Request, Context) async throws -> Response
    ) async throws -> Response where Element == any RouterMiddleware<Context> {
        guard index < count else { return try await handler(request, context) }
        return try await self[index].handle(request, context: context) { request, context in
            try await run(from: index + 1, request, context, handler)
        }
    }
}

/// Cross-origin resource sharing, opt-in: answers preflights and adds the headers for allowed
/// origins only (`*` allows any, without credentials), errors included.
public struct CORSMiddleware: RouterMiddleware {
    public let allowedOrigins: Set<String>
    public let allowedHeaders: String
    public let maxAge: Int

    public init(
        allowedOrigins: [String], allowedHeaders: String = "Authorization, Content-Type, Idempotency-Key, X-Request-ID",
        maxAge: Int = 600
    ) {
        self.allowedOrigins = Set(allowedOrigins)
        self.allowedHeaders = allowedHeaders
        self.maxAge = maxAge
    }

    private func allowed(_ origin: String?) -> String? {
        guard let origin else { return nil }
        if allowedOrigins.contains("*") { return "*" }
        return allowedOrigins.contains(origin) ? origin : nil
    }

    public func handle(
        _ request: Request, context: BasicRequestContext,
        next: (Request, BasicRequestContext) async throws -> Response
    ) async throws -> Response {
        guard let origin = allowed(request.headers["Origin"]) else { return try await next(request, context) }
        if request.method == "OPTIONS", request.headers["Access-Control-Request-Method"] != nil {
            return Response(
                status: 204,
                headers: [
                    "Access-Control-Allow-Origin": origin,
                    "Access-Control-Allow-Methods": "GET, POST, PUT, PATCH, DELETE, OPTIONS",
                    "Access-Control-Allow-Headers": allowedHeaders,
                    "Access-Control-Max-Age": String(maxAge),
                    "Vary": "Origin",
                ])
        }
        var response = try await next(request, context)
        response.headers.set("Access-Control-Allow-Origin", origin)
        response.headers.set("Access-Control-Expose-Headers", "X-Request-ID, Retry-After, Location")
        response.headers.add("Vary", "Origin")
        return response
    }
}
