import PierCrypto
import PierRuntime

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
        let kid = SigningKeys.thumbprint(signingPublic)
        signer = AccessTokenSigner(key: signing, kid: kid)
        var keys = [kid: signingPublic]
        var jwks = [JWK(key: signingPublic, kid: kid)]
        for key in previous {
            let id = SigningKeys.thumbprint(key)
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

    /// The RFC 7638 JWK thumbprint: a `kid` that names the key itself.
    static func thumbprint(_ key: P256PublicKey) -> String {
        let canonical =
            #"{"crv":"P-256","kty":"EC","x":""# + Base64.urlEncoded(key.x) + #"","y":""# + Base64.urlEncoded(key.y) + #""}"#
        return Base64.urlEncoded(SHA256.hash(canonical))
    }

    /// Loads the configured keys, or in development generates one into the data folder.
    static func load(_ configuration: AuthConfiguration, logger: Logger) throws -> SigningKeys {
        let signing: P256PrivateKey
        if let path = configuration.signingKeyFile {
            signing = try P256PrivateKey(pem: try readFile(path))
        } else {
            let path = configuration.dataDirectory + "/auth-signing-key.pem"
            if let pem = try? readFile(path) {
                signing = try P256PrivateKey(pem: pem)
            } else {
                signing = try P256PrivateKey.generate()
                try writeFile(path, try signing.pemRepresentation())
                logger.warning(
                    "generated a development signing key; set PIER_AUTH_SIGNING_KEY_FILE in production",
                    [("path", .string(path))])
            }
        }
        var previous: [P256PublicKey] = []
        for path in configuration.previousKeyFiles {
            let pem = try readFile(path)
            previous.append(try (try? P256PrivateKey(pem: pem).publicKey) ?? P256PublicKey(pem: pem))
        }
        return try SigningKeys(signing: signing, previous: previous)
    }
}

struct FileError: Error, CustomStringConvertible {
    let description: String
}

func readFile(_ path: String) throws -> String {
    guard let file = fopen(path, "r") else {
        throw FileError(description: "cannot read \(path): \(String(cString: strerror(errno)))")
    }
    defer { fclose(file) }
    var bytes = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count <= 0 { break }
        bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// Writes a secret file readable by its owner only.
func writeFile(_ path: String, _ text: String) throws {
    if let slash = path.lastIndex(of: "/") { mkdir(String(path[..<slash]), 0o700) }
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw FileError(description: "cannot write \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var text = text
    let written = text.withUTF8 { write(fd, $0.baseAddress, $0.count) }
    guard written == text.utf8.count else { throw FileError(description: "cannot write \(path)") }
}

#if canImport(Glibc)
    import Glibc
#endif
