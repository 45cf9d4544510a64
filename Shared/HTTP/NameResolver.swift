// SOCK_STREAM: Glibc's module leaves out glibc's socket-type header in a static-stdlib build
// (release); libmicrohttpd's header brings it, as in HTTPServer.swift.
import CMicroHTTPD
import PierRuntime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Host names of outbound connections (an upstream, Pier's API for the console, a webhook
/// receiver, an identity provider), resolved on threads of their own and kept.
///
/// A name server can stall for seconds: a lost UDP answer costs the C resolver its 5-second
/// timeout, and a container network's name server drops queries while it reloads (measured on
/// podman's: one lookup in 3,000 took 10 s while containers started and stopped beside it). So
/// a name once known is never waited on again: its addresses serve at once, and after
/// `refreshAfter` a use asks the name server again in the background (a container started again
/// comes back at another address). Only a name not known yet, or one whose addresses just failed
/// to connect (``distrust(_:port:)``), is waited for, up to the caller's deadline.
///
/// What the name server says decides what is kept: addresses replace the old ones; "no such
/// name" forgets them; no answer at all (a timeout, a failure of the server) keeps them.
public final class NameResolver: Sendable {
    public struct Address: Sendable, Hashable {
        public let family: Int32
        /// The `sockaddr`, port included.
        public let bytes: [UInt8]
        /// `10.0.0.1`, `::1`.
        public let numeric: String

        public init(family: Int32, bytes: [UInt8], numeric: String) {
            self.family = family
            self.bytes = bytes
            self.numeric = numeric
        }
    }

    /// What a name server said, or did not.
    public enum Answer: Sendable {
        case addresses([Address])
        /// The name does not exist, or has no address.
        case unknown(String)
        /// No answer: a timeout, a failure of the name server.
        case unavailable(String)
    }

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public typealias Lookup = @Sendable (_ host: String, _ port: Int) -> Answer

    /// The process's resolver (the outbound HTTP client's and the gateway's).
    public static let shared = NameResolver()

    private struct Key: Hashable {
        let host: String
        let port: Int
    }

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Result<[Address], Failure>, Never>
    }

    private struct Entry {
        var addresses: [Address] = []
        var resolvedAt = -Double.infinity
        var asking = false
        var distrusted = false
        var waiters: [Waiter] = []
    }

    /// Names kept at most; past it, those not being asked are forgotten.
    static let entryLimit = 4096
    private let state = Mutex<(entries: [Key: Entry], lastWaiter: UInt64)>(([:], 0))
    private let lookup: Lookup
    private let pool: BlockingPool
    private let refreshAfter: Double

    /// - Parameters:
    ///   - refreshAfter: seconds after which a use of a name asks the name server again.
    ///   - lookup: the name server (the C resolver's `getaddrinfo`; tests give their own).
    public init(refreshAfter: Double = 1, lookup: @escaping Lookup = NameResolver.system) {
        self.refreshAfter = refreshAfter
        self.lookup = lookup
        pool = BlockingPool(name: "names", threads: 2, queueLimit: 1024)
    }

    deinit { pool.shutdown() }

    /// The addresses of `host` for `port`: those known, at once, or the name server's answer,
    /// waited for until `deadline`.
    public func addresses(of host: String, port: Int, by deadline: ContinuousClock.Instant) async throws(Failure)
        -> [Address]
    {
        let key = Key(host: host.lowercased(), port: port)
        let now = MonotonicClock.seconds()
        let (known, ask) = state.withLock { state -> ([Address]?, Bool) in
            guard var entry = state.entries[key], !entry.addresses.isEmpty, !entry.distrusted else { return (nil, false) }
            let ask = !entry.asking && now - entry.resolvedAt >= refreshAfter
            if ask {
                entry.asking = true
                state.entries[key] = entry
            }
            return (entry.addresses, ask)
        }
        if ask { self.ask(key) }
        if let known { return known }

        let timer = Mutex<Task<Void, Never>?>(nil)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<[Address], Failure>, Never>) in
            let (id, immediate, ask) = state.withLock { state -> (UInt64, [Address]?, Bool) in
                var entry = state.entries[key] ?? Entry()
                // Answered since the look above.
                if !entry.addresses.isEmpty, !entry.distrusted { return (0, entry.addresses, false) }
                if state.entries.count >= Self.entryLimit { state.entries = state.entries.filter { $0.value.asking } }
                state.lastWaiter += 1
                entry.waiters.append(Waiter(id: state.lastWaiter, continuation: continuation))
                let ask = !entry.asking
                entry.asking = true
                state.entries[key] = entry
                return (state.lastWaiter, nil, ask)
            }
            if let immediate {
                continuation.resume(returning: .success(immediate))
                return
            }
            if ask { self.ask(key) }
            timer.withLock {
                $0 = Task { [weak self] in
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    if !Task.isCancelled { self?.expire(key, waiter: id) }
                }
            }
        }
        timer.withLock { $0?.cancel() }
        return try result.get()
    }

    /// Addresses of `host` failed to connect: the next use waits for the name server's answer
    /// (which the stale addresses still stand in for if it does not come).
    public func distrust(_ host: String, port: Int) {
        state.withLock { state in
            let key = Key(host: host.lowercased(), port: port)
            state.entries[key]?.distrusted = true
        }
    }

    private func ask(_ key: Key) {
        let lookup = lookup
        let queued = pool.submit { [weak self] in
            let answer = lookup(key.host, key.port)
            self?.settle(key, answer)
        }
        if !queued { settle(key, .unavailable("too many names are being resolved")) }
    }

    private func settle(_ key: Key, _ answer: Answer) {
        let now = MonotonicClock.seconds()
        let (waiters, result) = state.withLock { state -> ([Waiter], Result<[Address], Failure>) in
            var entry = state.entries[key] ?? Entry()
            entry.asking = false
            let result: Result<[Address], Failure>
            switch answer {
            case .addresses(let addresses) where !addresses.isEmpty:
                (entry.addresses, entry.resolvedAt, entry.distrusted) = (addresses, now, false)
                result = .success(addresses)
            case .addresses:
                entry.addresses = []
                result = .failure(Failure(description: "\(key.host) has no address"))
            case .unknown(let why):
                entry.addresses = []
                result = .failure(Failure(description: "cannot resolve \(key.host): \(why)"))
            case .unavailable(let why):
                result =
                    entry.addresses.isEmpty
                    ? .failure(Failure(description: "cannot resolve \(key.host): \(why)")) : .success(entry.addresses)
            }
            let waiters = entry.waiters
            entry.waiters = []
            state.entries[key] = entry.addresses.isEmpty ? nil : entry
            return (waiters, result)
        }
        for waiter in waiters { waiter.continuation.resume(returning: result) }
    }

    private func expire(_ key: Key, waiter id: UInt64) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.entries[key]?.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.entries[key]?.waiters.remove(at: index)
        }
        waiter?.continuation.resume(
            returning: .failure(Failure(description: "no answer from the name server for \(key.host) in time")))
    }

    /// The C resolver: `getaddrinfo`, every address family.
    public static let system: Lookup = { host, port in lookUp(host, port) }

    // Private, as is every use of Glibc here: a release build's cross-module optimization would
    // otherwise copy these bodies into client modules, which do not import Glibc.
    private static func lookUp(_ host: String, _ port: Int) -> Answer {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let code = getaddrinfo(host, String(port), &hints, &list)
        guard code == 0, let list else {
            let why = String(cString: gai_strerror(code))
            // -5: EAI_NODATA (the name exists without an address), a GNU extension.
            return code == EAI_NONAME || code == -5 ? .unknown(why) : .unavailable(why)
        }
        defer { freeaddrinfo(list) }
        var addresses: [Address] = []
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            entry = current.pointee.ai_next
            guard let address = current.pointee.ai_addr else { continue }
            var text = [UInt8](repeating: 0, count: Int(NI_MAXHOST))
            let named = text.withUnsafeMutableBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) {
                    getnameinfo(address, current.pointee.ai_addrlen, $0.baseAddress, socklen_t($0.count), nil, 0, NI_NUMERICHOST)
                }
            }
            guard named == 0 else { continue }
            let resolved = Address(
                family: current.pointee.ai_family,
                bytes: Array(UnsafeRawBufferPointer(start: address, count: Int(current.pointee.ai_addrlen))),
                numeric: String(decoding: text.prefix { $0 != 0 }, as: UTF8.self))
            if !addresses.contains(resolved) { addresses.append(resolved) }
        }
        return .addresses(addresses)
    }

    /// Whether `host` is an IP address already (no name to resolve); IPv6 without brackets.
    public static func isNumeric(_ host: String) -> Bool { isAddress(host) }

    private static func isAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
