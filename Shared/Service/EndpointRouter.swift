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
    public func on<Parameters, Body: Decodable & SendableMetatype, Answering: AnswerResponse>(
        _ endpoint: Endpoint<Parameters, Body, Answering.Answer>,
        _ handler: @escaping @Sendable (Request, Context, Body) async throws -> Answering
    ) {
        group(for: endpoint).on(endpoint.method, endpoint.template, body: Body.self, handler)
    }

    /// An endpoint without a body.
    public func on<Parameters, Answering: AnswerResponse>(
        _ endpoint: Endpoint<Parameters, NoBody, Answering.Answer>,
        _ handler: @escaping @Sendable (Request, Context) async throws -> Answering
    ) {
        group(for: endpoint).on(endpoint.method, endpoint.template, handler)
    }

    private func group<Parameters, Body, Answer>(for endpoint: Endpoint<Parameters, Body, Answer>) -> RouterGroup<Context> {
        // The template and the parameters' declaration name the same path parameters, or
        // neither the document nor the client could build the path.
        let declared = Parameters.declared.filter { $0.location == .path }.map(\.name)
        precondition(
            declared == endpoint.pathParameterNames,
            "\(endpoint.method) \(endpoint.template) declares the path parameters \(declared)")
        let requirement: Authentication<Context>.Requirement =
            switch endpoint.access {
            case .anyone: .optional
            case .signedIn: .required
            case .staff: .staff
            case .admin: .admin
            }
        return router.group(Authentication(authenticator, requirement))
    }
}
