import PierHTTP
import PierPostgres
import PierRuntime
import Synchronization

/// Request counters and latency histograms per route, rendered as Prometheus text.
public final class Metrics: RouterMiddleware {
    /// Upper bounds of the latency buckets, in seconds.
    static let buckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

    private struct Key: Hashable {
        let route: String
        let method: String
        let status: Int
    }

    private struct Histogram {
        var counts = [Int](repeating: 0, count: Metrics.buckets.count)
        var sum = 0.0
        var count = 0

        mutating func add(_ seconds: Double, bucket: Int?) {
            if let bucket { counts[bucket] += 1 }
            sum += seconds
            count += 1
        }
    }

    private struct State {
        var requests: [Key: Int] = [:]
        var latency: [String: Histogram] = [:]
    }

    private let state = Mutex(State())
    let service: String

    public init(service: String) { self.service = service }

    public func handle(
        _ request: Request, context: BasicRequestContext,
        next: (Request, BasicRequestContext) async throws -> Response
    ) async throws -> Response {
        let response = try await next(request, context)
        record(request, response)
        return response
    }

    private func record(_ request: Request, _ response: Response) {
        // Unmatched paths share one label, so scanners cannot grow the label set without bound.
        let route = request.route ?? "unmatched"
        let seconds = MonotonicClock.seconds() - request.startedAt
        let bucket = Metrics.buckets.firstIndex { seconds <= $0 }
        let key = Key(route: route, method: request.method, status: response.status)
        // Counted in place, nothing copied or allocated under the lock every request waits for.
        state.withLock { state in
            state.requests[key, default: 0] += 1
            state.latency[route, default: Histogram()].add(seconds, bucket: bucket)
        }
    }

    /// The Prometheus text exposition, with the pool's gauges.
    /// - Parameter pools: each hosted service's name and pool.
    public func render(pools: [(name: String, pool: PostgresPool)]) -> String {
        let snapshot = state.withLock { $0 }
        var text = "# HELP pier_http_requests_total Requests answered, by route, method and status.\n"
        text += "# TYPE pier_http_requests_total counter\n"
        for (key, count) in snapshot.requests.sorted(by: {
            ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status)
        }) {
            text +=
                "pier_http_requests_total{service=\"\(service)\",route=\"\(key.route)\",method=\"\(key.method)\",status=\"\(key.status)\"} \(count)\n"
        }
        text += "# HELP pier_http_request_duration_seconds Time from request to response, by route.\n"
        text += "# TYPE pier_http_request_duration_seconds histogram\n"
        for (route, histogram) in snapshot.latency.sorted(by: { $0.key < $1.key }) {
            var cumulative = 0
            for (index, bound) in Metrics.buckets.enumerated() {
                cumulative += histogram.counts[index]
                text +=
                    "pier_http_request_duration_seconds_bucket{service=\"\(service)\",route=\"\(route)\",le=\"\(bound)\"} \(cumulative)\n"
            }
            text +=
                "pier_http_request_duration_seconds_bucket{service=\"\(service)\",route=\"\(route)\",le=\"+Inf\"} \(histogram.count)\n"
            text += "pier_http_request_duration_seconds_sum{service=\"\(service)\",route=\"\(route)\"} \(histogram.sum)\n"
            text += "pier_http_request_duration_seconds_count{service=\"\(service)\",route=\"\(route)\"} \(histogram.count)\n"
        }
        if !pools.isEmpty {
            text += "# HELP pier_db_pool_connections Database connections by state.\n# TYPE pier_db_pool_connections gauge\n"
        }
        // Each family's lines together, as the text format asks.
        let statistics = pools.map { ($0.name, $0.pool.statistics) }
        for (name, stats) in statistics {
            text += "pier_db_pool_connections{service=\"\(name)\",state=\"in_use\"} \(stats.inUse)\n"
            text += "pier_db_pool_connections{service=\"\(name)\",state=\"idle\"} \(stats.idle)\n"
        }
        for (name, stats) in statistics { text += "pier_db_pool_waiting{service=\"\(name)\"} \(stats.waiting)\n" }
        // What each service's pool asked of the database, one family after another.
        let activity = pools.map { ($0.name, $0.pool.activity.counts) }
        for (metric, help, value) in [
            ("pier_db_statements_total", "Statements run on the service's pool.", \PostgresActivity.Counts.statements),
            (
                "pier_db_round_trips_total", "Round trips to the database (statements and their first preparation).",
                \PostgresActivity.Counts.roundTrips
            ),
            (
                "pier_db_rows_written_total", "Rows that INSERT, UPDATE, DELETE and MERGE statements reported.",
                \PostgresActivity.Counts.rowsWritten
            ),
        ] where !activity.isEmpty {
            text += "# HELP \(metric) \(help)\n# TYPE \(metric) counter\n"
            for (name, counts) in activity { text += "\(metric){service=\"\(name)\"} \(counts[keyPath: value])\n" }
        }
        text += "# HELP pier_process_resident_memory_bytes Resident memory.\n# TYPE pier_process_resident_memory_bytes gauge\n"
        text += "pier_process_resident_memory_bytes{service=\"\(service)\"} \(System.residentMemoryBytes())\n"
        return text
    }
}
