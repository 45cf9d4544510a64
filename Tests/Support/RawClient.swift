import Foundation
import PierRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// A bare TCP client for sending exactly the bytes a test wants, malformed ones included.
public final class RawClient: Sendable {
    public let fd: Int32

    /// - Parameters:
    ///   - source: the local IPv4 address to connect from (any of 127.0.0.0/8 on loopback), so
    ///     that one test can be many clients.
    public init(port: Int, receiveTimeout: Double = 15, from source: String? = nil) throws {
        // The socket is `self.fd` only once connected: a failed init closes it here, once (were
        // `self.fd` set, `deinit` would close the number again, by then perhaps a server's).
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(fd)
                throw POSIXError(.EADDRNOTAVAIL)
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
        var timeout = timeval(tv_sec: Int(receiveTimeout), tv_usec: Int((receiveTimeout - Double(Int(receiveTimeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        self.fd = fd
    }

    deinit { close(fd) }

    public func send(_ text: String) { send(Array(text.utf8)) }

    public func send(_ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }

    /// Blocking reads run on threads of their own: a test waiting on a socket must not hold a
    /// thread of the cooperative pool that the server's handlers need.
    public static let readers = BlockingPool(name: "test readers", threads: 96)

    public func receive(until done: @escaping @Sendable (String) -> Bool = { _ in false }) async -> String {
        let fd = fd
        return (try? await Self.readers.run { RawClient.receive(fd, until: done) }) ?? ""
    }

    public func responses(_ count: Int) async -> [ParsedResponse] {
        let text = await receive { ParsedResponse.parseAll($0).count >= count }
        return ParsedResponse.parseAll(text)
    }

    public func isClosedByPeer() async -> Bool {
        let fd = fd
        return (try? await Self.readers.run { RawClient.isClosedByPeer(fd) }) ?? false
    }

    /// Reads until the peer closes, the timeout passes, or `until` says the text is complete.
    static func receive(_ fd: Int32, until done: (String) -> Bool) -> String {
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            data += buffer[0..<n]
            if done(String(decoding: data, as: UTF8.self)) { break }
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// True when the server has closed the connection (a read returns 0).
    static func isClosedByPeer(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { return true }
            if n < 0 { return false }
        }
    }
}

public struct ParsedResponse: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: String

    public init(status: Int, headers: [String: String], body: String) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func parseAll(_ text: String) -> [ParsedResponse] {
        var results: [ParsedResponse] = []
        var rest = Substring(text)
        while let headerEnd = rest.range(of: "\r\n\r\n") {
            let head = rest[..<headerEnd.lowerBound].split(separator: "\r\n")
            guard let statusLine = head.first, statusLine.hasPrefix("HTTP/1.") else { break }
            let status = Int(statusLine.split(separator: " ")[1]) ?? 0
            var headers: [String: String] = [:]
            for line in head.dropFirst() {
                if let colon = line.firstIndex(of: ":") {
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
            }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            let bodyStart = headerEnd.upperBound
            if status == 100 {
                rest = rest[bodyStart...]
                results.append(ParsedResponse(status: 100, headers: headers, body: ""))
                continue
            }
            guard rest.utf8.distance(from: bodyStart, to: rest.endIndex) >= length else { break }
            let bodyEnd = rest.utf8.index(bodyStart, offsetBy: length)
            results.append(ParsedResponse(status: status, headers: headers, body: String(rest[bodyStart..<bodyEnd])))
            rest = rest[bodyEnd...]
        }
        return results
    }
}

extension RawClient {
    /// Sends `text` every 300 ms, as a slow client does, until the server closes the
    /// connection (true) or 20 s have passed (false).
    public func isCut(whileTrickling text: String) async -> Bool {
        await eventually(timeout: .seconds(20), interval: .milliseconds(300)) {
            send(text)
            var probe = [UInt8](repeating: 0, count: 1)
            return recv(fd, &probe, 1, Int32(MSG_DONTWAIT)) == 0
        }
    }

    /// Opens `count` connections from `addresses` client addresses (127.0.0.2 upwards), each
    /// sending half a request head, as slow clients trickling their headers do; then asks
    /// `/healthz` ten times from another address. Returns the slow connections that were
    /// accepted (and are held open until the body returns) and each fresh answer's status and
    /// seconds.
    public static func freshClientsAmongSlowOnes(port: Int, count: Int, addresses: Int) async throws -> (
        held: Int, fresh: [(status: Int, seconds: Double)]
    ) {
        var slow: [RawClient] = []
        slow.reserveCapacity(count)
        for index in 0..<count {
            let client = try RawClient(port: port, from: "127.0.0.\(2 + index % addresses)")
            client.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            slow.append(client)
        }
        var fresh: [(Int, Double)] = []
        for _ in 0..<10 {
            let started = ContinuousClock.now
            let client = try RawClient(port: port, receiveTimeout: 5, from: "127.0.0.250")
            client.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            let status = await client.responses(1).first?.status ?? 0
            let elapsed = ContinuousClock.now - started
            fresh.append((status, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
        }
        // Still open from the client's side: the server kept them, the fresh clients came through.
        let held = slow.filter { client in
            var probe = [UInt8](repeating: 0, count: 1)
            return recv(client.fd, &probe, 1, Int32(MSG_DONTWAIT)) < 0 && errno == EAGAIN
        }.count
        return (held, fresh)
    }
}
