import PierCrypto
import PierHTTP
import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The caller of a request, from a verified access token.
public struct Principal: Sendable, Equatable {
    public let userID: UUID
    public let role: String
    /// The session (refresh-token family) the token was issued for.
    public let sessionID: UUID?
    /// When the user last proved who they are in this session (`auth_time`: a password at
    /// sign-in), in seconds since 1970; nil for tokens that do not say.
    public var authenticatedAt: Int? = nil
    /// When the token expires, in seconds since 1970 (what is held open on it, a live stream,
    /// ends then); nil for principals not made from a token.
    public var expiresAt: Int? = nil
    /// How the session's sign-in was proven (RFC 8176 `amr`: `pwd`, `otp`, `mfa`).
    public var amr: [String] = []
    /// The account's role asks for a second factor this session does not have (the token's
    /// `mfa_enrolment_required`): the team's routes answer 403 `mfa_enrolment_required`.
    public var mfaEnrolmentRequired = false
    /// The account's display name when the token was issued (its `name` claim), for showing
    /// people by: a plugin needs no access to auth's tables for it. Nil when it has none, and for
    /// tokens issued before it was told; a change reaches the next token (within
    /// `PIER_AUTH_ACCESS_TTL_S`).
    public var name: String? = nil

    /// Whether a second factor proved this session's sign-in (or its last re-authentication).
    public var usedSecondFactor: Bool { amr.contains("mfa") }
    /// Whether the session belongs to an anonymous account (`anon` in the token's `amr`): what
    /// such an account sends counts as anonymous wherever anonymity matters (moderation, App
    /// Attest, quotas). A session kept when its account becomes permanent loses the mark at its
    /// next refresh.
    public var isAnonymous: Bool { amr.contains("anon") }

    public var isAdmin: Bool { role == AccountRole.admin.rawValue }
    /// Admin or support: one of the team.
    public var isStaff: Bool { AccountRole(rawValue: role)?.isStaff ?? false }

    /// How recent a sign-in the sensitive actions ask for, in seconds.
    public static let recentSignIn = 300

    /// Refuses (401 `reauthentication_required`, the step-up challenge of RFC 9470) unless the
    /// caller signed in, or gave the password again (`POST /auth/reauthenticate`), within
    /// ``recentSignIn`` seconds.
    public func requireRecentSignIn(_ detail: String = "Confirm with your password (or sign in again) to do this.")
        throws(HTTPError)
    {
        let now = Int(Date().timeIntervalSince1970)
        guard let at = authenticatedAt, now - at <= Self.recentSignIn else { throw .reauthenticationRequired(detail) }
    }
}

extension HTTPError {
    /// 401 `reauthentication_required` with its `WWW-Authenticate` challenge.
    public static func reauthenticationRequired(_ detail: String) -> HTTPError {
        HTTPError(
            401, code: .reauthenticationRequired, detail: detail,
            headers: [
                "WWW-Authenticate":
                    "Bearer error=\"insufficient_user_authentication\", error_description=\"\(detail)\", max_age=\(Principal.recentSignIn)"
            ])
    }
}

/// Verifies bearer tokens (ES256, keys from the auth service's JWKS or a key file) and exposes
/// the caller to handlers.
public struct Authenticator: Sendable {
    public let verifier: AccessTokenVerifier
    /// Tokens revoked before they expire (logouts, deleted accounts); nil where there is no
    /// database to learn them from (a gateway that only proxies: the services behind check).
    public let revocations: RevocationList?

    public init(verifier: AccessTokenVerifier, revocations: RevocationList? = nil) {
        self.verifier = verifier
        self.revocations = revocations
    }

    /// The same verifier, with `revocations` checked.
    public func checking(_ revocations: RevocationList?) -> Authenticator {
        Authenticator(verifier: verifier, revocations: revocations)
    }

    /// The caller, or 401 with a problem that says why in general terms.
    public func principal(_ request: Request) async throws(HTTPError) -> Principal {
        guard let token = request.bearerToken else { throw .unauthorized() }
        let claims: AccessClaims
        do {
            claims = try await verifier.verify(token)
        } catch .keysUnavailable {
            throw .unavailable(retryAfter: 2, "The token could not be checked right now.")
        } catch .expired {
            throw .unauthorized("The access token has expired; refresh it.", code: .tokenExpired)
        } catch {
            throw .unauthorized("The access token is not valid.", code: .tokenInvalid)
        }
        switch await revocations?.currentVerdict(for: claims) ?? .valid {
        case .valid: break
        case .revoked: throw .unauthorized("The session has ended; sign in again.", code: .sessionRevoked)
        case .unknown: throw .unavailable(retryAfter: 2, "Whether the token was revoked cannot be checked right now.")
        }
        guard let userID = UUID(text: claims.sub) else {
            throw .unauthorized("The access token is not valid.", code: .tokenInvalid)
        }
        return Principal(
            userID: userID, role: claims.role, sessionID: claims.sid.flatMap { UUID(text: $0) }, authenticatedAt: claims.authTime,
            expiresAt: claims.exp, amr: claims.amr ?? [], mfaEnrolmentRequired: claims.mfaEnrolmentRequired ?? false,
            name: claims.name)
    }

    /// The caller when a bearer token is present; nil for anonymous requests. A present but
    /// invalid token is still a 401, never silently anonymous.
    public func optionalPrincipal(_ request: Request) async throws(HTTPError) -> Principal? {
        guard request.headers["Authorization"] != nil else { return nil }
        return try await principal(request)
    }

    /// The caller, who must be an admin (403 otherwise).
    public func admin(_ request: Request) async throws(HTTPError) -> Principal {
        try Self.admin(try await principal(request))
    }

    /// The caller, who must be one of the team: support or admin (403 otherwise).
    public func staff(_ request: Request) async throws(HTTPError) -> Principal {
        try Self.staff(try await principal(request))
    }

    static func admin(_ principal: Principal) throws(HTTPError) -> Principal {
        guard principal.isAdmin else { throw .forbidden("This needs the admin role.", missingRole: true) }
        return try enrolled(principal)
    }

    static func staff(_ principal: Principal) throws(HTTPError) -> Principal {
        guard principal.isStaff else { throw .forbidden("This needs the support or admin role.", missingRole: true) }
        return try enrolled(principal)
    }

    /// The team's routes answer only sessions that meet the role's second-factor rule.
    static func enrolled(_ principal: Principal) throws(HTTPError) -> Principal {
        guard !principal.mfaEnrolmentRequired else {
            throw .forbidden(
                "Your role needs a second factor: enrol an authenticator app (POST /auth/mfa/totp), then sign in with it.",
                code: .mfaEnrolmentRequired)
        }
        return principal
    }
}

/// A request context that carries the caller: what ``Authentication`` fills in for the
/// handlers behind it. Handlers read ``caller()`` or ``admin()``, never the token.
public protocol AuthenticatedContext: RequestContext {
    var principal: Principal? { get set }
}

extension AuthenticatedContext {
    /// The signed-in caller (401 when the route's middleware let an anonymous request through).
    public func caller() throws(HTTPError) -> Principal {
        guard let principal else { throw .unauthorized() }
        return principal
    }

    /// The caller, who must be an admin (401 anonymous, 403 otherwise).
    public func admin() throws(HTTPError) -> Principal { try Authenticator.admin(try caller()) }

    /// The caller, who must be support or admin (401 anonymous, 403 otherwise).
    public func staff() throws(HTTPError) -> Principal { try Authenticator.staff(try caller()) }
}

/// The request context of Pier's services: the caller, when there is one.
public struct ServiceRequestContext: AuthenticatedContext {
    public let source: RequestSource
    public var principal: Principal?
    public init(source: RequestSource) { self.source = source }
}

/// Verifies the bearer token of every request of a route group and puts the caller in the
/// context: `.required` answers 401 without a valid token, `.staff` also 403 without a team role
/// (support or admin), `.admin` 403 without the admin role, `.optional` lets anonymous requests through (a present but invalid token is still a
/// 401, never silently anonymous).
public struct Authentication<Context: AuthenticatedContext>: RouterMiddleware {
    public enum Requirement: Sendable {
        case optional, required, staff, admin
    }

    let authenticator: Authenticator
    let requirement: Requirement
    let applies: @Sendable (Request, Context) -> Bool

    /// - Parameter when: the requests it applies to (others pass untouched, anonymous): an
    ///   admin-only view of a public resource (`?all=true`).
    public init(
        _ authenticator: Authenticator, _ requirement: Requirement, context: Context.Type = Context.self,
        when applies: @escaping @Sendable (Request, Context) -> Bool = { _, _ in true }
    ) {
        self.authenticator = authenticator
        self.requirement = requirement
        self.applies = applies
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard applies(request, context) else { return try await next(request, context) }
        var context = context
        switch requirement {
        case .optional: context.principal = try await authenticator.optionalPrincipal(request)
        case .required: context.principal = try await authenticator.principal(request)
        case .staff: context.principal = try await authenticator.staff(request)
        case .admin: context.principal = try await authenticator.admin(request)
        }
        return try await next(request, context)
    }
}
