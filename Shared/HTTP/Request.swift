import PierJSON
import PierModels
import PierRuntime
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One HTTP request, with its body read in full (within the server's body limit).
public struct Request: Sendable {
    /// `GET`, `POST`, …
    public var method: String
    /// The decoded path, without the query.
    public var path: String
    /// The query parameters in order, decoded.
    public var query: [(name: String, value: String)]
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Kept from `X-Request-ID` when the client sent a sane one, generated otherwise.
    public var requestID: String
    /// The peer's address (the gateway's, behind one).
    public var clientAddress: String
    /// The request target as received (path and query, still percent-encoded): what a proxy forwards.
    public var target: String = ""
    /// The TCP peer: the client itself, or the proxy in front of it.
    public var peerAddress: String = ""
    /// The host the client asked for: a trusted proxy's `X-Forwarded-Host` (the gateway sets it
    /// to the client's `Host`), else `Host`.
    public var host: String? { forwardedHost ?? headers["Host"] }
    var forwardedHost: String?
    /// The scheme the client used: a trusted proxy's `X-Forwarded-Proto` (`https` behind one that
    /// ends TLS), else `http`, which is all this server speaks.
    public var scheme: String { forwardedProto ?? "http" }
    var forwardedProto: String?
    /// The matched route's pattern (`/auth/users/{id}`), for metrics and logs.
    public var route: String?
    /// When the server started on this request (for durations), in seconds from an arbitrary origin.
    public let startedAt: Double

    public init(
        method: String, path: String, query: [(name: String, value: String)] = [], headers: HTTPHeaders = [:],
        body: [UInt8] = [], requestID: String = "", clientAddress: String = "127.0.0.1"
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.requestID = requestID
        self.clientAddress = clientAddress
        self.startedAt = MonotonicClock.seconds()
    }

    /// A request as a transport received it: the target parsed (400 for what ``URLTarget``
    /// refuses), the client's id kept when sane, the client's address learned through trusted
    /// proxies. The HTTP adapter and the in-process test client both make requests here.
    public static func received(
        method: String, target: String, headers: HTTPHeaders, body: [UInt8], peerAddress: String,
        trustedProxies: TrustedProxies, requestID: String? = nil
    ) throws(HTTPError) -> Request {
        let (path, query, target) = try URLTarget.parse(target)
        var request = Request(
            method: method, path: path, query: query, headers: headers, body: body,
            requestID: requestID ?? Request.requestID(headers["X-Request-ID"]),
            clientAddress: trustedProxies.clientAddress(peer: peerAddress, forwardedFor: headers.list("X-Forwarded-For")))
        request.peerAddress = peerAddress
        request.target = target
        if trustedProxies.contains(peerAddress) {
            request.forwardedHost = headers["X-Forwarded-Host"]
            request.forwardedProto = headers["X-Forwarded-Proto"].map { $0.lowercased() == "https" ? "https" : "http" }
        }
        return request
    }

    /// Keeps a client's id when it is 1–128 visible ASCII characters; otherwise makes one.
    static func requestID(_ given: String?) -> String {
        if let given, !given.isEmpty, given.utf8.count <= 128, given.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            return given
        }
        return RequestIDs.next()
    }

    /// The first value of query parameter `name`.
    public func query(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// Query parameter `name` as an integer in `range`; nil when it is absent, or when it is not
    /// such an integer (then its field's error is added to `errors`).
    public func query(_ name: String, in range: ClosedRange<Int>, into errors: inout [Problem.FieldError]) -> Int? {
        guard let text = query(name) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            errors.append(.init(field: name, message: "must be an integer from \(range.lowerBound) to \(range.upperBound)"))
            return nil
        }
        return value
    }

    /// The body decoded as JSON, with problems that name the field (400/415/422).
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws(HTTPError) -> T {
        try json { bytes throws(JSON.BodyError) in try JSON.decodeBody(T.self, from: bytes) }
    }

    /// The body decoded as JSON, refusing with 422 every top-level member `T`'s coding keys do
    /// not name.
    public func decodeKnownMembers<T: Decodable>(_ type: T.Type = T.self) throws(HTTPError) -> T {
        try json { bytes throws(JSON.BodyError) in try JSON.decodeBody(knownMembersOf: T.self, from: bytes) }
    }

    /// The body decoded as JSON, refusing with 422 any top-level field that `T` does not know
    /// (so a typo in a client is an error, not silently ignored data), every missing and every
    /// unknown field named in one answer. One parse does both.
    public func decodeStrictly<T: StrictDecodable>(_ type: T.Type = T.self) throws(HTTPError) -> T {
        try json { bytes throws(JSON.BodyError) in try JSON.decodeBody(strictly: T.self, from: bytes) }
    }

    /// The body read by `decode` when it is sent as JSON (415 otherwise), its failure a problem.
    private func json<T>(_ decode: ([UInt8]) throws(JSON.BodyError) -> T) throws(HTTPError) -> T {
        if let contentType = headers["Content-Type"], !Request.isJSON(contentType) {
            throw HTTPError(415, detail: "Send the body as application/json.")
        }
        do {
            return try decode(body)
        } catch {
            throw HTTPError(error)
        }
    }

    /// The fields of an HTML form's body (`application/x-www-form-urlencoded`); nil when the
    /// body is something else.
    public func form() throws(HTTPError) -> [String: String]? {
        guard isForm else { return nil }
        let text = String(decoding: body, as: UTF8.self)
        return Dictionary(try URLTarget.pairs(text[...], what: "form"), uniquingKeysWith: { first, _ in first })
    }

    /// Whether the body is an HTML form's (`application/x-www-form-urlencoded`).
    public var isForm: Bool {
        guard let contentType = headers["Content-Type"] else { return false }
        return contentType.split(separator: ";", maxSplits: 1)[0].trimmingWhitespace().lowercased()
            == "application/x-www-form-urlencoded"
    }

    /// The bearer token of the `Authorization` header, if one is present.
    public var bearerToken: String? {
        guard let value = headers["Authorization"] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, String(parts[0]).caseInsensitiveEquals("Bearer") else { return nil }
        return parts[1].trimmingWhitespace()
    }

    static func isJSON(_ contentType: String) -> Bool {
        let media = contentType.split(separator: ";", maxSplits: 1)[0].trimmingWhitespace().lowercased()
        return media == "application/json" || (media.hasPrefix("application/") && media.hasSuffix("+json"))
    }
}

/// Request ids made here: a random prefix per process and a counter. Unique, which is what an
/// id needs; not secret. (`UUID()` costs a file open and a formatted print on Linux: measured
/// at a tenth of the server's time on `/healthz`.)
enum RequestIDs {
    /// 16 hex digits drawn once per process; each id is these, `-`, and a counter in hex.
    private static let prefix: UInt64 = {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }()
    private static let counter = Atomic<UInt64>(0)

    static func next() -> String {
        let number = counter.add(1, ordering: .relaxed).newValue
        let digits = max(1, (64 - number.leadingZeroBitCount + 3) / 4)
        return String(unsafeUninitializedCapacity: 17 + digits) { buffer in
            write(prefix, digits: 16, into: buffer, at: 0)
            buffer[16] = UInt8(ascii: "-")
            write(number, digits: digits, into: buffer, at: 17)
            return 17 + digits
        }
    }

    /// The last `digits` hex digits of `value`, lowercase, at `start`.
    private static func write(_ value: UInt64, digits: Int, into buffer: UnsafeMutableBufferPointer<UInt8>, at start: Int) {
        var value = value
        for index in (start..<start + digits).reversed() {
            let nibble = UInt8(truncatingIfNeeded: value & 0xF)
            buffer[index] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
            value >>= 4
        }
    }
}
