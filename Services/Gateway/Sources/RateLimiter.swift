import PierHTTP
import PierModels
import PierRuntime
import Synchronization

/// Per-client-address token buckets at the edge: `rate` requests per second, bursts up to
/// `burst`. Over the limit: 429 with `Retry-After` and the `RateLimit-*` headers. The operator
/// endpoints (`/healthz`, `/readyz`, `/metrics`) are not limited.
final class RateLimiter: Middleware {
    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    let rate: Double
    let burst: Double
    private let buckets = Mutex<[String: Bucket]>([:])
    /// Buckets kept at most; beyond it, full ones (idle clients) are forgotten.
    static let maximumClients = 100_000
    static let exempt: Set<String> = ["/healthz", "/readyz", "/metrics"]

    init(rate: Int, burst: Int) {
        self.rate = Double(rate)
        self.burst = Double(burst)
    }

    /// Takes a token; returns the seconds until one is available when none is.
    func take(_ client: String, now: Double = MonotonicClock.seconds()) -> (allowed: Bool, remaining: Int, retryAfter: Int) {
        buckets.withLock { buckets in
            var bucket = buckets[client] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + (now - bucket.updated) * rate)
            bucket.updated = now
            defer {
                buckets[client] = bucket
                if buckets.count > Self.maximumClients {
                    buckets = buckets.filter { $0.value.tokens + (now - $0.value.updated) * rate < burst }
                }
            }
            guard bucket.tokens >= 1 else {
                return (false, 0, max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))))
            }
            bucket.tokens -= 1
            return (true, Int(bucket.tokens), 0)
        }
    }

    func before(_ request: inout Request) -> Response? {
        guard !Self.exempt.contains(request.path) else { return nil }
        let (allowed, _, retryAfter) = take(request.clientAddress)
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
