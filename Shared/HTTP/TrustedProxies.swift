import PierRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// The proxies whose `X-Forwarded-For` is believed (a load balancer, the gateway): addresses
/// and CIDR blocks, IPv4 and IPv6. A request's client address is its TCP peer, unless the peer
/// is trusted: then the right-most address in `X-Forwarded-For` that is not itself a trusted
/// proxy. A client cannot spoof its address past the list: whatever it puts in the header
/// stands left of the address the first trusted proxy appended.
public struct TrustedProxies: Sendable, Equatable {
    struct Block: Sendable, Equatable {
        var bytes: [UInt8]
        var prefix: Int
    }
    let blocks: [Block]

    public static let none = TrustedProxies(blocks: [])

    init(blocks: [Block]) { self.blocks = blocks }

    /// Parses `10.0.0.0/8`, `127.0.0.1`, `::1`, `fd00::/8`…
    /// - Throws: the entry that is not an address or block.
    public init(_ entries: [String]) throws(InvalidEntry) {
        var blocks: [Block] = []
        for entry in entries {
            let parts = entry.split(separator: "/", maxSplits: 1)
            guard let address = parts.first, let bytes = Self.parse(String(address)) else { throw InvalidEntry(entry: entry) }
            var prefix = bytes.count * 8
            if parts.count == 2 {
                guard let given = Int(parts[1]), (0...prefix).contains(given) else { throw InvalidEntry(entry: entry) }
                prefix = given
            }
            blocks.append(Block(bytes: bytes, prefix: prefix))
        }
        self.blocks = blocks
    }

    public struct InvalidEntry: Error, CustomStringConvertible {
        public let entry: String
        public var description: String { "\"\(entry)\" is not an IP address or CIDR block" }
    }

    public var isEmpty: Bool { blocks.isEmpty }

    /// True when `address` lies in one of the blocks.
    public func contains(_ address: String) -> Bool {
        guard !blocks.isEmpty, let bytes = Self.parse(address) else { return false }
        return blocks.contains { block in
            guard block.bytes.count == bytes.count else { return false }
            var remaining = block.prefix
            for index in 0..<bytes.count where remaining > 0 {
                let bits = min(8, remaining)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if bytes[index] & mask != block.bytes[index] & mask { return false }
                remaining -= bits
            }
            return true
        }
    }

    /// The client's address as far as it can be believed.
    public func clientAddress(peer: String, forwardedFor: String?) -> String {
        guard contains(peer), let forwardedFor else { return peer }
        var client = peer
        for hop in forwardedFor.split(separator: ",").reversed() {
            let address = hop.trimmingWhitespace()
            guard Self.parse(address) != nil else { break }
            client = address
            if !contains(address) { break }
        }
        return client
    }

    /// The 4 or 16 bytes of a textual address.
    static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            let bytes = withUnsafeBytes(of: &v6) { Array($0) }
            // An IPv4-mapped IPv6 address (a dual-stack socket's peer) is the IPv4 address.
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return Array(bytes[12...]) }
            return bytes
        }
        return nil
    }
}

extension Request {
    /// What per-client limits count under (login throttle, anonymous quotas, rate limits,
    /// connection caps): an IPv4 address as it is; an IPv6 address by its /64, which one
    /// subscriber gets whole and could otherwise spend one address per request from.
    public var clientKey: String { TrustedProxies.limitKey(clientAddress) }
}

extension TrustedProxies {
    /// See ``Request/clientKey``: `2001:db8:1:2::/64` for any address in that /64.
    public static func limitKey(_ address: String) -> String {
        // Per request on the hot paths: an IPv4 address is its own key, unparsed.
        if !address.utf8.contains(UInt8(ascii: ":")) { return address }
        guard let bytes = parse(address) else { return address }
        guard bytes.count == 16 else {
            return bytes.map(String.init).joined(separator: ".")
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }
}
