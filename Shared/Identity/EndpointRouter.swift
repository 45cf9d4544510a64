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
    public func on<Parameters, Body: Decodable & SendableMetatype, Handled: AnswerResponse>(
        _ endpoint: Endpoint<Parameters, Body, Handled.Answer>,
        _ handler: @escaping @Sendable (Request, Context, Body) async throws -> Handled
    ) {
        group(for: endpoint, staffWhen: nil).on(endpoint.method, endpoint.template, body: Body.self, handler)
    }

    /// An endpoint whose body may be left out (`Body?`): nil when the request has none.
    public func on<Parameters, Wrapped: Decodable & Sendable & SendableMetatype, Handled: AnswerResponse>(
        _ endpoint: Endpoint<Parameters, Wrapped?, Handled.Answer>,
        _ handler: @escaping @Sendable (Request, Context, Wrapped?) async throws -> Handled
    ) {
        group(for: endpoint, staffWhen: nil).on(endpoint.method, endpoint.template, optionalBody: Wrapped.self, handler)
    }

    /// An endpoint without a body.
    /// - Parameter staffWhen: the requests of a public endpoint that only the team may make
    ///   (`?all=true`: inactive plans too).
    public func on<Parameters, Handled: AnswerResponse>(
        _ endpoint: Endpoint<Parameters, NoBody, Handled.Answer>, staffWhen: (@Sendable (Request) -> Bool)? = nil,
        _ handler: @escaping @Sendable (Request, Context) async throws -> Handled
    ) {
        group(for: endpoint, staffWhen: staffWhen).on(endpoint.method, endpoint.template, handler)
    }

    private func group<Parameters, Body, Answer>(
        for endpoint: Endpoint<Parameters, Body, Answer>, staffWhen: (@Sendable (Request) -> Bool)?
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
