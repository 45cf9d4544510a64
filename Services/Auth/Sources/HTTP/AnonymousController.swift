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

/// `/auth/anonymous`: starting without signing up, and keeping the account with an address and
/// a password. (Sign in with Apple or OpenID Connect sent with an anonymous account's bearer
/// token, and a passkey registered by it, make it permanent too: ``IdentityController``,
/// ``PasskeyFlows``.)
struct AnonymousController: Sendable {
    let useCases: AuthUseCases
    let tokens: TokenIssuer
    let passwords: PasswordChecks
    let policy: PasswordPolicy
    let desk: MailDesk
    let quota: Accounts.AnonymousQuota
    let attest: AppAttestGate
    let logger: Logger

    /// `POST /auth/anonymous {installationId, deviceName?}` → 201 and the session.
    func signIn(_ request: Request, _ context: ServiceRequestContext, _ body: AnonymousSignInRequest) async throws
        -> AuthSessionResponse
    {
        var errors: [Problem.FieldError] = []
        let installation = body.installationId
        if !Self.isInstallationID(installation) {
            errors.append(.init(field: "installationId", message: "must be 1 to 128 visible ASCII characters"))
        }
        let deviceName = SessionsController.deviceName(body.deviceName, into: &errors)
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        try await attested(body.appAttest, installation: installation)
        let refreshToken = tokens.newRefreshToken()
        let device = Sessions.Device(name: deviceName, address: request.clientAddress, amr: ["anon"])
        switch try await useCases.accounts.signUpAnonymously(
            installation: installation, client: request.clientKey, device: device, refreshToken: refreshToken, quota: quota)
        {
        case .limited(let retryAfter):
            throw HTTPError.tooManyRequests(
                retryAfter: retryAfter, "Enough anonymous accounts were made from this installation or network lately.")
        case .created(let user, let session):
            logger.info("anonymous account made", [("user_id", .string(user.id.text()))])
            return AuthSessionResponse(
                value: try tokens.session(
                    user, sessionID: session, refreshToken: refreshToken, authenticatedAt: device.signedInAt, amr: device.amr),
                status: 201)
        }
    }

    /// App Attest before a sign-up: the assertion checked when App Attest is on and one is sent;
    /// none with `required` is 403 `attestation_required`.
    private func attested(_ proof: AppAttestAssertion?, installation: String) async throws {
        guard attest.mode != .off else { return }
        guard let proof else {
            guard attest.mode == .required else { return }
            throw HTTPError(
                403, code: .attestationRequired,
                detail: "This server signs up only genuine installations of the app: send appAttest, an App Attest assertion.")
        }
        do {
            try await attest.check(proof, installation: installation)
        } catch let failure as WebAuthn.Failure {
            logger.info("app attest assertion refused", [("reason", .string(failure.reason))])
            throw HTTPError.invalid(failure.field, failure.reason, code: .invalidAttestation)
        }
    }

    /// `POST /auth/app-attest/challenge` → 201 and a challenge (five minutes, nothing stored).
    func challenge(_ request: Request, _ context: ServiceRequestContext) async throws -> EndpointReply<AppAttestChallenge> {
        try .json(attest.challenge(), status: 201)
    }

    /// `POST /auth/app-attest/keys` → 201: the attested key kept for the installation.
    func attestKey(_ request: Request, _ context: ServiceRequestContext, _ body: AppAttestKeyRequest) async throws
        -> EndpointReply<AppAttestKey>
    {
        guard attest.mode != .off else { throw HTTPError.notFound("App Attest is off on this server (PIER_AUTH_APP_ATTEST).") }
        let installation = body.installationId
        if !Self.isInstallationID(installation) {
            throw HTTPError.invalid("installationId", "must be 1 to 128 visible ASCII characters")
        }
        let registered: AppAttestGate.Registered
        do {
            registered = try await attest.register(body, client: request.clientKey)
        } catch let failure as WebAuthn.Failure {
            logger.info("app attest attestation refused", [("reason", .string(failure.reason))])
            throw HTTPError.invalid(failure.field, failure.reason, code: .invalidAttestation)
        }
        switch registered {
        case .registered: break
        case .known: throw HTTPError.invalid("keyId", "was attested before: generate a new key", code: .invalidAttestation)
        case .limited(let retryAfter):
            throw HTTPError.tooManyRequests(
                retryAfter: retryAfter, "Enough App Attest keys were attested from this network lately.")
        }
        logger.info("app attest key registered", [("installation", .string(installation))])
        return try .json(AppAttestKey(keyId: body.keyId), status: 201)
    }

    /// `POST /auth/app-attest/installation-token {installationId, appAttest}` → 201 and a token
    /// the other services take as the installation's proof for an hour.
    func installationToken(_ request: Request, _ context: ServiceRequestContext, _ body: InstallationTokenRequest)
        async throws -> EndpointReply<InstallationToken>
    {
        guard attest.mode != .off else { throw HTTPError.notFound("App Attest is off on this server (PIER_AUTH_APP_ATTEST).") }
        let installation = body.installationId
        if !Self.isInstallationID(installation) {
            throw HTTPError.invalid("installationId", "must be 1 to 128 visible ASCII characters")
        }
        try await attested(body.appAttest, installation: installation)
        return try .json(tokens.installationToken(installation), status: 201)
    }

    /// `POST /auth/anonymous/upgrade {email, password}` (an anonymous account's bearer) → 202: the
    /// link that keeps the account with them is mailed.
    func upgrade(_ request: Request, _ context: ServiceRequestContext, _ body: AnonymousUpgradeRequest) async throws
        -> EndpointReply<AnonymousUpgradeAnswer>
    {
        let principal = try context.caller()
        var errors: [Problem.FieldError] = []
        let email = EmailAddress(body.email)
        if email == nil { errors.append(.init(field: "email", message: "must be an email address such as name@example.com")) }
        errors += policy.problems(body.password, field: "password", email: email?.address)
        guard let email, errors.isEmpty else { throw HTTPError.invalid(errors, code: PasswordPolicy.code(of: errors)) }
        guard try await useCases.users.isAnonymous(principal.userID) else { throw Self.notAnonymous }
        let hash = try await passwords.hashing(request.clientKey) { try await passwords.hasher.hash(body.password) }
        switch try await useCases.links.requestEmailChange(
            of: principal.userID, session: principal.sessionID, to: email, keeping: hash)
        {
        case .queued(let link):
            desk.queued("keep-account", link: link)
            logger.info("anonymous account asked to be kept", [("user_id", .string(principal.userID.text()))])
            return try .json(AnonymousUpgradeAnswer(sentTo: email.address), status: 202)
        case .taken:
            throw HTTPError.identityTaken("An account with this address exists already.")
        case .throttled(let retryAfter):
            throw HTTPError.tooManyRequests(retryAfter: retryAfter, "Enough links were mailed for this lately; try again later.")
        case .anonymous:
            throw Self.notAnonymous
        case .invalid, .changed:
            throw HTTPError.unauthorized("The account no longer exists.", code: .accountDeleted)
        }
    }

    /// `POST /auth/anonymous/merge/start` (an anonymous account's bearer) → 201 and the merge
    /// token, the proof of the anonymous side.
    func startMerge(_ request: Request, _ context: ServiceRequestContext) async throws -> EndpointReply<AnonymousMergeTicket> {
        let principal = try context.caller()
        guard let session = principal.sessionID,
            case .started(let token, let expiresAt) = try await useCases.accounts.startMerge(
                of: principal.userID, session: session)
        else { throw Self.notAnonymous }
        logger.info("anonymous merge started", [("user_id", .string(principal.userID.text()))])
        return try .json(AnonymousMergeTicket(mergeToken: token, expiresAt: expiresAt), status: 201)
    }

    /// `POST /auth/anonymous/merge {mergeToken}` (the bearer of a sign-in to the other account,
    /// made after the token) → the anonymous account merged into the caller's.
    func merge(_ request: Request, _ context: ServiceRequestContext, _ body: AnonymousMergeRequest) async throws
        -> JSONResponse<AnonymousMergeAnswer>
    {
        let principal = try context.caller()
        guard !body.mergeToken.isEmpty, body.mergeToken.utf8.count <= 256 else {
            throw HTTPError.invalid("mergeToken", "must be the token POST /auth/anonymous/merge/start gave")
        }
        switch try await useCases.accounts.merge(
            token: body.mergeToken, into: principal.userID, session: principal.sessionID,
            authenticatedAt: principal.authenticatedAt, by: try context.auditActor())
        {
        case .merged(let anonymous):
            logger.info(
                "anonymous account merged",
                [("user_id", .string(principal.userID.text())), ("merged_user_id", .string(anonymous.text()))])
            return JSONResponse(AnonymousMergeAnswer(mergedUserId: anonymous, userId: principal.userID))
        case .invalidToken:
            throw HTTPError(
                422, code: .invalidMergeToken,
                detail:
                    "The merge token is unknown, used or expired, or its anonymous session ended: ask for a new one from the anonymous session."
            )
        case .signInFirst:
            throw HTTPError.reauthenticationRequired(
                "Sign in to this account after asking for the merge token: the merge needs a fresh sign-in.")
        case .intoAnonymous:
            throw HTTPError.anonymousAccount("Merging into an account")
        case .callerEnded:
            throw HTTPError.unauthorized("This session has ended; sign in again.", code: .sessionRevoked)
        }
    }

    /// 1 to 128 visible ASCII characters.
    static func isInstallationID(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 128 && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    static let notAnonymous = HTTPError(
        409, code: .notAnonymous, detail: "The account is permanent already: only an anonymous account is kept this way.")
}

extension HTTPError {
    /// 409 `identity_taken`: the address or identity is another account's; the app may offer to
    /// sign in to it instead.
    static func identityTaken(_ detail: String) -> HTTPError {
        var error = HTTPError(
            409, code: .identityTaken,
            detail: detail + " Sign in to it instead, or sign in to it and merge this anonymous account into it.")
        error.problem.offer = ["sign_in", "merge"]
        return error
    }

    /// 409 `anonymous_account`: what was asked needs a permanent account.
    static func anonymousAccount(_ what: String) -> HTTPError {
        HTTPError(
            409, code: .anonymousAccount,
            detail:
                "\(what) needs a permanent account: keep this one with an address and a password, Sign in with Apple or a passkey first."
        )
    }
}
