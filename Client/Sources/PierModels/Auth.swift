#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A user as the API shows it.
public struct User: Codable, Sendable, Equatable {
    public var id: UUID
    /// The account's address; nil while it is anonymous (and after, when it became permanent
    /// through a passkey or an identity that shared none).
    public var email: String?
    public var displayName: String?
    /// `user`, or a team role: `support` or `admin` (``AccountRole``).
    public var role: AccountRole
    public var createdAt: Date
    /// The owner of the address opened a link Pier mailed to it.
    public var emailVerified: Bool
    /// The user's language and region (BCP 47, `fr-CA`), as the app set it.
    public var locale: String?
    /// When the team disabled the account (absent while it is enabled): it cannot sign in.
    public var disabledAt: Date?
    /// The account was made for an installation (`POST /auth/anonymous`) and has no way in
    /// besides its sessions yet: no address and password, identity or passkey.
    public var isAnonymous: Bool
    /// When the account began anonymous (kept once it is permanent; absent for accounts that
    /// began with an address or an identity).
    public var anonymousAt: Date?
    /// When an account that began anonymous became permanent.
    public var permanentAt: Date?

    public init(
        id: UUID, email: String?, displayName: String?, role: AccountRole, createdAt: Date, emailVerified: Bool = false,
        locale: String? = nil, disabledAt: Date? = nil, isAnonymous: Bool = false, anonymousAt: Date? = nil,
        permanentAt: Date? = nil
    ) {
        self.isAnonymous = isAnonymous
        self.anonymousAt = anonymousAt
        self.permanentAt = permanentAt
        self.locale = locale
        self.disabledAt = disabledAt
        self.id = id
        self.email = email
        self.displayName = displayName
        self.role = role
        self.createdAt = createdAt
        self.emailVerified = emailVerified
    }

    private enum CodingKeys: String, CodingKey {
        case id, email, displayName, role, createdAt, emailVerified, locale, disabledAt, isAnonymous, anonymousAt, permanentAt
    }

    /// A server from before anonymous accounts sends no `isAnonymous`: the account is not.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try container.decode(UUID.self, forKey: .id), email: try container.decodeIfPresent(String.self, forKey: .email),
            displayName: try container.decodeIfPresent(String.self, forKey: .displayName),
            role: try container.decode(AccountRole.self, forKey: .role),
            createdAt: try container.decode(Date.self, forKey: .createdAt),
            emailVerified: try container.decode(Bool.self, forKey: .emailVerified),
            locale: try container.decodeIfPresent(String.self, forKey: .locale),
            disabledAt: try container.decodeIfPresent(Date.self, forKey: .disabledAt),
            isAnonymous: try container.decodeIfPresent(Bool.self, forKey: .isAnonymous) ?? false,
            anonymousAt: try container.decodeIfPresent(Date.self, forKey: .anonymousAt),
            permanentAt: try container.decodeIfPresent(Date.self, forKey: .permanentAt))
    }

    /// How the account is named where a person reads it: its address, or "anonymous" and the
    /// start of its id.
    public var handle: String { email ?? "anonymous " + id.uuidString.lowercased().prefix(8) }
}

/// `GET /auth/users?q=`: the accounts a query found (admins), by address first.
public struct UserList: Codable, Sendable, Equatable {
    public var items: [User]
    /// More accounts match than were returned: a longer query narrows them down.
    public var more: Bool

    public init(items: [User], more: Bool) {
        self.items = items
        self.more = more
    }
}

/// What register, login and refresh answer.
public struct AuthSession: Codable, Sendable, Equatable {
    public var user: User
    /// An ES256 JWT for the `Authorization: Bearer` header.
    public var accessToken: String
    /// An opaque token for `POST /auth/refresh`; rotated on every use.
    public var refreshToken: String
    /// Always `Bearer`.
    public var tokenType: String
    /// Seconds until the access token expires.
    public var expiresIn: Int
    /// When the session ends unless refreshed before (each refresh moves it on): the app must
    /// sign in again after it.
    public var refreshExpiresAt: Date?
    /// After a password sign-in: proof that this device signed in to this account, to send
    /// with the next login of the same address (`LoginRequest.deviceToken`). Kept across
    /// sign-outs: a device that knows it is not held back by failed logins from its network.
    public var deviceToken: String?
    /// After registering: the address a link to verify it was mailed to (nil on other answers).
    public var verificationSentTo: String?

    public init(
        user: User, accessToken: String, refreshToken: String, tokenType: String = "Bearer", expiresIn: Int,
        refreshExpiresAt: Date? = nil, deviceToken: String? = nil, verificationSentTo: String? = nil
    ) {
        self.verificationSentTo = verificationSentTo
        self.user = user
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshExpiresAt = refreshExpiresAt
        self.deviceToken = deviceToken
    }
}

/// `POST /auth/register`.
public struct RegisterRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case email, password, displayName, deviceName }
    public static let required = [["email"], ["password"]]
    public var email: String
    public var password: String
    public var displayName: String?
    /// What the session list shows for this session ("Anna's iPhone").
    public var deviceName: String?
    public init(email: String, password: String, displayName: String? = nil, deviceName: String? = nil) {
        self.email = email
        self.password = password
        self.displayName = displayName
        self.deviceName = deviceName
    }
}

/// `POST /auth/login`.
public struct LoginRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case email, password, deviceName, deviceToken }
    public static let required = [["email"], ["password"]]
    public var email: String
    public var password: String
    /// What the session list shows for this session ("Anna's iPhone").
    public var deviceName: String?
    /// The `deviceToken` of this device's last sign-in to this address, if any.
    public var deviceToken: String?
    public init(email: String, password: String, deviceName: String? = nil, deviceToken: String? = nil) {
        self.email = email
        self.password = password
        self.deviceName = deviceName
        self.deviceToken = deviceToken
    }
}

/// `POST /auth/refresh` and `POST /auth/logout`.
public struct RefreshRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case refreshToken }
    public static let required = [["refreshToken"]]
    public var refreshToken: String
    public init(refreshToken: String) { self.refreshToken = refreshToken }
}

/// `POST /auth/password`.
public struct PasswordChangeRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case currentPassword, newPassword }
    public static let required = [["currentPassword"], ["newPassword"]]
    public var currentPassword: String
    public var newPassword: String
    public init(currentPassword: String, newPassword: String) {
        self.currentPassword = currentPassword
        self.newPassword = newPassword
    }
}

/// `POST /auth/email/verify`: the token of the link Pier mailed.
public struct EmailTokenRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case token }
    public static let required = [["token"]]
    public var token: String
    public init(token: String) { self.token = token }
}

extension EmailTokenRequest: FormDecodable {
    public init(form: [String: String]) { self.init(token: form["token"] ?? "") }
}

/// `POST /auth/password/forgot` and `POST /auth/email/verify/resend`: an address.
public struct EmailRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case email }
    public static let required = [["email"]]
    public var email: String
    public init(email: String) { self.email = email }
}

/// `POST /auth/password/reset`: the token of the mailed link and the new password.
public struct ResetPasswordRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case token, newPassword }
    public static let required = [["token"], ["newPassword"]]
    public var token: String
    public var newPassword: String
    public init(token: String, newPassword: String) {
        self.token = token
        self.newPassword = newPassword
    }
}

extension ResetPasswordRequest: FormDecodable {
    public init(form: [String: String]) { self.init(token: form["token"] ?? "", newPassword: form["newPassword"] ?? "") }
}

/// An identity provider account the caller signs in with (`GET /auth/identities`): Sign in with
/// Apple or an OpenID Connect provider.
public struct LinkedIdentity: Codable, Sendable, Equatable {
    /// What `DELETE /auth/identities/{id}` unlinks it by.
    public var id: UUID
    /// `apple`, or the name of an OpenID Connect provider.
    public var provider: String
    /// The address the provider gave last (an Apple relay address, perhaps).
    public var email: String?
    public var linkedAt: Date
    public var lastUsedAt: Date?

    public init(id: UUID, provider: String, email: String?, linkedAt: Date, lastUsedAt: Date?) {
        self.id = id
        self.provider = provider
        self.email = email
        self.linkedAt = linkedAt
        self.lastUsedAt = lastUsedAt
    }
}

/// One of the caller's signed-in sessions (`GET /auth/sessions`).
public struct SessionInfo: Codable, Sendable, Equatable {
    public var id: UUID
    public var createdAt: Date
    /// When its refresh token was last used (nil: never since sign-in).
    public var lastUsedAt: Date?
    /// The address it signed in or last refreshed from.
    public var clientAddress: String?
    /// What the app sent as `deviceName` at sign-in.
    public var deviceName: String?
    /// The session of the access token that asked.
    public var current: Bool

    public init(
        id: UUID, createdAt: Date, lastUsedAt: Date?, clientAddress: String?, deviceName: String?, current: Bool
    ) {
        self.id = id
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.clientAddress = clientAddress
        self.deviceName = deviceName
        self.current = current
    }
}

/// `PATCH /auth/me`: only the fields sent change; an empty string clears one.
public struct ProfileChange: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case displayName, locale }
    public static let required: [[String]] = []
    public var displayName: String?
    /// BCP 47 (`en`, `fr-CA`, `zh-Hant-TW`).
    public var locale: String?

    public init(displayName: String? = nil, locale: String? = nil) {
        self.displayName = displayName
        self.locale = locale
    }
}

/// `POST /auth/email/change`: the new address, confirmed by a link mailed to it. `password` (on
/// an account with a second factor, `code`), a `passkey`, or a sign-in within the last 5 minutes.
public struct EmailChangeRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case newEmail, password, code, passkey }
    public static let required = [["newEmail"]]
    public var newEmail: String
    public var password: String?
    public var code: String?
    public var passkey: PasskeyAssertion?
    public init(newEmail: String, password: String? = nil, code: String? = nil, passkey: PasskeyAssertion? = nil) {
        self.newEmail = newEmail
        self.password = password
        self.code = code
        self.passkey = passkey
    }
    /// The confirmation it carries.
    public var confirmation: ReauthenticationRequest { .init(password: password, code: code, passkey: passkey) }
}

/// `DELETE /auth/me` and the other sensitive actions (optional body): the current password —
/// or, on an account with a second factor, a code from the authenticator app or a recovery code
/// — unless the user signed in within the last 5 minutes.
public struct ReauthenticationRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case password, code, passkey }
    public static let required: [[String]] = []
    public var password: String?
    /// A code from the authenticator app (six digits) or a recovery code.
    public var code: String?
    /// An assertion by one of the account's passkeys, over the challenge of
    /// `POST /auth/reauthenticate/passkey-options`.
    public var passkey: PasskeyAssertion?
    public init(password: String? = nil, code: String? = nil, passkey: PasskeyAssertion? = nil) {
        self.password = password
        self.code = code
        self.passkey = passkey
    }
}

/// `POST /auth/apple` and `POST /auth/oidc/{provider}`: the ID token the provider gave the app.
public struct IdentitySignInRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case identityToken, nonce, fullName, deviceName, authorizationCode }
    public static let required = [["identityToken"], ["nonce"]]
    public var identityToken: String
    /// The raw nonce the app generated and bound the request to (Apple: its SHA-256 went to
    /// Apple in the request).
    public var nonce: String
    /// The user's name, which Apple gives the app on the first authorization only.
    public var fullName: String?
    public var deviceName: String?
    /// Sign in with Apple's authorization code (`ASAuthorizationAppleIDCredential.authorizationCode`):
    /// the server exchanges it for a refresh token, revoked when the account is deleted.
    public var authorizationCode: String?

    public init(
        identityToken: String, nonce: String, fullName: String? = nil, deviceName: String? = nil,
        authorizationCode: String? = nil
    ) {
        self.identityToken = identityToken
        self.nonce = nonce
        self.fullName = fullName
        self.deviceName = deviceName
        self.authorizationCode = authorizationCode
    }
}

/// `POST /auth/apple/notifications`: Apple's server-to-server notification, a JWT it signed.
public struct AppleNotificationRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case payload }
    public static let required = [["payload"]]
    public var payload: String
    public init(payload: String) { self.payload = payload }
}

/// "Download my data": everything every service holds about an account, each service's part
/// by its name (`auth`: the user, sessions, identities and audit entries; `feedback`: the
/// items; `subscriptions`: the status and its facts).
public struct DataExport: Codable, Sendable, Equatable {
    public var userId: UUID
    public var exportedAt: Date
    public var services: [String: JSONValue]

    public init(userId: UUID, exportedAt: Date, services: [String: JSONValue]) {
        self.userId = userId
        self.exportedAt = exportedAt
        self.services = services
    }
}
