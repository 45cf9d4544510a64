// Linux only. Foundation's URLSession there (swift-corelibs-foundation over libcurl) keeps the
// writability source it registered while sending a request after libcurl asks for reading
// alone: on a connection that then stays open and idle, as a live stream does, the source fires
// without end and one core spins (measured: 98 % of a core for an idle `subscriptions.updates`).
// For `http://` servers (a local stack, a test, a service beside the app), a live stream is read
// here instead, from a plain socket by a thread that blocks in `recv`: nothing runs while
// nothing arrives. Apple platforms keep URLSession, which has no such loop.
#if canImport(FoundationNetworking) && canImport(Glibc)
    import Foundation
    import FoundationNetworking
    import Glibc
    import PierModels

    enum SocketEventStream {
        /// Opens `request` (GET, `http://`) and hands its messages to a stream, as
        /// ``EventStreamReader/open(_:configuration:)`` does; nil for another scheme.
        static func open(_ request: URLRequest, requestID: String) -> EventStreamReader.Messages? {
            guard let url = request.url, url.scheme == "http", let host = url.host else { return nil }
            let port = url.port ?? 80
            var target = url.path.isEmpty ? "/" : url.path
            if let query = url.query { target += "?" + query }
            var head = "GET \(target) HTTP/1.1\r\nHost: \(host)\(url.port.map { ":\($0)" } ?? "")\r\n"
            for (name, value) in request.allHTTPHeaderFields ?? [:] where !name.contains("\r") && !value.contains("\r") {
                head += "\(name): \(value)\r\n"
            }
            head += "Connection: close\r\n\r\n"
            let request = Array(head.utf8)
            let (messages, continuation) = EventStreamReader.Messages.makeStream(bufferingPolicy: .bufferingNewest(64))
            let socket = Locked<Int32>(-1)
            let ended = Locked(false)
            continuation.onTermination = { _ in
                // Wakes the thread blocked in recv: it sees the end and closes the socket.
                ended.withLock { $0 = true }
                socket.withLock { fd in if fd >= 0 { _ = shutdown(fd, Int32(SHUT_RDWR)) } }
            }
            let thread = Thread {
                let fd = connect(host: host, port: port)
                guard fd >= 0 else {
                    continuation.finish(
                        throwing: PierError(
                            kind: .network, detail: "The server could not be reached: errno \(errno)", requestId: requestID))
                    return
                }
                socket.withLock { $0 = fd }
                defer {
                    socket.withLock { $0 = -1 }
                    close(fd)
                }
                if ended.withLock({ $0 }) { return }
                read(fd, head: request, requestID: requestID, continuation: continuation)
            }
            thread.name = "PierClient live stream"
            thread.start()
            return messages
        }

        /// A connected TCP socket to `host`:`port`, or -1.
        private static func connect(host: String, port: Int) -> Int32 {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var found: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else { return -1 }
            defer { freeaddrinfo(first) }
            var candidate: UnsafeMutablePointer<addrinfo>? = first
            while let address = candidate {
                let fd = socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                if fd >= 0 {
                    if Glibc.connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 { return fd }
                    close(fd)
                }
                candidate = address.pointee.ai_next
            }
            return -1
        }

        /// Sends the request, reads the head, then the body's messages until the end.
        private static func read(
            _ fd: Int32, head: [UInt8], requestID: String, continuation: EventStreamReader.Messages.Continuation
        ) {
            var sent = 0
            while sent < head.count {
                let count = head[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard count > 0 else { return lost(continuation, requestID) }
                sent += count
            }
            var buffer: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 16 << 10)
            func receive() -> Bool {
                let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { return false }
                buffer += chunk[0..<count]
                return true
            }
            // The head.
            var headEnd: Int?
            while headEnd == nil {
                guard buffer.count < 64 << 10, receive() else { return lost(continuation, requestID) }
                headEnd = buffer.firstRange(of: [13, 10, 13, 10])?.upperBound
            }
            let lines = String(decoding: buffer[..<headEnd!], as: UTF8.self).components(separatedBy: "\r\n")
            buffer.removeFirst(headEnd!)
            let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let chunked = headers["transfer-encoding"]?.lowercased().contains("chunked") == true
            var body: [UInt8] = []
            var events: [UInt8] = []
            // The body, de-chunked as it comes; messages handed over as they complete.
            while true {
                if chunked {
                    while let lineEnd = buffer.firstRange(of: [13, 10]) {
                        let size =
                            Int(
                                String(decoding: buffer[..<lineEnd.lowerBound], as: UTF8.self)
                                    .split(separator: ";").first ?? "", radix: 16) ?? -1
                        guard size >= 0 else { return lost(continuation, requestID) }
                        guard buffer.count >= lineEnd.upperBound + size + 2 else { break }
                        if size == 0 { return finish(status, headers, body, requestID, continuation) }
                        let data = buffer[lineEnd.upperBound..<(lineEnd.upperBound + size)]
                        if status == 200 { events += data } else { body += data }
                        buffer.removeFirst(lineEnd.upperBound + size + 2)
                    }
                } else {
                    if status == 200 { events += buffer } else { body += buffer }
                    buffer.removeAll()
                }
                if status == 200 {
                    for message in ServerSentEvent.take(from: &events) where message.data != nil { continuation.yield(message) }
                }
                guard body.count < 64 << 10, receive() else { break }
            }
            finish(status, headers, body, requestID, continuation)
        }

        private static func finish(
            _ status: Int, _ headers: [String: String], _ body: [UInt8], _ requestID: String,
            _ continuation: EventStreamReader.Messages.Continuation
        ) {
            guard status != 200 else { return continuation.finish() }
            let response = HTTPURLResponse(
                url: URL(string: "http://localhost")!, statusCode: status, httpVersion: "HTTP/1.1",
                headerFields: headers.reduce(into: [:]) { $0[$1.key.capitalized] = $1.value })!
            continuation.finish(
                throwing: Transport.problem(Data(body), response, requestID: headers["x-request-id"] ?? requestID))
        }

        private static func lost(_ continuation: EventStreamReader.Messages.Continuation, _ requestID: String) {
            continuation.finish(
                throwing: PierError(kind: .network, detail: "The live stream was interrupted.", requestId: requestID))
        }
    }
#endif
