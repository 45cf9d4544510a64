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
    let database: PostgresPool
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
        self.database = database
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
        let userID = UUID()
        let name = displayName.flatMap { $0.isEmpty ? nil : $0 }
        let refreshDays = configuration.refreshTokenTTLDays
        let tokens = tokens
        do {
            let (user, sessionID, refreshToken) = try await database.withTransaction { connection in
                let rows = try connection.query(
                    """
                    INSERT INTO auth.users (id, email, email_key, password_hash, display_name)
                    VALUES (\(userID), \(email.address), \(email.key), \(hash), \(name))
                    RETURNING id, email, display_name, role, created_at
                    """)
                let user = try AuthController.user(rows[0])
                let (sessionID, refreshToken) = try AuthController.openSession(
                    connection, userID: userID, days: refreshDays, tokens: tokens)
                return (user, sessionID, refreshToken)
            }
            logger.info(
                "account registered",
                [("user_id", .string(userID.uuidString.lowercased())), ("request_id", .string(request.requestID))])
            return AuthSessionResponse(value: try session(user, sessionID: sessionID, refreshToken: refreshToken), status: 201)
        } catch let error as PostgresError where error.isUniqueViolation {
            throw HTTPError.conflict("An account with this email already exists.")
        }
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
                    let upgraded = try await hasher.hash(body.password)
                    try await database.execute(
                        "UPDATE auth.users SET password_hash = \(upgraded), updated_at = now() WHERE id = \(user.id)")
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
                ? nil : (try AuthController.user(row), try row.decode("password_hash", as: String.self))
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
        let refreshDays = configuration.refreshTokenTTLDays
        let tokens = tokens
        let (sessionID, refreshToken) = try await database.withConnection { connection in
            try AuthController.openSession(connection, userID: user.id, days: refreshDays, tokens: tokens)
        }
        return AuthSessionResponse(value: try session(user, sessionID: sessionID, refreshToken: refreshToken))
    }

    private enum RefreshOutcome: Sendable {
        case rotated(User, UUID)
        case reused(UUID)
        case invalid
    }

    func refresh(_ request: Request, _ context: ServiceRequestContext, _ body: RefreshRequest) async throws -> AuthSessionResponse
    {
        guard body.refreshToken.utf8.count <= 256 else { throw HTTPError(401, detail: "The refresh token is not valid.") }
        let hash = PostgresBytes(TokenIssuer.hash(body.refreshToken))
        let successor = tokens.successor(of: body.refreshToken)
        let successorHash = PostgresBytes(TokenIssuer.hash(successor))
        let grace = configuration.refreshGraceSeconds
        let days = configuration.refreshTokenTTLDays
        let outcome: RefreshOutcome = try await database.withTransaction { connection in
            let rows = try connection.query(
                """
                SELECT t.session_id, t.used_at IS NULL AS unused, t.used_at > now() - make_interval(secs => \(grace)) AS in_grace,
                       t.expires_at > now() AND s.expires_at > now() AND s.revoked_at IS NULL AS live,
                       u.id, u.email, u.display_name, u.role, u.created_at
                FROM auth.refresh_tokens t
                JOIN auth.sessions s ON s.id = t.session_id
                JOIN auth.users u ON u.id = s.user_id
                WHERE t.token_hash = \(hash)
                FOR UPDATE OF t, s
                """)
            guard let row = rows.first, try row.decode("live", as: Bool.self) else { return .invalid }
            let sessionID = try row.decode("session_id", as: UUID.self)
            let user = try AuthController.user(row)
            if try row.decode("unused", as: Bool.self) {
                try connection.execute("UPDATE auth.refresh_tokens SET used_at = now() WHERE token_hash = \(hash)")
                try connection.execute(
                    """
                    INSERT INTO auth.refresh_tokens (token_hash, session_id, expires_at)
                    VALUES (\(successorHash), \(sessionID), now() + make_interval(days => \(days)))
                    """)
                try connection.execute(
                    "UPDATE auth.sessions SET expires_at = now() + make_interval(days => \(days)) WHERE id = \(sessionID)")
                return .rotated(user, sessionID)
            }
            // Used before. Within the grace window, and while its successor is still unused, it
            // is the same client retrying: answer with the same successor.
            if try row.decode("in_grace", as: Bool?.self) == true {
                let next = try connection.query(
                    """
                    SELECT 1 FROM auth.refresh_tokens WHERE token_hash = \(successorHash) AND used_at IS NULL
                    """)
                if !next.isEmpty { return .rotated(user, sessionID) }
            }
            try connection.execute(
                """
                UPDATE auth.sessions SET revoked_at = now(), revoked_reason = 'refresh token reuse' WHERE id = \(sessionID)
                """)
            try revoked([sessionID], of: user.id, on: connection)
            return .reused(sessionID)
        }
        switch outcome {
        case .rotated(let user, let sessionID):
            return AuthSessionResponse(value: try session(user, sessionID: sessionID, refreshToken: successor))
        case .reused(let sessionID):
            logger.warning(
                "refresh token reused; session revoked",
                [
                    ("session_id", .string(sessionID.uuidString.lowercased())), ("request_id", .string(request.requestID)),
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
        let user = principal.userID, current = principal.sessionID
        try await database.withTransaction { connection in
            let ended = try connection.query(
                """
                UPDATE auth.sessions s SET revoked_at = now(), revoked_reason = 'logout'
                WHERE s.user_id = \(user) AND s.revoked_at IS NULL
                  AND (s.id = \(current) OR s.id IN (SELECT session_id FROM auth.refresh_tokens WHERE token_hash = \(hash)))
                RETURNING s.id
                """)
            try revoked(try ended.map { try $0.decode("id", as: UUID.self) }, of: user, on: connection)
        }
        return .noContent
    }

    /// Publishes, in the transaction that ended them, that these sessions' access tokens are
    /// revoked until the last of them would have expired.
    private func revoked(_ sessions: [UUID], of user: UUID, on connection: PostgresConnection) throws {
        let until = Int(Date().timeIntervalSince1970) + tokens.accessTTL + 60
        for session in sessions {
            try EventLog.append(
                SessionRevoked.type, payload: SessionRevoked(sessionId: session, userId: user, until: until), on: connection)
        }
    }

    func me(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<User> {
        let principal = try context.caller()
        return JSONResponse(try await user(principal.userID))
    }

    func changePassword(_ request: Request, _ context: ServiceRequestContext, _ body: PasswordChangeRequest) async throws
        -> Response
    {
        let principal = try context.caller()
        let rows = try await database.query("SELECT email_key FROM auth.users WHERE id = \(principal.userID)")
        guard let emailKey = try rows.first?.decode("email_key", as: String.self) else {
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
        let keep = principal.sessionID
        try await database.withTransaction { connection in
            try connection.execute("UPDATE auth.users SET password_hash = \(hash), updated_at = now() WHERE id = \(user.id)")
            let ended = try connection.query(
                """
                UPDATE auth.sessions SET revoked_at = now(), revoked_reason = 'password changed'
                WHERE user_id = \(user.id) AND revoked_at IS NULL AND id IS DISTINCT FROM \(keep)
                RETURNING id
                """)
            try revoked(try ended.map { try $0.decode("id", as: UUID.self) }, of: user.id, on: connection)
        }
        logger.info("password changed; other sessions revoked", [("user_id", .string(user.id.uuidString.lowercased()))])
        return .noContent
    }

    func deleteAccount(_ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        let principal = try context.caller()
        let deleted = try await database.withTransaction { connection -> Bool in
            let rows = try connection.query("DELETE FROM auth.users WHERE id = \(principal.userID) RETURNING id")
            guard !rows.isEmpty else { return false }
            // In the same transaction: the event exists exactly when the account is gone.
            try EventLog.append(AccountDeleted.type, payload: AccountDeleted(userId: principal.userID), on: connection)
            return true
        }
        guard deleted else { throw HTTPError.unauthorized("The account no longer exists.") }
        logger.info("account deleted", [("user_id", .string(principal.userID.uuidString.lowercased()))])
        return .noContent
    }

    // MARK: - Helpers

    private func user(_ id: UUID) async throws -> User {
        let rows = try await database.query("SELECT id, email, display_name, role, created_at FROM auth.users WHERE id = \(id)")
        guard let row = rows.first else { throw HTTPError.unauthorized("The account no longer exists.") }
        return try AuthController.user(row)
    }

    static func user(_ row: PostgresRow) throws -> User {
        User(
            id: try row.decode("id"), email: try row.decode("email"),
            displayName: try row.decode("display_name", as: String?.self),
            role: try row.decode("role"), createdAt: try row.decode("created_at"))
    }

    /// Opens a session with its first refresh token, in one statement (atomic on its own).
    static func openSession(_ connection: PostgresConnection, userID: UUID, days: Int, tokens: TokenIssuer) throws -> (
        UUID, String
    ) {
        let sessionID = UUID()
        let refreshToken = tokens.newRefreshToken()
        try connection.execute(
            """
            WITH session AS (
                INSERT INTO auth.sessions (id, user_id, expires_at)
                VALUES (\(sessionID), \(userID), now() + make_interval(days => \(days)))
                RETURNING id, expires_at
            )
            INSERT INTO auth.refresh_tokens (token_hash, session_id, expires_at)
            SELECT \(PostgresBytes(TokenIssuer.hash(refreshToken))), id, expires_at FROM session
            """)
        return (sessionID, refreshToken)
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
