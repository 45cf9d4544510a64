/// Handles a request. Synchronous handlers run on the server's own threads and answer without a
/// thread hop (health checks, static documents); asynchronous ones run as tasks; deferred ones
/// start on the server's thread and answer later from any thread through their ``Responder``
/// (the gateway's proxy, whose answers come from its transfer thread).
public enum Handler: Sendable {
    case sync(@Sendable (Request) throws -> Response)
    case async(@Sendable (Request) async throws -> Response)
    case deferred(@Sendable (Request, Responder) -> Void)
}

/// How a deferred handler answers: exactly once, from any thread.
public struct Responder: Sendable {
    let answer: @Sendable (Result<Response, any Error>) -> Void

    public init(_ answer: @escaping @Sendable (Result<Response, any Error>) -> Void) { self.answer = answer }

    public func respond(_ response: Response) { answer(.success(response)) }

    /// Answers with the error's problem, as a throwing handler's error is answered.
    public func fail(_ error: any Error) { answer(.failure(error)) }
}

/// Routes by method and path; `{name}` segments capture parameters. A path that exists with
/// another method answers 405 with `Allow`.
public struct Router: Sendable {
    struct Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Segment]
        let handler: Handler
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private(set) var routes: [Route] = []
    /// Exact paths, for the common case without parameters: one dictionary lookup.
    private var exact: [String: [String: Int]] = [:]
    /// Whole subtrees (`/feedback` and everything below it), any method: what no other route
    /// matches goes there (the gateway's proxied routes).
    private var prefixes: [(prefix: String, route: Route)] = []

    public init() {}

    /// Adds a route; later routes never shadow earlier ones with the same method and path.
    public mutating func add(_ method: String, _ pattern: String, _ handler: Handler) {
        let segments = pattern.split(separator: "/").map { part -> Segment in
            if part.hasPrefix("{") && part.hasSuffix("}") { return .parameter(String(part.dropFirst().dropLast())) }
            return .literal(String(part))
        }
        let index = routes.count
        routes.append(Route(method: method, pattern: pattern, segments: segments, handler: handler))
        if !segments.contains(where: { if case .parameter = $0 { true } else { false } }) {
            let key = "/" + segments.map { if case .literal(let text) = $0 { text } else { "" } }.joined(separator: "/")
            if exact[key]?[method] == nil { exact[key, default: [:]][method] = index }
        }
    }

    /// Sends every request for `prefix` or below it (`prefix/…`), whatever its method, to
    /// `handler`, unless another route matches it. Its route label is `prefix/*`.
    public mutating func prefix(_ prefix: String, _ handler: Handler) {
        prefixes.append((prefix, Route(method: "*", pattern: prefix + "/*", segments: [], handler: handler)))
        prefixes.sort { $0.prefix.count > $1.prefix.count }
    }

    /// Adds every route of another router (a plugin's routes into the gateway's).
    public mutating func merge(_ other: Router) {
        for route in other.routes { add(route.method, route.pattern, route.handler) }
        for entry in other.prefixes { prefix(entry.prefix, entry.route.handler) }
    }

    /// The patterns and methods, for documentation checks.
    public var endpoints: [(method: String, pattern: String)] { routes.map { ($0.method, $0.pattern) } }

    /// The handler and parameters for a request, or the error to answer (404, or 405 with `Allow`).
    func match(method: String, path: String) -> Result<(Route, [String: String]), HTTPError> {
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        if let methods = exact[trimmed] {
            if let index = methods[method] ?? (method == "HEAD" ? methods["GET"] : nil) { return .success((routes[index], [:])) }
        }
        let parts = trimmed.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        var allowed: [String] = []
        for route in routes where route.segments.count == parts.count {
            var parameters: [String: String] = [:]
            var matches = true
            for (segment, part) in zip(route.segments, parts) {
                switch segment {
                case .literal(let text): if text != part { matches = false }
                case .parameter(let name):
                    if part.isEmpty { matches = false } else { parameters[name] = String(part) }
                }
                if !matches { break }
            }
            guard matches else { continue }
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                return .success((route, parameters))
            }
            if !allowed.contains(route.method) { allowed.append(route.method) }
        }
        for entry in prefixes where path == entry.prefix || path.hasPrefix(entry.prefix + "/") {
            return .success((entry.route, [:]))
        }
        if allowed.isEmpty { return .failure(.notFound()) }
        if allowed.contains("GET") && !allowed.contains("HEAD") { allowed.append("HEAD") }
        return .failure(
            HTTPError(
                405, detail: "Use \(allowed.joined(separator: ", ")) here.",
                headers: ["Allow": allowed.joined(separator: ", ")]))
    }
}

extension Router {
    /// A route whose handler returns anything convertible to a response.
    public mutating func on(
        _ method: String, _ pattern: String,
        _ handler: @escaping @Sendable (Request) async throws -> some ResponseConvertible
    ) {
        add(method, pattern, .async { request in try await handler(request).response() })
    }

    /// A route whose handler takes the decoded JSON body.
    public mutating func on<Body: Decodable & SendableMetatype>(
        _ method: String, _ pattern: String, body: Body.Type,
        _ handler: @escaping @Sendable (Request, Body) async throws -> some ResponseConvertible
    ) {
        add(method, pattern, .async { request in try await handler(request, request.decode()).response() })
    }

    /// A synchronous route, answered on the server thread without a task.
    public mutating func sync(_ method: String, _ pattern: String, _ handler: @escaping @Sendable (Request) throws -> Response) {
        add(method, pattern, .sync(handler))
    }

    public mutating func get(_ pattern: String, _ handler: @escaping @Sendable (Request) async throws -> some ResponseConvertible)
    {
        on("GET", pattern, handler)
    }
    public mutating func delete(
        _ pattern: String, _ handler: @escaping @Sendable (Request) async throws -> some ResponseConvertible
    ) {
        on("DELETE", pattern, handler)
    }
    public mutating func post<Body: Decodable & SendableMetatype>(
        _ pattern: String, body: Body.Type,
        _ handler: @escaping @Sendable (Request, Body) async throws -> some ResponseConvertible
    ) {
        on("POST", pattern, body: body, handler)
    }
    public mutating func patch<Body: Decodable & SendableMetatype>(
        _ pattern: String, body: Body.Type,
        _ handler: @escaping @Sendable (Request, Body) async throws -> some ResponseConvertible
    ) {
        on("PATCH", pattern, body: body, handler)
    }
}

extension ResponseConvertible where Self: Encodable {
    /// An Encodable value declared `ResponseConvertible` answers as 200 JSON.
    public func response() throws -> Response { try .json(self) }
}
