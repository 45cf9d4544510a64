#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `POST /auth/mfa/verify`: the second step of a sign-in that answered `mfa_required`, with a
/// code or a passkey.
public struct MFAVerifyRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case mfaToken, code, passkey }
    public static let required = [["mfaToken"]]
    /// The problem's `mfaToken`.
    public var mfaToken: String
    /// A code from the authenticator app (six digits) or one of the recovery codes.
    public var code: String?
    /// Or an assertion by one of the account's passkeys, over the challenge of
    /// `POST /auth/mfa/passkey-options` (when the problem's `factors` names `passkey`).
    public var passkey: PasskeyAssertion?
    public init(mfaToken: String, code: String) {
        self.mfaToken = mfaToken
        self.code = code
    }
    public init(mfaToken: String, passkey: PasskeyAssertion) {
        self.mfaToken = mfaToken
        self.passkey = passkey
    }
}

/// `POST /auth/mfa/passkey-options`: the sign-in waiting for its second factor.
public struct MFATokenRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case mfaToken }
    public static let required = [["mfaToken"]]
    public var mfaToken: String
    public init(mfaToken: String) { self.mfaToken = mfaToken }
}

/// `POST /auth/mfa/totp/confirm`: the first code of the authenticator app just set up.
public struct MFACodeRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case code }
    public static let required = [["code"]]
    public var code: String
    public init(code: String) { self.code = code }
}

/// `POST /auth/mfa/totp`: a new authenticator-app secret to confirm with a code. Until it is
/// confirmed nothing changes at sign-in.
public struct TOTPEnrolment: Codable, Sendable, Equatable {
    /// The shared secret in Base32, for typing into the app.
    public var secret: String
    /// The `otpauth://totp/…` URI that authenticator apps read (as a QR code, or opened).
    public var uri: String
    /// The URI as a QR code, an SVG image.
    public var qrCode: String
    public init(secret: String, uri: String, qrCode: String) {
        self.secret = secret
        self.uri = uri
        self.qrCode = qrCode
    }
}

/// Ten single-use recovery codes, shown once: each completes one sign-in without the app.
public struct RecoveryCodes: Codable, Sendable, Equatable {
    public var codes: [String]
    public init(codes: [String]) { self.codes = codes }
}

/// `GET /auth/mfa`: the caller's second factors.
public struct MFAStatus: Codable, Sendable, Equatable {
    /// When the authenticator app was confirmed; nil without one.
    public var totpEnabledAt: Date?
    /// Recovery codes not used yet.
    public var recoveryCodesLeft: Int
    /// To the team (`GET /auth/users/{id}/mfa`): the member's sessions that ask to set up their
    /// first second factor and wait for approval (`POST /auth/users/{id}/mfa/approve`).
    public var awaitingApproval: [EnrolmentAsk]?
    public init(totpEnabledAt: Date?, recoveryCodesLeft: Int, awaitingApproval: [EnrolmentAsk]? = nil) {
        self.totpEnabledAt = totpEnabledAt
        self.recoveryCodesLeft = recoveryCodesLeft
        self.awaitingApproval = awaitingApproval
    }
}

/// A team member's session that asked to set up a first second factor: approved by the link
/// mailed to the member, or by an admin.
public struct EnrolmentAsk: Codable, Sendable, Equatable {
    /// The session that asked (what an admin approves).
    public var sessionId: UUID
    public var askedAt: Date
    /// The device the session signed in from, as its app named it.
    public var deviceName: String?
    /// The client address the session signed in from.
    public var address: String?
    public init(sessionId: UUID, askedAt: Date, deviceName: String?, address: String?) {
        self.sessionId = sessionId
        self.askedAt = askedAt
        self.deviceName = deviceName
        self.address = address
    }
}
