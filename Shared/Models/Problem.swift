/// An error response body, `application/problem+json` (RFC 9457).
public struct Problem: Codable, Sendable, Equatable, Error {
    /// One invalid field of a request body or query.
    public struct FieldError: Codable, Sendable, Equatable {
        /// The field's path, dotted (`metadata.build`, `requestIds[3]`).
        public var field: String
        /// Why it was refused, for a developer to read.
        public var message: String

        public init(field: String, message: String) {
            self.field = field
            self.message = message
        }
    }

    /// A URI naming the kind of problem; `about:blank` when the status says it all.
    public var type: String
    /// A short summary of the kind (the same for every occurrence).
    public var title: String
    /// The HTTP status code.
    public var status: Int
    /// What happened this time, for a developer to read.
    public var detail: String?
    /// The request's `X-Request-ID`, to find it in the logs.
    public var requestId: String?
    /// The invalid fields, for validation failures.
    public var errors: [FieldError]?

    public init(
        type: String = "about:blank", title: String, status: Int, detail: String? = nil,
        requestId: String? = nil, errors: [FieldError]? = nil
    ) {
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.requestId = requestId
        self.errors = errors
    }
}
