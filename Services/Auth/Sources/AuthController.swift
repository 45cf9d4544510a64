import PierCrypto
import PierHTTP
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

/// The auth endpoints of the HTTP contract, one controller per resource (sessions, the
/// account), and the JWKS: the route table and the authentication each route needs.
struct AuthController: Sendable {
    let sessions: SessionsController
    let account: AccountController
    let email: EmailController
    let identity: IdentityController
    let export: ExportController
    let users: UsersController
    let secondFactors: SecondFactorController
    let passkeys: PasskeyController
    let authenticator: Authenticator
    let hasher: BoundedPasswordHasher
    let jwksBody: [UInt8]
    let database: PostgresPool
    /// Who listens for their account (`GET /auth/me/events`).
    let live: LiveFeed

    init(
        database: PostgresPool, configuration: AuthConfiguration, tokens: TokenIssuer, hasher: BoundedPasswordHasher,
        authenticator: Authenticator, policy: PasswordPolicy, desk: MailDesk, exports: ExportSources, http: HTTPClient,
        events: PostgresListener, live settings: LiveSettings, logger: Logger, dummyHash: String, secondFactorBox: SecretBox,
        apple: AppleTokens? = nil
    ) throws {
        let throttle = LoginThrottle(
            database: database, accountLimit: configuration.accountFailureLimit,
            addressLimit: configuration.addressFailureLimit)
        let useCases = AuthUseCases(
            database: database,
            lifetimes: .init(refreshDays: configuration.refreshTokenTTLDays, accessTTL: tokens.accessTTL), desk: desk,
            secondFactors: (secondFactorBox, throttle, configuration.appName),
            rp: .init(
                id: configuration.passkeyRPID, name: configuration.passkeyRPName, origins: Set(configuration.passkeyOrigins)))
        let accounts = useCases.users
        live = LiveFeed(
            name: "live accounts", database: database, listener: events, revocations: authenticator.revocations,
            changes: [UserUpdated.type],
            snapshot: { id in
                guard let user = try await accounts.user(id) else { throw HTTPError.notFound("No such account.") }
                return try JSON.encode(user)
            }, settings: settings)
        let passwords = PasswordChecks(
            hasher: hasher,
            throttle: throttle, hashSlots: InFlightLimiter(limit: configuration.hashesPerAddress), dummyHash: dummyHash)
        let reauthentication = Reauthentication(useCases: useCases, passwords: passwords)
        let devices = DeviceTokens(keys: tokens.keys)
        sessions = SessionsController(
            useCases: useCases, configuration: configuration, tokens: tokens, passwords: passwords, devices: devices,
            loginRate: TokenBuckets(
                rate: Double(configuration.loginsPerAddressPerMinute) / 60,
                burst: Double(configuration.loginsPerAddressPerMinute)),
            desk: desk, logger: logger)
        account = AccountController(
            useCases: useCases, tokens: tokens, passwords: passwords, devices: devices, policy: policy, desk: desk,
            reauthentication: reauthentication, live: live, logger: logger)
        email = EmailController(
            links: useCases.links, desk: desk, passwords: passwords, policy: policy,
            forgotRate: TokenBuckets(
                rate: Double(configuration.forgotPerAddressPerHour) / 3600, burst: Double(configuration.forgotPerAddressPerHour)),
            reauthentication: reauthentication, appName: configuration.appName, logger: logger)
        identity = IdentityController(
            useCases: useCases, tokens: tokens, providers: configuration.identityProviders, http: http, desk: desk,
            reauthentication: reauthentication, apple: apple, logger: logger)
        export = ExportController(useCases: useCases, sources: exports, client: http, logger: logger)
        users = UsersController(useCases: useCases, reauthentication: reauthentication, desk: desk, logger: logger)
        secondFactors = SecondFactorController(
            useCases: useCases, reauthentication: reauthentication, desk: desk, logger: logger)
        passkeys = PasskeyController(
            useCases: useCases, flows: useCases.passkeys, tokens: tokens, reauthentication: reauthentication, devices: devices,
            loginRate: sessions.loginRate, desk: desk,
            logger: logger)
        self.authenticator = authenticator
        self.hasher = hasher
        self.jwksBody = try JSON.encode(tokens.keys.jwks)
        self.database = database
    }

    func routes(into routes: inout Routes) {
        let router = Router<ServiceRequestContext>()
        let signedIn = router.group(Authentication(authenticator, .required))
        let anyone = router.group(Authentication(authenticator, .optional))
        let staff = router.group(Authentication(authenticator, .staff))
        let admins = router.group(Authentication(authenticator, .admin))
        let (sessions, account, email, identity, export, users) = (sessions, account, email, identity, export, users)
        let factors = secondFactors
        let passkeys = passkeys
        router.post("/auth/register", body: RegisterRequest.self) { try await account.register($0, $1, $2) }
        router.post("/auth/login", body: LoginRequest.self) { try await sessions.login($0, $1, $2) }
        router.post("/auth/mfa/verify", body: MFAVerifyRequest.self) { try await sessions.verifySecondFactor($0, $1, $2) }
        router.post("/auth/mfa/passkey-options", body: MFATokenRequest.self) {
            try await sessions.secondFactorPasskeyOptions($0, $1, $2)
        }
        signedIn.get("/auth/mfa") { try await factors.status($0, $1) }
        signedIn.post("/auth/mfa/totp", optionalBody: ReauthenticationRequest.self) { try await factors.offer($0, $1, $2) }
        signedIn.post("/auth/mfa/totp/confirm", body: MFACodeRequest.self) { try await factors.confirm($0, $1, $2) }
        signedIn.delete("/auth/mfa/totp", optionalBody: ReauthenticationRequest.self) { try await factors.remove($0, $1, $2) }
        router.get("/auth/mfa/approve") { try await factors.approvalPage($0, $1) }
        router.post("/auth/mfa/approve", body: EmailTokenRequest.self) { try await factors.approve($0, $1, $2) }
        signedIn.post("/auth/mfa/recovery-codes", optionalBody: ReauthenticationRequest.self) {
            try await factors.replaceRecoveryCodes($0, $1, $2)
        }
        signedIn.post("/auth/passkeys/register/options", optionalBody: ReauthenticationRequest.self) {
            try await passkeys.registrationOptions($0, $1, $2)
        }
        signedIn.post("/auth/passkeys/register", body: PasskeyRegistration.self) { try await passkeys.register($0, $1, $2) }
        router.post("/auth/passkeys/login/options", optionalBody: PasskeyOptionsRequest.self) {
            try await passkeys.loginOptions($0, $1, $2)
        }
        router.post("/auth/passkeys/login", body: PasskeyAssertion.self) { try await passkeys.login($0, $1, $2) }
        signedIn.get("/auth/passkeys") { try await passkeys.list($0, $1) }
        signedIn.patch("/auth/passkeys/{id}", body: PasskeyRename.self) { try await passkeys.rename($0, $1, $2) }
        signedIn.delete("/auth/passkeys/{id}", optionalBody: ReauthenticationRequest.self) {
            try await passkeys.remove($0, $1, $2)
        }
        router.post("/auth/refresh", body: RefreshRequest.self) { try await sessions.refresh($0, $1, $2) }
        anyone.post("/auth/logout", body: RefreshRequest.self) { try await sessions.logout($0, $1, $2) }
        signedIn.get("/auth/me") { try await account.me($0, $1) }
        signedIn.get("/auth/me/events") { try account.events($0, $1) }
        signedIn.post("/auth/password", body: PasswordChangeRequest.self) { try await account.changePassword($0, $1, $2) }
        signedIn.delete("/auth/me", optionalBody: ReauthenticationRequest.self) { try await account.deleteAccount($0, $1, $2) }
        signedIn.patch("/auth/me", body: ProfileChange.self) { try await account.updateProfile($0, $1, $2) }
        signedIn.post("/auth/reauthenticate", body: ReauthenticationRequest.self) { try await account.reauthenticate($0, $1, $2) }
        signedIn.post("/auth/reauthenticate/passkey-options") { try await passkeys.reauthenticationOptions($0, $1) }
        signedIn.post("/auth/email/change", body: EmailChangeRequest.self) { try await email.change($0, $1, $2) }
        router.get("/auth/email/change/confirm") { try await email.confirmChangePage($0, $1) }
        router.post("/auth/email/change/confirm", body: EmailTokenRequest.self) { try await email.confirmChange($0, $1, $2) }
        router.get("/auth/email/change/cancel") { try await email.cancelChangePage($0, $1) }
        router.post("/auth/email/change/cancel", body: EmailTokenRequest.self) { try await email.cancelChange($0, $1, $2) }
        router.post("/auth/apple", body: IdentitySignInRequest.self) { try await identity.apple($0, $1, $2) }
        router.post("/auth/oidc/{provider}", body: IdentitySignInRequest.self) { try await identity.oidc($0, $1, $2) }
        // Apple's server calls this: the signed payload is the credential.
        router.post("/auth/apple/notifications", body: AppleNotificationRequest.self) {
            try await identity.appleNotification($0, $1, $2)
        }
        signedIn.get("/auth/identities") { try await identity.list($0, $1) }
        signedIn.delete("/auth/identities/{id}", optionalBody: ReauthenticationRequest.self) {
            try await identity.unlink($0, $1, $2)
        }
        signedIn.get("/auth/me/export") { try await export.export($0, $1) }
        signedIn.get("/auth/sessions") { try await sessions.list($0, $1) }
        signedIn.delete("/auth/sessions/{id}") { try await sessions.end($0, $1) }
        signedIn.post("/auth/logout/all") { try await sessions.logoutAll($0, $1) }
        staff.get("/auth/users") { try await users.search($0, $1) }
        staff.get("/auth/users/stats") { try await users.stats($0, $1) }
        staff.get("/auth/users/{id}") { try await users.user($0, $1) }
        staff.get("/auth/users/{id}/sessions") { try await users.sessions($0, $1) }
        staff.delete("/auth/users/{id}/sessions") { try await users.endSessions($0, $1) }
        staff.delete("/auth/users/{id}/sessions/{session}") { try await users.endSessions($0, $1) }
        staff.get("/auth/users/{id}/identities") { try await users.identities($0, $1) }
        staff.post("/auth/users/{id}/mail", body: StaffMailRequest.self) { try await users.mail($0, $1, $2) }
        staff.get("/auth/users/{id}/mfa") { try await users.secondFactor($0, $1) }
        staff.get("/auth/users/{id}/passkeys") { try await users.passkeys($0, $1) }
        staff.delete("/auth/users/{id}/mfa", optionalBody: ReauthenticationRequest.self) {
            try await users.removeSecondFactor($0, $1, $2)
        }
        admins.post("/auth/users/{id}/mfa/approve", body: EnrolmentApproval.self) {
            try await users.approveSecondFactor($0, $1, $2)
        }
        staff.post("/auth/users/{id}/disable", users.setDisabled(true))
        staff.post("/auth/users/{id}/enable", users.setDisabled(false))
        staff.get("/auth/users/{id}/export") { try await export.export($0, $1) }
        admins.on("PUT", "/auth/users/{id}/role", body: RoleChange.self) { try await users.setRole($0, $1, $2) }
        admins.delete("/auth/users/{id}", optionalBody: ReauthenticationRequest.self) { try await users.delete($0, $1, $2) }
        // Mailed links: a page for browsers (GET), the token spent by POST (JSON or that page's form).
        router.get("/auth/email/verify") { try await email.verifyPage($0, $1) }
        router.post("/auth/email/verify", body: EmailTokenRequest.self) { try await email.verify($0, $1, $2) }
        anyone.post("/auth/email/verify/resend", optionalBody: ForgotPasswordRequest.self) {
            try await email.resend($0, $1, $2)
        }
        router.post("/auth/password/forgot", body: ForgotPasswordRequest.self) { try await email.forgot($0, $1, $2) }
        router.get("/auth/password/reset") { try await email.resetPage($0, $1) }
        router.post("/auth/password/reset", body: ResetPasswordRequest.self) { try await email.reset($0, $1, $2) }
        let jwks = jwksBody
        router.get("/auth/.well-known/jwks.json") { _, _ in
            Response(
                status: 200,
                headers: [
                    "Content-Type": "application/jwk-set+json",
                    "Cache-Control": "public, max-age=300",
                ], body: jwks)
        }
        routes.merge(router.routes)
        routes.merge(
            AuditLog.routes(
                service: AuthService.name, prefix: AuthService.prefix, schema: AuthService.schema, database: database,
                authenticator: authenticator))
    }
}

extension TokenIssuer {
    /// The session answered to the app: the user, a fresh access token, the refresh token.
    func session(
        _ user: User, sessionID: UUID, refreshToken: String, authenticatedAt: Date? = nil, amr: [String],
        now: Date = Date()
    ) throws -> AuthSession {
        AuthSession(
            user: user,
            accessToken: try accessToken(
                userID: user.id, role: user.role, sessionID: sessionID, emailVerified: user.emailVerified,
                authenticatedAt: authenticatedAt ?? now, amr: amr, now: now),
            refreshToken: refreshToken, expiresIn: accessTTL,
            refreshExpiresAt: Date(
                timeIntervalSince1970: (now.timeIntervalSince1970 + Double(refreshDays * 86_400)).rounded(.down)))
    }
}

/// The session (201 on register, 200 otherwise), marked `Cache-Control: no-store` as token
/// responses must be (RFC 6749 §5.1).
struct AuthSessionResponse: ResponseConvertible {
    var value: AuthSession
    var status = 200
    func response() throws -> Response { try .json(value, status: status, headers: ["Cache-Control": "no-store"]) }
}
