/// Code that runs around every request, synchronously on the server thread: it may answer early
/// (`before` returns a response) and may change every response (`after`).
public protocol Middleware: Sendable {
    /// Inspects or changes the request; a non-nil response is answered at once, skipping the
    /// handler (but not the `after` of middleware that ran before this one).
    func before(_ request: inout Request) -> Response?
    /// Inspects or changes the response; runs for every request, errors included.
    func after(_ request: Request, _ response: inout Response)
}

extension Middleware {
    public func before(_ request: inout Request) -> Response? { nil }
    public func after(_ request: Request, _ response: inout Response) {}
}

/// Cross-origin resource sharing, opt-in: answers preflights and adds the headers for allowed
/// origins only (`*` allows any, without credentials).
public struct CORSMiddleware: Middleware {
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

    public func before(_ request: inout Request) -> Response? {
        guard request.method == "OPTIONS", request.headers["Access-Control-Request-Method"] != nil,
            let origin = allowed(request.headers["Origin"])
        else { return nil }
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

    public func after(_ request: Request, _ response: inout Response) {
        guard let origin = allowed(request.headers["Origin"]) else { return }
        response.headers.set("Access-Control-Allow-Origin", origin)
        response.headers.set("Access-Control-Expose-Headers", "X-Request-ID, Retry-After, Location")
        response.headers.add("Vary", "Origin")
    }
}
