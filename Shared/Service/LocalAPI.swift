import PierHTTP
import Synchronization

/// The process's own HTTP API, answered in-process: what a plugin that stands on the others'
/// routes (the console) calls instead of a socket when they are hosted in the same process. The
/// host offers it (``Capability/localAPI``) and hands it the pipeline once the listeners exist:
/// every route the process serves, proxied ones included, with the same middleware.
public final class LocalAPI: Sendable {
    private let pipeline = Mutex<HTTPPipeline?>(nil)

    public init() {}

    func serve(_ pipeline: HTTPPipeline) { self.pipeline.withLock { $0 = pipeline } }

    /// The answer to `request`; 503 before the host has started serving.
    public func respond(to request: Request) async -> Response {
        guard let pipeline = pipeline.withLock({ $0 }) else {
            return .problem(HTTPError.unavailable(retryAfter: 1, "The server is starting."), requestID: request.requestID)
        }
        return await pipeline.respond(to: request)
    }
}

extension Capability where Value == LocalAPI {
    /// The process's own routes, answered in-process.
    public static var localAPI: Capability { Capability("local-api") }
}
