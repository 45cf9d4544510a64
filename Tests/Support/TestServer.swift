import PierHTTP
import PierRuntime

extension HTTPServer {
    /// A small server a test plays another party with (a provider's JWKS, Apple's API, a flaky
    /// upstream): `router`'s routes on `port` (0: an ephemeral one), errors as problems, logs quiet.
    public static func started(_ router: Router<BasicRequestContext>, name: String, port: Int = 0) throws -> HTTPServer {
        let logger = Logger(service: name, level: .error)
        let server = HTTPServer(
            configuration: HTTPServer.Configuration(port: port, threads: 1),
            pipeline: HTTPPipeline(routes: router.routes, middleware: [ErrorMiddleware(logger: logger)], logger: logger),
            logger: logger)
        try server.listen()
        return server
    }
}
