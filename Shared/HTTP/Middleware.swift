import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What the pipeline builds each request's context from: the request's id, the route it
/// matched with its parameters, and the server's logger.
public struct RequestSource: Sendable {
    /// Kept from `X-Request-ID` when the client sent a sane one, generated otherwise. Every line
    /// logged while the request is answered carries it (``Logger/requestID``).
    public let requestID: String
    /// The matched route's pattern (`/feedback/{id}`); nil when no route matched.
    public let route: String?
    /// The values of the route's `{name}` segments.
    public let parameters: Parameters
    public let logger: Logger

    public init(requestID: String, route: String? = nil, parameters: Parameters = Parameters(), logger: Logger) {
        self.requestID = requestID
        self.route = route
        self.parameters = parameters
        self.logger = logger
    }
}

/// What travels with a request besides the request itself: built from its ``RequestSource``,
/// then completed by middleware for the handlers behind it (the authenticated caller, say).
/// Each service chooses its type.
public protocol RequestContext: Sendable {
    init(source: RequestSource)
    var source: RequestSource { get }
}

extension RequestContext {
    public var requestID: String { source.requestID }
    /// The route's path parameters, read typed: `try context.parameters.require("id", as: UUID.self)`.
    public var parameters: Parameters { source.parameters }
    /// The server's logger (a plugin's own logger is as good: the request id is on every line).
    public var logger: Logger { source.logger }
}

/// The context of the server-wide middleware (access log, metrics, errors, CORS): the source alone.
public struct BasicRequestContext: RequestContext {
    public let source: RequestSource
    public init(source: RequestSource) { self.source = source }
}

/// The values of a route's `{name}` segments, read as the type a handler needs. One answer for
/// a value that is not of that type, on every route: 404, naming the parameter (no resource
/// can live at an address that cannot name one).
public struct Parameters: Sendable {
    let values: [String: String]

    public init(_ values: [String: String] = [:]) { self.values = values }

    /// The raw value of `name`, when the route has such a segment.
    public subscript(name: String) -> String? { values[name] }

    /// The value of `name` as `T`.
    public func require<T: PathParameter>(_ name: String, as type: T.Type = String.self) throws(HTTPError) -> T {
        guard let text = values[name], let value = T(pathParameter: text) else {
            throw .notFound("Nothing lives at this address: \(name) must be \(T.pathParameterDescription).")
        }
        return value
    }
}

/// A type a path segment can be read as.
public protocol PathParameter: Sendable {
    init?(pathParameter: String)
    /// What a valid value is, for the problem's detail (`a UUID`).
    static var pathParameterDescription: String { get }
}

extension String: PathParameter {
    public init?(pathParameter: String) {
        guard !pathParameter.isEmpty else { return nil }
        self = pathParameter
    }
    public static var pathParameterDescription: String { "a name" }
}

extension UUID: PathParameter {
    public init?(pathParameter: String) { self.init(text: pathParameter) }
    public static var pathParameterDescription: String { "a UUID" }
}

extension Int: PathParameter {
    /// Digits only, 0 to 999,999,999 (no sign, no leading `+`, nothing PostgreSQL's integer
    /// would overflow on).
    public init?(pathParameter: String) {
        guard (1...9).contains(pathParameter.utf8.count), pathParameter.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let value = Int(pathParameter)
        else { return nil }
        self = value
    }
    public static var pathParameterDescription: String { "a whole number" }
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
        allowedOrigins: [String],
        allowedHeaders: String =
            "Authorization, Content-Type, Idempotency-Key, X-Request-ID, X-Installation-ID, X-Installation-Token",
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
