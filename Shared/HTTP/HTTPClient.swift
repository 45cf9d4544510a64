import CCurl
import PierRuntime

/// A small blocking HTTP client on libcurl, run on its own threads (JWKS fetches, health
/// checks). Each call uses a fresh easy handle: simple, and plenty for rare calls.
public final class HTTPClient: Sendable {
    /// A transport failure (refused, timed out, DNS), described for logs.
    public struct Failure: Error, CustomStringConvertible {
        public let message: String
        public init(message: String) { self.message = message }
        public var description: String { message }
    }

    public struct Response: Sendable {
        public let status: Int
        public let headers: HTTPHeaders
        public let body: [UInt8]
    }

    private let threads: BlockingPool
    /// Whole-request timeout in seconds.
    public let timeoutSeconds: Int

    public init(threads: Int = 2, timeoutSeconds: Int = 5) {
        _ = HTTPClient.globalInit
        self.threads = BlockingPool(name: "http client", threads: threads, queueLimit: 256)
        self.timeoutSeconds = timeoutSeconds
    }

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// GET `url` and return the status and body (bodies above 1 MiB are refused).
    public func get(_ url: String) async throws -> Response {
        try await send("GET", url)
    }

    /// Sends a request with a complete body and returns the complete response.
    public func send(_ method: String, _ url: String, headers: HTTPHeaders = [:], body: [UInt8]? = nil) async throws -> Response {
        let timeout = timeoutSeconds
        return try await threads.run {
            try HTTPClient.perform(method: method, url: url, headers: headers, body: body, timeout: timeout)
        }
    }

    private final class Sink {
        var body: [UInt8] = []
        var headers = HTTPHeaders()
        var overflow = false
    }

    private static func perform(method: String, url: String, headers: HTTPHeaders, body: [UInt8]?, timeout: Int) throws
        -> Response
    {
        guard let handle = curl_easy_init() else { throw Failure(message: "curl_easy_init failed") }
        defer { curl_easy_cleanup(handle) }
        let sink = Sink()
        return try withExtendedLifetime(sink) {
            _ = CCurl_setopt_string(handle, CURLOPT_URL, url)
            _ = CCurl_setopt_long(handle, CURLOPT_TIMEOUT, timeout)
            _ = CCurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
            _ = CCurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
            _ = CCurl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, method)
            if method == "HEAD" { _ = CCurl_setopt_long(handle, CURLOPT_NOBODY, 1) }
            var list: UnsafeMutablePointer<curl_slist>? = nil
            defer { curl_slist_free_all(list) }
            for (name, value) in headers { list = curl_slist_append(list, "\(name): \(value)") }
            // Without this, curl adds "Expect: 100-continue" to larger bodies and waits for it;
            // a caller may still ask for it.
            if headers["Expect"] == nil { list = curl_slist_append(list, "Expect:") }
            _ = CCurl_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list))
            let payload = body ?? []
            if body != nil {
                _ = CCurl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, payload.count)
            }
            _ = CCurl_setopt_pointer(handle, CURLOPT_WRITEDATA, Unmanaged.passUnretained(sink).toOpaque())
            _ = CCurl_setopt_pointer(handle, CURLOPT_HEADERDATA, Unmanaged.passUnretained(sink).toOpaque())
            _ = CCurl_setopt_header_function(handle) { data, size, count, context in
                let sink = Unmanaged<Sink>.fromOpaque(context!).takeUnretainedValue()
                let line = String(decoding: UnsafeRawBufferPointer(start: data, count: size * count), as: UTF8.self)
                if line.hasPrefix("HTTP/") { sink.headers = HTTPHeaders() }
                if let colon = line.firstIndex(of: ":") {
                    sink.headers.add(String(line[..<colon]), line[line.index(after: colon)...].trimmingWhitespace())
                }
                return size * count
            }
            _ = CCurl_setopt_write_function(handle) { data, size, count, context in
                let sink = Unmanaged<Sink>.fromOpaque(context!).takeUnretainedValue()
                let length = size * count
                if sink.body.count + length > 1 << 20 {
                    sink.overflow = true
                    return 0
                }
                data!.withMemoryRebound(to: UInt8.self, capacity: length) {
                    sink.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
                }
                return length
            }
            let code = payload.withUnsafeBytes { bytes -> CURLcode in
                if body != nil {
                    _ = CCurl_setopt_pointer(
                        handle, CURLOPT_POSTFIELDS,
                        UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
                }
                return curl_easy_perform(handle)
            }
            guard code == CURLE_OK else {
                if sink.overflow { throw Failure(message: "\(url): the response is larger than 1 MiB") }
                throw Failure(message: "\(url): \(String(cString: curl_easy_strerror(code)))")
            }
            var status = 0
            _ = CCurl_response_code(handle, &status)
            return Response(status: status, headers: sink.headers, body: sink.body)
        }
    }
}
