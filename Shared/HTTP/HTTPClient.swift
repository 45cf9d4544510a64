import CCurl
import PierRuntime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The process's one outbound HTTP client, on libcurl's multi interface: every exchange runs on
/// one transfer thread, so no thread waits on a network while a request is in flight (the JWKS,
/// identity providers, OCSP, the App Store Server API, export parts, the proxy's health checks).
/// Connections are kept alive and shared by every exchange. Each use says its own timeouts.
///
/// Two ways to read an answer: ``send(_:_:headers:body:timeout:limit:)`` returns the whole body
/// (capped); ``stream(_:completion:)`` hands the head over as soon as it arrives (small bodies with
/// it) and streams larger bodies after it with back-pressure (a transfer is paused while its
/// reader is behind), so a response of any size passes in bounded memory.
///
/// The host makes one per process and stops it after everything that uses it.
public final class HTTPClient: Sendable {
    public struct Request: Sendable {
        public var method: String
        public var url: String
        public var headers: HTTPHeaders
        public var body: [UInt8]
        public var connectTimeoutMilliseconds: Int
        public var timeoutMilliseconds: Int

        public init(
            method: String, url: String, headers: HTTPHeaders = [:], body: [UInt8] = [], connectTimeoutMilliseconds: Int,
            timeoutMilliseconds: Int
        ) {
            self.method = method
            self.url = url
            self.headers = headers
            self.body = body
            self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
            self.timeoutMilliseconds = timeoutMilliseconds
        }
    }

    /// Why no (whole) response arrived. Before a head, nothing of a response was seen: a retry
    /// is safe for idempotent requests.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// Refused, unreachable, not resolvable, or not connected within the connect timeout:
        /// the request never reached the server.
        case connect(String)
        /// No response head within the timeout, the request sent.
        case timeout(String)
        /// The connection was reset or closed before a response head (or, reading a whole
        /// body, before its end).
        case reset(String)
        /// Too many exchanges are in flight in the process.
        case overloaded
        /// The whole body was larger than the caller's limit (in bytes); it was not read on.
        case tooLarge(Int)
        /// The client was closed (the process is shutting down): nothing more is sent.
        case closed

        public var description: String {
            switch self {
            case .connect(let why): "connect: \(why)"
            case .timeout(let why): "timeout: \(why)"
            case .reset(let why): "reset: \(why)"
            case .overloaded: "too many exchanges in flight"
            case .tooLarge(let limit): "the response is larger than \(limit) bytes"
            case .closed: "the HTTP client is closed"
            }
        }
    }

    /// A whole response.
    public struct Response: Sendable {
        public let status: Int
        public let headers: HTTPHeaders
        public let body: [UInt8]

        /// The response itself when its status is `expected`.
        /// - Throws: ``UnexpectedStatus`` otherwise.
        public func expecting(_ expected: Int = 200) throws(UnexpectedStatus) -> Response {
            guard status == expected else { throw UnexpectedStatus(status: status, expected: expected) }
            return self
        }
    }

    /// A server answered, but not with the status the use needs.
    public struct UnexpectedStatus: Error, Sendable, Equatable, CustomStringConvertible {
        public let status: Int
        public let expected: Int

        public init(status: Int, expected: Int) {
            self.status = status
            self.expected = expected
        }

        public var description: String { "answered \(status), not \(expected)" }
    }

    /// A response head, and its body as it arrives.
    public struct StreamedResponse: Sendable {
        public let status: Int
        public let headers: HTTPHeaders
        /// The rest of the body, to read as it arrives (empty when `wholeBody` holds it).
        public let body: Body
        /// The whole body, when its `Content-Length` was at most ``HTTPClient/wholeBodyLimit``:
        /// read before the head is handed over, one hand-over instead of a stream.
        public let wholeBody: [UInt8]?
    }

    /// Bodies announced up to this size are read whole before the response is handed over.
    public static let wholeBodyLimit = 64 << 10

    /// The body of a response, read chunk by chunk as it arrives.
    public final class Body: Sendable {
        /// The body ended early (the upstream failed, or the total timeout passed mid-body).
        public struct Interrupted: Error, CustomStringConvertible {
            public let description: String
        }

        enum Push { case accepted, full, cancelled }

        private struct State {
            var chunks: [[UInt8]] = []
            var buffered = 0
            var finished = false
            var failure: String?
            var cancelled = false
            /// The transfer is paused until the reader makes room.
            var paused = false
            var reader: CheckedContinuation<[UInt8]?, Error>?
        }
        private let state = Mutex(State())
        /// Bytes buffered at most before the transfer pauses.
        let limit: Int
        /// Asks the transfer thread to continue a paused transfer.
        private let unpause: @Sendable () -> Void

        init(limit: Int, unpause: @escaping @Sendable () -> Void) {
            self.limit = limit
            self.unpause = unpause
        }

        /// The next chunk, or nil at the end.
        /// - Throws: ``Interrupted`` when the upstream failed mid-body.
        public func next() async throws -> [UInt8]? {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8]?, Error>) in
                let (outcome, resume) = state.withLock { state -> (Result<[UInt8]?, Error>?, Bool) in
                    if !state.chunks.isEmpty {
                        let chunk = state.chunks.removeFirst()
                        state.buffered -= chunk.count
                        let resume = state.paused && state.buffered < limit
                        if resume { state.paused = false }
                        return (.success(chunk), resume)
                    }
                    if let failure = state.failure { return (.failure(Interrupted(description: failure)), false) }
                    if state.finished { return (.success(nil), false) }
                    state.reader = continuation
                    let resume = state.paused
                    state.paused = false
                    return (nil, resume)
                }
                if resume { unpause() }
                if let outcome { continuation.resume(with: outcome) }
            }
        }

        /// Stops the transfer (the client went away).
        public func cancel() {
            let resume = state.withLock { state -> Bool in
                state.cancelled = true
                defer { state.paused = false }
                return state.paused
            }
            if resume { unpause() }
        }

        /// From the transfer thread: hands a chunk over, or says to pause (the chunk is then
        /// delivered again when the transfer continues) or to stop.
        func push(_ chunk: UnsafeRawBufferPointer) -> Push {
            let (outcome, reader) = state.withLock { state -> (Push, CheckedContinuation<[UInt8]?, Error>?) in
                if state.cancelled { return (.cancelled, nil) }
                if let reader = state.reader {
                    state.reader = nil
                    return (.accepted, reader)
                }
                guard state.buffered < limit else {
                    state.paused = true
                    return (.full, nil)
                }
                state.chunks.append(Array(chunk))
                state.buffered += chunk.count
                return (.accepted, nil)
            }
            reader?.resume(returning: Array(chunk))
            return outcome
        }

        func finish(failure: String?) {
            let reader = state.withLock { state -> CheckedContinuation<[UInt8]?, Error>? in
                if let failure { state.failure = failure } else { state.finished = true }
                guard state.chunks.isEmpty, let reader = state.reader else { return nil }
                state.reader = nil
                return reader
            }
            if let failure {
                reader?.resume(throwing: Interrupted(description: failure))
            } else {
                reader?.resume(returning: nil)
            }
        }
    }

    private let loop: TransferLoop
    private let bufferLimit: Int
    private let resolver: NameResolver

    /// - Parameters:
    ///   - maximumInFlight: exchanges at once in the process, whatever their use; beyond,
    ///     ``Failure/overloaded``. Each use caps its own below it (``Limit``).
    ///   - bufferLimit: bytes of a streamed body held at most before its transfer pauses.
    ///   - resolver: where host names are resolved (a name once known is never waited on).
    public init(maximumInFlight: Int = 1 << 16, bufferLimit: Int = 256 << 10, resolver: NameResolver = .shared) {
        _ = Self.globalInit
        loop = TransferLoop(maximumInFlight: maximumInFlight)
        self.bufferLimit = bufferLimit
        self.resolver = resolver
    }

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// Exchanges in progress.
    public var inFlight: Int { loop.inFlight }

    /// Ends every exchange still in progress (as failed) and stops the transfer thread.
    public func close() { loop.stop() }

    /// Sends the request, its host's addresses given to curl (`resolve`, curl's `HOST:PORT:ADDRESS`
    /// rule); `completion` runs on the transfer thread with the response head (the body follows in
    /// `response.body`), or with the ``Failure`` that left no head.
    private func stream(
        _ request: Request, resolve: String?, completion: @escaping @Sendable (Result<StreamedResponse, Failure>) -> Void
    ) {
        let loop = loop
        let exchange = Transfer(request: request, resolve: resolve, completion: completion)
        exchange.body = Body(limit: bufferLimit) { [weak exchange] in
            if let exchange { loop.unpause(exchange) }
        }
        loop.add(exchange)
    }

    /// Sends the request and returns the response head as soon as it arrives (the body follows in
    /// `response.body`), or the ``Failure`` that left no head.
    ///
    /// The host's name is resolved by the ``NameResolver`` first (a known name at once; a new one
    /// within the request's timeout, which then counts what is left), and curl connects to those
    /// addresses: curl's own resolution would wait on the name server for every new connection.
    public func stream(_ request: Request) async throws(Failure) -> StreamedResponse {
        var request = request
        var resolve: String?
        let target = Self.hostAndPort(of: request.url)
        if let target, !NameResolver.isNumeric(target.host) {
            let started = ContinuousClock.now
            let addresses: [NameResolver.Address]
            do {
                addresses = try await resolver.addresses(
                    of: target.host, port: target.port, by: started.advanced(by: .milliseconds(request.timeoutMilliseconds)))
            } catch {
                throw .connect(error.description)
            }
            let spent = started.duration(to: .now).components
            let milliseconds = Int(spent.seconds) * 1000 + Int(spent.attoseconds / 1_000_000_000_000_000)
            if milliseconds > 0 {
                request.timeoutMilliseconds = max(1, request.timeoutMilliseconds - milliseconds)
                request.connectTimeoutMilliseconds = max(1, min(request.connectTimeoutMilliseconds, request.timeoutMilliseconds))
            }
            resolve = Self.curlRule(target.host, target.port, addresses)
        }
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<StreamedResponse, Failure>, Never>) in
            stream(request, resolve: resolve) { continuation.resume(returning: $0) }
        }
        if case .failure(.connect) = result, let target {
            // The addresses may be an old container's: the next request waits for the name server.
            resolver.distrust(target.host, port: target.port)
        }
        return try result.get()
    }

    /// curl's `HOST:PORT:ADDRESS[,ADDRESS]` (IPv6 in brackets); "+": the rule ages out of curl's
    /// cache as a resolution of its own would. Private, as every use of Glibc here (see
    /// ``NameResolver``).
    private static func curlRule(_ host: String, _ port: Int, _ addresses: [NameResolver.Address]) -> String {
        "+\(host):\(port):" + addresses.map { $0.family == AF_INET6 ? "[\($0.numeric)]" : $0.numeric }.joined(separator: ",")
    }

    /// `http(s)://[user@]host[:port]/…` → the host (IPv6 without brackets) and port.
    public static func hostAndPort(of url: String) -> (host: String, port: Int)? {
        guard let schemeEnd = url.firstRange(of: "://") else { return nil }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        let defaultPort: Int
        switch scheme {
        case "http": defaultPort = 80
        case "https": defaultPort = 443
        default: return nil
        }
        var authority = url[schemeEnd.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        let host: Substring
        var rest: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            rest = authority[authority.index(after: close)...]
        } else {
            let colon = authority.firstIndex(of: ":") ?? authority.endIndex
            host = authority[..<colon]
            rest = authority[colon...]
        }
        guard !host.isEmpty else { return nil }
        guard !rest.isEmpty else { return (String(host), defaultPort) }
        guard rest.hasPrefix(":") else { return nil }
        rest = rest.dropFirst()
        if rest.isEmpty { return (String(host), defaultPort) }
        guard let port = Int(rest), (1...65535).contains(port) else { return nil }
        return (String(host), port)
    }

    /// Sends the request and reads the whole answer, up to `limit` bytes of body.
    public func send(_ request: Request, limit: Int = 1 << 20) async throws(Failure) -> Response {
        let head = try await stream(request)
        if let whole = head.wholeBody {
            guard whole.count <= limit else { throw .tooLarge(limit) }
            return Response(status: head.status, headers: head.headers, body: whole)
        }
        var body: [UInt8] = []
        do {
            while let chunk = try await head.body.next() {
                guard body.count + chunk.count <= limit else {
                    head.body.cancel()
                    throw Failure.tooLarge(limit)
                }
                body += chunk
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .reset(String(describing: error))
        }
        return Response(status: head.status, headers: head.headers, body: body)
    }

    /// Sends `method` to `url` and reads the whole answer: connected within the smaller of
    /// `timeout` and five seconds, answered within `timeout`, at most `limit` bytes of body.
    public func send(
        _ method: String, _ url: String, headers: HTTPHeaders = [:], body: [UInt8]? = nil,
        timeout: Duration = .seconds(5), limit: Int = 1 << 20
    ) async throws(Failure) -> Response {
        let milliseconds = Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return try await send(
            Request(
                method: method, url: url, headers: headers, body: body ?? [],
                connectTimeoutMilliseconds: min(milliseconds, 5000), timeoutMilliseconds: milliseconds),
            limit: limit)
    }

    /// GETs `url` and reads the whole answer (see ``send(_:_:headers:body:timeout:limit:)``).
    public func get(_ url: String, timeout: Duration = .seconds(5), limit: Int = 1 << 20) async throws(Failure) -> Response {
        try await send("GET", url, timeout: timeout, limit: limit)
    }
}
