import PierHTTP
import PierRuntime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One TCP connection to an upstream (non-blocking), with what was read and not yet consumed.
/// Closed when the last reference goes.
///
/// `@unchecked Sendable`: used by one exchange at a time; it passes between exchanges only
/// through its endpoint's lock.
final class UpstreamConnection: @unchecked Sendable {
    let fd: Int32
    private var buffer: UnsafeMutableRawBufferPointer
    private var start = 0
    private var end = 0
    /// Bytes received in the current exchange (zero: the upstream sent nothing of a response).
    var received = 0
    /// A response head larger than this is refused.
    static let headLimit = 64 << 10

    init(fd: Int32) {
        self.fd = fd
        buffer = .allocate(byteCount: 16 << 10, alignment: 8)
    }

    deinit {
        close(fd)
        buffer.deallocate()
    }

    var available: Int { end - start }

    /// Sends all of `bytes` by `deadline`.
    func send(_ bytes: [UInt8], by deadline: ContinuousClock.Instant) async throws(HTTPClient.Failure) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { bytes in
                Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                offset += sent
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                guard await SocketWaiter.shared.wait(for: fd, writable: true, until: deadline) else {
                    throw .timeout("the request was not taken in time")
                }
            } else if errno != EINTR {
                throw .reset(String(cString: strerror(errno)))
            }
        }
    }

    /// Reads what arrived (waiting for it by `deadline`) after what is buffered; returns how
    /// many bytes came, 0 when the upstream closed the connection.
    func fill(by deadline: ContinuousClock.Instant) async throws(HTTPClient.Failure) -> Int {
        if start == end {
            (start, end) = (0, 0)
        } else if end == buffer.count {
            if start > 0 {
                buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: end - start)
                (start, end) = (0, end - start)
            } else {
                let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: buffer.count * 2, alignment: 8)
                larger.baseAddress!.copyMemory(from: buffer.baseAddress!, byteCount: end)
                buffer.deallocate()
                buffer = larger
            }
        }
        while true {
            let count = recv(fd, buffer.baseAddress! + end, buffer.count - end, 0)
            if count > 0 {
                end += count
                received += count
                return count
            }
            if count == 0 { return 0 }
            if errno == EINTR { continue }
            guard errno == EAGAIN || errno == EWOULDBLOCK else { throw .reset(String(cString: strerror(errno))) }
            guard await SocketWaiter.shared.wait(for: fd, until: deadline) else {
                throw .timeout("no answer in time")
            }
        }
    }

    /// Takes `count` buffered bytes.
    func take(_ count: Int) -> [UInt8] {
        let bytes = Array(UnsafeRawBufferPointer(rebasing: buffer[start..<(start + count)]))
        start += count
        return bytes
    }

    /// Exactly `count` bytes, read as needed.
    func read(exactly count: Int, by deadline: ContinuousClock.Instant) async throws(HTTPClient.Failure) -> [UInt8] {
        while available < count {
            guard try await fill(by: deadline) > 0 else { throw .reset("the body ended \(count - available) bytes early") }
        }
        return take(count)
    }

    /// The next line, without its CRLF (or LF).
    func line(by deadline: ContinuousClock.Instant) async throws(HTTPClient.Failure) -> [UInt8] {
        var scanned = 0
        while true {
            if let index = buffer[(start + scanned)..<end].firstIndex(of: 0x0A) {
                var line = take(index - start + 1)
                line.removeLast()
                if line.last == 0x0D { line.removeLast() }
                return line
            }
            scanned = available
            guard scanned < 4096 else { throw .reset("a line longer than 4096 bytes") }
            guard try await fill(by: deadline) > 0 else { throw .reset("the connection ended mid-line") }
        }
    }

    /// The response head (informational ones skipped).
    func readHead(by deadline: ContinuousClock.Instant) async throws(HTTPClient.Failure) -> UpstreamHead {
        // Searched from here on (relative to `start`: reading may move the buffered bytes).
        var scanned = 0
        while true {
            if let headEnd = Self.headEnd(buffer, from: start + scanned, to: end) {
                let head = try Self.parse(UnsafeRawBufferPointer(rebasing: buffer[start..<headEnd]))
                start = headEnd
                scanned = 0
                // 1xx heads precede the real one (101 would switch protocols: not proxied).
                guard head.status >= 100 && head.status < 200 else { return head }
                guard head.status != 101 else { throw .reset("the upstream switched protocols") }
                continue
            }
            scanned = max(0, available - 3)
            guard available < Self.headLimit else { throw .reset("a response head over \(Self.headLimit) bytes") }
            guard try await fill(by: deadline) > 0 else {
                throw .reset(received == 0 ? "the connection was closed before an answer" : "the connection ended mid-head")
            }
        }
    }

    /// The index after the blank line ending a head in `buffer[from..<to]`, if there is one.
    private static func headEnd(_ buffer: UnsafeMutableRawBufferPointer, from: Int, to: Int) -> Int? {
        var index = from
        while index + 3 < to {
            if buffer[index + 3] == 0x0A, buffer[index + 2] == 0x0D, buffer[index + 1] == 0x0A, buffer[index] == 0x0D {
                return index + 4
            }
            index += 1
        }
        return nil
    }

    private static func parse(_ head: UnsafeRawBufferPointer) throws(HTTPClient.Failure) -> UpstreamHead {
        // Lines end with CRLF (a bare LF is taken too); the head ends with an empty one.
        var lineStart = 0
        func nextLine() -> Slice<UnsafeRawBufferPointer>? {
            guard lineStart < head.count, let newline = head[lineStart...].firstIndex(of: 0x0A) else { return nil }
            let line = head[lineStart..<(newline > lineStart && head[newline - 1] == 0x0D ? newline - 1 : newline)]
            lineStart = newline + 1
            return line
        }
        guard let statusLine = nextLine(), statusLine.count >= 12, statusLine.starts(with: "HTTP/1.".utf8) else {
            throw .reset("not an HTTP/1.x response")
        }
        let digits = statusLine.dropFirst(9).prefix(3)
        guard digits.count == 3, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { throw .reset("invalid status line") }
        let status = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        var headers = HTTPHeaders()
        while let line = nextLine(), !line.isEmpty {
            // A folded line (obsolete) or one without a colon: not a response to pass on.
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
                line.first != 0x20, line.first != 0x09
            else { throw .reset("invalid header line") }
            var valueStart = colon + 1
            var valueEnd = line.endIndex
            while valueStart < valueEnd, line[valueStart] == 0x20 || line[valueStart] == 0x09 { valueStart += 1 }
            while valueEnd > valueStart, line[valueEnd - 1] == 0x20 || line[valueEnd - 1] == 0x09 { valueEnd -= 1 }
            headers.add(
                String(decoding: UnsafeRawBufferPointer(rebasing: line[line.startIndex..<colon]), as: UTF8.self),
                String(decoding: UnsafeRawBufferPointer(rebasing: line[valueStart..<valueEnd]), as: UTF8.self))
        }
        let minor1 = statusLine[statusLine.startIndex + 7] == UInt8(ascii: "1")
        let closing = headers.values("Connection").contains { value in
            value.split(separator: ",").contains { String($0).trimmingWhitespace().lowercased() == "close" }
        }
        return UpstreamHead(status: status, headers: headers, keepAlive: minor1 && !closing)
    }
}
