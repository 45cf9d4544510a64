import Foundation
import PierModels

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// When and how often PierClient tries a call again.
public struct RetryPolicy: Sendable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    /// The first back-off; each next one may be twice as long (full jitter: a random wait up
    /// to that bound, so clients that failed together do not retry together).
    public var baseDelay: TimeInterval
    /// The longest back-off between two attempts.
    public var maxDelay: TimeInterval
    /// A `Retry-After` longer than this is not waited for: the error is thrown at once, with
    /// ``PierError/retryAfter`` set, for the app to decide.
    public var maxRetryAfter: TimeInterval

    public init(maxAttempts: Int = 3, baseDelay: TimeInterval = 0.5, maxDelay: TimeInterval = 8, maxRetryAfter: TimeInterval = 30)
    {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
    }

    /// The wait before attempt `attempt + 1` (`attempt` counts from 1).
    func delay(after attempt: Int, retryAfter: TimeInterval?) -> TimeInterval {
        if let retryAfter { return retryAfter }
        let bound = min(maxDelay, baseDelay * pow(2, Double(attempt - 1)))
        return Double.random(in: 0...bound)
    }
}

/// One call: where, what, with which token, and whether it may be sent twice.
struct Call: Sendable {
    var method: String
    /// Percent-encoded, from the server's root (`/feedback/…`).
    var path: String
    var query: [URLQueryItem] = []
    var body: Data? = nil
    /// Safe or idempotent (GET, a feedback with its client id, an App Store transaction): retried
    /// on transient failures. Others are sent once.
    var retryable: Bool
    var headers: [String: String] = [:]
}

extension Call {
    /// A call of `endpoint`: its path and query from `parameters`, sent again after a transient
    /// failure only when the endpoint says that is safe.
    init<Parameters, Body, Answer>(
        _ endpoint: Endpoint<Parameters, Body, Answer>, _ parameters: Parameters, body: Data? = nil,
        headers: [String: String] = [:]
    ) {
        self.init(
            method: endpoint.method, path: endpoint.path(parameters),
            query: endpoint.query(parameters).map { URLQueryItem(name: $0.name, value: $0.value) }, body: body,
            retryable: endpoint.retryable,
            headers: headers.merging(endpoint.headers(parameters).map { ($0.name, $0.value) }) { given, _ in given })
    }
}

/// The HTTP layer: URLSession, problems to ``PierError``, retries with back-off, and the ids of
/// calls that failed (a feedback can carry them, so support can find what went wrong).
final class Transport: Sendable {
    let baseURL: URL
    let session: URLSession
    let retry: RetryPolicy
    private let failures = Locked<[String]>([])
    static let keptFailures = 10

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()
    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    init(baseURL: URL, session: URLSession, retry: RetryPolicy) {
        self.baseURL = baseURL
        self.session = session
        self.retry = retry
    }

    /// The request ids of the last calls that failed, oldest first.
    var failedRequestIDs: [String] { failures.withLock { $0 } }

    /// Forgets `ids`: a feedback carried them to the team (or keeps them in the outbox).
    func forget(failedRequestIDs ids: [String]) {
        guard !ids.isEmpty else { return }
        failures.withLock { $0.removeAll { ids.contains($0) } }
    }

    /// Sends `call` with `token` (if any), retrying what may be retried; returns the body and
    /// the response of a 2xx or 304.
    func send(_ call: Call, token: String?) async throws(PierError) -> (Data, HTTPURLResponse) {
        var attempt = 1
        while true {
            do {
                return try await once(call, token: token)
            } catch {
                guard call.retryable, error.isTransient, attempt < retry.maxAttempts else { throw error }
                if let retryAfter = error.retryAfter, retryAfter > retry.maxRetryAfter { throw error }
                let wait = retry.delay(after: attempt, retryAfter: error.retryAfter)
                try? await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000))
                attempt += 1
            }
        }
    }

    /// Decodes a JSON answer of `call`.
    func json<T: Decodable>(_ type: T.Type, _ call: Call, token: String?) async throws(PierError) -> T {
        let (data, response) = try await send(call, token: token)
        return try Self.decode(T.self, data, requestID: response.value(forHTTPHeaderField: "X-Request-ID"))
    }

    static func decode<T: Decodable>(_ type: T.Type, _ data: Data, requestID: String?) throws(PierError) -> T {
        do {
            return try decoder.decode(T.self, from: data)
        } catch {
            throw PierError(kind: .decoding, detail: "The answer could not be read: \(error)", requestId: requestID)
        }
    }

    static func body(_ value: some Encodable) -> Data {
        // Encoding Pier's own request types cannot fail (no non-finite numbers in them).
        (try? encoder.encode(value)) ?? Data("{}".utf8)
    }

    /// The body of an endpoint's call: none for an optional body left out.
    static func body(sent value: some Encodable) -> Data? {
        if let optional = value as? any OptionalBody, optional.isAbsent { return nil }
        return body(value)
    }

    private func once(_ call: Call, token: String?) async throws(PierError) -> (Data, HTTPURLResponse) {
        // The call's path is percent-encoded already (``Endpoint/path(_:)``): appended as it is.
        var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false)
        if let base = components?.percentEncodedPath {
            components?.percentEncodedPath = (base.hasSuffix("/") ? String(base.dropLast()) : base) + call.path
        }
        // Encoded here, not by `queryItems`: URLComponents leaves "+" as it is (RFC 3986 allows
        // it in a query), and servers read a "+" in a query as a space, so `a+b@example.com`
        // would be looked up as `a b@example.com`.
        if !call.query.isEmpty {
            components?.percentEncodedQuery = call.query.map {
                PercentEncoding.component($0.name) + "=" + PercentEncoding.component($0.value ?? "")
            }
            .joined(separator: "&")
        }
        guard let url = components?.url else {
            throw PierError(kind: .network, detail: "\(call.path) does not make a URL with \(baseURL)")
        }
        var request = URLRequest(url: url)
        request.httpMethod = call.method
        let requestID = "pierclient-" + UUID().uuidString.lowercased()
        request.setValue(requestID, forHTTPHeaderField: "X-Request-ID")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body = call.body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        for (name, value) in call.headers { request.setValue(value, forHTTPHeaderField: name) }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            remember(requestID)
            throw PierError(
                kind: .network, detail: "The server could not be reached: \(error.localizedDescription)", requestId: requestID)
        }
        guard let http = response as? HTTPURLResponse else {
            throw PierError(kind: .network, detail: "The answer was not HTTP", requestId: requestID)
        }
        if (200..<300).contains(http.statusCode) || http.statusCode == 304 { return (data, http) }
        let answeredID = http.value(forHTTPHeaderField: "X-Request-ID") ?? requestID
        remember(answeredID)
        throw Self.problem(data, http, requestID: answeredID)
    }

    /// The error of a non-2xx answer: its problem when it has one, else what the status says.
    static func problem(_ data: Data, _ response: HTTPURLResponse, requestID: String) -> PierError {
        let retryAfter = response.value(forHTTPHeaderField: "Retry-After").flatMap {
            TimeInterval($0.trimmingCharacters(in: .whitespaces))
        }
        let problem = try? decoder.decode(Problem.self, from: data)
        var error = PierError(
            kind: .server, status: response.statusCode, code: problem?.code ?? .of(status: response.statusCode),
            detail: problem?.detail ?? problem?.title ?? HTTPURLResponse.localizedString(forStatusCode: response.statusCode),
            fieldErrors: problem?.errors ?? [], requestId: problem?.requestId ?? requestID, retryAfter: retryAfter)
        error.mfaToken = problem?.mfaToken
        error.factors = problem?.factors ?? []
        error.offer = problem?.offer ?? []
        return error
    }

    private func remember(_ requestID: String) {
        failures.withLock { ids in
            ids.append(requestID)
            if ids.count > Self.keptFailures { ids.removeFirst(ids.count - Self.keptFailures) }
        }
    }
}

/// A value behind a lock (`NSLock`: the client builds for OS versions without `Mutex`).
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
