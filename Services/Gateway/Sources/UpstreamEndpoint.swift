import PierHTTP
import PierRuntime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The gateway's side of HTTP/1.1 to one upstream server: kept-alive connections, each used by
/// one exchange at a time.
///
/// Why not the process's libcurl client: a proxied request is small and frequent, and every
/// hand-over costs. Here the task that handles the request writes it to the upstream's socket
/// itself (on the thread that read it from the client), the shared ``SocketWaiter`` wakes it
/// when the answer is there, and it reads and parses the answer: one wait in between, where
/// libcurl's transfer thread added a queue, a wake-up and its own loop per exchange (measured:
/// that thread alone was 44% of the gateway's CPU per proxied request).
final class UpstreamEndpoint: Sendable {
    /// `host:port` as sent in `Host`.
    let authority: String
    let host: String
    let port: Int
    /// Idle connections kept at most; more are closed.
    static let idleLimit = 256
    private let idle = Mutex<[UpstreamConnection]>([])
    /// `base` is `http://host:port` (checked when the route was parsed); IPv6 in brackets.
    init(base: String) {
        let rest = String(base.dropFirst("http://".count))
        authority = rest
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            port = after.hasPrefix(":") ? Int(after.dropFirst()) ?? 80 : 80
        } else if let colon = rest.lastIndex(of: ":") {
            host = String(rest[..<colon])
            port = Int(rest[rest.index(after: colon)...]) ?? 80
        } else {
            host = rest
            port = 80
        }
    }

    /// One exchange: `request` (head and body, serialized) sent on a kept-alive connection or a
    /// new one, and the response head read. A kept-alive connection the upstream had closed
    /// meanwhile (nothing of a response seen) is replaced by a new one, once, transparently.
    /// An event stream's body has no deadline: `eventStreamIdle` bounds the silence between its
    /// messages instead.
    func exchange(
        _ request: [UInt8], method: String, connectBy: ContinuousClock.Instant, by deadline: ContinuousClock.Instant,
        eventStreamIdle: Duration
    )
        async throws(HTTPClient.Failure) -> UpstreamResponse
    {
        if let connection = takeIdle() {
            do {
                return try await exchange(request, method: method, on: connection, by: deadline, idle: eventStreamIdle)
            } catch .reset where connection.received == 0 {
                // Closed by the upstream before any answer: a new connection below.
            }
        }
        let connection = try await connect(by: min(connectBy, deadline))
        return try await exchange(request, method: method, on: connection, by: deadline, idle: eventStreamIdle)
    }

    private func exchange(
        _ request: [UInt8], method: String, on connection: UpstreamConnection, by deadline: ContinuousClock.Instant,
        idle: Duration
    )
        async throws(HTTPClient.Failure) -> UpstreamResponse
    {
        try await connection.send(request, by: deadline)
        let head = try await connection.readHead(by: deadline)
        let framing: UpstreamResponse.Framing
        if method == "HEAD" || head.status == 204 || head.status == 304 {
            framing = .length(0)
        } else if let codings = head.headers.list("Transfer-Encoding") {
            // Chunked last, or else delimited by the connection's end (RFC 9112 §6.3).
            let last = codings.split(separator: ",").last.map { String($0).trimmingWhitespace() } ?? ""
            framing = last.lowercased() == "chunked" ? .chunked : .untilClose
        } else if let length = head.headers["Content-Length"] {
            guard let value = Int(length), value >= 0 else { throw .reset("invalid Content-Length \(length)") }
            framing = .length(value)
        } else {
            framing = .untilClose
        }
        let reusable = head.keepAlive && framing != .untilClose
        if case .length(let length) = framing, length <= HTTPClient.wholeBodyLimit {
            let body = try await connection.read(exactly: length, by: deadline)
            if reusable { putIdle(connection) }
            return UpstreamResponse(status: head.status, headers: head.headers, body: .whole(body))
        }
        return UpstreamResponse(
            status: head.status, headers: head.headers,
            body: .stream(
                UpstreamBody(
                    connection: connection, framing: framing, deadline: deadline,
                    // An event stream lasts as long as its client listens: the route's timeout
                    // bounds the silence between its messages (heartbeats), not its life.
                    idle: head.headers["Content-Type"]?.lowercased().hasPrefix("text/event-stream") == true ? idle : nil,
                    endpoint: reusable ? self : nil)))
    }

    fileprivate func putIdle(_ connection: UpstreamConnection) {
        guard connection.available == 0 else { return }
        connection.received = 0
        idle.withLock { idle in
            if idle.count < Self.idleLimit { idle.append(connection) }
        }
    }

    /// A kept-alive connection that is still open and quiet (one that the upstream closed, or
    /// that has bytes nobody asked for, is dropped).
    private func takeIdle() -> UpstreamConnection? {
        while let connection = idle.withLock({ $0.popLast() }) {
            var byte: UInt8 = 0
            let peeked = recv(connection.fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
            if peeked < 0, errno == EAGAIN || errno == EWOULDBLOCK { return connection }
        }
        return nil
    }

    /// A new connection, by `deadline`; each resolved address tried in turn.
    ///
    /// Names are resolved by the process's ``NameResolver``, never on the thread that serves
    /// requests, and a known name is not waited on (a slow name server must not stall requests);
    /// when no address connects, the next connection waits for the name server's answer.
    private func connect(by deadline: ContinuousClock.Instant) async throws(HTTPClient.Failure) -> UpstreamConnection {
        do throws(HTTPClient.Failure) {
            return try await connect(to: try await addresses(by: deadline), by: deadline)
        } catch {
            if case .connect = error { NameResolver.shared.distrust(host, port: port) }
            throw error
        }
    }

    private func addresses(by deadline: ContinuousClock.Instant) async throws(HTTPClient.Failure) -> [NameResolver.Address] {
        do {
            return try await NameResolver.shared.addresses(of: host, port: port, by: deadline)
        } catch {
            throw .connect(error.description)
        }
    }

    private func connect(to addresses: [NameResolver.Address], by deadline: ContinuousClock.Instant)
        async throws(HTTPClient.Failure) -> UpstreamConnection
    {
        var why = "no address for \(host)"
        for address in addresses {
            let fd = socket(address.family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else {
                why = String(cString: strerror(errno))
                continue
            }
            let connection = UpstreamConnection(fd: fd)
            var on: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            let started = address.bytes.withUnsafeBytes { bytes in
                Glibc.connect(fd, bytes.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(bytes.count))
            }
            if started == 0 { return connection }
            guard errno == EINPROGRESS else {
                why = String(cString: strerror(errno))
                continue
            }
            guard await SocketWaiter.shared.wait(for: fd, writable: true, until: deadline) else {
                throw .connect("no connection to \(authority) in time")
            }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            if error == 0 { return connection }
            why = String(cString: strerror(error))
        }
        throw .connect(why)
    }
}

/// An upstream's answer: its head, and its body whole (small, announced by length) or to read.
struct UpstreamResponse: Sendable {
    enum Framing: Equatable { case length(Int), chunked, untilClose }
    enum Body: Sendable {
        case whole([UInt8])
        case stream(UpstreamBody)
    }

    let status: Int
    let headers: HTTPHeaders
    let body: Body
}

/// A body that follows its head on the connection, read as it is written on (back-pressure:
/// nothing is read from the upstream while the client is behind). The connection goes back to
/// its endpoint when the body ended cleanly and the upstream keeps it alive.
final class UpstreamBody: Sendable {
    /// The body ended early (the upstream failed, or the exchange's time ran out mid-body).
    struct Interrupted: Error, CustomStringConvertible {
        let description: String
    }

    private let connection: UpstreamConnection
    private let framing: UpstreamResponse.Framing
    private let fixedDeadline: ContinuousClock.Instant
    private let idle: Duration?
    private let endpoint: UpstreamEndpoint?

    /// When each read must have data: the exchange's deadline, or `idle` after now.
    private var deadline: ContinuousClock.Instant { idle.map { .now + $0 } ?? fixedDeadline }

    init(
        connection: UpstreamConnection, framing: UpstreamResponse.Framing, deadline: ContinuousClock.Instant,
        idle: Duration? = nil, endpoint: UpstreamEndpoint?
    ) {
        self.connection = connection
        self.framing = framing
        self.fixedDeadline = deadline
        self.idle = idle
        self.endpoint = endpoint
    }

    /// Cuts the connection (from any thread): a read waiting on it ends at once, interrupted.
    func cancel() { _ = shutdown(connection.fd, Int32(SHUT_RDWR)) }

    /// Writes the whole body to `write`, chunk by chunk; called once.
    /// - Throws: ``Interrupted``, or what `write` throws (the client went away).
    func relay(_ write: ([UInt8]) async throws -> Void) async throws {
        do {
            switch framing {
            case .length(let length):
                try await copy(length, write)
            case .chunked:
                while true {
                    let line = try await connection.line(by: deadline)
                    let digits = line.prefix { $0 != UInt8(ascii: ";") && $0 != 0x20 && $0 != 0x09 }
                    let hex = digits.allSatisfy {
                        (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0)
                    }
                    guard hex, !digits.isEmpty, digits.count <= 15,
                        let size = Int(String(decoding: digits, as: UTF8.self), radix: 16)
                    else { throw HTTPClient.Failure.reset("invalid chunk size") }
                    if size == 0 {
                        // Trailers, if any, end with an empty line; they are not passed on.
                        while try await !connection.line(by: deadline).isEmpty {}
                        break
                    }
                    try await copy(size, write)
                    guard try await connection.line(by: deadline).isEmpty else {
                        throw HTTPClient.Failure.reset("invalid chunk end")
                    }
                }
            case .untilClose:
                while true {
                    if connection.available == 0, try await connection.fill(by: deadline) == 0 { break }
                    try await write(connection.take(connection.available))
                }
            }
        } catch let failure as HTTPClient.Failure {
            throw Interrupted(description: failure.description)
        }
        endpoint?.putIdle(connection)
    }

    private func copy(_ count: Int, _ write: ([UInt8]) async throws -> Void) async throws {
        var left = count
        while left > 0 {
            if connection.available == 0, try await connection.fill(by: deadline) == 0 {
                throw HTTPClient.Failure.reset("the body ended \(left) bytes early")
            }
            let chunk = connection.take(min(left, connection.available))
            left -= chunk.count
            try await write(chunk)
        }
    }
}

/// A response head, parsed.
struct UpstreamHead {
    let status: Int
    let headers: HTTPHeaders
    /// HTTP/1.1 without `Connection: close`.
    let keepAlive: Bool
}
