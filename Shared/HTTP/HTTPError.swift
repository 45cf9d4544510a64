import PierJSON
import PierModels

/// An error that knows the HTTP answer it deserves. Anything thrown by a handler that does not
/// conform becomes a generic 500, with its detail only in the log.
public protocol HTTPResponseError: Error {
    /// The status code.
    var status: Int { get }
    /// The problem body (its `requestId` is filled in by the server).
    var problem: Problem { get }
    /// Extra headers (`Retry-After`, `Allow`, `WWW-Authenticate`).
    var headers: HTTPHeaders { get }
}

/// The common HTTP errors, with a problem body that says which field and why.
public struct HTTPError: HTTPResponseError, CustomStringConvertible {
    public let status: Int
    public var problem: Problem
    public let headers: HTTPHeaders

    /// - Parameter code: the stable code; by default the status's (``ProblemCode/of(status:)``).
    public init(
        _ status: Int, code: ProblemCode? = nil, title: String? = nil, detail: String? = nil, type: String = "about:blank",
        errors: [Problem.FieldError]? = nil, headers: HTTPHeaders = [:]
    ) {
        self.status = status
        self.problem = Problem(
            type: type, code: code ?? .of(status: status), title: title ?? HTTPStatus.reason(status), status: status,
            detail: detail, errors: errors)
        self.headers = headers
    }

    public var description: String { "HTTP \(status): \(problem.detail ?? problem.title)" }

    public static func badRequest(_ detail: String, errors: [Problem.FieldError]? = nil) -> HTTPError {
        HTTPError(400, detail: detail, errors: errors)
    }
    /// 401 with `WWW-Authenticate` as RFC 6750 says: a bare challenge when no token came
    /// (`.authenticationRequired`), `error="invalid_token"` for a token refused.
    public static func unauthorized(
        _ detail: String = "A valid bearer token is required.", code: ProblemCode = .authenticationRequired
    ) -> HTTPError {
        let challenge =
            code == .authenticationRequired
            ? "Bearer" : "Bearer error=\"invalid_token\", error_description=\"\(detail.replacingQuotes)\""
        return HTTPError(401, code: code, detail: detail, headers: ["WWW-Authenticate": challenge])
    }
    /// 403. `missingRole`: the token lacks the role the route needs, which `WWW-Authenticate`
    /// says as `insufficient_scope` (RFC 6750).
    public static func forbidden(_ detail: String, code: ProblemCode = .forbidden, missingRole: Bool = false) -> HTTPError {
        HTTPError(
            403, code: code, detail: detail,
            headers: missingRole
                ? ["WWW-Authenticate": "Bearer error=\"insufficient_scope\", error_description=\"\(detail.replacingQuotes)\""]
                : [:])
    }
    public static func notFound(_ detail: String = "Nothing lives at this address.") -> HTTPError {
        HTTPError(404, detail: detail)
    }
    public static func conflict(_ detail: String, code: ProblemCode = .conflict) -> HTTPError {
        HTTPError(409, code: code, detail: detail)
    }
    /// 422 with one entry per invalid field.
    public static func invalid(_ errors: [Problem.FieldError], code: ProblemCode = .validationFailed) -> HTTPError {
        let fields = errors.map(\.field).joined(separator: ", ")
        return HTTPError(422, code: code, title: "Validation failed", detail: "Invalid field(s): \(fields).", errors: errors)
    }
    /// What the JSON front end refused: 400 for the body as a whole, 422 naming each field.
    public init(_ error: JSON.BodyError) {
        switch error {
        case .body(let detail): self = .badRequest(detail)
        case .fields(let issues): self = .invalid(issues.map { Problem.FieldError(field: $0.field, message: $0.message) })
        }
    }

    /// 422 for one field.
    public static func invalid(_ field: String, _ message: String, code: ProblemCode = .validationFailed) -> HTTPError {
        invalid([Problem.FieldError(field: field, message: message)], code: code)
    }
    public static func tooManyRequests(retryAfter seconds: Int, _ detail: String) -> HTTPError {
        HTTPError(429, detail: detail, headers: ["Retry-After": String(max(1, seconds))])
    }
    /// 429 for a client over a limit of `limit` requests per `window` seconds: `Retry-After`
    /// and the `RateLimit-*` fields (IETF draft: limit, remaining, reset, policy).
    public static func rateLimited(limit: Int, window: Int, retryAfter seconds: Int, _ detail: String) -> HTTPError {
        var headers = HTTPHeaders()
        headers.set("Retry-After", String(max(1, seconds)))
        headers.set("RateLimit-Limit", String(limit))
        headers.set("RateLimit-Remaining", "0")
        headers.set("RateLimit-Reset", String(max(1, seconds)))
        headers.set("RateLimit-Policy", "\(limit);w=\(max(1, window))")
        return HTTPError(429, code: .rateLimited, detail: detail, headers: headers)
    }
    public static func unavailable(retryAfter seconds: Int, _ detail: String) -> HTTPError {
        HTTPError(503, detail: detail, headers: ["Retry-After": String(max(1, seconds))])
    }
}

/// Reason phrases for the statuses Pier uses.
public enum HTTPStatus {
    public static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "HTTP \(status)"
        }
    }
}

extension String {
    /// Safe inside a quoted header parameter.
    fileprivate var replacingQuotes: String {
        String(unicodeScalars.map { $0 == "\"" || $0 == "\\" ? "'" : Character($0) })
    }
}
