import PierHTTP
import PierModels

/// Routes registered against ``Endpoint`` values (PierModels), so a route is what its
/// definition says: the authentication comes from the endpoint's ``Access``, the body is read
/// as its `Body` type, and the handler must answer its `Answer` type (a handler that answers
/// another does not compile).
///
///     let endpoints = EndpointRouter(router, authenticator: authenticator)
///     endpoints.on(FeedbackAPI.item) { request, context in try await items.item(request, context) }
public struct EndpointRouter<Context: AuthenticatedContext> {
    let router: Router<Context>
    let authenticator: Authenticator

    public init(_ router: Router<Context>, authenticator: Authenticator) {
        self.router = router
        self.authenticator = authenticator
    }

    /// An endpoint that takes a body: read strictly as `Body` before `handler` runs.
    public func on<Body: Decodable & SendableMetatype, Handled: AnswerResponse>(
        _ endpoint: Endpoint<NoParameters, Body, Handled.Answer>,
        _ handler: @escaping @Sendable (Request, Context, Body) async throws -> Handled
    ) {
        group(for: endpoint, staffWhen: nil).on(endpoint.method, endpoint.template, body: Body.self, handler)
    }

    /// An endpoint with parameters that takes a body: the parameters are read as their type
    /// (checked against their declarations), then the body strictly as `Body`, before `handler`
    /// runs.
    public func on<Parameters, Body: Decodable & SendableMetatype, Handled: AnswerResponse>(
        _ endpoint: Endpoint<Parameters, Body, Handled.Answer>,
        _ handler: @escaping @Sendable (Request, Context, Parameters, Body) async throws -> Handled
    ) {
        group(for: endpoint, staffWhen: nil).on(endpoint.method, endpoint.template, body: Body.self) { request, context, body in
            try await handler(request, context, try Self.parameters(of: request, context), body)
        }
    }

    /// An endpoint whose body may be left out (`Body?`): nil when the request has none.
    public func on<Wrapped: Decodable & Sendable & SendableMetatype, Handled: AnswerResponse>(
        _ endpoint: Endpoint<NoParameters, Wrapped?, Handled.Answer>,
        _ handler: @escaping @Sendable (Request, Context, Wrapped?) async throws -> Handled
    ) {
        group(for: endpoint, staffWhen: nil).on(endpoint.method, endpoint.template, optionalBody: Wrapped.self, handler)
    }

    /// An endpoint with parameters whose body may be left out (`Body?`).
    public func on<Parameters, Wrapped: Decodable & Sendable & SendableMetatype, Handled: AnswerResponse>(
        _ endpoint: Endpoint<Parameters, Wrapped?, Handled.Answer>,
        _ handler: @escaping @Sendable (Request, Context, Parameters, Wrapped?) async throws -> Handled
    ) {
        group(for: endpoint, staffWhen: nil).on(endpoint.method, endpoint.template, optionalBody: Wrapped.self) {
            request, context, body in
            try await handler(request, context, try Self.parameters(of: request, context), body)
        }
    }

    /// An endpoint without parameters or a body.
    /// - Parameter staffWhen: the requests of a public endpoint that only the team may make.
    public func on<Handled: AnswerResponse>(
        _ endpoint: Endpoint<NoParameters, NoBody, Handled.Answer>,
        _ handler: @escaping @Sendable (Request, Context) async throws -> Handled
    ) {
        group(for: endpoint, staffWhen: nil).on(endpoint.method, endpoint.template, handler)
    }

    /// An endpoint with parameters and no body: the parameters are read as their type (checked
    /// against their declarations) before `handler` runs.
    /// - Parameter staffWhen: the calls of a public endpoint that only the team may make
    ///   (`?all=true`: inactive plans too).
    public func on<Parameters, Handled: AnswerResponse>(
        _ endpoint: Endpoint<Parameters, NoBody, Handled.Answer>, staffWhen: (@Sendable (Parameters) -> Bool)? = nil,
        _ handler: @escaping @Sendable (Request, Context, Parameters) async throws -> Handled
    ) {
        let staff = staffWhen.map { when in
            { @Sendable (request: Request, context: Context) -> Bool in
                (try? Self.parameters(of: request, context) as Parameters).map(when) ?? false
            }
        }
        group(for: endpoint, staffWhen: staff).on(endpoint.method, endpoint.template) { request, context in
            try await handler(request, context, try Self.parameters(of: request, context))
        }
    }

    /// The request's parameters as `Parameters`: each declared one's text from the path, the
    /// query or the headers, checked against its declaration. A path segment that names nothing
    /// is a 404; a query or header to correct a 422 naming each.
    static func parameters<Parameters: EndpointParameters>(of request: Request, _ context: Context) throws(HTTPError)
        -> Parameters
    {
        var text: [String: String] = [:]
        for parameter in Parameters.declared {
            switch parameter.location {
            case .path: text[parameter.name] = context.parameters[parameter.name]
            case .query: text[parameter.name] = request.query(parameter.name)
            case .header: text[parameter.name] = request.headers[parameter.name]
            }
        }
        switch Parameters.decoded(text) {
        case .success(let parameters): return parameters
        case .failure(let problems) where problems.inPath:
            let named = problems.fields.map { "\($0.field) \($0.message)" }.joined(separator: "; ")
            throw .notFound("Nothing lives at this address: \(named).")
        case .failure(let problems): throw .invalid(problems.fields)
        }
    }

    private func group<Parameters, Body, Answer>(
        for endpoint: Endpoint<Parameters, Body, Answer>, staffWhen: (@Sendable (Request, Context) -> Bool)?
    ) -> RouterGroup<Context> {
        // The template and the parameters' declaration name the same path parameters, or
        // neither the document nor the client could build the path.
        let declared = Parameters.declared.filter { $0.location == .path }.map(\.name)
        precondition(
            declared == endpoint.pathParameterNames,
            "\(endpoint.method) \(endpoint.template) declares the path parameters \(declared)")
        if let staffWhen {
            precondition(endpoint.access == .public, "only a public endpoint has requests for the team alone")
            return router.group(Authentication(authenticator, .staff, when: staffWhen))
        }
        let requirement: Authentication<Context>.Requirement
        switch endpoint.access {
        case .public: return router.group()
        case .anyone: requirement = .optional
        case .signedIn: requirement = .required
        case .staff: requirement = .staff
        case .admin: requirement = .admin
        }
        return router.group(Authentication(authenticator, requirement))
    }
}
