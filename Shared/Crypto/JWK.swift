/// A public key as a JSON Web Key (RFC 7517), EC P-256 only.
public struct JWK: Codable, Sendable, Equatable {
    public var kty: String
    public var crv: String
    public var x: String
    public var y: String
    public var kid: String
    public var use: String?
    public var alg: String?

    /// Describes `key` under `kid`, for signatures with ES256.
    public init(key: P256PublicKey, kid: String) {
        kty = "EC"
        crv = "P-256"
        x = Base64.urlEncoded(key.x)
        y = Base64.urlEncoded(key.y)
        self.kid = kid
        use = "sig"
        alg = "ES256"
    }

    /// The RFC 7638 JWK thumbprint of `key`: a `kid` that names the key itself.
    public static func thumbprint(_ key: P256PublicKey) -> String {
        let canonical =
            #"{"crv":"P-256","kty":"EC","x":""# + Base64.urlEncoded(key.x) + #"","y":""# + Base64.urlEncoded(key.y) + #""}"#
        return Base64.urlEncoded(SHA256.hash(canonical))
    }

    /// The key itself; fails for anything but an EC P-256 signing key on the curve.
    public func publicKey() throws -> P256PublicKey {
        guard kty == "EC", crv == "P-256", alg == nil || alg == "ES256", use == nil || use == "sig" else {
            throw CryptoError("reading a JWK", detail: "only EC P-256 ES256 signing keys are supported")
        }
        guard let x = Base64.urlDecoded(x), let y = Base64.urlDecoded(y) else {
            throw CryptoError("reading a JWK", detail: "x or y is not base64url")
        }
        return try P256PublicKey(x: x, y: y)
    }
}

/// A JWK Set (RFC 7517 §5): what `GET /auth/.well-known/jwks.json` serves.
public struct JWKSet: Codable, Sendable, Equatable {
    public var keys: [JWK]
    public init(keys: [JWK]) { self.keys = keys }
}
