import Foundation
import PierModels

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The client an app holds for one Pier server:
///
/// ```swift
/// let pier = PierClient(baseURL: URL(string: "https://api.example.com")!, sessionStore: KeychainSessionStore())
/// let user = try await pier.auth.login(email: email, password: password)
/// let item = try await pier.feedback.send(NewFeedback(message: "Love it", rating: 5))
/// if await pier.subscriptions.isEntitled("pro") { … }
/// ```
///
/// Sessions refresh by themselves; calls that are safe to repeat are retried on transient
/// failures; every error is a ``PierError``.
public final class PierClient: Sendable {
    public struct Options: Sendable {
        public var retry: RetryPolicy
        /// Refresh the access token when it has less than this left.
        public var refreshMargin: TimeInterval
        /// A directory where feedback that could not be sent waits (``PierFeedback/flushOutbox()``);
        /// nil: no outbox, a failed send is the caller's to retry.
        public var feedbackOutbox: URL?
        /// Names this installation of the app to the server (`X-Installation-ID`): anonymous feedback
        /// ids and keys are kept apart per installation, so a retry from another network still
        /// finds its first attempt. nil: kept in the outbox directory when there is one, else new
        /// for each client.
        public var installationID: String?
        /// How old a cached subscription status may be and still be served when the server cannot
        /// be reached (marked ``CachedStatus/isStale``).
        public var staleStatusLimit: TimeInterval
        /// Trust only statuses signed by your server's pinned key (see ``StatusSigning``); nil:
        /// statuses are trusted as HTTPS delivers them.
        public var statusSigning: StatusSigning?
        public var urlSession: URLSession

        /// Ephemeral, without URLSession's own cache: PierClient keeps what may be kept itself.
        public static var defaultSession: URLSession {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.urlCache = nil
            configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
            return URLSession(configuration: configuration)
        }

        public init(
            retry: RetryPolicy = RetryPolicy(), refreshMargin: TimeInterval = 60, feedbackOutbox: URL? = nil,
            installationID: String? = nil, staleStatusLimit: TimeInterval = 3 * 24 * 3600,
            statusSigning: StatusSigning? = nil, urlSession: URLSession = PierClient.Options.defaultSession
        ) {
            self.statusSigning = statusSigning
            self.retry = retry
            self.installationID = installationID
            self.refreshMargin = refreshMargin
            self.feedbackOutbox = feedbackOutbox
            self.staleStatusLimit = staleStatusLimit
            self.urlSession = urlSession
        }
    }

    public let baseURL: URL
    public let auth: PierAuth
    public let feedback: PierFeedback
    public let subscriptions: PierSubscriptions
    /// The team's calls (admins only).
    public let admin: PierAdmin
    let authorized: Authorized

    public init(baseURL: URL, sessionStore: (any SessionStore)? = nil, options: Options = Options()) {
        self.baseURL = baseURL
        let transport = Transport(baseURL: baseURL, session: options.urlSession, retry: options.retry)
        let sessions = SessionManager(
            store: sessionStore ?? MemorySessionStore(), transport: transport, margin: options.refreshMargin)
        let authorized = Authorized(transport: transport, sessions: sessions)
        self.authorized = authorized
        auth = PierAuth(authorized)
        let installationID =
            options.installationID ?? options.feedbackOutbox.map(PierFeedback.installationID(in:))
            ?? UUID().uuidString.lowercased()
        feedback = PierFeedback(authorized, outbox: options.feedbackOutbox, installationID: installationID)
        subscriptions = PierSubscriptions(
            authorized, staleLimit: options.staleStatusLimit, signing: options.statusSigning, installationID: installationID)
        admin = PierAdmin(authorized)
    }
}

extension PierClient {
    /// Calls any endpoint, as the signed-in user or (`signedIn: false`) anonymously, with the
    /// same refresh, retries (GET, PUT, DELETE only) and errors as the typed calls; returns the
    /// answer's body. For tools and for endpoints this library has no method for (the team's).
    public func call(
        _ method: String, _ path: String, query: [URLQueryItem] = [], json body: Data? = nil, signedIn: Bool = true
    ) async throws(PierError) -> Data {
        let call = Call(
            method: method, path: path, query: query, body: body, retryable: ["GET", "HEAD", "PUT", "DELETE"].contains(method))
        return try await authorized.send(call, signedIn: signedIn).0
    }
}

/// Sends calls as the signed-in user: a fresh access token, and one retry after a 401 with a
/// refreshed one.
struct Authorized: Sendable {
    let transport: Transport
    let sessions: SessionManager

    func send(_ call: Call, signedIn: Bool = true) async throws(PierError) -> (Data, HTTPURLResponse) {
        guard signedIn else { return try await transport.send(call, token: nil) }
        let token = try await sessions.accessToken()
        do {
            return try await transport.send(call, token: token)
        } catch  where error.status == 401 && [ProblemCode.tokenExpired, .tokenInvalid].contains(error.code) {
            return try await transport.send(call, token: try await sessions.accessToken(rejected: token))
        } catch  where error.status == 401 && [ProblemCode.sessionRevoked, .accountDeleted].contains(error.code) {
            await sessions.signOut(error.code == .accountDeleted ? .accountDeleted : .sessionEnded)
            throw error
        }
    }

    func json<T: Decodable>(_ type: T.Type, _ call: Call, signedIn: Bool = true) async throws(PierError) -> T {
        let (data, response) = try await send(call, signedIn: signedIn)
        return try Transport.decode(T.self, data, requestID: response.value(forHTTPHeaderField: "X-Request-ID"))
    }

    /// Calls `endpoint` with `body` and decodes its answer.
    func call<Parameters, Body: Encodable, Answer: Decodable>(
        _ endpoint: Endpoint<Parameters, Body, Answer>, _ parameters: Parameters, body: Body,
        headers: [String: String] = [:], signedIn: Bool = true
    ) async throws(PierError) -> Answer {
        try await json(
            Answer.self, Call(endpoint, parameters, body: Transport.body(sent: body), headers: headers), signedIn: signedIn)
    }

    /// Calls `endpoint`, which takes no body, and decodes its answer.
    func call<Parameters, Answer: Decodable>(
        _ endpoint: Endpoint<Parameters, NoBody, Answer>, _ parameters: Parameters, signedIn: Bool = true
    ) async throws(PierError) -> Answer {
        try await json(Answer.self, Call(endpoint, parameters), signedIn: signedIn)
    }

    /// Calls `endpoint`, which answers no content, with `body`.
    func perform<Parameters, Body: Encodable>(
        _ endpoint: Endpoint<Parameters, Body, NoContent>, _ parameters: Parameters, body: Body, signedIn: Bool = true
    ) async throws(PierError) {
        _ = try await send(Call(endpoint, parameters, body: Transport.body(sent: body)), signedIn: signedIn)
    }

    /// Calls `endpoint`, which takes no body and answers no content.
    func perform<Parameters>(
        _ endpoint: Endpoint<Parameters, NoBody, NoContent>, _ parameters: Parameters, signedIn: Bool = true
    ) async throws(PierError) {
        _ = try await send(Call(endpoint, parameters), signedIn: signedIn)
    }

    /// The answer of `endpoint` as it came, not decoded (a file to save).
    func bytes<Parameters, Answer>(
        _ endpoint: Endpoint<Parameters, NoBody, Answer>, _ parameters: Parameters
    ) async throws(PierError) -> Data {
        try await send(Call(endpoint, parameters)).0
    }
}

/// Register, sign in and out, and the session's state.
public final class PierAuth: Sendable {
    let authorized: Authorized
    var manager: SessionManager { authorized.sessions }

    init(_ authorized: Authorized) { self.authorized = authorized }

    /// The signed-in user, or nil. Read without waiting; kept current by every sign-in, refresh
    /// and sign-out.
    public var currentUser: User? { manager.snapshot.withLock { $0 } }

    /// Signed in, token refreshed, signed out (with why), from now on, to each listener.
    public var events: AsyncStream<AuthEvent> { manager.events.stream() }

    /// Creates the account and signs in; Pier mails a link that verifies the address (tell the
    /// user to look for it): `currentUser.emailVerified` stays false until it is opened, on any
    /// device, and ``userUpdates`` tells when it was. Throws
    /// `email_taken` (409), `weak_password` or `validation_failed` (422,
    /// ``PierError/fieldErrors`` name the fields). `deviceName` ("Anna's iPhone") is what
    /// ``sessions()`` shows for this session.
    @discardableResult
    public func register(email: String, password: String, displayName: String? = nil, deviceName: String? = nil)
        async throws(PierError) -> User
    {
        let body = Transport.body(
            RegisterRequest(email: email, password: password, displayName: displayName, deviceName: deviceName))
        return try await signIn(Call(AuthAPI.register, NoParameters(), body: body), email: email)
    }

    /// Signs in. Throws `invalid_credentials` (401), `rate_limited` (429, with
    /// ``PierError/retryAfter``), or `email_unverified` (403) when the server requires a verified
    /// address (offer ``resendVerification(email:)``). On an account with two-step sign-in it
    /// throws `mfa_required` (401) with ``PierError/mfaToken``: ask for a code, then call
    /// ``completeSignIn(mfaToken:code:)``.
    @discardableResult
    ///
    /// The device token of this device's last sign-in to the address goes along (kept by the
    /// session store across sign-outs): failed logins by others on the same network do not hold
    /// this device back.
    public func login(email: String, password: String, deviceName: String? = nil) async throws(PierError) -> User {
        let deviceToken = manager.deviceToken(for: Self.key(email))
        let body = Transport.body(
            LoginRequest(email: email, password: password, deviceName: deviceName, deviceToken: deviceToken))
        return try await signIn(Call(AuthAPI.login, NoParameters(), body: body), email: email)
    }

    func signIn(_ call: Call, email: String? = nil) async throws(PierError) -> User {
        let answer = try await authorized.transport.json(AuthSession.self, call, token: nil)
        if let token = answer.deviceToken { manager.saveDeviceToken(token, for: Self.key(email ?? answer.user.email)) }
        let session = Session(answer)
        await manager.signIn(session)
        return session.user
    }

    /// An address as the server compares them.
    static func key(_ email: String) -> String { email.trimmingCharacters(in: .whitespacesAndNewlines).lowercased() }

    /// Signs out here at once, and ends the session on the server (best effort: if the server
    /// cannot be reached, the session expires there by itself).
    public func logout() async {
        guard let refreshToken = await manager.signOut(.requested) else { return }
        let body = Transport.body(RefreshRequest(refreshToken: refreshToken))
        _ = try? await authorized.transport.send(Call(AuthAPI.logout, NoParameters(), body: body), token: nil)
    }

    /// The user as the server has it now (``currentUser`` becomes it too).
    public func me() async throws(PierError) -> User {
        await updated(try await authorized.call(AuthAPI.me, NoParameters()))
    }

    /// Reads the signed-in user again from the server: a change made elsewhere (another device,
    /// the team) shows in ``currentUser`` and ``events`` (`.userUpdated`).
    @discardableResult
    public func reload() async throws(PierError) -> User { try await me() }

    /// The signed-in user as they change, pushed by the server (`GET /auth/me/events`): the user
    /// now first, then each change made anywhere (a new address or name from another device, the
    /// address verified through the mailed link, a role or a disabling by the team) within
    /// about a second. ``currentUser`` follows, and ``events`` tells `.userUpdated`.
    ///
    /// Reconnects by itself as ``PierSubscriptions/updates`` does. When the session ends on the
    /// server (a sign-out elsewhere, a password changed on another device, the account deleted)
    /// this device is signed out (``events`` says why) and the stream ends:
    ///
    /// ```swift
    /// .task { for await user in pier.auth.userUpdates { name = user.displayName ?? "" } }
    /// ```
    public var userUpdates: AsyncStream<User> {
        authorized.live(AuthAPI.events.path(EventStreamRequest()), event: "user", as: User.self) { [manager] user, _ in
            await manager.update(user)
            return user
        }
    }

    /// `user` as the signed-in user's new state when it is theirs; returned as given.
    private func updated(_ user: User) async -> User {
        await manager.update(user)
        return user
    }

    /// A valid access token for calls to your own endpoints (refreshed when needed).
    public func accessToken() async throws(PierError) -> String { try await manager.accessToken() }

    // MARK: - Sign in with Apple and other providers

    /// Signs in with Sign in with Apple: the credential's `identityToken` (as a string), the raw
    /// `nonce` whose SHA-256 the app put in the authorization request, and the name Apple gives
    /// on the first authorization only (`fullName`). Creates the account the first time (linked
    /// by a verified address to an existing one). Throws `invalid_identity_token` (401) or
    /// `email_taken` (409: an account has the address and Apple did not verify it).
    /// `authorizationCode` (the credential's, as a string) lets the server revoke Apple's tokens
    /// when the account is deleted, as App Review asks. On Apple platforms,
    /// ``signInWithApple(_:nonce:deviceName:)`` takes the credential itself.
    @discardableResult
    public func signInWithApple(
        identityToken: String, nonce: String, fullName: String? = nil, deviceName: String? = nil,
        authorizationCode: String? = nil
    ) async throws(PierError) -> User {
        try await signIn(
            provider: "apple", identityToken: identityToken, nonce: nonce, fullName: fullName, deviceName: deviceName,
            authorizationCode: authorizationCode)
    }

    /// Signs in with an ID token from an OpenID Connect provider configured on the server by
    /// `name` (`PIER_AUTH_OIDC_PROVIDERS`); `apple` is Sign in with Apple.
    @discardableResult
    public func signIn(
        provider name: String, identityToken: String, nonce: String, fullName: String? = nil, deviceName: String? = nil,
        authorizationCode: String? = nil
    ) async throws(PierError) -> User {
        let body = Transport.body(
            IdentitySignInRequest(
                identityToken: identityToken, nonce: nonce, fullName: fullName, deviceName: deviceName,
                authorizationCode: authorizationCode))
        return try await signIn(
            name == "apple"
                ? Call(AuthAPI.apple, NoParameters(), body: body) : Call(AuthAPI.oidc, ProviderName(name), body: body))
    }

    // MARK: - Mailed links

    /// Verifies the address with the `token` of the mailed link (the app opens the link as a
    /// universal link and passes its `token` query item). Throws `invalid_email_token` (422)
    /// when it was used or expired. ``currentUser`` says so at once when it is the signed-in
    /// user's address; access tokens from the next refresh on.
    @discardableResult
    public func verifyEmail(token: String) async throws(PierError) -> User {
        await updated(
            try await authorized.call(AuthAPI.verifyEmail, NoParameters(), body: EmailTokenRequest(token: token), signedIn: false)
        )
    }

    /// Mails the verification link again: to the signed-in user, or (signed out, e.g. after
    /// `email_unverified`) to the account of `email`. The server says the same whether or not
    /// such an account exists.
    public func resendVerification(email: String? = nil) async throws(PierError) {
        let signedIn = currentUser != nil && email == nil
        try await authorized.perform(
            AuthAPI.resendVerification, NoParameters(), body: email.map { EmailRequest(email: $0) }, signedIn: signedIn)
    }

    /// Mails a password-reset link to `email` when an account has it (the answer is the same
    /// either way: no one learns which addresses have accounts).
    public func forgotPassword(email: String) async throws(PierError) {
        try await authorized.perform(AuthAPI.forgotPassword, NoParameters(), body: EmailRequest(email: email), signedIn: false)
    }

    /// Sets a new password with the `token` of the mailed link. Every session of the account
    /// ends (this device's too: sign in again). Throws `weak_password` (422) or
    /// `invalid_email_token` (422).
    public func resetPassword(token: String, newPassword: String) async throws(PierError) {
        try await authorized.perform(
            AuthAPI.resetPassword, NoParameters(), body: ResetPasswordRequest(token: token, newPassword: newPassword),
            signedIn: false)
    }

    // MARK: - The account

    /// Changes the display name and the locale (BCP 47); nil leaves a field as it is, an empty
    /// string clears it. Returns the user as the server has it now (``currentUser`` too).
    @discardableResult
    public func updateProfile(displayName: String? = nil, locale: String? = nil) async throws(PierError) -> User {
        await updated(
            try await authorized.call(
                AuthAPI.updateProfile, NoParameters(), body: ProfileChange(displayName: displayName, locale: locale)))
    }

    /// Asks to use `newEmail`: Pier mails it a confirmation link (the address changes when
    /// ``confirmEmailChange(token:)`` gets its token) and tells the current address. Needs
    /// `password` unless the user signed in within the last 5 minutes
    /// (`reauthentication_required`, 401, otherwise); `email_taken` (409).
    public func changeEmail(to newEmail: String, password: String? = nil) async throws(PierError) {
        try await authorized.perform(
            AuthAPI.changeEmail, NoParameters(), body: EmailChangeRequest(newEmail: newEmail, password: password))
    }

    /// Confirms a change of address with the `token` of the link mailed to the new address.
    @discardableResult
    public func confirmEmailChange(token: String) async throws(PierError) -> User {
        await updated(
            try await authorized.call(
                AuthAPI.confirmEmailChange, NoParameters(), body: EmailTokenRequest(token: token), signedIn: false))
    }

    /// Cancels a change of address with the `token` of the link in the notice mailed to the old
    /// address: the change is void and the device that asked for it is signed out.
    @discardableResult
    public func cancelEmailChange(token: String) async throws(PierError) -> User {
        await updated(
            try await authorized.call(
                AuthAPI.cancelEmailChange, NoParameters(), body: EmailTokenRequest(token: token), signedIn: false))
    }

    // MARK: - Identities

    /// The providers the user signs in with (Sign in with Apple, OpenID Connect).
    public func identities() async throws(PierError) -> [LinkedIdentity] {
        try await authorized.call(AuthAPI.identities, NoParameters()).items
    }

    /// Unlinks one: it no longer signs in to this account. Needs `password` unless the user
    /// signed in within the last 5 minutes (`reauthentication_required`); never the account's
    /// last way in (`last_sign_in_method`, 409: set a password first).
    public func unlinkIdentity(_ id: UUID, password: String? = nil) async throws(PierError) {
        try await authorized.perform(AuthAPI.unlinkIdentity, PathID(id), body: ReauthenticationRequest(password: password))
    }

    /// Gives the password again (a step-up): the session's next requests count as a fresh
    /// sign-in for 5 minutes, for the actions that ask for one (`reauthentication_required`).
    /// On an account with two-step sign-in, a code from the authenticator app or a recovery code
    /// instead (`code`; the password alone is refused). Or, on any account with a passkey, its
    /// assertion over ``passkeyReauthenticationOptions()`` (`passkey`).
    public func reauthenticate(password: String? = nil, code: String? = nil, passkey: PasskeyAssertion? = nil)
        async throws(PierError)
    {
        guard let user = currentUser else { throw .signedOut() }
        let stepUp = try await authorized.call(
            AuthAPI.reauthenticate, NoParameters(),
            body: ReauthenticationRequest(password: password, code: code, passkey: passkey))
        await manager.adopt(stepUp, of: user.id)
    }

    /// Deletes the account and everything the services hold about the user, and signs out here.
    /// Needs `password` (with two-step sign-in, `code`) unless the user signed in within the last
    /// 5 minutes (`reauthentication_required`, 401, otherwise).
    public func deleteAccount(password: String? = nil, code: String? = nil) async throws(PierError) {
        try await authorized.perform(
            AuthAPI.deleteAccount, NoParameters(), body: ReauthenticationRequest(password: password, code: code))
        _ = await manager.signOut(.accountDeleted)
    }

    /// "Download my data": one JSON document with everything every service holds about the
    /// signed-in user (`{userId, exportedAt, services: {auth, feedback, subscriptions}}`), to
    /// save or share as the user chooses.
    public func exportData() async throws(PierError) -> Data {
        try await authorized.bytes(AuthAPI.export, NoParameters())
    }

    // MARK: - Sessions and devices

    /// The signed-in user's sessions (one per device), the most recently used first; `current`
    /// marks this one.
    public func sessions() async throws(PierError) -> [SessionInfo] {
        try await authorized.call(AuthAPI.sessions, NoParameters()).items
    }

    /// Ends one session (a lost phone): its tokens stop working at once, everywhere.
    public func endSession(_ id: UUID) async throws(PierError) {
        try await authorized.perform(AuthAPI.endSession, PathID(id))
    }

    /// Ends every session of the account, this one included, and signs out here.
    public func logoutEverywhere() async throws(PierError) {
        try await authorized.perform(AuthAPI.logoutAll, NoParameters())
        _ = await manager.signOut(.requested)
    }
}

/// Feedback from the app: sent safely (a retry never stores it twice), kept when offline.
public final class PierFeedback: Sendable {
    let authorized: Authorized
    let outbox: URL?
    let installationID: String

    init(_ authorized: Authorized, outbox: URL?, installationID: String) {
        self.authorized = authorized
        self.outbox = outbox
        self.installationID = installationID
    }

    /// The id kept in the outbox directory, made the first time: queued feedback sent after a
    /// relaunch is the same installation's.
    static func installationID(in outbox: URL) -> String {
        let file = outbox.appendingPathComponent("installation-id")
        if let data = try? Data(contentsOf: file), let id = String(data: data, encoding: .utf8), !id.isEmpty { return id }
        let id = UUID().uuidString.lowercased()
        try? FileManager.default.createDirectory(at: outbox, withIntermediateDirectories: true)
        try? Data(id.utf8).write(to: file, options: .atomic)
        return id
    }

    /// Sends `feedback` (as the signed-in user, or anonymously) and returns the stored item.
    /// Retried on transient failures under its client id, so the server stores it once. With an
    /// outbox, a feedback that still cannot be sent is kept there (the error says
    /// ``PierError/queuedForRetry``; ``PierError/isOffline`` tells an outage from a limit) and
    /// sent by ``flushOutbox()``. The ids of the calls that failed since the last feedback ride
    /// along (`requestIds`, unless you set them), for support to find in the logs.
    @discardableResult
    public func send(_ feedback: NewFeedback) async throws(PierError) -> FeedbackItem {
        var feedback = feedback
        let id = feedback.id ?? UUID()
        feedback.id = id
        var attached: [String] = []
        if feedback.requestIds == nil {
            attached = authorized.transport.failedRequestIDs
            if !attached.isEmpty { feedback.requestIds = attached }
        }
        let file = outbox.map { $0.appendingPathComponent("\(id.uuidString.lowercased()).json") }
        if let outbox, let file {
            try? FileManager.default.createDirectory(at: outbox, withIntermediateDirectories: true)
            try? Transport.encoder.encode(feedback).write(to: file, options: .atomic)
        }
        do {
            let item = try await deliver(feedback)
            if let file { try? FileManager.default.removeItem(at: file) }
            authorized.transport.forget(failedRequestIDs: attached)
            return item
        } catch {
            guard let file else { throw error }
            guard error.isTransient else {
                try? FileManager.default.removeItem(at: file)
                throw error
            }
            authorized.transport.forget(failedRequestIDs: attached)  // the queued feedback has them
            var queued = error
            queued.queuedForRetry = true
            throw queued
        }
    }

    /// Sends what the outbox holds, oldest first, and returns how many were stored; stops at
    /// the first transient failure (the rest wait for the next call). Each keeps its client id,
    /// so one sent twice (a crash between sending and forgetting it) is stored once.
    @discardableResult
    public func flushOutbox() async -> Int {
        guard let outbox,
            let files = try? FileManager.default.contentsOfDirectory(
                at: outbox, includingPropertiesForKeys: [.contentModificationDateKey])
        else { return 0 }
        let queued = files.filter { $0.pathExtension == "json" }.sorted {
            let left = (try? $0.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate) ?? .distantPast
            let right = (try? $1.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate) ?? .distantPast
            return left < right
        }
        var sent = 0
        for file in queued {
            guard let data = try? Data(contentsOf: file),
                let feedback = try? Transport.decoder.decode(NewFeedback.self, from: data)
            else {
                try? FileManager.default.removeItem(at: file)
                continue
            }
            do {
                _ = try await deliver(feedback)
                sent += 1
                try? FileManager.default.removeItem(at: file)
            } catch {
                if error.isTransient { break }
                try? FileManager.default.removeItem(at: file)
            }
        }
        return sent
    }

    /// How many feedbacks wait in the outbox.
    public var queuedCount: Int {
        guard let outbox, let files = try? FileManager.default.contentsOfDirectory(atPath: outbox.path) else { return 0 }
        return files.filter { $0.hasSuffix(".json") }.count
    }

    private func deliver(_ feedback: NewFeedback) async throws(PierError) -> FeedbackItem {
        let signedIn = await authorized.sessions.current() != nil
        return try await authorized.call(
            FeedbackAPI.create, FeedbackSender(installationID: installationID), body: feedback, signedIn: signedIn)
    }

    /// The signed-in user's own feedback, newest first; pass a page's `nextCursor` for the next.
    public func mine(limit: Int = 20, cursor: String? = nil) async throws(PierError) -> FeedbackPage {
        try await authorized.call(FeedbackAPI.mine, PageQuery(limit: limit, cursor: cursor))
    }
}

/// A feedback to send: the server's own request type. Only `message` is required; `id` (made
/// for you when nil) is what makes a retry safe.
public typealias NewFeedback = CreateFeedback

/// Plans, the user's subscription status (cached as the server allows) and App Store purchases.
public final class PierSubscriptions: Sendable {
    let authorized: Authorized
    let staleLimit: TimeInterval
    let cache = Locked<CachedStatus?>(nil)
    let signing: StatusSigning?
    let installationID: String

    init(_ authorized: Authorized, staleLimit: TimeInterval, signing: StatusSigning?, installationID: String) {
        self.authorized = authorized
        self.staleLimit = staleLimit
        self.signing = signing
        self.installationID = installationID
    }

    /// The signed-in user's status: from the cache while the server's `max-age` lasts (never
    /// past `checkAgainAt`), else from the server. When the server cannot be reached, a cached
    /// status younger than ``PierClient/Options/staleStatusLimit`` is served with `isStale`.
    ///
    /// The last answer is kept in the session store too (a file, the Keychain): after a launch
    /// without network the status is the one the server gave before, stale, and
    /// ``isEntitled(_:)`` still ends each entitlement at its own `expiresAt` (grace included).
    ///
    /// With ``PierClient/Options/statusSigning``, every status comes from a signed answer, and
    /// one that is not (changed on the way, replayed, another user's) throws ``PierError/Kind/untrusted``;
    /// a kept status is served stale only while its signature is unexpired.
    public func status() async throws(PierError) -> CachedStatus {
        let user = authorized.sessions.snapshot.withLock { $0?.id }
        guard let user else { throw .signedOut() }
        let cached = (cache.withLock { $0 } ?? stored(for: user)).flatMap { $0.userId == user ? $0 : nil }
        if let cached, cached.freshUntil > Date() { return cached }
        do {
            // Revalidated with the ETag: 304, no body, while nothing changed.
            let nonce = signing.map { _ in StatusSigning.nonce() }
            let call = Call(
                SubscriptionsAPI.me,
                StatusRequest(
                    ifNoneMatch: cached?.etag, nonce: nonce, installationID: nonce == nil ? nil : installationID))
            let (data, response) = try await authorized.send(call)
            let fetched = Date()
            let maxAge = Self.maxAge(response.value(forHTTPHeaderField: "Cache-Control")) ?? 0
            var status: SubscriptionStatus
            var signed: (jws: String, until: Date)?
            if let signing {
                // The signed claims, never the body: the body is what a proxy could change.
                let jws = response.value(forHTTPHeaderField: SignedStatusClaims.header)
                let claims = try signing.claims(jws, user: user, installation: installationID, nonce: nonce)
                status = claims.status
                signed = (jws ?? "", Date(timeIntervalSince1970: Double(claims.exp)))
            } else if response.statusCode == 304, let cached {
                // Unchanged; the time to ask again is the 304's.
                status = cached.value
                status.checkAgainAt = fetched.addingTimeInterval(maxAge)
            } else {
                status = try Transport.decode(
                    SubscriptionStatus.self, data, requestID: response.value(forHTTPHeaderField: "X-Request-ID"))
            }
            let fresh = CachedStatus(
                value: status, userId: user, fetchedAt: fetched,
                freshUntil: min(fetched.addingTimeInterval(maxAge), status.checkAgainAt), isStale: false,
                etag: response.value(forHTTPHeaderField: "ETag") ?? cached?.etag, signed: signed?.jws,
                signedUntil: signed?.until)
            keep(fresh)
            return fresh
        } catch {
            if error.isTransient, var cached, -cached.fetchedAt.timeIntervalSinceNow < staleLimit,
                signing == nil || (cached.signedUntil ?? .distantPast) > Date()
            {
                cached.isStale = true
                return cached
            }
            throw error
        }
    }

    /// The signed-in user's status as it changes, pushed by the server
    /// (`GET /subscriptions/me/events`): the status now first, then each change (a grant, its
    /// revocation, a purchase, a renewal, a refund) within about a second of it. The cache
    /// follows, so ``status()`` and ``isEntitled(_:)`` answer with the new status at once.
    ///
    /// The stream reconnects by itself after a network failure or a server restart (waiting
    /// 1 s, doubling up to a minute, with jitter), with a fresh access token when the one it
    /// used expires, and resumes where it was (the status is sent again only if it changed).
    /// It ends when the user signs out, and when the task reading it is cancelled:
    ///
    /// ```swift
    /// .task { for await status in pier.subscriptions.updates { isPro = status.entitlements.contains { $0.key == "pro" } } }
    /// ```
    ///
    /// With ``PierClient/Options/statusSigning``, each change pushed is read again as a signed
    /// status (one `GET /subscriptions/me`), and what is yielded and kept is that.
    public var updates: AsyncStream<SubscriptionStatus> {
        authorized.live(SubscriptionsAPI.events.path(EventStreamRequest()), event: "status", as: SubscriptionStatus.self) {
            [self] status, user in
            guard signing == nil else {
                invalidate()
                return try? await self.status().value
            }
            keep(
                CachedStatus(
                    value: status, userId: user, fetchedAt: Date(), freshUntil: status.checkAgainAt, isStale: false, etag: nil))
            return status
        }
    }

    /// True when the signed-in user's status unlocks `key` now; false when it does not, when
    /// nobody is signed in, or when no status can be had (the cache included).
    public func isEntitled(_ key: String) async -> Bool {
        guard let status = try? await status() else { return false }
        let now = Date()
        return status.value.entitlements.contains { (entitlement: Entitlement) in
            entitlement.key == key && entitlement.expiresAt > now
        }
    }

    /// The plans on sale.
    public func plans() async throws(PierError) -> [Plan] {
        try await authorized.call(SubscriptionsAPI.plans, PlansQuery(), signedIn: false).items
    }

    /// Sends a StoreKit 2 transaction (`Transaction.jwsRepresentation`) for the signed-in user
    /// and returns the status it gives. Safe to repeat: the server knows each transaction once.
    @discardableResult
    public func submit(signedTransaction: String) async throws(PierError) -> SubscriptionStatus {
        let status = try await authorized.call(
            SubscriptionsAPI.transaction, NoParameters(),
            body: AppStoreTransactionRequest(signedTransaction: signedTransaction))
        invalidate()
        return status
    }

    /// Makes the next ``status()`` ask the server. The status kept is still served, stale, when
    /// the server cannot be reached.
    public func invalidate() {
        guard let user = authorized.sessions.snapshot.withLock({ $0?.id }),
            var kept = cache.withLock({ $0 }) ?? stored(for: user)
        else { return }
        kept.freshUntil = .distantPast
        keep(kept)
    }

    /// `status` in memory and in the session store, unless its user has signed out meanwhile.
    private func keep(_ status: CachedStatus) {
        guard authorized.sessions.snapshot.withLock({ $0?.id }) == status.userId else { return }
        cache.withLock { $0 = status }
        if let data = try? Self.storage.encode(status) { authorized.sessions.store.saveStatus(data) }
    }

    /// The status the session store kept (by an earlier launch, or another process sharing the
    /// store) for `user`; nil when none can be read. Never fresh: asked for again when the server
    /// can be reached (a grant made meanwhile shows at once), served stale when it cannot. With
    /// ``StatusSigning``, only a kept signature that still verifies, for this user and
    /// installation and unexpired, gives a status, and the status is the signed one: one edited
    /// in the store is dropped.
    private func stored(for user: UUID) -> CachedStatus? {
        guard let data = authorized.sessions.store.loadStatus(),
            var status = try? Self.reading.decode(CachedStatus.self, from: data)
        else { return nil }
        if let signing {
            guard let claims = try? signing.claims(status.signed, user: user, installation: installationID, nonce: nil),
                claims.status == status.value
            else { return nil }
        }
        status.freshUntil = .distantPast
        return status
    }

    /// Dates kept to the sub-second (the wire's are whole seconds): a status reads back as it was.
    private static let storage: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()
    private static let reading = JSONDecoder()

    static func maxAge(_ cacheControl: String?) -> TimeInterval? {
        guard let cacheControl else { return nil }
        for directive in cacheControl.split(separator: ",") {
            let parts = directive.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "max-age", let seconds = TimeInterval(parts[1]) { return seconds }
        }
        return nil
    }
}

/// A subscription status with where it came from; read its fields directly
/// (`try await pier.subscriptions.status().active`).
@dynamicMemberLookup
public struct CachedStatus: Sendable, Equatable, Codable {
    public let value: SubscriptionStatus
    let userId: UUID
    /// When the server answered it.
    public let fetchedAt: Date
    /// Until when it is served without asking the server.
    public internal(set) var freshUntil: Date
    /// True when the server could not be reached and this is an older answer.
    public internal(set) var isStale: Bool
    /// The server's `ETag` for it, sent back as `If-None-Match` when it is checked again.
    var etag: String?
    /// With ``StatusSigning``: the signed status it was read from.
    var signed: String? = nil
    /// With ``StatusSigning``: until when the signature it was read from is trusted (offline too).
    public internal(set) var signedUntil: Date? = nil

    public subscript<T>(dynamicMember keyPath: KeyPath<SubscriptionStatus, T>) -> T { value[keyPath: keyPath] }
}
