/// An error response body, `application/problem+json` (RFC 9457).
public struct Problem: Codable, Sendable, Equatable, Error {
    /// One invalid field of a request body or query.
    public struct FieldError: Codable, Sendable, Equatable {
        /// The field's path, dotted (`metadata.build`, `requestIds[3]`).
        public var field: String
        /// Why it was refused, for a developer to read.
        public var message: String

        public init(field: String, message: String) {
            self.field = field
            self.message = message
        }
    }

    /// A URI naming the kind of problem; `about:blank` when the status says it all.
    public var type: String
    /// What went wrong, as a stable identifier a program can switch on (``ProblemCode``).
    public var code: ProblemCode?
    /// A short summary of the kind (the same for every occurrence).
    public var title: String
    /// The HTTP status code.
    public var status: Int
    /// What happened this time, for a developer to read.
    public var detail: String?
    /// The request's `X-Request-ID`, to find it in the logs.
    public var requestId: String?
    /// The invalid fields, for validation failures.
    public var errors: [FieldError]?
    /// `mfa_required`: the token `POST /auth/mfa/verify` completes the sign-in with (5 minutes).
    public var mfaToken: String?
    /// `mfa_required`: the second factors the account can complete the sign-in with (`totp`,
    /// `recovery_code`).
    public var factors: [String]?
    /// `identity_taken`: what the app can propose instead (`sign_in`: to the account that has
    /// the address or identity; `merge`: sign in to it and bring the anonymous account's data).
    public var offer: [String]?

    public init(
        type: String = "about:blank", code: ProblemCode? = nil, title: String, status: Int, detail: String? = nil,
        requestId: String? = nil, errors: [FieldError]? = nil
    ) {
        self.type = type
        self.code = code
        self.title = title
        self.status = status
        self.detail = detail
        self.requestId = requestId
        self.errors = errors
    }
}

/// The stable `code` of a problem: what a client switches on, where `detail` is for people and
/// may change. New codes may appear; a client should treat one it does not know by its status.
public struct ProblemCode: RawRepresentable, Codable, Hashable, Sendable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
    public var description: String { rawValue }

    // Requests.
    /// The body or a parameter could not be read (not JSON, wrong framing).
    public static let badRequest: ProblemCode = "bad_request"
    /// One or more fields are missing, unknown or invalid: see `errors`.
    public static let validationFailed: ProblemCode = "validation_failed"
    /// The new password breaks a password rule (too short, too common, the email).
    public static let weakPassword: ProblemCode = "weak_password"
    public static let unsupportedMediaType: ProblemCode = "unsupported_media_type"
    public static let bodyTooLarge: ProblemCode = "body_too_large"
    public static let uriTooLong: ProblemCode = "uri_too_long"
    public static let headersTooLarge: ProblemCode = "headers_too_large"
    public static let lengthRequired: ProblemCode = "length_required"
    public static let notFound: ProblemCode = "not_found"
    public static let methodNotAllowed: ProblemCode = "method_not_allowed"
    // Who is calling.
    /// No bearer token was sent where one is needed.
    public static let authenticationRequired: ProblemCode = "authentication_required"
    /// The access token expired: refresh it and retry.
    public static let tokenExpired: ProblemCode = "token_expired"
    /// The access token is malformed, forged, or for another issuer or audience.
    public static let tokenInvalid: ProblemCode = "token_invalid"
    /// The session was ended (logout, password change, refresh-token reuse): sign in again.
    public static let sessionRevoked: ProblemCode = "session_revoked"
    /// The account was deleted.
    public static let accountDeleted: ProblemCode = "account_deleted"
    /// Login: the email or the password is wrong (never says which).
    public static let invalidCredentials: ProblemCode = "invalid_credentials"
    /// Refresh or logout: the refresh token is unknown, expired, rotated or revoked.
    public static let invalidRefreshToken: ProblemCode = "invalid_refresh_token"
    /// The caller lacks the role (admin) this needs.
    public static let forbidden: ProblemCode = "forbidden"
    /// Login refused until the address is verified (`PIER_AUTH_REQUIRE_VERIFIED_EMAIL`): send
    /// the link again with `POST /auth/email/verify/resend`.
    public static let emailUnverified: ProblemCode = "email_unverified"
    /// A sensitive action (deleting the account, changing the address) needs the current
    /// password or a sign-in within the last 5 minutes.
    public static let reauthenticationRequired: ProblemCode = "reauthentication_required"
    /// The password (or identity) was right, and the account has a second factor: complete the
    /// sign-in with `POST /auth/mfa/verify`, sending the problem's `mfaToken` and a code.
    public static let mfaRequired: ProblemCode = "mfa_required"
    /// The MFA token is unknown, expired, used, or ended by too many wrong codes: sign in again.
    public static let invalidMFAToken: ProblemCode = "invalid_mfa_token"
    /// The code (authenticator app or recovery code) is not right, or was used already.
    public static let invalidCode: ProblemCode = "invalid_code"
    /// A passkey ceremony was refused: the credential or assertion does not verify (origin,
    /// relying party, signature, flags), its challenge is unknown, used or expired, or the
    /// passkey is unknown or suspended; `errors` names the member at fault.
    public static let invalidPasskey: ProblemCode = "invalid_passkey"
    /// The account's role needs a second factor (`PIER_AUTH_REQUIRE_MFA_FOR_ROLES`) that this
    /// session did not use: enrol one (`POST /auth/mfa/totp`), then sign in with it.
    public static let mfaEnrolmentRequired: ProblemCode = "mfa_enrolment_required"
    /// A team member's first second factor (an authenticator app, a passkey) waits for approval:
    /// the link mailed to the member's address, or an admin (`POST /auth/users/{id}/mfa/approve`).
    /// Ask again once approved.
    public static let enrolmentApprovalRequired: ProblemCode = "enrolment_approval_required"
    /// An identity provider's ID token (Sign in with Apple, OpenID Connect) was refused: forged,
    /// expired, for another app, or bound to another nonce; `detail` says which.
    public static let invalidIdentityToken: ProblemCode = "invalid_identity_token"
    /// A mailed link's token is unknown, used or expired: ask for a new mail.
    public static let invalidEmailToken: ProblemCode = "invalid_email_token"
    // State.
    public static let emailTaken: ProblemCode = "email_taken"
    /// Unlinking this identity would leave the account no way to sign in: set a password first
    /// ("forgot password" mails a link).
    public static let lastSignInMethod: ProblemCode = "last_sign_in_method"
    /// The account was disabled by the team: it cannot sign in or refresh until enabled again.
    public static let accountDisabled: ProblemCode = "account_disabled"
    /// A team role (support, admin) needs an account whose address was proven.
    public static let addressUnverified: ProblemCode = "address_unverified"
    /// The change would leave no admin account.
    public static let lastAdmin: ProblemCode = "last_admin"
    /// An `Idempotency-Key` came back with a different request.
    public static let idempotencyKeyReused: ProblemCode = "idempotency_key_reused"
    /// The change conflicts with the current state of the resource.
    public static let conflict: ProblemCode = "conflict"
    // Capacity.
    /// Too many requests: wait `Retry-After` seconds.
    public static let rateLimited: ProblemCode = "rate_limited"
    /// The account holds as many live streams as it may: close one before opening another.
    public static let tooManyStreams: ProblemCode = "too_many_streams"
    /// Temporarily unable to answer (database, key set, overload): retry after `Retry-After`.
    public static let unavailable: ProblemCode = "unavailable"
    /// The service runs on a database whose schema is not migrated (or is older than the
    /// service): the operator runs `pier-<service> migrate`, or starts it with `--migrate`.
    public static let schemaNotMigrated: ProblemCode = "schema_not_migrated"
    /// A service behind the gateway did not answer in time.
    public static let upstreamTimeout: ProblemCode = "upstream_timeout"
    /// A service behind the gateway could not be reached.
    public static let badGateway: ProblemCode = "bad_gateway"
    /// The App Store Server API is not configured here (no In-App Purchase key).
    public static let appStoreAPIUnconfigured: ProblemCode = "appstore_api_unconfigured"
    /// Apple's App Store Server API could not be reached or refused the request.
    public static let appStoreAPIFailed: ProblemCode = "appstore_api_failed"
    /// A fault on the server's side; the request id finds it in the logs.
    public static let internalError: ProblemCode = "internal_error"

    /// The code of a status when nothing more precise is known.
    public static func of(status: Int) -> ProblemCode {
        switch status {
        case 400: .badRequest
        case 401: .authenticationRequired
        case 403: .forbidden
        case 404: .notFound
        case 405: .methodNotAllowed
        case 409: .conflict
        case 411: .lengthRequired
        case 413: .bodyTooLarge
        case 414: .uriTooLong
        case 415: .unsupportedMediaType
        case 422: .validationFailed
        case 429: .rateLimited
        case 431: .headersTooLarge
        case 502: .badGateway
        case 503: .unavailable
        case 504: .upstreamTimeout
        default: status >= 500 ? .internalError : .badRequest
        }
    }

    /// Every code Pier answers with, for documentation and clients.
    public static let all: [ProblemCode] = [
        .badRequest, .validationFailed, .weakPassword, .unsupportedMediaType, .bodyTooLarge, .uriTooLong,
        .headersTooLarge, .lengthRequired, .notFound, .methodNotAllowed, .authenticationRequired, .tokenExpired,
        .tokenInvalid, .sessionRevoked, .accountDeleted, .invalidCredentials, .invalidRefreshToken, .forbidden,
        .emailTaken, .idempotencyKeyReused, .conflict, .rateLimited, .tooManyStreams, .unavailable, .upstreamTimeout, .badGateway,
        .appStoreAPIUnconfigured, .appStoreAPIFailed, .emailUnverified, .invalidEmailToken, .reauthenticationRequired,
        .invalidIdentityToken, .accountDisabled, .addressUnverified, .lastAdmin, .mfaRequired, .invalidMFAToken,
        .invalidCode, .mfaEnrolmentRequired, .enrolmentApprovalRequired, .invalidPasskey, .identityTaken, .invalidMergeToken,
        .attestationRequired, .invalidAttestation, .googlePlayUnconfigured, .googlePlayFailed,
        .productNotOffered, .anonymousAccount, .notAnonymous, .internalError,
    ]
}
