import PierCrypto
import PierHTTP
import PierIdentity
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `/auth/login`, `/auth/refresh`, `/auth/logout`: sessions, their access tokens and rotating
/// refresh tokens.
struct SessionsController: Sendable {
    let useCases: AuthUseCases
    let configuration: AuthConfiguration
    let tokens: TokenIssuer
    let passwords: PasswordChecks
    let devices: DeviceTokens
    /// Logins per client address, successful or not.
    let loginRate: TokenBuckets
    let desk: MailDesk
    let logger: Logger

    func login(_ request: Request, _ context: ServiceRequestContext, _ body: LoginRequest) async throws -> AuthSessionResponse {
        var errors: [Problem.FieldError] = []
        let deviceName = Self.deviceName(body.deviceName, into: &errors)
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        // Every login counts against the client's rate, successful ones too: a client cannot
        // keep the hashing threads busy with its own valid password either.
        try loginRate.takeLogin(request)
        let emailKey = EmailAddress.key(body.email)
        let device = Sessions.Device(name: deviceName, address: request.clientAddress, amr: ["pwd"])
        let refreshToken = tokens.newRefreshToken()
        switch try await useCases.signIns.withPassword(
            emailKey: emailKey, password: body.password, client: request.clientKey,
            deviceKey: devices.device(body.deviceToken, emailKey: emailKey), device: device, refreshToken: refreshToken,
            checks: passwords, requireVerifiedEmail: configuration.requireVerifiedEmail)
        {
        case .signedIn(let user, let session, let noticed):
            if noticed { desk.queued("new-sign-in", link: nil) }
            var response = AuthSessionResponse(
                value: try tokens.session(
                    user, sessionID: session, refreshToken: refreshToken, authenticatedAt: device.signedInAt, amr: device.amr))
            response.value.deviceToken = devices.issue(emailKey: emailKey)
            return response
        case .needsSecondFactor(let user, let challenge):
            logger.info("password right; second factor asked", [("user_id", .string(user.id.text()))])
            throw HTTPError.mfaRequired(challenge)
        case .wrongPassword:
            logger.info("login failed", [])
            throw HTTPError.unauthorized("The email or password is not correct.", code: .invalidCredentials)
        case .wait(let seconds):
            throw HTTPError.tooManyRequests(retryAfter: seconds, "Too many failed logins; try again in \(seconds) s.")
        case .emailUnverified:
            throw HTTPError(
                403, code: .emailUnverified,
                detail: "Confirm your email address first: open the link Pier mailed, or ask for it again.")
        }
    }

    /// `POST /auth/mfa/verify`: the second step of a sign-in that answered `mfa_required`. The
    /// MFA token and a code (authenticator app or recovery code) or a passkey's assertion give the
    /// session; a wrong code 401 `invalid_code`, a passkey refused 401 `invalid_passkey` (five
    /// failures end the token), an unknown or expired token 401 `invalid_mfa_token`. Counted
    /// against the client's login rate like a password.
    func verifySecondFactor(_ request: Request, _ context: ServiceRequestContext, _ body: MFAVerifyRequest) async throws
        -> AuthSessionResponse
    {
        try loginRate.takeLogin(request)
        guard body.mfaToken.utf8.count <= 256 else { throw Self.invalidMFAToken }
        let step: SecondFactorFlows.SecondStep
        switch (body.code, body.passkey) {
        case (let code?, nil):
            guard code.utf8.count <= 64 else { throw HTTPError.unauthorized(Self.wrongCode, code: .invalidCode) }
            step = .code(code)
        case (nil, let passkey?):
            step = .passkey(try PasskeyController.proof(passkey, rp: useCases.passkeys.rp, prefix: "passkey."))
        default:
            throw HTTPError.invalid("code", "is required: a code, or a passkey's assertion in passkey (one of them)")
        }
        let refreshToken = tokens.newRefreshToken()
        switch try await useCases.secondFactors.complete(
            mfaToken: body.mfaToken, with: step, refreshToken: refreshToken, address: request.clientAddress)
        {
        case .signedIn(let user, let sessionID, let device, let noticed):
            if noticed { desk.queued("new-sign-in", link: nil) }
            logger.info("signed in with a second factor", [("user_id", .string(user.id.text()))])
            var response = AuthSessionResponse(
                value: try tokens.session(
                    user, sessionID: sessionID, refreshToken: refreshToken, authenticatedAt: device.signedInAt, amr: device.amr))
            if device.amr.contains("pwd"), let email = user.email {
                response.value.deviceToken = devices.issue(emailKey: EmailAddress.key(email))
            }
            return response
        case .invalidToken:
            throw Self.invalidMFAToken
        case .wrongCode:
            logger.info("second factor refused", [])
            throw HTTPError.unauthorized(Self.wrongCode, code: .invalidCode)
        case .wait(let seconds):
            throw HTTPError.tooManyRequests(retryAfter: seconds, "Too many wrong codes; try again in \(seconds) s.")
        case .passkeyFailed(let failure):
            throw PasskeyController.refusal(failure, prefix: "passkey.", logger: logger)
        case .passkeyNotOffered:
            throw Self.passkeyNotOffered
        }
    }

    /// `POST /auth/mfa/passkey-options {mfaToken}`: a challenge for a passkey of the account whose
    /// sign-in waits, and its passkeys (409 when a passkey cannot complete it: the account has
    /// none, or the first factor was one).
    func secondFactorPasskeyOptions(_ request: Request, _ context: ServiceRequestContext, _ body: MFATokenRequest)
        async throws -> EndpointReply<PasskeyRequestOptions>
    {
        try loginRate.takeLogin(request)
        guard body.mfaToken.utf8.count <= 256 else { throw Self.invalidMFAToken }
        switch try await useCases.secondFactors.passkeyChallenge(mfaToken: body.mfaToken) {
        case .offered(let challenge, let credentials):
            return try PasskeyController.requestOptions(challenge, credentials, rp: useCases.passkeys.rp)
        case .invalidToken: throw Self.invalidMFAToken
        case .passkeyNotOffered: throw Self.passkeyNotOffered
        }
    }

    static let invalidMFAToken = HTTPError.unauthorized(
        "The sign-in waiting for its second factor is unknown or expired; sign in again.", code: .invalidMFAToken)
    static let wrongCode = "The code is not correct, or was used already."
    static let passkeyNotOffered = HTTPError.conflict(
        "A passkey cannot finish this sign-in (the account has none, or signed in with one): use a code.")

    /// A device name as the session list shows it (``Names``); nil when absent or blank.
    static func deviceName(_ name: String?, into errors: inout [Problem.FieldError]) -> String? {
        guard let name = Names.clean(name, field: "deviceName", into: &errors), !name.isEmpty else { return nil }
        return name
    }

    func refresh(_ request: Request, _ context: ServiceRequestContext, _ body: RefreshRequest) async throws -> AuthSessionResponse
    {
        guard body.refreshToken.utf8.count <= 256 else {
            throw HTTPError.unauthorized("The refresh token is not valid.", code: .invalidRefreshToken)
        }
        let hash = PostgresBytes(TokenIssuer.hash(body.refreshToken))
        let successor = tokens.successor(of: body.refreshToken)
        let successorHash = PostgresBytes(TokenIssuer.hash(successor))
        let outcome = try await useCases.signIns.rotate(
            hash, successor: successorHash, graceSeconds: configuration.refreshGraceSeconds, from: request.clientAddress)
        switch outcome {
        case .rotated(let user, let sessionID, let authenticatedAt, let amr):
            return AuthSessionResponse(
                value: try tokens.session(
                    user, sessionID: sessionID, refreshToken: successor, authenticatedAt: authenticatedAt, amr: amr))
        case .reused(let sessionID):
            logger.warning(
                "refresh token reused; session revoked",
                [
                    ("session_id", .string(sessionID.text()))
                ])
            throw HTTPError.unauthorized("The refresh token is not valid.", code: .invalidRefreshToken)
        case .invalid:
            throw HTTPError.unauthorized("The refresh token is not valid.", code: .invalidRefreshToken)
        }
    }

    /// Ends the session of the refresh token and of the access token (usually one and the
    /// same); their access tokens are refused everywhere within a second.
    /// Ends the session of the refresh token, and the caller's when an access token comes too.
    /// The refresh token alone is enough (an app signing out with an expired access token must
    /// not have to refresh first); 204 whether or not it was still valid.
    func logout(_ request: Request, _ context: ServiceRequestContext, _ body: RefreshRequest) async throws -> EndpointReply<
        NoContent
    > {
        guard body.refreshToken.utf8.count <= 256 else { return .noContent() }
        let hash = PostgresBytes(TokenIssuer.hash(body.refreshToken))
        try await useCases.signIns.logout(
            context.principal?.userID, session: context.principal?.sessionID, refreshTokenHash: hash)
        return .noContent()
    }

    /// `GET /auth/sessions`: the caller's live sessions, the current one marked.
    func list(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<ItemList<SessionInfo>> {
        let principal = try context.caller()
        return JSONResponse(
            ItemList(try await useCases.sessions.list(of: principal.userID, current: principal.sessionID)))
    }

    /// `DELETE /auth/sessions/{id}`: one of the caller's sessions ended at once, everywhere.
    func end(_ context: ServiceRequestContext, _ path: PathID) async throws -> EndpointReply<NoContent> {
        let principal = try context.caller()
        let id = path.id
        guard try await useCases.signIns.endSessions(of: principal.userID, only: id, reason: "ended by the user") > 0 else {
            throw HTTPError.notFound("No such session.")
        }
        logger.info("session ended", [("user_id", .string(principal.userID.text())), ("session_id", .string(id.text()))])
        return .noContent()
    }

    /// `POST /auth/logout/all`: every session of the caller, this one included.
    func logoutAll(_ request: Request, _ context: ServiceRequestContext) async throws -> EndpointReply<NoContent> {
        let principal = try context.caller()
        let count = try await useCases.signIns.endSessions(of: principal.userID, only: nil, reason: "logout everywhere")
        logger.info("signed out everywhere", [("user_id", .string(principal.userID.text())), ("sessions", .int(count))])
        return .noContent()
    }
}

extension TokenBuckets {
    /// Takes one of the client's logins (a password, a code, a passkey): 429 when it has none left.
    func takeLogin(_ request: Request) throws {
        let rate = take(request.clientKey)
        guard rate.allowed else {
            throw HTTPError.tooManyRequests(
                retryAfter: rate.retryAfter, "Too many logins from your network; try again in \(rate.retryAfter) s.")
        }
    }
}
