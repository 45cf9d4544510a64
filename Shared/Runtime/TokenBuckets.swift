import Synchronization

/// Seconds from an arbitrary origin, never going backwards (for durations).
public enum MonotonicClock {
    /// Seconds since the process first asked, never negative.
    public static func seconds() -> Double {
        // The origin first: read after `now`, a lazily set origin would lie after it, and the
        // very first reading would be negative (an upstream then counted as ejected).
        let origin = origin
        let elapsed = origin.duration(to: ContinuousClock.now)
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
    private static let origin = ContinuousClock.now
}

/// A token bucket per key: `rate` tokens a second, holding up to `burst`. Kept in memory (per
/// process), bounded: beyond `maximumKeys`, full buckets (idle keys) are forgotten.
public final class TokenBuckets: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    public let rate: Double
    public let burst: Double
    public let maximumKeys: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    /// - Parameters:
    ///   - rate: tokens added per second.
    ///   - burst: tokens a bucket holds at most (and starts with).
    public init(rate: Double, burst: Double, maximumKeys: Int = 100_000) {
        self.rate = rate
        self.burst = burst
        self.maximumKeys = maximumKeys
    }

    /// Takes a token for `key`: whether one was there, how many are left, and when none was,
    /// the seconds until one is.
    public func take(_ key: String, now: Double = MonotonicClock.seconds()) -> (allowed: Bool, remaining: Int, retryAfter: Int) {
        buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + (now - bucket.updated) * rate)
            bucket.updated = now
            defer {
                buckets[key] = bucket
                if buckets.count > maximumKeys {
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
}

/// At most `limit` operations in flight per key (per process): a share of a scarce resource
/// (the password-hashing threads, say) that one key cannot take whole.
public final class InFlightLimiter: Sendable {
    public let limit: Int
    private let counts = Mutex<[String: Int]>([:])

    public init(limit: Int) { self.limit = limit }

    /// Runs `body` when `key` has a slot free; nil, without running it, when it has none.
    public func run<T: Sendable>(_ key: String, _ body: () async throws -> T) async rethrows -> T? {
        let taken = counts.withLock { counts -> Bool in
            guard counts[key, default: 0] < limit else { return false }
            counts[key, default: 0] += 1
            return true
        }
        guard taken else { return nil }
        defer {
            counts.withLock { counts in
                counts[key, default: 1] -= 1
                if counts[key] == 0 { counts[key] = nil }
            }
        }
        return try await body()
    }

    /// Operations in flight for `key`.
    public func inFlight(_ key: String) -> Int { counts.withLock { $0[key, default: 0] } }
}
