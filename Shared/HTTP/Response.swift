import PierJSON
import PierModels

/// An HTTP response, its body complete.
public struct Response: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// When set, the body is produced by this function as it is sent (chunked), instead of `body`.
    public var stream: (@Sendable (any BodyWriter) async throws -> Void)?

    public init(status: Int = 200, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response whose body `producer` writes while it is being sent, in bounded memory.
    public static func streaming(
        status: Int = 200, headers: HTTPHeaders,
        _ producer: @escaping @Sendable (any BodyWriter) async throws -> Void
    ) -> Response {
        var response = Response(status: status, headers: headers)
        response.stream = producer
        return response
    }

    /// A JSON response of `value`.
    public static func json(_ value: some Encodable, status: Int = 200, headers: HTTPHeaders = [:]) throws -> Response {
        var headers = headers
        headers.set("Content-Type", "application/json")
        return Response(status: status, headers: headers, body: try JSON.encode(value))
    }

    /// A plain-text response.
    public static func text(_ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8") -> Response {
        Response(status: status, headers: ["Content-Type": contentType], body: Array(text.utf8))
    }

    /// 204 No Content.
    public static var noContent: Response { Response(status: 204) }

    /// An `application/problem+json` response for `error`, tagged with the request id.
    public static func problem(_ error: any HTTPResponseError, requestID: String) -> Response {
        var problem = error.problem
        problem.requestId = requestID.isEmpty ? nil : requestID
        var headers = error.headers
        headers.set("Content-Type", "application/problem+json")
        let body = (try? JSON.encode(problem)) ?? Array(#"{"title":"Error"}"#.utf8)
        return Response(status: error.status, headers: headers, body: body)
    }
}

/// What a handler may return: a `Response` itself, or any `Encodable` value (200 JSON).
public protocol ResponseConvertible: Sendable {
    func response() throws -> Response
}

extension Response: ResponseConvertible {
    public func response() throws -> Response { self }
}

/// A value answered as JSON with a chosen status (201 with `Location`, say).
public struct JSONResponse<Value: Encodable & Sendable>: ResponseConvertible {
    public var value: Value
    public var status: Int
    public var headers: HTTPHeaders
    public init(_ value: Value, status: Int = 200, headers: HTTPHeaders = [:]) {
        self.value = value
        self.status = status
        self.headers = headers
    }
    public func response() throws -> Response { try .json(value, status: status, headers: headers) }
}

/// A response that carries an endpoint's `Answer`: what a handler registered for an
/// ``Endpoint`` returns, so an answer of another type does not compile.
public protocol AnswerResponse<Answer>: ResponseConvertible {
    associatedtype Answer: Sendable
}

extension JSONResponse: AnswerResponse {
    public typealias Answer = Value
}

/// An answer of type `Answer` given as a response made otherwise: JSON written row by row
/// (its writer promises the shape of `Answer`), a streamed file, or no content.
public struct EndpointReply<Answer: Sendable>: AnswerResponse {
    let made: Response

    fileprivate init(made: Response) { self.made = made }

    /// A response made by a helper that does not know `Answer` (a conditional answer that may
    /// be 304, a stream): its body, when it has one, is `Answer`'s, as the caller promises.
    public init(promised response: Response) { made = response }

    /// JSON bytes written to `Answer`'s shape (``JSONWriter``, a stored answer replayed).
    public init(writtenJSON body: [UInt8], status: Int = 200, headers: HTTPHeaders = [:]) {
        var headers = headers
        headers.set("Content-Type", "application/json")
        made = Response(status: status, headers: headers, body: body)
    }

    /// An HTML page: an ``HTMLPage`` endpoint's answer, or what a browser's form post gets
    /// instead of `Answer` (the form behind a mailed link).
    public static func page(_ response: Response) -> EndpointReply { EndpointReply(made: response) }

    public func response() throws -> Response { made }
}

extension EndpointReply where Answer: Encodable {
    /// `value` as JSON.
    public static func json(_ value: Answer, status: Int = 200, headers: HTTPHeaders = [:]) throws -> EndpointReply {
        EndpointReply(made: try .json(value, status: status, headers: headers))
    }
}

extension EndpointReply where Answer == NoContent {
    /// 204, nothing in the body.
    public static func noContent(headers: HTTPHeaders = [:]) -> EndpointReply {
        EndpointReply(made: Response(status: 204, headers: headers))
    }

    /// Another status without a body: 202 (accepted: a mail queued), 200.
    public static func empty(_ status: Int) -> EndpointReply { EndpointReply(made: Response(status: status)) }
}

extension EndpointReply where Answer == FileAnswer {
    /// A file (CSV, NDJSON) streamed as `producer` writes it.
    public static func file(
        headers: HTTPHeaders, _ producer: @escaping @Sendable (any BodyWriter) async throws -> Void
    ) -> EndpointReply {
        EndpointReply(made: .streaming(headers: headers, producer))
    }
}
