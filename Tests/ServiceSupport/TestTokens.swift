import Foundation
import PierCrypto
import PierIdentity
import PierService
import PierTestSupport

/// Access tokens signed with a key made for the test, which the service under test trusts as
/// it would trust the auth service's keys.
public struct TestTokens: Sendable {
    public let signer: AccessTokenSigner
    /// The keys a service under test verifies with (``LiveService``'s `keys`).
    public let keys: StaticKeyProvider
    public let authenticator: Authenticator

    public init() throws {
        let key = try P256PrivateKey.generate()
        signer = AccessTokenSigner(key: key, kid: "test")
        keys = StaticKeyProvider(keys: ["test": try key.publicKey])
        authenticator = Authenticator(verifier: AccessTokenVerifier(keys: keys, issuer: "pier", audience: "pier"))
    }

    /// A token for `user` with `role`, valid for `lifetime` seconds (ten minutes), of a sign-in
    /// `signedInAgo` seconds ago (just now, as after a login).
    public func token(
        _ user: UUID, role: String = "user", signedInAgo: Int = 0, lifetime: Int = 600, session: UUID? = nil
    ) throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        return try signer.sign(
            AccessClaims(
                iss: "pier", sub: user.uuidString, aud: "pier", iat: now, nbf: now, exp: now + lifetime, jti: UUID().uuidString,
                sid: session?.uuidString.lowercased(), role: role, authTime: now - signedInAgo))
    }

    /// A token of a new admin.
    public func admin() throws -> String { try token(UUID(), role: "admin") }
}
