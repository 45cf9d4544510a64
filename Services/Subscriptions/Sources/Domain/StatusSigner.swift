import PierCrypto
import PierJSON
import PierModels
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Signs statuses for clients that pin the service's key (PierClient's `StatusSigning`): a
/// compact JWS of ``SignedStatusClaims`` with ES256, so an answer changed on the way (a proxy
/// the device trusts) or a status edited in the device's cache is refused by the app.
struct StatusSigner: Sendable {
    let key: P256PrivateKey
    let kid: String
    /// The JWS header's segment, the same for every status: encoded once.
    let header: String
    /// `GET /subscriptions/.well-known/jwks.json`, encoded once.
    let jwks: [UInt8]
    /// How long a signed status is trusted, offline included (`exp - iat`).
    let lifetime: Int

    init(key: P256PrivateKey, lifetime: Int) throws {
        let publicKey = try key.publicKey
        self.key = key
        kid = JWK.thumbprint(publicKey)
        header = try JWS.encode(JWSHeader(alg: "ES256", kid: kid, typ: SignedStatusClaims.type))
        jwks = try JSON.encode(JWKSet(keys: [JWK(key: publicKey, kid: kid)]))
        self.lifetime = lifetime
    }

    /// The status signed for `user`, the installation that asked and its nonce. The status is
    /// written as the answer's body is (the same bytes), inside the claims.
    func sign(_ status: [UInt8], user: UUID, installation: String?, nonce: String, now: Date = Date()) throws -> String {
        let issued = Int(now.timeIntervalSince1970)
        var payload = Array(#"{"sub":""#.utf8) + Array(user.text().utf8) + Array(#"","ins":"#.utf8)
        payload += try installation.map { try JSON.encode($0) } ?? Array("null".utf8)
        // The nonce is base64url (checked): nothing in it needs escaping.
        payload +=
            Array(#","nonce":""#.utf8) + Array(nonce.utf8)
            + Array(#"","iat":\#(issued),"exp":\#(issued + lifetime),"status":"#.utf8)
        payload += status + [UInt8(ascii: "}")]
        return try JWS.sign(payload: payload, encodedHeader: header, key: key)
    }

    /// The configured key, or in development one generated into the data folder; nil in
    /// production without a key (statuses are then not signed, and the host says so).
    static func load(_ configuration: SubscriptionsConfiguration, logger: Logger) throws -> StatusSigner? {
        if configuration.production && configuration.signingKeyFile == nil {
            logger.warning("statuses are not signed: set PIER_SUBSCRIPTIONS_SIGNING_KEY_FILE to sign them", [])
            return nil
        }
        let key = try P256PrivateKey.configured(
            file: configuration.signingKeyFile,
            orGeneratedAt: configuration.dataDirectory + "/subscriptions-signing-key.pem",
            setting: "PIER_SUBSCRIPTIONS_SIGNING_KEY_FILE", logger: logger)
        return try StatusSigner(key: key, lifetime: configuration.signedStatusSeconds)
    }
}
