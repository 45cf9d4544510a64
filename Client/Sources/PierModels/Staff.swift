#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What an account may do besides using the app: `user` (nothing more), `support` (read,
/// triage, reply, help a user: end sessions, send mails, disable, grant access) or `admin`
/// (everything, with plans, deletion and roles).
public enum AccountRole: OpenVocabulary {
    case user, support, admin
    /// A role a newer server has: treated as no more than `user` here.
    case unknown(String)

    public static let allCases: [Self] = [.user, .support, .admin]

    public var rawValue: String {
        switch self {
        case .user: "user"
        case .support: "support"
        case .admin: "admin"
        case .unknown(let value): value
        }
    }

    /// One of the team's roles: may use the console and the staff routes.
    public var isStaff: Bool { self == .support || self == .admin }
}

/// `PUT /auth/users/{id}/role` (admins): the account's new role. The admin confirms with their
/// password unless they signed in within the last 5 minutes.
public struct RoleChange: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case role, password, code, passkey }
    public static let required = [["role"]]
    public var role: String
    public var password: String?
    /// On an account with a second factor: a code instead of the password.
    public var code: String?
    /// Or an assertion by one of the admin's passkeys.
    public var passkey: PasskeyAssertion?

    public init(role: AccountRole, password: String? = nil, code: String? = nil, passkey: PasskeyAssertion? = nil) {
        self.role = role.rawValue
        self.password = password
        self.code = code
        self.passkey = passkey
    }
    /// The confirmation it carries.
    public var confirmation: ReauthenticationRequest { .init(password: password, code: code, passkey: passkey) }
}

/// What a team member (or an operator on the server) did, as the audit log records it.
public enum AuditAction: OpenVocabulary {
    case feedbackUpdated, feedbackReplied
    case grantCreated, grantRevoked
    case planCreated, planUpdated, planDeleted
    case userAdminPasswordSet, userCreatedAdmin, userDeleted, userDisabled, userEnabled, userExported, userMailSent, userMerged
    case userRoleChanged, userSecondFactorApproved, userSecondFactorRemoved, userSessionsEnded
    case webhookReplayed
    case unknown(String)

    public static let allCases: [Self] = [
        .feedbackUpdated, .feedbackReplied, .grantCreated, .grantRevoked, .planCreated, .planUpdated, .planDeleted,
        .userAdminPasswordSet, .userCreatedAdmin, .userDeleted, .userDisabled, .userEnabled, .userExported,
        .userMailSent, .userMerged, .userRoleChanged, .userSecondFactorApproved, .userSecondFactorRemoved, .userSessionsEnded,
        .webhookReplayed,
    ]

    public var rawValue: String {
        switch self {
        case .feedbackUpdated: "feedback.updated"
        case .feedbackReplied: "feedback.replied"
        case .grantCreated: "grant.created"
        case .grantRevoked: "grant.revoked"
        case .planCreated: "plan.created"
        case .planUpdated: "plan.updated"
        case .planDeleted: "plan.deleted"
        case .userAdminPasswordSet: "user.admin_password_set"
        case .userCreatedAdmin: "user.created_admin"
        case .userDeleted: "user.deleted"
        case .userDisabled: "user.disabled"
        case .userEnabled: "user.enabled"
        case .userExported: "user.exported"
        case .userMailSent: "user.mail_sent"
        case .userMerged: "user.merged"
        case .userRoleChanged: "user.role_changed"
        case .userSecondFactorApproved: "user.second_factor_approved"
        case .userSecondFactorRemoved: "user.second_factor_removed"
        case .userSessionsEnded: "user.sessions_ended"
        case .webhookReplayed: "webhook.replayed"
        case .unknown(let value): value
        }
    }
}

/// One staff action as the audit log keeps it: who (the account and the role they had), what,
/// on what, when, and the values before and after. Entries are never changed or removed.
public struct AuditEntry: Codable, Sendable, Equatable {
    public var id: Int64
    /// The service that recorded it (`auth`, `feedback`, `subscriptions`).
    public var service: String
    public var at: Date
    /// The staff account that acted; nil for an operator's command on the server.
    public var actorId: UUID?
    /// The actor's role when they acted (`operator` for a command on the server).
    public var actorRole: String
    /// What was done, as `noun.verb` (`user.role_changed`, `feedback.updated`, `grant.created`).
    public var action: AuditAction
    /// What it was done to: its kind (`user`, `feedback`, `plan`, `grant`) and id.
    public var targetType: String
    public var targetId: String
    /// The account the action concerns, where there is one (exported with its data).
    public var subjectId: UUID?
    public var before: JSONValue?
    public var after: JSONValue?
    /// The request that did it (its `X-Request-ID`).
    public var requestId: String?

    public init(
        id: Int64, service: String, at: Date, actorId: UUID?, actorRole: String, action: AuditAction, targetType: String,
        targetId: String, subjectId: UUID?, before: JSONValue?, after: JSONValue?, requestId: String?
    ) {
        self.id = id
        self.service = service
        self.at = at
        self.actorId = actorId
        self.actorRole = actorRole
        self.action = action
        self.targetType = targetType
        self.targetId = targetId
        self.subjectId = subjectId
        self.before = before
        self.after = after
        self.requestId = requestId
    }
}

/// `GET /{service}/audit`: entries newest first; `next` is the `before` of the following page.
public struct AuditList: Codable, Sendable, Equatable {
    public var items: [AuditEntry]
    public var next: Int64?

    public init(items: [AuditEntry], next: Int64?) {
        self.items = items
        self.next = next
    }
}

/// `POST /auth/users/{id}/mail` (staff): a mail to the account's address, `password-reset` or
/// `verification`.
public struct StaffMailRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case mail }
    public static let required = [["mail"]]
    public var mail: String
    public init(mail: String) { self.mail = mail }
}

/// `POST /auth/users/{id}/mfa/approve` (admins): the team member's session (one of
/// `awaitingApproval`) that may set up its first second factor.
public struct EnrolmentApproval: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case sessionId }
    public static let required = [["sessionId"]]
    public var sessionId: UUID
    public init(sessionId: UUID) { self.sessionId = sessionId }
}

/// What ending sessions ended.
public struct SessionsEnded: Codable, Sendable, Equatable {
    public var ended: Int
    public init(ended: Int) { self.ended = ended }
}

/// `POST /auth/reauthenticate {password}`: a fresh access token of the same session whose
/// `auth_time` is now, for the actions that ask for a recent sign-in (RFC 9470's step-up).
public struct StepUpToken: Codable, Sendable, Equatable {
    public var accessToken: String
    public var tokenType: String
    public var expiresIn: Int

    public init(accessToken: String, expiresIn: Int) {
        self.accessToken = accessToken
        self.tokenType = "Bearer"
        self.expiresIn = expiresIn
    }
}

/// `GET /auth/users/stats` (staff): accounts created each UTC day of a range, and in all.
public struct SignUpStats: Codable, Sendable, Equatable {
    public var days: [Day]
    /// Every account now.
    public var total: Int

    public struct Day: Codable, Sendable, Equatable {
        /// `YYYY-MM-DD`, UTC.
        public var day: String
        public var signUps: Int
        /// Of the sign-ups, those that began anonymous (`POST /auth/anonymous`).
        public var anonymous: Int
        /// Anonymous accounts (of any day) kept this day: given an address and password, an
        /// identity or a passkey.
        public var kept: Int
        /// Anonymous accounts (of any day) merged this day into an account that had the address
        /// or identity they asked for (counted among the sign-ups of the day they began).
        public var merged: Int

        public init(day: String, signUps: Int, anonymous: Int = 0, kept: Int = 0, merged: Int = 0) {
            self.day = day
            self.signUps = signUps
            self.anonymous = anonymous
            self.kept = kept
            self.merged = merged
        }
    }

    public init(days: [Day], total: Int) {
        self.days = days
        self.total = total
    }
}
