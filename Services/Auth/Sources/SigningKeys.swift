import PierCrypto
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The keys that sign access tokens (the newest) and verify them (all), with their JWKS.
public struct SigningKeys: Sendable {
    public let signer: AccessTokenSigner
    /// Every published key by `kid`: the signing key and the previous ones still accepted.
    public let verificationKeys: [String: P256PublicKey]
    /// `GET /auth/.well-known/jwks.json`, encoded once.
    public let jwks: JWKSet
    /// A secret derived from the signing key, for deriving rotated refresh tokens.
    let refreshSecret: [UInt8]

    public init(signing: P256PrivateKey, previous: [P256PublicKey] = []) throws {
        let signingPublic = try signing.publicKey
        let kid = JWK.thumbprint(signingPublic)
        signer = AccessTokenSigner(key: signing, kid: kid)
        var keys = [kid: signingPublic]
        var jwks = [JWK(key: signingPublic, kid: kid)]
        for key in previous {
            let id = JWK.thumbprint(key)
            if keys[id] == nil {
                keys[id] = key
                jwks.append(JWK(key: key, kid: id))
            }
        }
        verificationKeys = keys
        self.jwks = JWKSet(keys: jwks)
        refreshSecret = HMACSHA256.authenticate(
            Array("pier refresh rotation".utf8), key: Array(try signing.pemRepresentation().utf8))
    }

    /// Loads the configured keys, or in development generates one into the data folder.
    static func load(_ configuration: AuthConfiguration, logger: Logger) throws -> SigningKeys {
        let signing = try P256PrivateKey.configured(
            file: configuration.signingKeyFile, orGeneratedAt: configuration.dataDirectory + "/auth-signing-key.pem",
            setting: "PIER_AUTH_SIGNING_KEY_FILE", logger: logger)
        var previous: [P256PublicKey] = []
        for path in configuration.previousKeyFiles {
            let pem = try readFile(path)
            previous.append(try (try? P256PrivateKey(pem: pem).publicKey) ?? P256PublicKey(pem: pem))
        }
        return try SigningKeys(signing: signing, previous: previous)
    }

    /// The key that seals second-factor secrets: `PIER_AUTH_MFA_KEY_FILE` (32 bytes, base64), or
    /// in development one generated into the data folder. Never derived from the signing key:
    /// rotating that must not make every enrolled authenticator app unreadable.
    static func secondFactorBox(_ configuration: AuthConfiguration, logger: Logger) throws -> SecretBox {
        let setting = "PIER_AUTH_MFA_KEY_FILE"
        let path = configuration.mfaKeyFile ?? configuration.dataDirectory + "/auth-mfa-key"
        let text: String
        do {
            text = try readFile(path)
        } catch {
            guard configuration.mfaKeyFile == nil else { throw Environment.Failure(variable: setting, problem: "\(error)") }
            let key = SecretBox.generateKey()
            try writeFile(path, Base64.encoded(key) + "\n")
            logger.warning("generated a development key; set \(setting) in production", [("path", .string(path))])
            return try SecretBox(key: key)
        }
        guard let key = Base64.decoded(text.trimmingWhitespace()), key.count == 32 else {
            throw Environment.Failure(
                variable: setting, problem: "must hold 32 random bytes in base64 (openssl rand -base64 32)")
        }
        return try SecretBox(key: key)
    }
}

#if canImport(Glibc)
    import Glibc
#endif
