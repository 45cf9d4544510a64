import PierHTTP
import PierModels
import PierRuntime
import Synchronization

/// Per-client-address token buckets at the edge: `rate` requests per second, bursts up to
/// `burst`. Over the limit: 429 with `Retry-After` and the `RateLimit-*` headers. The operator
/// endpoints (`/healthz`, `/readyz`, `/metrics`) are not limited.
final class RateLimiter: RouterMiddleware {
    let buckets: TokenBuckets
    static let exempt: Set<String> = ["/healthz", "/readyz", "/metrics"]

    init(rate: Int, burst: Int) {
        buckets = TokenBuckets(rate: Double(rate), burst: Double(burst))
    }

    var rate: Double { buckets.rate }
    var burst: Double { buckets.burst }

    /// Takes a token; returns the seconds until one is available when none is.
    func take(_ client: String, now: Double = MonotonicClock.seconds()) -> (allowed: Bool, remaining: Int, retryAfter: Int) {
        buckets.take(client, now: now)
    }

    func handle(
        _ request: Request, context: BasicRequestContext,
        next: (Request, BasicRequestContext) async throws -> Response
    ) async throws -> Response {
        guard !Self.exempt.contains(request.path) else { return try await next(request, context) }
        let (allowed, _, retryAfter) = take(request.clientKey)
        guard !allowed else { return try await next(request, context) }
        throw HTTPError.rateLimited(
            limit: Int(burst), window: Int((burst / rate).rounded(.up)), retryAfter: retryAfter,
            "Too many requests from \(request.clientAddress); try again in \(max(1, retryAfter)) s.")
    }
}
