import PierCrypto
import PierHTTP
import PierIdentity
import PierJSON
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `/auth/apple`, `/auth/oidc/{provider}`: sign in with an ID token from Apple or another
/// OpenID Connect provider; `/auth/apple/notifications`: Apple's server-to-server events.
struct IdentityController: Sendable {
    let useCases: AuthUseCases
    let tokens: TokenIssuer
    let verifiers: [String: IdentityTokenVerifier]
    let desk: MailDesk
    let reauthentication: Reauthentication
    /// Exchanges Apple's authorization codes for refresh tokens (nil: not configured).
    let apple: AppleTokens?
    let logger: Logger

    init(
        useCases: AuthUseCases, tokens: TokenIssuer, providers: [String: IdentityProvider], http: HTTPClient,
        desk: MailDesk, reauthentication: Reauthentication, apple: AppleTokens?, logger: Logger
    ) {
        self.apple = apple
        self.useCases = useCases
        self.reauthentication = reauthentication
        self.tokens = tokens
        verifiers = providers.mapValues {
            IdentityTokenVerifier(provider: $0, keys: IdentityKeys(url: $0.jwksURL, client: http))
        }
        self.desk = desk
        self.logger = logger
    }

    func apple(_ request: Request, _ context: ServiceRequestContext, _ body: IdentitySignInRequest) async throws
        -> AuthSessionResponse
    {
        try await signIn(provider: "apple", request, context, body)
    }

    func oidc(_ request: Request, _ context: ServiceRequestContext, _ path: ProviderName, _ body: IdentitySignInRequest)
        async throws -> AuthSessionResponse
    {
        let name = path.provider
        guard name != "apple" else { throw HTTPError.notFound("Sign in with Apple is POST /auth/apple.") }
        return try await signIn(provider: name, request, context, body)
    }

    /// A sign-in; sent with an anonymous account's bearer token, it keeps that account with the
    /// identity (``SignIns/keepAnonymous(_:provider:claims:name:refreshToken:device:)``).
    private func signIn(
        provider name: String, _ request: Request, _ context: ServiceRequestContext, _ body: IdentitySignInRequest
    ) async throws -> AuthSessionResponse {
        guard let verifier = verifiers[name] else {
            throw HTTPError.notFound("No identity provider \(name) is configured here.")
        }
        var errors: [Problem.FieldError] = []
        let deviceName = SessionsController.deviceName(body.deviceName, into: &errors)
        let fullName = Names.clean(body.fullName, field: "fullName", into: &errors)
        if body.nonce.isEmpty || body.nonce.utf8.count > 256 {
            errors.append(.init(field: "nonce", message: "must be the raw nonce the request to the provider was bound to"))
        }
        if let code = body.authorizationCode, code.utf8.count > 1024 {
            errors.append(.init(field: "authorizationCode", message: "must be at most 1024 characters"))
        }
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        let claims = try await verified(verifier, body.identityToken, .signIn(nonce: body.nonce))
        let refreshToken = tokens.newRefreshToken()
        let device = Sessions.Device(name: deviceName, address: request.clientAddress)
        let fullNameGiven = fullName.flatMap { $0.isEmpty ? nil : $0 }
        let outcome =
            if let caller = context.principal, try await useCases.users.isAnonymous(caller.userID) {
                try await useCases.signIns.keepAnonymous(
                    caller.userID, provider: name, claims: claims, name: fullNameGiven, refreshToken: refreshToken,
                    device: device)
            } else {
                try await useCases.signIns.signIn(
                    provider: name, claims: claims, name: fullNameGiven, refreshToken: refreshToken, device: device)
            }
        switch outcome {
        case .signedIn, .challenged:
            if name == "apple" { await keepAppleToken(body.authorizationCode, subject: claims.subject) }
        case .emailUnverified, .noEmail, .identityTaken: break
        }
        switch outcome {
        case .signedIn(let user, let session, let created, let noticed):
            if noticed { desk.queued("new-sign-in", link: nil) }
            logger.info(
                created ? "account created with \(name)" : "signed in with \(name)",
                [("user_id", .string(user.id.text()))])
            return AuthSessionResponse(
                value: try tokens.session(
                    user, sessionID: session, refreshToken: refreshToken, authenticatedAt: device.signedInAt, amr: device.amr),
                status: created ? 201 : 200)
        case .challenged(let token):
            logger.info("signed in with \(name); second factor asked", [])
            throw HTTPError.mfaRequired(token)
        case .emailUnverified:
            throw HTTPError(
                403, code: .emailUnverified,
                detail: "\(name) did not verify this address: nothing is created or linked with an address nobody proved.")
        case .identityTaken:
            throw HTTPError.identityTaken("This \(name) identity, or its address, is another account's.")
        case .noEmail:
            throw HTTPError(
                422, code: .invalidIdentityToken,
                detail: "The identity token carries no email address to create an account with.",
                errors: [.init(field: "identityToken", message: "has no email claim")])
        }
    }

    /// Exchanges the authorization code the app sent beside Apple's ID token and keeps the
    /// refresh token, sealed, to revoke when the identity goes. A failure is logged, never the
    /// sign-in's: the code is single use, so trying the sign-in again would not help either.
    private func keepAppleToken(_ code: String?, subject: String) async {
        guard let apple, let code, !code.isEmpty else { return }
        switch await apple.exchange(code: code) {
        case .done(let token?):
            do {
                try await Identities(useCases.database).keepAppleRefreshToken(
                    try apple.seal(token, subject: subject), subject: subject)
            } catch {
                logger.warning("apple refresh token not kept", [("error", .string("\(error)"))])
            }
        case .done(nil): break
        case .refused(let reason), .unavailable(let reason):
            logger.warning("apple authorization code not exchanged", [("error", .string(reason))])
        }
    }

    /// The token verified and spent: each is accepted once (a replay is refused as invalid).
    private func verified(_ verifier: IdentityTokenVerifier, _ token: String, _ purpose: IdentityTokenVerifier.Purpose)
        async throws -> IdentityClaims
    {
        let claims: IdentityClaims
        do {
            claims = try await verifier.verify(token, purpose)
        } catch .invalid(let why) {
            logger.info("identity token refused", [("provider", .string(verifier.provider.name)), ("reason", .string(why))])
            throw HTTPError.unauthorized("The identity token was refused: \(why).", code: .invalidIdentityToken)
        } catch .unavailable(let why) {
            throw HTTPError(
                503, code: .unavailable, detail: "Cannot check identity tokens now: \(why).", headers: ["Retry-After": "5"])
        }
        let key = Array((verifier.provider.name + "\u{0}").utf8) + claims.replayKey
        guard try await useCases.usedTokens.spend(PostgresBytes(SHA256.hash(key)), until: claims.acceptedUntil) else {
            logger.info(
                "identity token refused", [("provider", .string(verifier.provider.name)), ("reason", .string("replayed"))])
            throw HTTPError.unauthorized("The identity token was refused: it was used already.", code: .invalidIdentityToken)
        }
        return claims
    }

    /// Apple's server-to-server notification: a JWT signed by Apple whose `events` claim (a JSON
    /// object, or a string holding one) says what happened to a user. 200 once applied (or when
    /// no account is linked to the subject); 401 when the JWT is refused.
    func appleNotification(_ request: Request, _ context: ServiceRequestContext, _ body: AppleNotificationRequest)
        async throws -> EndpointReply<NoContent>
    {
        guard let verifier = verifiers["apple"] else { throw HTTPError.notFound("Sign in with Apple is not configured here.") }
        let claims = try await verified(verifier, body.payload, .notification)
        var events = claims.claims["events"]
        if case .string(let text) = events { events = try? WireDecoder.decode(JSONValue.self, from: Array(text.utf8)) }
        guard let event = events?.objectValue, case .string(let type) = event["type"], case .string(let subject) = event["sub"]
        else {
            throw HTTPError.invalid("payload", "carries no events claim with a type and a sub")
        }
        let applied = try await useCases.signIns.appleEvent(type, subject: subject)
        if applied && type == "account-delete" { desk.queued("account-deleted", link: nil) }
        logger.info("apple notification", [("type", .string(type)), ("linked", .bool(applied))])
        return .empty(200)
    }

    /// `GET /auth/identities`: the providers the caller signs in with.
    func list(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<ItemList<LinkedIdentity>> {
        let principal = try context.caller()
        return JSONResponse(ItemList(try await useCases.identities.linked(of: principal.userID)))
    }

    /// `DELETE /auth/identities/{id} [{password}]`: needs the password or a recent sign-in, and
    /// never removes the account's last way in (409 `last_sign_in_method`).
    func unlink(_ request: Request, _ context: ServiceRequestContext, _ path: PathID, _ body: ReauthenticationRequest?)
        async throws -> EndpointReply<NoContent>
    {
        let principal = try context.caller()
        let id = path.id
        try await reauthentication.require(principal, body, request: request)
        switch try await useCases.accounts.unlinkIdentity(id, of: principal.userID) {
        case .unlinked:
            logger.info(
                "identity unlinked", [("user_id", .string(principal.userID.text())), ("identity_id", .string(id.text()))])
            return .noContent()
        case .notFound:
            throw HTTPError.notFound("No such identity.")
        case .lastWayIn:
            throw HTTPError.conflict(
                "This is the account's only way to sign in: set a password first (forgot password mails a link).",
                code: .lastSignInMethod)
        }
    }
}
