import PierModels

/// A handler: the request, its route parameters filled in, and the context its middleware built.
public typealias Handler<Context: RequestContext> = @Sendable (Request, Context) async throws -> Response

/// The routes of a server by method and path, each with what answers it (its middleware
/// already composed in): what ``Router``s build and a host merges (the gateway merges several
/// services'). `{name}` segments capture parameters; a path that exists with another method
/// answers 405 with `Allow`.
///
/// A path and the same path with a trailing slash are one route (`/console` and `/console/`):
/// a request for either reaches it, and a ``Router`` refuses to have both added, so neither
/// can answer with a redirect to the other.
public struct Routes: Sendable {
    /// Answers a request, given the source its context is built from.
    public typealias Responder = @Sendable (Request, RequestSource) async throws -> Response

    struct Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Segment]
        let respond: Responder
        /// Where the request's task prefers to run after a suspension (nil: the cooperative pool).
        var executor: (any TaskExecutor)? = nil
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private(set) var routes: [Route] = []
    /// Exact paths, for the common case without parameters: one dictionary lookup.
    private var exact: [String: [String: Int]] = [:]
    /// The routes with parameters (indexes into `routes`): the only ones matched segment by segment.
    private var parameterized: [Int] = []
    /// Whole subtrees (`/feedback` and everything below it), any method: what no other route
    /// matches goes there (the gateway's proxied routes).
    private var prefixes: [(prefix: String, route: Route)] = []
    /// Answers that depend on nothing in the request (`/healthz`), by exact target, for GET
    /// and HEAD: the HTTP adapter queues them on the thread that read the request, past the
    /// pipeline (no task, no middleware: neither logged nor counted).
    private(set) var constants: [String: Response] = [:]

    public init() {}

    /// A GET route at `path` always answering `response`. A request for exactly `path` (no
    /// query) is answered by the server as soon as it is read; anything else reaching the
    /// pipeline (the in-process client, `path?x`) gets the same answer through it.
    public mutating func constant(_ path: String, _ response: Response) {
        precondition(response.stream == nil, "a constant answer has its body complete")
        guard constants[path] == nil else { return }
        constants[path] = response
        add("GET", path) { _, _ in response }
    }

    /// Whether a route answers `method` at `pattern`, or at the same pattern with or without a
    /// trailing slash.
    public func contains(_ method: String, _ pattern: String) -> Bool {
        let key = Self.key(pattern)
        return routes.contains { $0.method == method && Self.key($0.pattern) == key }
    }

    /// One spelling of a pattern: empty segments (a trailing or doubled slash) dropped.
    static func key(_ pattern: String) -> String {
        "/" + pattern.split(separator: "/").joined(separator: "/")
    }

    /// Adds a route; later routes never shadow earlier ones with the same method and path. A path
    /// made of literal segments alone wins over any pattern with parameters; among patterns, at the
    /// first segment where they differ a literal wins over a parameter (`/leaderboard/me/best`
    /// before `/leaderboard/{game}/best`).
    public mutating func add(_ method: String, _ pattern: String, _ respond: @escaping Responder) {
        let segments = pattern.split(separator: "/").map { part -> Segment in
            if part.hasPrefix("{") && part.hasSuffix("}") { return .parameter(String(part.dropFirst().dropLast())) }
            return .literal(String(part))
        }
        let index = routes.count
        routes.append(Route(method: method, pattern: pattern, segments: segments, respond: respond))
        if !segments.contains(where: { if case .parameter = $0 { true } else { false } }) {
            let key = "/" + segments.map { if case .literal(let text) = $0 { text } else { "" } }.joined(separator: "/")
            if exact[key]?[method] == nil { exact[key, default: [:]][method] = index }
        } else {
            // Literal segments before parameters, segment by segment (`/games/top/{n}` before
            // `/games/{id}/{part}`, whatever the order they were added in); in the order added
            // otherwise.
            let rank = Self.rank(segments)
            let position = parameterized.firstIndex { rank.lexicographicallyPrecedes(Self.rank(routes[$0].segments)) }
            parameterized.insert(index, at: position ?? parameterized.endIndex)
        }
    }

    /// A pattern's shape for precedence: 0 for a literal segment, 1 for a parameter.
    static func rank(_ segments: [Segment]) -> [Int] {
        segments.map { if case .literal = $0 { 0 } else { 1 } }
    }

    /// Sends every request for `prefix` or below it (`prefix/…`), whatever its method, to
    /// `respond`, unless another route matches it. Its route label is `prefix/*`. Its tasks go
    /// on `executor` after a suspension when one is given (short work waiting on sockets: the
    /// gateway's proxy on ``SocketWaiter``).
    public mutating func prefix(_ prefix: String, on executor: (any TaskExecutor)? = nil, _ respond: @escaping Responder) {
        prefixes.append(
            (prefix, Route(method: "*", pattern: prefix + "/*", segments: [], respond: respond, executor: executor)))
        prefixes.sort { $0.prefix.count > $1.prefix.count }
    }

    /// Adds every route of another table (a plugin's routes into the gateway's).
    public mutating func merge(_ other: Routes) {
        for route in other.routes { add(route.method, route.pattern, route.respond) }
        for entry in other.prefixes { prefix(entry.prefix, on: entry.route.executor, entry.route.respond) }
        for (path, response) in other.constants where constants[path] == nil { constants[path] = response }
    }

    /// The patterns and methods, for documentation checks.
    public var endpoints: [(method: String, pattern: String)] { routes.map { ($0.method, $0.pattern) } }

    /// The handler and parameters for a request, or the error to answer (404, or 405 with `Allow`).
    func match(method: String, path: String) -> Result<(Route, [String: String]), HTTPError> {
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        var allowed: [String] = []
        if let methods = exact[trimmed] {
            if let index = methods[method] ?? (method == "HEAD" ? methods["GET"] : nil) { return .success((routes[index], [:])) }
            // In the order the routes were added, as the 405's `Allow` lists them.
            allowed = methods.sorted { $0.value < $1.value }.map(\.key)
        }
        let parts =
            parameterized.isEmpty ? [] : trimmed.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for route in parameterized.lazy.map({ self.routes[$0] }) where route.segments.count == parts.count {
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

/// Builds the routes of one service, with its context type: routes added to the router
/// directly run no middleware of their own; a ``RouterGroup`` adds its middleware (the
/// authentication a resource needs) to every route added through it.
///
///     let router = Router<ServiceRequestContext>()
///     let signedIn = router.group(Authentication(authenticator, .required))
///     signedIn.get("/feedback/mine") { request, context in try await mine(request, context) }
///     routes.merge(router.routes)
public final class Router<Context: RequestContext>: RouteBuilder {
    /// What was added so far, middleware composed in.
    public private(set) var routes = Routes()

    public init() {}

    /// A group of routes behind `middleware`, outermost first.
    public func group(_ middleware: any RouterMiddleware<Context>...) -> RouterGroup<Context> {
        RouterGroup(router: self, middleware: middleware)
    }

    public func on(_ method: String, _ pattern: String, _ handler: @escaping Handler<Context>) {
        add(method, pattern, middleware: [], handler)
    }

    public func prefix(_ prefix: String, on executor: (any TaskExecutor)?, _ handler: @escaping Handler<Context>) {
        add(prefix: prefix, executor: executor, middleware: [], handler)
    }

    fileprivate func add(
        _ method: String, _ pattern: String, middleware: [any RouterMiddleware<Context>],
        _ handler: @escaping Handler<Context>
    ) {
        // One plugin's table says each route once: `/x` and `/x/` added apart would leave one
        // unreachable (a redirect from one to the other loops).
        precondition(!routes.contains(method, pattern), "\(method) \(pattern) is added twice (with or without a trailing slash)")
        routes.add(method, pattern, Self.responder(middleware, handler))
    }

    fileprivate func add(
        prefix: String, executor: (any TaskExecutor)?, middleware: [any RouterMiddleware<Context>],
        _ handler: @escaping Handler<Context>
    ) {
        routes.prefix(prefix, on: executor, Self.responder(middleware, handler))
    }

    private static func responder(
        _ middleware: [any RouterMiddleware<Context>], _ handler: @escaping Handler<Context>
    ) -> Routes.Responder {
        if middleware.isEmpty { return { request, source in try await handler(request, Context(source: source)) } }
        return { request, source in try await middleware.run(request, Context(source: source), handler) }
    }
}

/// Routes that share middleware (``Router/group(_:)``).
public struct RouterGroup<Context: RequestContext>: RouteBuilder {
    let router: Router<Context>
    let middleware: [any RouterMiddleware<Context>]

    public func on(_ method: String, _ pattern: String, _ handler: @escaping Handler<Context>) {
        router.add(method, pattern, middleware: middleware, handler)
    }

    public func prefix(_ prefix: String, on executor: (any TaskExecutor)?, _ handler: @escaping Handler<Context>) {
        router.add(prefix: prefix, executor: executor, middleware: middleware, handler)
    }
}

/// Adds routes: ``Router`` and ``RouterGroup`` alike.
public protocol RouteBuilder {
    associatedtype Context: RequestContext
    func on(_ method: String, _ pattern: String, _ handler: @escaping Handler<Context>)
    /// Sends every request for `prefix` and below it, any method, to `handler` unless another
    /// route matches (the gateway's proxied routes). Its route label is `prefix/*`; its tasks
    /// prefer `executor` after a suspension (see ``Routes/prefix(_:on:_:)``).
    func prefix(_ prefix: String, on executor: (any TaskExecutor)?, _ handler: @escaping Handler<Context>)
}

extension RouteBuilder {
    /// Every request for `prefix` and below it to `handler`, its tasks on the cooperative pool.
    public func prefix(_ prefix: String, _ handler: @escaping Handler<Context>) { self.prefix(prefix, on: nil, handler) }
}

extension RouteBuilder {
    /// A route whose handler returns anything convertible to a response.
    public func on(
        _ method: String, _ pattern: String,
        _ handler: @escaping @Sendable (Request, Context) async throws -> some ResponseConvertible
    ) {
        on(method, pattern) { (request: Request, context: Context) async throws -> Response in
            try await handler(request, context).response()
        }
    }

    /// A route whose handler takes the body, read the one way every route reads one
    /// (``Request/body(as:)``).
    public func on<Body: Decodable & SendableMetatype>(
        _ method: String, _ pattern: String, body: Body.Type,
        _ handler: @escaping @Sendable (Request, Context, Body) async throws -> some ResponseConvertible
    ) {
        on(method, pattern) { (request: Request, context: Context) async throws -> Response in
            try await handler(request, context, try request.body(as: Body.self)).response()
        }
    }

    /// A route whose body may be left out: nil when it is empty, else read as ``on(_:_:body:_:)`` reads it.
    public func on<Body: Decodable & SendableMetatype>(
        _ method: String, _ pattern: String, optionalBody: Body.Type,
        _ handler: @escaping @Sendable (Request, Context, Body?) async throws -> some ResponseConvertible
    ) {
        on(method, pattern) { (request: Request, context: Context) async throws -> Response in
            let body = request.body.isEmpty ? nil : try request.body(as: Body.self)
            return try await handler(request, context, body).response()
        }
    }

    public func get(
        _ pattern: String, _ handler: @escaping @Sendable (Request, Context) async throws -> some ResponseConvertible
    ) {
        on("GET", pattern, handler)
    }
    public func delete(
        _ pattern: String, _ handler: @escaping @Sendable (Request, Context) async throws -> some ResponseConvertible
    ) {
        on("DELETE", pattern, handler)
    }
    public func post(
        _ pattern: String, _ handler: @escaping @Sendable (Request, Context) async throws -> some ResponseConvertible
    ) {
        on("POST", pattern, handler)
    }
    public func patch(
        _ pattern: String, _ handler: @escaping @Sendable (Request, Context) async throws -> some ResponseConvertible
    ) {
        on("PATCH", pattern, handler)
    }
    public func post<Body: Decodable & SendableMetatype>(
        _ pattern: String, body: Body.Type,
        _ handler: @escaping @Sendable (Request, Context, Body) async throws -> some ResponseConvertible
    ) {
        on("POST", pattern, body: body, handler)
    }
    public func patch<Body: Decodable & SendableMetatype>(
        _ pattern: String, body: Body.Type,
        _ handler: @escaping @Sendable (Request, Context, Body) async throws -> some ResponseConvertible
    ) {
        on("PATCH", pattern, body: body, handler)
    }
    public func post<Body: Decodable & SendableMetatype>(
        _ pattern: String, optionalBody: Body.Type,
        _ handler: @escaping @Sendable (Request, Context, Body?) async throws -> some ResponseConvertible
    ) {
        on("POST", pattern, optionalBody: optionalBody, handler)
    }
    public func delete<Body: Decodable & SendableMetatype>(
        _ pattern: String, optionalBody: Body.Type,
        _ handler: @escaping @Sendable (Request, Context, Body?) async throws -> some ResponseConvertible
    ) {
        on("DELETE", pattern, optionalBody: optionalBody, handler)
    }
}

extension Request {
    /// The body as `T`, the one way routes read one: the fields of an HTML form for a
    /// ``FormDecodable`` type sent as a form; else JSON, strictly (every missing and unknown
    /// field named at once) for a ``StrictDecodable`` type; as it comes for a
    /// ``LenientDecodable`` one (another party's, which may add members); and for any other,
    /// refusing the top-level members its coding keys do not name: strict by default.
    public func body<T: Decodable>(as type: T.Type) throws -> T {
        // The helpers decode `T` itself, opened from the metatype: the casts hold; were one ever
        // not to, the request gets a problem, the process goes on.
        let decoded: Any
        if let formType = T.self as? any FormDecodable.Type, let form = try form() {
            decoded = formType.init(form: form)
        } else if let strict = T.self as? any StrictDecodable.Type {
            decoded = try strictly(strict, self)
        } else if T.self is any LenientDecodable.Type {
            return try decode(T.self)
        } else {
            return try decodeKnownMembers(T.self)
        }
        guard let body = decoded as? T else {
            throw HTTPError(500, detail: "The request body could not be read as \(T.self).")
        }
        return body
    }
}

/// `request`'s body read strictly as `type` (opened from an existential by the caller).
private func strictly<T: StrictDecodable>(_ type: T.Type, _ request: Request) throws -> any Decodable {
    try request.decodeStrictly(type)
}

extension ResponseConvertible where Self: Encodable {
    /// An Encodable value declared `ResponseConvertible` answers as 200 JSON.
    public func response() throws -> Response { try .json(self) }
}
