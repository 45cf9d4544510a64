import PierCrypto
import PierModels
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Mints access tokens and refresh tokens.
struct TokenIssuer: Sendable {
    let keys: SigningKeys
    let issuer: String
    let audience: String
    /// Access token lifetime in seconds.
    let accessTTL: Int
    /// Refresh token (and idle session) lifetime in days; each refresh starts it again.
    let refreshDays: Int
    /// Roles whose sessions must have used a second factor (`PIER_AUTH_REQUIRE_MFA_FOR_ROLES`).
    var requireMFAForRoles: Set<AccountRole> = []

    /// - Parameter amr: how the session's sign-in was proven (RFC 8176): `acr` is `aal2` with
    ///   `mfa` among them, else `aal1`; a role that needs a second factor and a session without
    ///   one gets `mfa_enrolment_required`.
    func accessToken(
        userID: UUID, role: AccountRole, sessionID: UUID, emailVerified: Bool, authenticatedAt: Date, amr: [String],
        name: String?, now: Date = Date()
    ) throws -> String {
        let issuedAt = Int(now.timeIntervalSince1970)
        let secondFactor = amr.contains("mfa")
        let claims = AccessClaims(
            iss: issuer, sub: userID.text(), aud: audience, iat: issuedAt,
            nbf: issuedAt, exp: issuedAt + accessTTL,
            jti: Base64.urlEncoded(SecureRandom.bytes(16)),
            sid: sessionID.text(), role: role.rawValue, emailVerified: emailVerified,
            authTime: Int(authenticatedAt.timeIntervalSince1970.rounded(.down)), amr: amr.isEmpty ? nil : amr,
            acr: secondFactor ? "aal2" : "aal1",
            mfaEnrolmentRequired: !secondFactor && requireMFAForRoles.contains(role) ? true : nil, name: name)
        return try keys.signer.sign(claims)
    }

    /// How long an installation token lasts, in seconds.
    static let installationTTL = 3600

    /// The token that stands for an App Attest assertion of `installation` at the other services.
    func installationToken(_ installation: String, now: Date = Date()) throws -> InstallationToken {
        let issuedAt = Int(now.timeIntervalSince1970)
        let claims = InstallationClaims(
            iss: issuer, sub: installation, aud: audience, iat: issuedAt, exp: issuedAt + Self.installationTTL,
            jti: Base64.urlEncoded(SecureRandom.bytes(16)))
        return InstallationToken(
            token: try keys.signer.sign(claims), expiresAt: Date(timeIntervalSince1970: Double(claims.exp)))
    }

    /// A new refresh token: 256 random bits.
    func newRefreshToken() -> String { Self.randomToken() }

    /// 256 random bits, base64url: refresh tokens and mailed single-use tokens.
    static func randomToken() -> String { Base64.urlEncoded(SecureRandom.bytes(32)) }

    /// The token that replaces `token` on rotation. Derived, not random, so that the same token
    /// resent within the grace window (an app killed mid-refresh) yields the same successor
    /// without any token being stored in the clear.
    func successor(of token: String) -> String {
        Base64.urlEncoded(HMACSHA256.authenticate(Array(token.utf8), key: keys.refreshSecret))
    }

    /// What the database stores of a refresh token.
    static func hash(_ token: String) -> [UInt8] { SHA256.hash(token) }
}
