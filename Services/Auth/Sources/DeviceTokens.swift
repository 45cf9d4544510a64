import PierCrypto

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Device tokens (OWASP's "device cookies"): a client that signed in to an account with its
/// password gets a token naming that account, signed by the service; sent with a later login of
/// the same address, the attempt counts against that device instead of against the client's
/// network address. So failed logins for made-up addresses from a shared address (a carrier NAT,
/// an office) do not lock out the people behind it who signed in there before, while unknown
/// clients are held as before. The account's own limit applies to everyone.
///
/// `v1.<issued at>.<nonce>.<HMAC-SHA256 of "device", the address key, issued at and nonce>`,
/// with a key derived from the signing key (every replica makes and checks the same tokens).
/// Nothing is stored; a token lives a year.
struct DeviceTokens: Sendable {
    let key: [UInt8]
    static let lifetime = 365 * 86_400

    init(keys: SigningKeys) {
        key = HMACSHA256.authenticate(Array("pier device tokens".utf8), key: keys.refreshSecret)
    }

    /// A new token for the account of `emailKey`.
    func issue(emailKey: String, now: Date = Date()) -> String {
        let issued = String(Int(now.timeIntervalSince1970))
        let nonce = Base64.urlEncoded(SecureRandom.bytes(16))
        return "v1.\(issued).\(nonce).\(mac(emailKey: emailKey, issued: issued, nonce: nonce))"
    }

    /// The throttle key of the device, when `token` is a live token of this service for the
    /// account of `emailKey`; nil otherwise (absent, forged, for another account, expired).
    func device(_ token: String?, emailKey: String, now: Date = Date()) -> String? {
        guard let token, token.utf8.count <= 200 else { return nil }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 4, parts[0] == "v1", let issued = Int(parts[1]),
            issued <= Int(now.timeIntervalSince1970) + 60, Int(now.timeIntervalSince1970) - issued < Self.lifetime,
            let given = Base64.urlDecoded(parts[3]),
            let expected = Base64.urlDecoded(mac(emailKey: emailKey, issued: parts[1], nonce: parts[2])),
            Self.constantTimeEqual(given, expected)
        else { return nil }
        return "device:" + parts[2]
    }

    private func mac(emailKey: String, issued: String, nonce: String) -> String {
        Base64.urlEncoded(HMACSHA256.authenticate(Array("device\u{0}\(emailKey)\u{0}\(issued)\u{0}\(nonce)".utf8), key: key))
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
