/// The claims of an installation token: the auth service's word that an app installation proved
/// itself genuine with App Attest (`POST /auth/app-attest/installation-token`), which the other
/// services accept for a short while instead of an assertion of their own (anonymous feedback).
/// Signed by the access tokens' keys under another `typ` (installation+jwt), so that neither
/// passes for the other.
public struct InstallationClaims: Codable, Sendable, Equatable, SignedTokenClaims {
    public static let type = "installation+jwt"

    public var iss: String
    /// The installation id the app sends as `X-Installation-ID`.
    public var sub: String
    public var aud: Audience
    public var iat: Int
    public var nbf: Int
    public var exp: Int
    public var jti: String

    public init(iss: String, sub: String, aud: String, iat: Int, exp: Int, jti: String) {
        self.iss = iss
        self.sub = sub
        self.aud = Audience([aud])
        self.iat = iat
        nbf = iat
        self.exp = exp
        self.jti = jti
    }
}
