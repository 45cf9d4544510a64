import PierAudit
import PierCrypto
import PierEvents
import PierExport
import PierHTTP
import PierIdentity
import PierJSON
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

/// The auth endpoints of the HTTP contract, one controller per resource (sessions, the
/// account), and the JWKS: the route table and the authentication each route needs.
struct AuthController: Sendable {
    let sessions: SessionsController
    let account: AccountController
    let anonymous: AnonymousController
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
            database: database, accountLimit: configuration.accountFailureLimit)
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
        anonymous = AnonymousController(
            useCases: useCases, tokens: tokens, passwords: passwords, policy: policy, desk: desk,
            quota: .init(
                perInstallationPerDay: configuration.anonymous.perInstallationPerDay,
                perAddressPerHour: configuration.anonymous.perAddressPerHour),
            attest: AppAttestGate(database: database, settings: configuration.appAttest, keys: tokens.keys), logger: logger)
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
        let on = EndpointRouter(router, authenticator: authenticator)
        signingIn(on)
        theAccount(on)
        mailedLinks(on)
        secondFactorsAndPasskeys(on)
        theTeam(on)
        routes.merge(router.routes)
        routes.merge(
            AuditLog.routes(
                service: AuthService.name, prefix: AuthService.prefix, schema: AuthService.schema, database: database,
                authenticator: authenticator))
    }

    private func signingIn(_ on: EndpointRouter<ServiceRequestContext>) {
        let (sessions, account, identity, jwks, anonymous) = (sessions, account, identity, jwksBody, anonymous)
        on.on(AuthAPI.register) { try await account.register($0, $1, $2) }
        on.on(AuthAPI.signInAnonymously) { try await anonymous.signIn($0, $1, $2) }
        on.on(AuthAPI.upgradeAnonymous) { try await anonymous.upgrade($0, $1, $2) }
        on.on(AuthAPI.startMerge) { try await anonymous.startMerge($0, $1) }
        on.on(AuthAPI.appAttestChallenge) { try await anonymous.challenge($0, $1) }
        on.on(AuthAPI.appAttestKey) { try await anonymous.attestKey($0, $1, $2) }
        on.on(AuthAPI.installationToken) { try await anonymous.installationToken($0, $1, $2) }
        on.on(AuthAPI.mergeAnonymous) { try await anonymous.merge($0, $1, $2) }
        on.on(AuthAPI.login) { try await sessions.login($0, $1, $2) }
        on.on(AuthAPI.refresh) { try await sessions.refresh($0, $1, $2) }
        on.on(AuthAPI.logout) { try await sessions.logout($0, $1, $2) }
        on.on(AuthAPI.logoutAll) { try await sessions.logoutAll($0, $1) }
        on.on(AuthAPI.apple) { try await identity.apple($0, $1, $2) }
        on.on(AuthAPI.oidc) { try await identity.oidc($0, $1, $2, $3) }
        on.on(AuthAPI.appleNotifications) { try await identity.appleNotification($0, $1, $2) }
        on.on(AuthAPI.keys) { _, _ in
            EndpointReply<JWKSetAnswer>(
                promised: Response(
                    status: 200,
                    headers: ["Content-Type": "application/jwk-set+json", "Cache-Control": "public, max-age=300"], body: jwks))
        }
    }

    private func theAccount(_ on: EndpointRouter<ServiceRequestContext>) {
        let (sessions, account, email, identity, export) = (sessions, account, email, identity, export)
        let passkeys = passkeys
        on.on(AuthAPI.me) { try await account.me($0, $1) }
        on.on(AuthAPI.events) { EndpointReply(promised: try account.events($0, $1, $2)) }
        on.on(AuthAPI.updateProfile) { try await account.updateProfile($0, $1, $2) }
        on.on(AuthAPI.deleteAccount) { try await account.deleteAccount($0, $1, $2) }
        on.on(AuthAPI.changePassword) { try await account.changePassword($0, $1, $2) }
        on.on(AuthAPI.reauthenticate) { try await account.reauthenticate($0, $1, $2) }
        on.on(AuthAPI.reauthenticationPasskeyOptions) { try await passkeys.reauthenticationOptions($0, $1) }
        on.on(AuthAPI.changeEmail) { try await email.change($0, $1, $2) }
        on.on(AuthAPI.identities) { try await identity.list($0, $1) }
        on.on(AuthAPI.unlinkIdentity) { try await identity.unlink($0, $1, $2, $3) }
        on.on(AuthAPI.export) { try await export.export($0, $1, of: nil) }
        on.on(AuthAPI.sessions) { try await sessions.list($0, $1) }
        on.on(AuthAPI.endSession) { try await sessions.end($1, $2) }
    }

    /// A page for browsers (GET), the token spent by POST (JSON or that page's form).
    private func mailedLinks(_ on: EndpointRouter<ServiceRequestContext>) {
        let email = email
        on.on(AuthAPI.verifyEmailPage) { try await email.verifyPage($0, $1, $2) }
        on.on(AuthAPI.verifyEmail) { try await email.verify($0, $1, $2) }
        on.on(AuthAPI.resendVerification) { try await email.resend($0, $1, $2) }
        on.on(AuthAPI.forgotPassword) { try await email.forgot($0, $1, $2) }
        on.on(AuthAPI.resetPasswordPage) { try await email.resetPage($0, $1, $2) }
        on.on(AuthAPI.resetPassword) { try await email.reset($0, $1, $2) }
        on.on(AuthAPI.confirmEmailChangePage) { try await email.confirmChangePage($0, $1, $2) }
        on.on(AuthAPI.confirmEmailChange) { try await email.confirmChange($0, $1, $2) }
        on.on(AuthAPI.cancelEmailChangePage) { try await email.cancelChangePage($0, $1, $2) }
        on.on(AuthAPI.cancelEmailChange) { try await email.cancelChange($0, $1, $2) }
    }

    private func secondFactorsAndPasskeys(_ on: EndpointRouter<ServiceRequestContext>) {
        let (sessions, factors, passkeys) = (sessions, secondFactors, passkeys)
        on.on(AuthAPI.verifySecondFactor) { try await sessions.verifySecondFactor($0, $1, $2) }
        on.on(AuthAPI.secondFactorPasskeyOptions) { try await sessions.secondFactorPasskeyOptions($0, $1, $2) }
        on.on(AuthAPI.secondFactorStatus) { try await factors.status($0, $1) }
        on.on(AuthAPI.setUpAuthenticatorApp) { try await factors.offer($0, $1, $2) }
        on.on(AuthAPI.confirmAuthenticatorApp) { try await factors.confirm($0, $1, $2) }
        on.on(AuthAPI.removeAuthenticatorApp) { try await factors.remove($0, $1, $2) }
        on.on(AuthAPI.replaceRecoveryCodes) { try await factors.replaceRecoveryCodes($0, $1, $2) }
        on.on(AuthAPI.approvalPage) { try await factors.approvalPage($0, $1, $2) }
        on.on(AuthAPI.approveEnrolment) { try await factors.approve($0, $1, $2) }
        on.on(AuthAPI.passkeyRegistrationOptions) { try await passkeys.registrationOptions($0, $1, $2) }
        on.on(AuthAPI.registerPasskey) { try await passkeys.register($0, $1, $2) }
        on.on(AuthAPI.passkeyLoginOptions) { try await passkeys.loginOptions($0, $1, $2) }
        on.on(AuthAPI.passkeyLogin) { try await passkeys.login($0, $1, $2) }
        on.on(AuthAPI.passkeyList) { try await passkeys.list($0, $1) }
        on.on(AuthAPI.renamePasskey) { try await passkeys.rename($0, $1, $2, $3) }
        on.on(AuthAPI.removePasskey) { try await passkeys.remove($0, $1, $2, $3) }
    }

    private func theTeam(_ on: EndpointRouter<ServiceRequestContext>) {
        let (users, export) = (users, export)
        on.on(AuthAPI.users) { try await users.search($0, $1, $2) }
        on.on(AuthAPI.teamMembers) { try await users.team($0, $1) }
        on.on(AuthAPI.signUps) { try await users.stats($0, $1, $2) }
        on.on(AuthAPI.user) { try await users.user($0, $1, $2) }
        on.on(AuthAPI.userSessions) { try await users.sessions($0, $1, $2) }
        on.on(AuthAPI.endUserSessions) { try await users.endSessions($1, of: $2.id, only: nil) }
        on.on(AuthAPI.endUserSession) { try await users.endSessions($1, of: $2.user, only: $2.session) }
        on.on(AuthAPI.userIdentities) { try await users.identities($0, $1, $2) }
        on.on(AuthAPI.mailUser) { try await users.mail($0, $1, $2, $3) }
        on.on(AuthAPI.userSecondFactor) { try await users.secondFactor($0, $1, $2) }
        on.on(AuthAPI.userPasskeys) { try await users.passkeys($0, $1, $2) }
        on.on(AuthAPI.removeUserSecondFactor) { try await users.removeSecondFactor($0, $1, $2, $3) }
        on.on(AuthAPI.approveUserEnrolment) { try await users.approveSecondFactor($0, $1, $2, $3) }
        on.on(AuthAPI.disableUser, users.setDisabled(true))
        on.on(AuthAPI.enableUser, users.setDisabled(false))
        on.on(AuthAPI.exportUser) { try await export.export($0, $1, of: $2.id) }
        on.on(AuthAPI.setRole) { try await users.setRole($0, $1, $2, $3) }
        on.on(AuthAPI.deleteUser) { try await users.delete($0, $1, $2, $3) }
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
                authenticatedAt: authenticatedAt ?? now, amr: amr, name: user.displayName, now: now),
            refreshToken: refreshToken, expiresIn: accessTTL,
            refreshExpiresAt: Date(
                timeIntervalSince1970: (now.timeIntervalSince1970 + Double(refreshDays * 86_400)).rounded(.down)))
    }
}

/// The session (201 on register, 200 otherwise), marked `Cache-Control: no-store` as token
/// responses must be (RFC 6749 §5.1).
struct AuthSessionResponse: AnswerResponse {
    typealias Answer = AuthSession
    var value: AuthSession
    var status = 200
    func response() throws -> Response { try .json(value, status: status, headers: ["Cache-Control": "no-store"]) }
}
