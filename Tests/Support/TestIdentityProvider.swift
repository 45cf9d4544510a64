import COpenSSL
import Foundation
import PierCrypto
import PierHTTP
import PierRuntime

/// An RSA key made by the test, to sign ID tokens RS256 as Apple does.
public final class TestRSAKey: @unchecked Sendable {
    let pkey: OpaquePointer

    public init(bits: Int32 = 2048) throws {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else { throw TestFailure("RSA context") }
        defer { EVP_PKEY_CTX_free(context) }
        var pkey: OpaquePointer? = nil
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, bits) == 1,
            EVP_PKEY_generate(context, &pkey) == 1, let pkey
        else { throw TestFailure("RSA key generation") }
        self.pkey = pkey
    }

    deinit { EVP_PKEY_free(pkey) }

    public func jwk(kid: String) -> [String: String] {
        func parameter(_ name: String) -> String {
            var number: OpaquePointer? = nil
            EVP_PKEY_get_bn_param(pkey, name, &number)
            defer { BN_free(number) }
            var bytes = [UInt8](repeating: 0, count: Int((BN_num_bits(number) + 7) / 8))
            BN_bn2bin(number, &bytes)
            return Base64.urlEncoded(bytes)
        }
        return ["kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": parameter("n"), "e": parameter("e")]
    }

    public func sign(_ message: [UInt8]) -> [UInt8] {
        let context = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(context) }
        EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pkey)
        var length = 0
        EVP_DigestSign(context, nil, &length, message, message.count)
        var signature = [UInt8](repeating: 0, count: length)
        EVP_DigestSign(context, &signature, &length, message, message.count)
        return Array(signature.prefix(length))
    }
}

/// A test's own failure, said as it is printed.
public struct TestFailure: Error, CustomStringConvertible {
    public let what: String
    public init(_ what: String) { self.what = what }
    public var description: String { what }
}

/// A provider as the test plays it: a JWKS on a local server, and ID tokens signed with its keys.
public final class TestIdentityProvider: Sendable {
    public let server: HTTPServer
    public let rsa: TestRSAKey
    public let ec: P256PrivateKey
    public let keys: Locked<[[String: String]]>
    public var jwksURL: String { "http://127.0.0.1:\(server.port)/keys" }

    public init(bits: Int32 = 2048) throws {
        rsa = try TestRSAKey()
        ec = try P256PrivateKey.generate()
        let ecPublic = try ec.publicKey
        keys = Locked([
            rsa.jwk(kid: "rsa-1"),
            [
                "kty": "EC", "kid": "ec-1", "crv": "P-256", "use": "sig", "x": Base64.urlEncoded(ecPublic.x),
                "y": Base64.urlEncoded(ecPublic.y),
            ],
            // A key this version cannot use is skipped, not fatal.
            ["kty": "OKP", "kid": "ed-1", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"],
        ])
        let router = Router<BasicRequestContext>()
        let keys = keys
        router.get("/keys") { _, _ in
            Response(
                status: 200, headers: ["Content-Type": "application/json"],
                body: Array(try JSONSerialization.data(withJSONObject: ["keys": keys.withLock { $0 }])))
        }
        server = try HTTPServer.started(router, name: "idp")
    }

    public static func hex(_ text: String) -> String { SHA256.hash(text).map { String(format: "%02x", $0) }.joined() }

    /// A server-to-server notification as Apple signs it: iss, aud, iat, exp, jti and `events`
    /// (a JSON string), no `sub` and no `nonce`.
    public func notification(_ events: String, jti: String = UUID().uuidString, overrides: [String: Any] = [:]) throws
        -> String
    {
        var claims: [String: Any] = ["events": events, "jti": jti]
        claims.merge(overrides) { $1 }
        return try token(
            claims, removing: ["sub", "nonce", "email", "email_verified", "is_private_email", "nonce_supported", "c_hash"])
    }

    /// An ID token: Apple's claims by default, RS256 with `rsa-1`.
    public func token(
        _ overrides: [String: Any] = [:], removing: [String] = [], alg: String = "RS256", kid: String? = "rsa-1",
        signature: [UInt8]? = nil
    ) throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        var claims: [String: Any] = [
            "iss": "https://appleid.apple.com", "aud": "dev.pier.seeds", "exp": now + 600, "iat": now,
            "sub": "001234.abcdef", "email": "anna@privaterelay.appleid.com", "email_verified": "true",
            "is_private_email": "true", "nonce": Self.hex("raw-nonce"), "nonce_supported": true,
            // Unique per authorization, as Apple's c_hash (of the authorization code) is: two
            // sign-ins in one second are two tokens.
            "c_hash": UUID().uuidString,
        ]
        claims.merge(overrides) { $1 }
        for name in removing { claims[name] = nil }
        var header: [String: Any] = ["alg": alg]
        if let kid { header["kid"] = kid }
        let input =
            Base64.urlEncoded(Array(try JSONSerialization.data(withJSONObject: header))) + "."
            + Base64.urlEncoded(Array(try JSONSerialization.data(withJSONObject: claims)))
        let signed: [UInt8] =
            if let signature { signature } else if alg == "ES256" { try ec.sign(Array(input.utf8)) } else {
                rsa.sign(Array(input.utf8))
            }
        return input + "." + Base64.urlEncoded(signed)
    }
}
