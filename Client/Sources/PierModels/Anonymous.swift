#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `POST /auth/anonymous`: an account for this installation, with no address and no password.
public struct AnonymousSignInRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case installationId, deviceName }
    public static let required = [["installationId"]]
    /// The app installation's id (the one it sends as `X-Installation-ID`): 1 to 128 visible
    /// ASCII characters. Sign-ups are counted per installation.
    public var installationId: String
    /// What the session list shows for this session ("Anna's iPhone").
    public var deviceName: String?
    public init(installationId: String, deviceName: String? = nil) {
        self.installationId = installationId
        self.deviceName = deviceName
    }
}

/// `POST /auth/anonymous/upgrade`: the address and password an anonymous account asks to keep.
public struct AnonymousUpgradeRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case email, password }
    public static let required = [["email"], ["password"]]
    public var email: String
    public var password: String
    public init(email: String, password: String) {
        self.email = email
        self.password = password
    }
}

/// `POST /auth/anonymous/upgrade`'s answer: where the link that makes the account permanent went.
public struct AnonymousUpgradeAnswer: Codable, Sendable, Equatable {
    /// The address the link was mailed to; the account stays anonymous until it is followed.
    public var sentTo: String
    public init(sentTo: String) { self.sentTo = sentTo }
}

extension ProblemCode {
    /// The address or identity an anonymous account asked to become permanent with belongs to
    /// another account. The problem's `offer` says what the app can propose: `sign_in` (to that
    /// account instead).
    public static let identityTaken: ProblemCode = "identity_taken"
    /// The action needs a permanent account (a password, a second factor, a team role): make
    /// the anonymous account permanent first.
    public static let anonymousAccount: ProblemCode = "anonymous_account"
    /// Only an anonymous account can be made permanent; this one is already.
    public static let notAnonymous: ProblemCode = "not_anonymous"
}

extension AuthAPI {
    static let anonymous: [EndpointDefinition] = [signInAnonymously.definition, upgradeAnonymous.definition]

    public static let signInAnonymously = Endpoint<NoParameters, AnonymousSignInRequest, AuthSession>(
        "POST", "/auth/anonymous", access: .public, operation: "signInAnonymously",
        summary: "Start without signing up: an anonymous account for this installation",
        description:
            "A session (`amr: [\"anon\"]`, `user.isAnonymous`) for a new account with no address and no password. Every service treats it as signed in. Limited per installation (PIER_AUTH_ANONYMOUS_PER_INSTALLATION_PER_DAY) and per client address (PIER_AUTH_ANONYMOUS_PER_ADDRESS_PER_HOUR); an account left unused for PIER_AUTH_ANONYMOUS_TTL_DAYS is deleted. It becomes permanent, with the same id, through `POST /auth/anonymous/upgrade`, Sign in with Apple or OpenID Connect sent with its bearer token, or a passkey.",
        status: 201, answers: "Signed in anonymously", problems: [.validationFailed, .rateLimited])

    public static let upgradeAnonymous = Endpoint<NoParameters, AnonymousUpgradeRequest, AnonymousUpgradeAnswer>(
        "POST", "/auth/anonymous/upgrade", access: .signedIn, operation: "upgradeAnonymous",
        summary: "Keep an anonymous account with an address and a password",
        description:
            "Mails a link (24 h) to the address; when it is followed (`POST /auth/email/change/confirm`) the account takes the address (verified) and the password, keeps its id and everything it holds, and every other session of it ends. Until then nothing changes. An address another account has is 409 identity_taken.",
        status: 202, answers: "Link mailed",
        problems: [.validationFailed, .weakPassword, .identityTaken, .notAnonymous, .rateLimited, .accountDeleted])
}
