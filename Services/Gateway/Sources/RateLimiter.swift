import PierHTTP
import PierModels
import PierRuntime
import Synchronization

/// Per-client-address token buckets at the edge: `rate` requests per second, bursts up to
/// `burst`. Over the limit: 429 with `Retry-After` and the `RateLimit-*` headers. The operator
/// endpoints (`/healthz`, `/readyz`, `/metrics`) are not limited.
final class RateLimiter: Middleware {
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

    func before(_ request: inout Request) -> Response? {
        guard !Self.exempt.contains(request.path) else { return nil }
        let (allowed, _, retryAfter) = take(request.clientKey)
        guard !allowed else { return nil }
        var response = Response.problem(
            HTTPError.tooManyRequests(
                retryAfter: retryAfter, "Too many requests from \(request.clientAddress); try again in \(retryAfter) s."),
            requestID: request.requestID)
        response.headers.set("RateLimit-Limit", String(Int(burst)))
        response.headers.set("RateLimit-Remaining", "0")
        response.headers.set("RateLimit-Reset", String(retryAfter))
        response.headers.set("RateLimit-Policy", "\(Int(burst));w=\(max(1, Int((burst / rate).rounded(.up))))")
        return response
    }

    func after(_ request: Request, _ response: inout Response) {}
}
