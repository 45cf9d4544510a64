#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One operation of Pier's HTTP API, defined once: the server routes it (with the access it
/// declares and the body and answer types it names), PierClient and PierAdmin call it, the
/// console links to it and the API document describes it, all from this value.
///
///     public static let item = Endpoint<PathID, NoBody, FeedbackItem>(
///         "GET", "/feedback/{id}", access: .signedIn, operation: "getFeedback",
///         summary: "One item (its sender or the team)", problems: [.notFound])
///
/// `Parameters` are what goes into the path and the query, `Body` what is sent (``NoBody``
/// for none, an optional type for a body that may be left out), `Answer` what a success
/// carries (``NoContent`` for none).
public struct Endpoint<Parameters: EndpointParameters, Body: Sendable, Answer: Sendable>: Sendable {
    /// What it is, its types named: what the API document and its checks read.
    public let definition: EndpointDefinition

    public var method: String { definition.method }
    public var template: String { definition.template }
    public var access: Access { definition.access }
    public var retryable: Bool { definition.retryable }

    /// - Parameters:
    ///   - description: more than the summary says, for the API document (a paragraph).
    ///   - answers: what a success carries, in a phrase ("The item"); by default its status's name.
    ///   - headers: the headers a success carries beyond `X-Request-ID` (`ETag`, `Location`).
    ///   - media: a ``FileAnswer``'s media types, the first the default.
    ///   - also: other statuses that carry the answer's type (a readiness check's 503).
    ///   - retryable: by default, a `GET`, `PUT` or `DELETE`.
    public init(
        _ method: String, _ template: String, access: Access, operation: String, summary: String,
        description: String? = nil, status: Int = 200, answers: String? = nil, headers: [String] = [],
        media: [String] = [], also: [Int] = [], problems: [ProblemCode] = [], retryable: Bool? = nil
    ) {
        let bodyType: Any.Type? = Body.self == NoBody.self ? nil : (Body.self as? any OptionalBody.Type)?.wrappedType ?? Body.self
        definition = EndpointDefinition(
            method: method, template: template, access: access, operation: operation, summary: summary,
            description: description, status: status, answers: answers, headers: headers, media: media, also: also,
            problems: problems + Self.problems(of: Parameters.declared).filter { !problems.contains($0) },
            retryable: retryable ?? (method == "GET" || method == "PUT" || method == "DELETE"),
            parameters: Parameters.declared, parametersType: Parameters.self, bodyType: bodyType,
            bodyRequired: Body.self != NoBody.self && !(Body.self is any OptionalBody.Type),
            answerType: Answer.self == NoContent.self ? nil : Answer.self)
    }

    /// The problems the parameters' checks answer (``EndpointParameters/decoded(_:)``): a path
    /// segment that cannot be what its declaration says is a 404, a query or header a 422.
    static func problems(of declared: [Parameter]) -> [ProblemCode] {
        func checked(_ parameter: Parameter) -> Bool {
            parameter.kind != .string || parameter.length != nil || parameter.values != nil || parameter.pattern != nil
                || (parameter.required && parameter.location != .path)
        }
        var implied: [ProblemCode] = []
        if declared.contains(where: { $0.location == .path && checked($0) }) { implied.append(.notFound) }
        if declared.contains(where: { $0.location != .path && checked($0) }) { implied.append(.validationFailed) }
        return implied
    }

    /// The names of the template's `{name}` segments, in order.
    public var pathParameterNames: [String] {
        template.split(separator: "/").filter { $0.hasPrefix("{") && $0.hasSuffix("}") }.map { String($0.dropFirst().dropLast()) }
    }

    /// The path of a call: each `{name}` of the template replaced by its value, percent-encoded
    /// as one segment.
    public func path(_ parameters: Parameters) -> String {
        let values = parameters.values
        return template.split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            guard segment.hasPrefix("{"), segment.hasSuffix("}") else { return String(segment) }
            let name = String(segment.dropFirst().dropLast())
            let value = values.first { $0.name == name }?.value ?? ""
            return PercentEncoding.component(value)
        }.joined(separator: "/")
    }

    /// The query of a call: the values of `parameters` declared in the query, in order.
    public func query(_ parameters: Parameters) -> [(name: String, value: String)] {
        let names = Set(Parameters.declared.filter { $0.location == .query }.map(\.name))
        return parameters.values.filter { names.contains($0.name) }
    }

    /// The headers of a call: the values of `parameters` declared as headers.
    public func headers(_ parameters: Parameters) -> [(name: String, value: String)] {
        let names = Set(Parameters.declared.filter { $0.location == .header }.map(\.name))
        return parameters.values.filter { names.contains($0.name) }
    }

    /// The path and query of a call, as a request line's target (`/feedback?status=new`).
    public func target(_ parameters: Parameters) -> String {
        let query = query(parameters)
        guard !query.isEmpty else { return path(parameters) }
        return path(parameters) + "?"
            + query.map { PercentEncoding.component($0.name) + "=" + PercentEncoding.component($0.value) }.joined(separator: "&")
    }
}

/// An endpoint's definition, its body and answer types named (nil: none): what the API
/// document is generated from.
public struct EndpointDefinition: Sendable {
    /// `GET`, `POST`, `PATCH`, `PUT` or `DELETE`.
    public let method: String
    /// The path, its parameters as `{name}` segments (`/feedback/{id}`).
    public let template: String
    /// Who may call it.
    public let access: Access
    /// A name unique in the API (`getFeedback`): the document's `operationId`.
    public let operation: String
    /// What it does, in a line.
    public let summary: String
    /// More than the summary says, when there is more to say.
    public let description: String?
    /// The status of a success (200, 201 for a creation, 204 without an answer).
    public let status: Int
    /// What a success carries, in a phrase; nil: its status's name.
    public let answers: String?
    /// The headers a success carries beyond `X-Request-ID`.
    public let headers: [String]
    /// A file's media types, the first the default.
    public let media: [String]
    /// Other statuses whose body is the answer's type.
    public let also: [Int]
    /// The problem codes it can answer with beyond those every call can meet (a malformed
    /// request, a token refused, the service unavailable).
    public let problems: [ProblemCode]
    /// Whether sending it twice is safe (a read, or a write made idempotent by an id the caller
    /// chose): clients retry such calls after a transient failure.
    public let retryable: Bool
    /// Its path, query and header parameters.
    public let parameters: [Parameter]
    /// The type they are read as and written from (``EndpointParameters``).
    public let parametersType: any EndpointParameters.Type
    /// The request body's type (`CreateFeedback`), nil for none.
    public let bodyType: Any.Type?
    /// Whether the body must be sent (else it may be left out: a confirmation that a recent
    /// sign-in stands in for).
    public let bodyRequired: Bool
    /// The answer's type (`FeedbackItem`, ``FileAnswer``), nil for none.
    public let answerType: Any.Type?

    /// The body type's name, nil for none.
    public var body: String? { bodyType.map { String(describing: $0) } }
    /// The answer type's name, nil for none.
    public var answer: String? { answerType.map { String(describing: $0) } }
}

extension Endpoint where Parameters == NoParameters {
    /// The path of an endpoint without parameters: its template.
    public var path: String { template }
}

/// Who may call an endpoint.
public enum Access: String, Sendable, CaseIterable {
    /// Anyone, and no token is read (Apple's server, key sets, the public list of plans).
    case `public`
    /// Anyone; a bearer token, when one is sent, names the caller.
    case anyone
    /// A signed-in account (a bearer token).
    case signedIn
    /// A member of the team (`support` or `admin`).
    case staff
    /// An `admin`.
    case admin
}

/// One parameter an endpoint takes in its path, query or headers: declared once, for the
/// route, the client's call and the API document.
public struct Parameter: Sendable, Equatable {
    public enum Location: String, Sendable { case path, query, header }
    /// What its text holds.
    public enum Kind: String, Sendable {
        case string, uuid, integer, boolean
        /// An ISO 8601 date or date-time.
        case date
    }

    public let name: String
    public let location: Location
    public let kind: Kind
    public let required: Bool
    public let summary: String
    /// The values the server accepts, for the document (it checks them itself): a number's
    /// range, a text's length and pattern, the known values of a set.
    public private(set) var minimum: Int?
    public private(set) var maximum: Int?
    public private(set) var length: ClosedRange<Int>?
    public private(set) var pattern: String? {
        didSet { compiled = pattern.map(CompiledPattern.init) }
    }
    /// `pattern`, compiled once where the parameter is declared: requests only match it.
    private(set) var compiled: CompiledPattern?
    public private(set) var values: [String]?
    /// What is meant when it is left out, when that is a value.
    public private(set) var defaultValue: String?

    init(name: String, location: Location, kind: Kind, required: Bool, summary: String) {
        self.name = name
        self.location = location
        self.kind = kind
        self.required = required
        self.summary = summary
    }

    /// This parameter, its number between `range`'s bounds (and `defaultValue` when left out).
    public func within(_ range: ClosedRange<Int>, defaultValue: Int? = nil) -> Parameter {
        var copy = self
        copy.minimum = range.lowerBound
        copy.maximum = range.upperBound
        copy.defaultValue = defaultValue.map(String.init)
        return copy
    }

    /// This parameter, its number `range.lowerBound` or more.
    public func within(_ range: PartialRangeFrom<Int>) -> Parameter {
        var copy = self
        copy.minimum = range.lowerBound
        return copy
    }

    /// This parameter, its text `length` characters long and matching `pattern`.
    public func sized(_ length: ClosedRange<Int>, pattern: String? = nil) -> Parameter {
        var copy = self
        copy.length = length
        copy.pattern = pattern
        return copy
    }

    /// This parameter, meaning `value` when left out.
    public func defaulting(_ value: String) -> Parameter {
        var copy = self
        copy.defaultValue = value
        return copy
    }

    /// This parameter, matching `pattern`.
    public func matching(_ pattern: String) -> Parameter {
        var copy = self
        copy.pattern = pattern
        return copy
    }

    /// This parameter, one of `values`.
    public func one(of values: [String]) -> Parameter {
        var copy = self
        copy.values = values
        return copy
    }

    /// A path parameter (always required).
    public static func path(_ name: String, _ kind: Kind, _ summary: String) -> Parameter {
        Parameter(name: name, location: .path, kind: kind, required: true, summary: summary)
    }

    /// A query parameter (optional unless said).
    public static func query(_ name: String, _ kind: Kind, _ summary: String, required: Bool = false) -> Parameter {
        Parameter(name: name, location: .query, kind: kind, required: required, summary: summary)
    }

    /// A request header (optional unless said).
    public static func header(_ name: String, _ kind: Kind, _ summary: String, required: Bool = false) -> Parameter {
        Parameter(name: name, location: .header, kind: kind, required: required, summary: summary)
    }
}

/// The path, query and header values of one call to an endpoint.
public protocol EndpointParameters: Codable, Sendable {
    /// What the endpoint takes; path parameters named as its template names them, and each
    /// named as the type's coding key for it.
    static var declared: [Parameter] { get }
    /// This call's values, in the declared order: by default its encoding, what is not set or is
    /// the declared default left out (``EndpointParameters/values``).
    var values: [(name: String, value: String)] { get }
}

extension EndpointParameters {
    /// The values of `pairs` that are set, in order: what ``values`` is made of.
    public static func present(_ pairs: [(String, String?)]) -> [(name: String, value: String)] {
        pairs.compactMap { name, value in value.map { (name, $0) } }
    }
}

/// An endpoint without path or query parameters.
public struct NoParameters: EndpointParameters {
    public static let declared: [Parameter] = []
    public init() {}
}

/// `{id}`: the one resource a path names.
public struct PathID: EndpointParameters {
    public static let declared: [Parameter] = [.path("id", .uuid, "The resource's id.")]
    public var id: UUID
    public init(_ id: UUID) { self.id = id }
}

/// `limit` and `cursor`: one page of a list, newest first.
public struct PageQuery: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [
        .query("limit", .integer, "Items per page, 1 to 100 (20 by default).").within(1...100, defaultValue: 20),
        .query("cursor", .string, "The `nextCursor` of the page before."),
    ]
    public var limit: Int?
    public var cursor: String?
    public init(limit: Int? = nil, cursor: String? = nil) {
        self.limit = limit
        self.cursor = cursor
    }
}

/// No request body.
public struct NoBody: Codable, Sendable, Equatable {
    public init() {}
}

/// No answer body (204).
public struct NoContent: Codable, Sendable, Equatable {
    public init() {}
}

/// An answer streamed as a file (CSV, NDJSON): read as bytes, not decoded.
public struct FileAnswer: Sendable, Equatable {
    public init() {}
}

/// An HTML page for a browser (the page behind a mailed link): apps do not call it.
public struct HTMLPage: Sendable, Equatable {
    public init() {}
}

/// A body that may be left out: an endpoint whose `Body` is optional (`ReauthenticationRequest?`)
/// takes one or none, and a client sends none for nil.
public protocol OptionalBody {
    /// The type of the body when there is one.
    static var wrappedType: Any.Type { get }
    /// Whether this value is no body.
    var isAbsent: Bool { get }
}

extension Optional: OptionalBody {
    public static var wrappedType: Any.Type { Wrapped.self }
    public var isAbsent: Bool { self == nil }
}

/// Percent-encoding as RFC 3986 says, for the path segments and query components of calls.
public enum PercentEncoding {
    /// `text` as one path segment or query component: UTF-8, every byte but RFC 3986's
    /// unreserved ones (letters, digits, `-._~`) as `%XX`; a "+" too, which servers read as a
    /// space in a query.
    public static func component(_ text: String) -> String {
        func unreserved(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                true
            default: false
            }
        }
        if text.utf8.allSatisfy(unreserved) { return text }
        let hex = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        encoded.reserveCapacity(text.utf8.count * 3)
        for byte in text.utf8 {
            if unreserved(byte) {
                encoded.append(byte)
            } else {
                encoded += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }
}
