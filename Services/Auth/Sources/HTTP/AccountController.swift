import PierCrypto
import PierHTTP
import PierIdentity
import PierLive
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `/auth/register`, `/auth/me`, `/auth/password`: the account itself.
struct AccountController: Sendable {
    let useCases: AuthUseCases
    let tokens: TokenIssuer
    let passwords: PasswordChecks
    let devices: DeviceTokens
    let policy: PasswordPolicy
    let desk: MailDesk
    let reauthentication: Reauthentication
    let live: LiveFeed
    let logger: Logger

    func register(_ request: Request, _ context: ServiceRequestContext, _ body: RegisterRequest) async throws
        -> AuthSessionResponse
    {
        var errors: [Problem.FieldError] = []
        let email = EmailAddress(body.email)
        if email == nil { errors.append(.init(field: "email", message: "must be an email address such as name@example.com")) }
        errors += policy.problems(body.password, field: "password", email: email?.address)
        let displayName = Names.clean(body.displayName, field: "displayName", into: &errors)
        let deviceName = SessionsController.deviceName(body.deviceName, into: &errors)
        guard let email, errors.isEmpty else { throw HTTPError.invalid(errors, code: PasswordPolicy.code(of: errors)) }
        let hash = try await passwords.hashing(request.clientKey) { try await passwords.hasher.hash(body.password) }
        let refreshToken = tokens.newRefreshToken()
        let verification = desk.verification(email.address)
        let device = Sessions.Device(name: deviceName, address: request.clientAddress, amr: ["pwd"])
        let registered = try await useCases.accounts.register(
            UUID.random(), email: email, passwordHash: hash, displayName: displayName.flatMap { $0.isEmpty ? nil : $0 },
            refreshToken: refreshToken, device: device, verification: verification)
        guard case .created(let user, let sessionID) = registered else {
            throw HTTPError.conflict("An account with this email already exists.", code: .emailTaken)
        }
        desk.queued(verification.kind, link: verification.link)
        logger.info("account registered", [("user_id", .string(user.id.text()))])
        var session = try tokens.session(
            user, sessionID: sessionID, refreshToken: refreshToken, authenticatedAt: device.signedInAt, amr: device.amr)
        session.deviceToken = devices.issue(emailKey: email.key)
        session.verificationSentTo = email.address
        return AuthSessionResponse(value: session, status: 201)
    }

    func me(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<User> {
        let principal = try context.caller()
        return JSONResponse(try await user(principal.userID))
    }

    /// `GET /auth/me/events`: the account as server-sent events (`event: user`, the user as
    /// `GET /auth/me` gives it), now and whenever it changes (name, address, verification,
    /// role, language, disabled), whichever flow, replica or tool changed it; the stream ends
    /// when its session does (a sign-out, a password change elsewhere, a disable) or the account
    /// is deleted.
    func events(_ request: Request, _ context: ServiceRequestContext, _ stream: EventStreamRequest) throws -> Response {
        try ServerSentEvents.response(
            request, resumingAfter: stream.lastEventID, feed: live, caller: try context.caller(), event: "user")
    }

    func changePassword(_ request: Request, _ context: ServiceRequestContext, _ body: PasswordChangeRequest) async throws
        -> EndpointReply<NoContent>
    {
        let principal = try context.caller()
        guard let account = try await useCases.users.user(principal.userID) else {
            throw HTTPError.unauthorized("The account no longer exists.", code: .accountDeleted)
        }
        guard let email = account.email else {
            if account.isAnonymous { throw HTTPError.anonymousAccount("A password") }
            throw HTTPError(
                409, code: .conflict,
                detail: "The account has no address: add one (POST /auth/email/change), then set a password through it.")
        }
        let emailKey = EmailAddress.key(email)
        // The same guards as login: a stolen access token is no way to guess passwords faster.
        let (user, hash) = try await passwords.hashing(request.clientKey) { () async throws -> (User, String) in
            switch try await passwords.check(body.currentPassword, field: "currentPassword", emailKey: emailKey) {
            case .wait(let seconds):
                throw HTTPError.tooManyRequests(retryAfter: seconds, "Too many failed attempts; try again in \(seconds) s.")
            case .wrong:
                throw HTTPError.invalid("currentPassword", "is not correct")
            case .right(let user, _):
                let problems = policy.problems(body.newPassword, field: "newPassword", email: user.email)
                guard problems.isEmpty else { throw HTTPError.invalid(problems, code: .weakPassword) }
                return (user, try await passwords.hasher.hash(body.newPassword))
            }
        }
        try await useCases.accounts.changePassword(of: user.id, email: email, to: hash, keeping: principal.sessionID)
        desk.queued("password-changed", link: nil)
        logger.info("password changed; other sessions revoked", [("user_id", .string(user.id.text()))])
        return .noContent()
    }

    /// `DELETE /auth/me [{password}]`: needs the password, or a sign-in within 5 minutes.
    func deleteAccount(_ request: Request, _ context: ServiceRequestContext, _ body: ReauthenticationRequest?) async throws
        -> EndpointReply<NoContent>
    {
        let principal = try context.caller()
        try await reauthentication.require(principal, body, request: request)
        let deleted: Bool
        do {
            deleted = try await useCases.accounts.delete(principal.userID)
        } catch is StaffActions.LastAdmin {
            throw HTTPError.conflict(
                "This is the last admin account: make another member of the team an admin first, then delete this one.",
                code: .lastAdmin)
        }
        guard deleted else { throw HTTPError.unauthorized("The account no longer exists.", code: .accountDeleted) }
        desk.queued("account-deleted", link: nil)
        logger.info("account deleted", [("user_id", .string(principal.userID.text()))])
        return .noContent()
    }

    /// `POST /auth/reauthenticate {password | code | passkey}`: the password again (the login's
    /// guards apply), a code, or a passkey, answered with a new access token of the same session
    /// whose `auth_time` is now; later refreshes carry it too.
    func reauthenticate(_ request: Request, _ context: ServiceRequestContext, _ body: ReauthenticationRequest) async throws
        -> EndpointReply<StepUpToken>
    {
        let principal = try context.caller()
        // An anonymous account has nothing to give again (its session is all that proves it, and
        // what asks for a recent sign-in takes that session as it is): say so, rather than
        // answer as if the session had ended.
        if principal.isAnonymous, try await useCases.users.isAnonymous(principal.userID) {
            throw HTTPError(
                409, code: .anonymousAccount,
                detail: "An anonymous account has no password, code or passkey to confirm with, and needs none: "
                    + "what asks for a recent sign-in accepts its session as it is. Keep the account first to have one.")
        }
        guard body.password != nil || body.code != nil || body.passkey != nil, let session = principal.sessionID else {
            throw HTTPError.invalid("password", "is required (or code on an account with a second factor, or passkey)")
        }
        // A password proves nothing more on an account with a second factor: say what does,
        // rather than let a recent sign-in stand in and answer as if the session had ended.
        if body.code == nil, body.passkey == nil, try await SecondFactors(useCases.database).isEnrolled(principal.userID) {
            throw Reauthentication.refusal(
                "This account has two-step sign-in: confirm with a code from your authenticator app, a recovery code or a passkey."
            )
        }
        guard let proven = try await reauthentication.require(principal, body, request: request) else {
            throw HTTPError.unauthorized("The session has ended; sign in again.", code: .sessionRevoked)
        }
        guard let user = try await useCases.users.user(principal.userID) else {
            throw HTTPError.unauthorized("The account no longer exists.", code: .accountDeleted)
        }
        let token = try tokens.accessToken(
            userID: user.id, role: user.role, sessionID: session, emailVerified: user.emailVerified,
            authenticatedAt: proven.at, amr: proven.amr, name: user.displayName)
        return try .json(StepUpToken(accessToken: token, expiresIn: tokens.accessTTL), headers: ["Cache-Control": "no-store"])
    }

    /// `PATCH /auth/me {displayName?, locale?}`: an empty string clears a field.
    func updateProfile(_ request: Request, _ context: ServiceRequestContext, _ body: ProfileChange) async throws
        -> JSONResponse<User>
    {
        let principal = try context.caller()
        var errors: [Problem.FieldError] = []
        let displayName = Names.clean(body.displayName, field: "displayName", into: &errors)
        if let locale = body.locale, !locale.isEmpty, !Self.isLanguageTag(locale) {
            errors.append(.init(field: "locale", message: "must be a BCP 47 language tag such as en, fr-CA or zh-Hant-TW"))
        }
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        guard
            let user = try await useCases.users.updateProfile(of: principal.userID, displayName: displayName, locale: body.locale)
        else { throw HTTPError.unauthorized("The account no longer exists.", code: .accountDeleted) }
        return JSONResponse(user)
    }

    /// The shape of a BCP 47 tag: subtags of 1–8 letters or digits joined by `-`, the first
    /// letters only (2–8), at most 35 characters in all.
    static func isLanguageTag(_ text: String) -> Bool {
        let subtags = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.count <= 35, let first = subtags.first, (2...8).contains(first.count),
            first.allSatisfy({ $0.isASCII && $0.isLetter })
        else { return false }
        return subtags.dropFirst().allSatisfy {
            (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        }
    }

    private func user(_ id: UUID) async throws -> User {
        guard let user = try await useCases.users.user(id) else {
            throw HTTPError.unauthorized("The account no longer exists.", code: .accountDeleted)
        }
        return user
    }
}
