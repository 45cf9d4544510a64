import Foundation
import Synchronization

/// A port kept for a test: a socket bound to it (with SO_REUSEADDR) that never listens.
/// Connections to it are refused, no other server in the process can be given it, and a test
/// server may still bind and listen on it (it sets SO_REUSEADDR too). What a test needs to stop a
/// server and start it again on the same port, or to be sure nothing answers there.
public final class PortHolder: Sendable {
    public let port: Int
    private let descriptor: Int32

    public init() throws {
        // Stored only once bound: a failed init closes it here, once (`deinit` would close the
        // number again, by then perhaps another socket's).
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard descriptor >= 0, bound else {
            close(descriptor)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "cannot hold a port"])
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }
}

extension PortHolder {
    /// A port for a server another process will open (`openssl ocsp`, the test SMTP server):
    /// below the kernel's ephemeral range, so no outgoing connection of a test running alongside
    /// can be holding it when that process binds; free for a wildcard bind without
    /// SO_REUSEADDR when chosen; never one given before in this process.
    public static func unusedPort() throws -> Int {
        for _ in 0..<200 {
            let port = Int.random(in: 20_000..<32_000)
            guard Self.given.withLock({ $0.insert(port).inserted }) else { continue }
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { continue }
            defer { close(descriptor) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = INADDR_ANY
            let bound = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            if bound { return port }
        }
        throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "no unused port found"])
    }

    private static let given = Mutex<Set<Int>>([])
}
