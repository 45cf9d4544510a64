import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The auth endpoints of the HTTP contract.
struct AuthController: Sendable {
    let repository: AuthRepository
    let configuration: AuthConfiguration
    let tokens: TokenIssuer
    let hasher: BoundedPasswordHasher
    let authenticator: Authenticator
    let policy: PasswordPolicy
    let logger: Logger
    let throttle: LoginThrottle
    /// Password hashes in flight per client address.
    let hashSlots: InFlightLimiter
    /// Logins per client address, successful or not.
    let loginRate: TokenBuckets
    /// A hash of a random password with the current parameters: unknown emails are checked
    /// against it, so they take as long as a wrong password.
    let dummyHash: String
    let jwksBody: [UInt8]

    init(
        database: PostgresPool, configuration: AuthConfiguration, tokens: TokenIssuer, hasher: BoundedPasswordHasher,
        authenticator: Authenticator, policy: PasswordPolicy, logger: Logger, dummyHash: String
    ) throws {
        self.repository = AuthRepository(
            database: database, refreshDays: configuration.refreshTokenTTLDays, accessTTL: tokens.accessTTL)
        self.configuration = configuration
        self.tokens = tokens
        self.hasher = hasher
        self.authenticator = authenticator
        self.policy = policy
        self.logger = logger
        self.throttle = LoginThrottle(
            database: database, accountLimit: configuration.accountFailureLimit,
            addressLimit: configuration.addressFailureLimit)
        self.dummyHash = dummyHash
        self.hashSlots = InFlightLimiter(limit: configuration.hashesPerAddress)
        self.loginRate = TokenBuckets(
            rate: Double(configuration.loginsPerAddressPerMinute) / 60, burst: Double(configuration.loginsPerAddressPerMinute))
        self.jwksBody = try JSON.encode(tokens.keys.jwks)
    }

    func routes(into routes: inout Routes) {
        let router = Router<ServiceRequestContext>()
        let signedIn = router.group(Authentication(authenticator, .required))
        router.post("/auth/register", body: RegisterRequest.self) { try await self.register($0, $1, $2) }
        router.post("/auth/login", body: LoginRequest.self) { try await self.login($0, $1, $2) }
        router.post("/auth/refresh", body: RefreshRequest.self) { try await self.refresh($0, $1, $2) }
        signedIn.post("/auth/logout", body: RefreshRequest.self) { try await self.logout($0, $1, $2) }
        signedIn.get("/auth/me") { try await self.me($0, $1) }
        signedIn.post("/auth/password", body: PasswordChangeRequest.self) { try await self.changePassword($0, $1, $2) }
        signedIn.delete("/auth/me") { try await self.deleteAccount($0, $1) }
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
    }

    // MARK: - Handlers

    func register(_ request: Request, _ context: ServiceRequestContext, _ body: RegisterRequest) async throws
        -> AuthSessionResponse
    {
        var errors: [Problem.FieldError] = []
        let email = EmailAddress(body.email)
        if email == nil { errors.append(.init(field: "email", message: "must be an email address such as name@example.com")) }
        errors += policy.problems(body.password, field: "password", email: email?.address)
        let displayName = body.displayName?.trimmingWhitespace()
        if let displayName, displayName.count > 100 {
            errors.append(.init(field: "displayName", message: "must be at most 100 characters"))
        }
        guard let email, errors.isEmpty else { throw HTTPError.invalid(errors) }
        let hash = try await hashing(request.clientKey) { try await hasher.hash(body.password) }
        let refreshToken = tokens.newRefreshToken()
        let registered = try await repository.register(
            UUID(), email: email, passwordHash: hash, displayName: displayName.flatMap { $0.isEmpty ? nil : $0 },
            refreshToken: refreshToken)
        guard case .created(let user, let sessionID) = registered else {
            throw HTTPError.conflict("An account with this email already exists.")
        }
        logger.info("account registered", [("user_id", .string(user.id.text())), ("request_id", .string(request.requestID))])
        return AuthSessionResponse(value: try session(user, sessionID: sessionID, refreshToken: refreshToken), status: 201)
    }

    func login(_ request: Request, _ context: ServiceRequestContext, _ body: LoginRequest) async throws -> AuthSessionResponse {
        let client = request.clientKey
        // Every login counts against the client's rate, successful ones too: a client cannot
        // keep the hashing threads busy with its own valid password either.
        let rate = loginRate.take(client)
        guard rate.allowed else {
            throw HTTPError.tooManyRequests(
                retryAfter: rate.retryAfter, "Too many logins from your network; try again in \(rate.retryAfter) s.")
        }
        return try await hashing(client) { () async throws -> AuthSessionResponse in
            switch try await checkPassword(body.password, emailKey: EmailAddress.key(body.email), client: client) {
            case .wait(let seconds):
                throw HTTPError.tooManyRequests(retryAfter: seconds, "Too many failed logins; try again in \(seconds) s.")
            case .wrong:
                logger.info("login failed", [("request_id", .string(request.requestID))])
                throw HTTPError(401, detail: "The email or password is not correct.")
            case .right(let user, let hash):
                if hasher.needsRehash(hash) {
                    try await repository.setPasswordHash(try await hasher.hash(body.password), of: user.id)
                }
                return try await signIn(user)
            }
        }
    }

    private enum PasswordCheck: Sendable {
        /// The account or the address is backing off, or the account has its share of
        /// attempts in flight: nothing was checked.
        case wait(Int)
        case wrong
        case right(User, String)
    }

    /// Checks `password` against the account of `emailKey` under the failed-attempt guards
    /// (``LoginThrottle``): a place among the account's attempts in flight, then the account
    /// and both keys' back-off read in one round trip, the hash, and the failure recorded
    /// before the place is given back. An unknown email is checked against a dummy hash: same
    /// work, same time, same answer.
    private func checkPassword(_ password: String, emailKey: String, client: String) async throws -> PasswordCheck {
        let account = LoginThrottle.accountKey(emailKey)
        let address = LoginThrottle.addressKey(client)
        let checked = try await throttle.reserving(account) { () async throws -> PasswordCheck in
            let (row, inFlight) = try await throttle.lookUp(emailKey: emailKey, account: account, address: address)
            if let wait = try row.decode("retry", as: Int?.self) { return .wait(wait) }
            let failures = try row.decode("failures", as: Int.self)
            guard throttle.admits(failures: failures, inFlight: inFlight) else { return .wait(1) }
            let stored =
                try row.decode("id", as: UUID?.self) == nil
                ? nil : (try AuthRepository.user(row), try row.decode("password_hash", as: String.self))
            guard let (user, hash) = stored, try await hasher.verify(password, against: stored?.1 ?? dummyHash) else {
                try await throttle.recordFailure(account: account, address: address)
                return .wrong
            }
            if failures > 0 { try await throttle.reset(account: account) }
            return .right(user, hash)
        }
        return checked ?? .wait(1)
    }

    /// Runs password hashing for `client` while it has fewer than its share of hashes in flight
    /// (`PIER_AUTH_HASHES_PER_ADDRESS`); beyond, 429 at once: one client flooding logins, even
    /// with its own valid password, cannot fill the hashing queue that everyone shares.
    private func hashing<T: Sendable>(_ client: String, _ body: () async throws -> T) async throws -> T {
        guard let result = try await hashSlots.run(client, body) else {
            throw HTTPError.tooManyRequests(
                retryAfter: 1, "Too many password checks in progress from your network; try again in a second.")
        }
        return result
    }

    /// A new session for `user`, answered with its tokens.
    private func signIn(_ user: User) async throws -> AuthSessionResponse {
        let refreshToken = tokens.newRefreshToken()
        let sessionID = try await repository.openSession(for: user.id, refreshToken: refreshToken)
        return AuthSessionResponse(value: try session(user, sessionID: sessionID, refreshToken: refreshToken))
    }

    func refresh(_ request: Request, _ context: ServiceRequestContext, _ body: RefreshRequest) async throws -> AuthSessionResponse
    {
        guard body.refreshToken.utf8.count <= 256 else { throw HTTPError(401, detail: "The refresh token is not valid.") }
        let hash = PostgresBytes(TokenIssuer.hash(body.refreshToken))
        let successor = tokens.successor(of: body.refreshToken)
        let successorHash = PostgresBytes(TokenIssuer.hash(successor))
        let outcome = try await repository.rotate(
            hash, successor: successorHash, graceSeconds: configuration.refreshGraceSeconds)
        switch outcome {
        case .rotated(let user, let sessionID):
            return AuthSessionResponse(value: try session(user, sessionID: sessionID, refreshToken: successor))
        case .reused(let sessionID):
            logger.warning(
                "refresh token reused; session revoked",
                [
                    ("session_id", .string(sessionID.text())), ("request_id", .string(request.requestID)),
                ])
            throw HTTPError(401, detail: "The refresh token is not valid.")
        case .invalid:
            throw HTTPError(401, detail: "The refresh token is not valid.")
        }
    }

    /// Ends the session of the refresh token and of the access token (usually one and the
    /// same); their access tokens are refused everywhere within a second.
    func logout(_ request: Request, _ context: ServiceRequestContext, _ body: RefreshRequest) async throws -> Response {
        let principal = try context.caller()
        let hash = PostgresBytes(TokenIssuer.hash(body.refreshToken))
        try await repository.logout(principal.userID, session: principal.sessionID, refreshTokenHash: hash)
        return .noContent
    }

    func me(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<User> {
        let principal = try context.caller()
        return JSONResponse(try await user(principal.userID))
    }

    func changePassword(_ request: Request, _ context: ServiceRequestContext, _ body: PasswordChangeRequest) async throws
        -> Response
    {
        let principal = try context.caller()
        guard let emailKey = try await repository.emailKey(of: principal.userID) else {
            throw HTTPError.unauthorized("The account no longer exists.")
        }
        // The same guards as login: a stolen access token is no way to guess passwords faster.
        let (user, hash) = try await hashing(request.clientKey) { () async throws -> (User, String) in
            switch try await checkPassword(body.currentPassword, emailKey: emailKey, client: request.clientKey) {
            case .wait(let seconds):
                throw HTTPError.tooManyRequests(retryAfter: seconds, "Too many failed attempts; try again in \(seconds) s.")
            case .wrong:
                throw HTTPError.invalid("currentPassword", "is not correct")
            case .right(let user, _):
                let problems = policy.problems(body.newPassword, field: "newPassword", email: user.email)
                guard problems.isEmpty else { throw HTTPError.invalid(problems) }
                return (user, try await hasher.hash(body.newPassword))
            }
        }
        try await repository.changePassword(of: user.id, to: hash, keeping: principal.sessionID)
        logger.info("password changed; other sessions revoked", [("user_id", .string(user.id.text()))])
        return .noContent
    }

    func deleteAccount(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let principal = try context.caller()
        let deleted = try await repository.delete(principal.userID)
        guard deleted else { throw HTTPError.unauthorized("The account no longer exists.") }
        logger.info("account deleted", [("user_id", .string(principal.userID.text()))])
        return .noContent
    }

    // MARK: - Helpers

    private func user(_ id: UUID) async throws -> User {
        guard let user = try await repository.user(id) else { throw HTTPError.unauthorized("The account no longer exists.") }
        return user
    }

    private func session(_ user: User, sessionID: UUID, refreshToken: String) throws -> AuthSession {
        AuthSession(
            user: user, accessToken: try tokens.accessToken(userID: user.id, role: user.role, sessionID: sessionID),
            refreshToken: refreshToken, expiresIn: tokens.accessTTL)
    }
}

/// The session (201 on register, 200 otherwise), marked `Cache-Control: no-store` as token
/// responses must be (RFC 6749 §5.1).
struct AuthSessionResponse: ResponseConvertible {
    let value: AuthSession
    var status = 200
    func response() throws -> Response { try .json(value, status: status, headers: ["Cache-Control": "no-store"]) }
}
