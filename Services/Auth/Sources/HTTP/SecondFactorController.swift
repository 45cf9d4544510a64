import PierHTTP
import PierIdentity
import PierModels
import PierPostgres
import PierRuntime
import PierService

/// `/auth/mfa…`: the caller's second factors. Setting up an authenticator app, new recovery codes
/// and removal are sensitive actions (``Reauthentication``); enrolment needs a proven address
/// (one registered by someone else before its owner came must not get a factor that would lock
/// the owner out), and a team member's first second factor needs approval
/// (``SecondFactorFlows/mayEnrol(_:session:)``).
struct SecondFactorController: Sendable {
    let useCases: AuthUseCases
    let reauthentication: Reauthentication
    let desk: MailDesk
    let logger: Logger

    /// `GET /auth/mfa`.
    func status(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<MFAStatus> {
        JSONResponse(try await SecondFactors(useCases.database).status(of: try context.caller().userID))
    }

    /// `POST /auth/mfa/totp`: a new secret for the authenticator app (its URI and QR code), to
    /// confirm with a code.
    func offer(_ request: Request, _ context: ServiceRequestContext, _ body: ReauthenticationRequest?) async throws
        -> EndpointReply<TOTPEnrolment>
    {
        let principal = try context.caller()
        try await reauthentication.require(principal, body, request: request)
        let user = try await caller(principal)
        if user.isAnonymous { throw HTTPError.anonymousAccount("Two-step sign-in") }
        guard user.emailVerified else {
            throw HTTPError(
                403, code: .emailUnverified, detail: "Confirm your email address before setting up two-step sign-in.")
        }
        try await Self.requireApproval(user, principal, useCases.secondFactors, desk: desk, logger: logger)
        switch try await useCases.secondFactors.offer(to: user) {
        case .offered(let enrolment):
            return try .json(enrolment, status: 201, headers: ["Cache-Control": "no-store"])
        case .alreadyEnabled:
            throw HTTPError.conflict("An authenticator app is set up already: remove it first to set up another.")
        }
    }

    /// `POST /auth/mfa/totp/confirm {code}`: the app's first code turns two-step sign-in on and
    /// answers the ten recovery codes, shown this once.
    func confirm(_ request: Request, _ context: ServiceRequestContext, _ body: MFACodeRequest) async throws -> EndpointReply<
        RecoveryCodes
    > {
        let principal = try context.caller()
        let user = try await caller(principal)
        try await Self.requireApproval(user, principal, useCases.secondFactors, desk: desk, logger: logger)
        switch try await useCases.secondFactors.confirm(user, code: body.code, session: principal.sessionID) {
        case .confirmed(let codes):
            logger.info("second factor enabled", [("user_id", .string(user.id.text()))])
            return try .json(RecoveryCodes(codes: codes), headers: ["Cache-Control": "no-store"])
        case .nothingOffered:
            throw HTTPError.conflict("No authenticator app is being set up: ask for a secret first (POST /auth/mfa/totp).")
        case .alreadyEnabled:
            throw HTTPError.conflict("The authenticator app is set up already.")
        case .wrongCode:
            throw HTTPError.invalid(
                [.init(field: "code", message: "is not the app's current code: check the phone's clock and try the next one")],
                code: .invalidCode)
        case .wait(let seconds):
            throw HTTPError.tooManyRequests(retryAfter: seconds, "Too many wrong codes; try again in \(seconds) s.")
        }
    }

    /// `POST /auth/mfa/recovery-codes`: ten new recovery codes; the old ones stop working.
    func replaceRecoveryCodes(_ request: Request, _ context: ServiceRequestContext, _ body: ReauthenticationRequest?)
        async throws -> EndpointReply<RecoveryCodes>
    {
        let principal = try context.caller()
        try await reauthentication.require(principal, body, request: request)
        guard let codes = try await useCases.secondFactors.replaceRecoveryCodes(of: principal.userID) else {
            throw HTTPError.notFound("Two-step sign-in is off: there are no recovery codes to replace.")
        }
        logger.info("recovery codes replaced", [("user_id", .string(principal.userID.text()))])
        return try .json(RecoveryCodes(codes: codes), headers: ["Cache-Control": "no-store"])
    }

    /// `DELETE /auth/mfa/totp`: two-step sign-in off (the app and the recovery codes removed).
    func remove(_ request: Request, _ context: ServiceRequestContext, _ body: ReauthenticationRequest?) async throws
        -> EndpointReply<NoContent>
    {
        let principal = try context.caller()
        try await reauthentication.require(principal, body, request: request)
        guard try await useCases.secondFactors.remove(try await caller(principal)) else {
            throw HTTPError.notFound("Two-step sign-in is off already.")
        }
        logger.info("second factor removed", [("user_id", .string(principal.userID.text()))])
        return .noContent()
    }

    /// `GET /auth/mfa/approve?token=…`: the page behind the mailed approval link, whose form
    /// POSTs the token (a mail scanner that prefetches the link approves nothing).
    func approvalPage(_ request: Request, _ context: ServiceRequestContext, _ link: TokenQuery) async throws
        -> EndpointReply<HTMLPage>
    {
        .page(
            desk.page(
                "Approve two-step sign-in",
                "Approve setting up two-step sign-in for your team account, on the device that asked. Then go back to it and set it up.",
                form: (
                    action: AuthAPI.approveEnrolment.path, token: link.token ?? "", password: false, button: "Approve"
                )))
    }

    /// `POST /auth/mfa/approve {token}` (JSON → 204; a form → a page): the mailed link spent;
    /// the session that asked may set up its first second factor for 30 minutes.
    func approve(_ request: Request, _ context: ServiceRequestContext, _ body: EmailTokenRequest) async throws -> EndpointReply<
        NoContent
    > {
        guard let hash = MailDesk.hash(body.token), let user = try await useCases.secondFactors.approve(link: hash) else {
            if request.isForm {
                return .page(
                    desk.page(
                        "This link no longer works",
                        "It was used already, has expired, or the session that asked was signed out: ask again from the console.",
                        status: 410))
            }
            throw HTTPError(
                422, code: .invalidEmailToken, detail: "The link was used already or has expired; ask again.",
                errors: [.init(field: "token", message: "is not a live approval link")])
        }
        logger.info("second factor set-up approved by mail", [("user_id", .string(user.text()))])
        if request.isForm {
            return .page(
                desk.page(
                    "Approved", "Go back to where you asked and set up two-step sign-in within 30 minutes."))
        }
        return .noContent()
    }

    /// Throws 403 `enrolment_approval_required` while `user`'s first second factor waits for
    /// approval (a link mailed now, or lately).
    static func requireApproval(
        _ user: User, _ principal: Principal, _ flows: SecondFactorFlows, desk: MailDesk, logger: Logger
    ) async throws {
        guard case .awaitingApproval(let link) = try await flows.mayEnrol(user, session: principal.sessionID) else { return }
        if let link {
            desk.queued("approve-enrolment", link: link)
            logger.info("second factor set-up asked; approval mailed", [("user_id", .string(user.id.text()))])
        }
        throw HTTPError(
            403, code: .enrolmentApprovalRequired,
            detail:
                "A team account's first two-step sign-in needs approval: open the link mailed to \(user.handle) (or ask an admin to approve), then try again."
        )
    }

    private func caller(_ principal: Principal) async throws -> User {
        guard let user = try await useCases.users.user(principal.userID) else {
            throw HTTPError.unauthorized("The account no longer exists.", code: .accountDeleted)
        }
        return user
    }
}
