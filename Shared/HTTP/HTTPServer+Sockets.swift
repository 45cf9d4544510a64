import CMicroHTTPD

#if canImport(Glibc)
    import Glibc
#endif

// What the server reads from libmicrohttpd's connections and the socket it listens on.
extension HTTPServer {
    /// The request's headers, as MHD parsed them.
    static func headers(of connection: OpaquePointer) -> HTTPHeaders {
        final class Collector { var headers = HTTPHeaders() }
        let collector = Collector()
        withExtendedLifetime(collector) {
            _ = MHD_get_connection_values(
                connection, .HEADER_KIND,
                { context, _, key, value in
                    let collector = Unmanaged<Collector>.fromOpaque(context!).takeUnretainedValue()
                    if let key, let value { collector.headers.add(String(cString: key), String(cString: value)) }
                    return .YES
                }, Unmanaged.passUnretained(collector).toOpaque())
        }
        return collector.headers
    }

    /// The TCP peer's address.
    static func peerAddress(_ connection: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        guard CMicroHTTPD_client_address(connection, &buffer, socklen_t(buffer.count)) == 0 else { return "unknown" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A listening socket on `host`:`port` (IPv6 sockets take IPv4 too), and its family.
    static func listen(host: String, port: Int) throws -> (Int32, Int32) {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>? = nil
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw HTTPServerError(message: "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        let family = first.pointee.ai_family
        // SOCK_CLOEXEC: a crash helper or child process must not inherit the listening socket.
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HTTPServerError(message: "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if family == AF_INET6 {
            var zero: Int32 = 0
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &zero, socklen_t(MemoryLayout<Int32>.size))
        }
        guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw HTTPServerError(message: "cannot listen on \(host):\(port): \(message)")
        }
        guard Glibc.listen(fd, 1024) == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw HTTPServerError(message: "listen: \(message)")
        }
        return (fd, family)
    }
}
