import CCurl
import Dispatch
import PierRuntime
import Synchronization

/// Forwards requests to upstream servers with libcurl: kept-alive connections (each easy
/// handle keeps its own, and handles are reused), the response head returned as soon as it
/// arrives and the body streamed after it with back-pressure, so a response of any size passes
/// in bounded memory. Each exchange holds one of the client's threads while it lasts.
public final class UpstreamClient: Sendable {
    public struct Request: Sendable {
        public var method: String
        public var url: String
        public var headers: HTTPHeaders
        public var body: [UInt8]
        public var connectTimeoutMilliseconds: Int
        public var timeoutMilliseconds: Int

        public init(
            method: String, url: String, headers: HTTPHeaders, body: [UInt8], connectTimeoutMilliseconds: Int,
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

    /// Why no response head arrived. Nothing of a response was seen: a retry is safe for
    /// idempotent requests.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// Refused, unreachable or not resolvable: the request never reached the upstream.
        case connect(String)
        /// No connection, or no response head, within the timeout.
        case timeout(String)
        /// The connection was reset or closed before a response head.
        case reset(String)
        /// Every thread is busy and the queue is full.
        case overloaded

        public var description: String {
            switch self {
            case .connect(let why): "connect: \(why)"
            case .timeout(let why): "timeout: \(why)"
            case .reset(let why): "reset: \(why)"
            case .overloaded: "the upstream client is overloaded"
            }
        }
    }

    /// A response head, and its body to read.
    public struct Response: Sendable {
        public let status: Int
        public let headers: HTTPHeaders
        public let body: Body
        /// The whole body, when it was small enough (a `Content-Length` up to
        /// ``UpstreamClient/wholeBodyLimit``) to be read before answering: one hand-over
        /// instead of a stream. `body` then has nothing more to read.
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

        private struct State {
            var chunks: [[UInt8]] = []
            var buffered = 0
            var finished = false
            var failure: String?
            var cancelled = false
            var reader: CheckedContinuation<[UInt8]?, Error>?
        }
        private let state = Mutex(State())
        private let space = DispatchSemaphore(value: 0)
        /// Bytes buffered at most before the upstream is no longer read.
        let limit: Int

        init(limit: Int) { self.limit = limit }

        /// The next chunk, or nil at the end.
        /// - Throws: ``Interrupted`` when the upstream failed mid-body.
        public func next() async throws -> [UInt8]? {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8]?, Error>) in
                let outcome = state.withLock { state -> Result<[UInt8]?, Error>? in
                    if !state.chunks.isEmpty {
                        let chunk = state.chunks.removeFirst()
                        state.buffered -= chunk.count
                        return .success(chunk)
                    }
                    if let failure = state.failure { return .failure(Interrupted(description: failure)) }
                    if state.finished { return .success(nil) }
                    state.reader = continuation
                    return nil
                }
                space.signal()
                if let outcome { continuation.resume(with: outcome) }
            }
        }

        /// Reads the whole body, refusing more than `maximum` bytes.
        public func collect(maximum: Int) async throws -> [UInt8] {
            var bytes: [UInt8] = []
            while let chunk = try await next() {
                bytes += chunk
                if bytes.count > maximum {
                    cancel()
                    throw Interrupted(description: "the body is larger than \(maximum) bytes")
                }
            }
            return bytes
        }

        /// Stops reading the upstream (the client went away).
        public func cancel() {
            state.withLock { $0.cancelled = true }
            space.signal()
        }

        /// From the transfer thread: false when the reader cancelled. Waits while the buffer is full.
        fileprivate func push(_ chunk: [UInt8]) -> Bool {
            while true {
                let (accepted, reader) = state.withLock { state -> (Bool?, CheckedContinuation<[UInt8]?, Error>?) in
                    if state.cancelled { return (false, nil) }
                    if let reader = state.reader {
                        state.reader = nil
                        return (true, reader)
                    }
                    guard state.buffered < limit else { return (nil, nil) }
                    state.chunks.append(chunk)
                    state.buffered += chunk.count
                    return (true, nil)
                }
                if let reader { reader.resume(returning: chunk) }
                if let accepted { return accepted }
                space.wait()
            }
        }

        fileprivate func finish(failure: String?) {
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

    private let threads: BlockingPool
    /// Idle easy handles, each with its live connections.
    private let handles = Mutex<[CurlHandle]>([])
    private let connectionsPerHandle: Int
    private let bufferLimit: Int

    /// - Parameters:
    ///   - threads: exchanges in flight at most (a streamed response holds its thread to the end).
    ///   - queue: exchanges waiting for a thread; beyond it, ``Failure/overloaded``.
    public init(threads: Int, queue: Int = 1024, connectionsPerHandle: Int = 8, bufferLimit: Int = 256 << 10) {
        _ = Self.globalInit
        self.threads = BlockingPool(name: "upstream", threads: threads, queueLimit: queue)
        self.connectionsPerHandle = connectionsPerHandle
        self.bufferLimit = bufferLimit
    }

    deinit {
        threads.shutdown()
        for handle in handles.withLock({ $0 }) { curl_easy_cleanup(handle.pointer) }
    }

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// Sends the request; returns when the response head arrived (the body follows in
    /// `response.body`), or throws ``Failure`` when none did.
    public func send(_ request: Request) async throws(Failure) -> Response {
        let body = Body(limit: bufferLimit)
        do {
            return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Response, Error>) in
                let exchange = UpstreamExchange(request: request, body: body, head: continuation)
                let admitted = threads.submit { [self] in
                    let reused = handles.withLock { $0.popLast() }
                    guard let handle = reused ?? curl_easy_init().map(CurlHandle.init) else {
                        exchange.fail(.connect("curl_easy_init failed"))
                        return
                    }
                    exchange.perform(on: handle.pointer, connections: connectionsPerHandle)
                    handles.withLock { $0.append(handle) }
                }
                if !admitted { exchange.fail(.overloaded) }
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .reset("\(error)")
        }
    }
}

/// An idle easy handle: used by one transfer thread at a time, parked in between.
private struct CurlHandle: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
}

/// One exchange, from the transfer thread's side.
private final class UpstreamExchange: @unchecked Sendable {
    let request: UpstreamClient.Request
    let body: UpstreamClient.Body
    /// Resumed once: with the head, or with a failure before it.
    private var head: CheckedContinuation<UpstreamClient.Response, Error>?
    private var status = 0
    private var headers = HTTPHeaders()
    /// Set while a small body is read whole before the head is handed over.
    private var whole: [UInt8]?

    init(
        request: UpstreamClient.Request, body: UpstreamClient.Body, head: CheckedContinuation<UpstreamClient.Response, Error>
    ) {
        self.request = request
        self.body = body
        self.head = head
    }

    func fail(_ failure: UpstreamClient.Failure) {
        head?.resume(throwing: failure)
        head = nil
    }

    private func deliverHead() {
        head?.resume(returning: UpstreamClient.Response(status: status, headers: headers, body: body, wholeBody: whole))
        head = nil
    }

    func perform(on handle: UnsafeMutableRawPointer, connections: Int) {
        curl_easy_reset(handle)
        _ = CCurl_setopt_string(handle, CURLOPT_URL, request.url)
        _ = CCurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = CCurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        _ = CCurl_setopt_long(handle, CURLOPT_MAXCONNECTS, connections)
        _ = CCurl_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1)
        _ = CCurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, request.connectTimeoutMilliseconds)
        _ = CCurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, request.timeoutMilliseconds)
        _ = CCurl_setopt_long(handle, CURLOPT_HTTP_CONTENT_DECODING, 0)
        _ = CCurl_setopt_long(handle, CURLOPT_HTTP_TRANSFER_DECODING, 1)
        _ = CCurl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method)
        if request.method == "HEAD" { _ = CCurl_setopt_long(handle, CURLOPT_NOBODY, 1) }
        var list: UnsafeMutablePointer<curl_slist>? = nil
        defer { curl_slist_free_all(list) }
        for (name, value) in request.headers { list = curl_slist_append(list, "\(name): \(value)") }
        // curl would add these on its own; the client's request decides.
        list = curl_slist_append(list, "Expect:")
        if request.headers["Accept"] == nil { list = curl_slist_append(list, "Accept:") }
        _ = CCurl_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list))
        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = CCurl_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
        _ = CCurl_setopt_pointer(handle, CURLOPT_HEADERDATA, context)
        _ = CCurl_setopt_header_function(handle) { data, size, count, context in
            let exchange = Unmanaged<UpstreamExchange>.fromOpaque(context!).takeUnretainedValue()
            let line = String(decoding: UnsafeRawBufferPointer(start: data, count: size * count), as: UTF8.self)
            exchange.headerLine(line)
            return size * count
        }
        _ = CCurl_setopt_write_function(handle) { data, size, count, context in
            let exchange = Unmanaged<UpstreamExchange>.fromOpaque(context!).takeUnretainedValue()
            let length = size * count
            let bytes = UnsafeRawBufferPointer(start: data, count: length)
            if exchange.whole != nil {
                exchange.whole! += bytes
                return length
            }
            return exchange.body.push(Array(bytes)) ? length : 0
        }
        let payload = request.body
        let code = payload.withUnsafeBytes { bytes -> CURLcode in
            if !payload.isEmpty || request.method == "POST" || request.method == "PUT" || request.method == "PATCH" {
                _ = CCurl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, payload.count)
                _ = CCurl_setopt_pointer(
                    handle, CURLOPT_POSTFIELDS,
                    UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
            }
            return curl_easy_perform(handle)
        }
        // A body-less response (204, HEAD) has its head complete only now.
        if code == CURLE_OK {
            deliverHead()
            body.finish(failure: nil)
            return
        }
        let reason = String(cString: curl_easy_strerror(code))
        if head == nil {
            body.finish(failure: reason)
            return
        }
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            fail(.connect(reason))
        case CURLE_OPERATION_TIMEDOUT:
            fail(.timeout(reason))
        default:
            fail(.reset(reason))
        }
        body.finish(failure: reason)
    }

    private func headerLine(_ line: String) {
        if line.hasPrefix("HTTP/") {
            // A new head (after a 1xx, curl reports each): start over.
            headers = HTTPHeaders()
            let parts = line.split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
        } else if line == "\r\n" || line == "\n" {
            // The end of a head: a final one is the response's. A small body is read whole
            // first; otherwise the head goes now, and from here on nothing is retried.
            guard status >= 200 else { return }
            if let length = headers["Content-Length"].flatMap(Int.init), length <= UpstreamClient.wholeBodyLimit {
                whole = []
                whole!.reserveCapacity(length)
            } else {
                deliverHead()
            }
        } else if let colon = line.firstIndex(of: ":") {
            headers.add(String(line[..<colon]), line[line.index(after: colon)...].trimmingWhitespace())
        }
    }
}
