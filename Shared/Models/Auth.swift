#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A user as the API shows it.
public struct User: Codable, Sendable, Equatable {
    public var id: UUID
    public var email: String
    public var displayName: String?
    /// `user` or `admin`.
    public var role: String
    public var createdAt: Date

    public init(id: UUID, email: String, displayName: String?, role: String, createdAt: Date) {
        self.id = id
        self.email = email
        self.displayName = displayName
        self.role = role
        self.createdAt = createdAt
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

    public init(
        user: User, accessToken: String, refreshToken: String, tokenType: String = "Bearer", expiresIn: Int,
        refreshExpiresAt: Date? = nil
    ) {
        self.user = user
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshExpiresAt = refreshExpiresAt
    }
}

/// `POST /auth/register`.
public struct RegisterRequest: Codable, Sendable, StrictDecodable {
    public static let fields: Set<String> = ["email", "password", "displayName"]
    public static let required = [["email"], ["password"]]
    public var email: String
    public var password: String
    public var displayName: String?
    public init(email: String, password: String, displayName: String? = nil) {
        self.email = email
        self.password = password
        self.displayName = displayName
    }
}

/// `POST /auth/login`.
public struct LoginRequest: Codable, Sendable, StrictDecodable {
    public static let fields: Set<String> = ["email", "password"]
    public static let required = [["email"], ["password"]]
    public var email: String
    public var password: String
    public init(email: String, password: String) {
        self.email = email
        self.password = password
    }
}

/// `POST /auth/refresh` and `POST /auth/logout`.
public struct RefreshRequest: Codable, Sendable, StrictDecodable {
    public static let fields: Set<String> = ["refreshToken"]
    public static let required = [["refreshToken"]]
    public var refreshToken: String
    public init(refreshToken: String) { self.refreshToken = refreshToken }
}

/// `POST /auth/password`.
public struct PasswordChangeRequest: Codable, Sendable, StrictDecodable {
    public static let fields: Set<String> = ["currentPassword", "newPassword"]
    public static let required = [["currentPassword"], ["newPassword"]]
    public var currentPassword: String
    public var newPassword: String
    public init(currentPassword: String, newPassword: String) {
        self.currentPassword = currentPassword
        self.newPassword = newPassword
    }
}
