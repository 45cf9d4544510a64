import Foundation
import PierModels

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Register, sign in and out, and the session's state.
public final class PierAuth: Sendable {
    let authorized: Authorized
    /// The installation's id, what an anonymous sign-up is counted by.
    let installationID: String
    /// ``PierClient/Options/appAttestation``, when set.
    let attestations: InstallationTokens?
    var manager: SessionManager { authorized.sessions }

    init(_ authorized: Authorized, installationID: String, attestations: InstallationTokens?) {
        self.authorized = authorized
        self.installationID = installationID
        self.attestations = attestations
    }

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

    func signIn(_ call: Call, email: String? = nil, token: String? = nil) async throws(PierError) -> User {
        let answer = try await authorized.transport.json(AuthSession.self, call, token: token)
        if let token = answer.deviceToken, let address = email ?? answer.user.email {
            manager.saveDeviceToken(token, for: Self.key(address))
        }
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
    /// on the first authorization only (`fullName`). Signed in anonymously
    /// (``signInAnonymously(deviceName:attestation:)``), it keeps that account instead, with
    /// the same id and everything it holds; `identity_taken` (409) when the Apple ID belongs to
    /// another account (offer to sign in to it).
    ///
    /// The details: the credential's `identityToken` (as a string), the raw
    /// `nonce` whose SHA-256 the app put in the authorization request, and the name Apple gives
    /// on the first authorization only (`fullName`). Creates the account the first time (linked
    /// by a verified address to an existing one). Throws `invalid_identity_token` (401) or
    /// `email_taken` (409: an account has the address and Apple did not verify it).
    /// `authorizationCode` (the credential's, as a string) lets the server revoke Apple's tokens
    /// when the account is deleted, as App Review asks. On Apple platforms,
    /// `signInWithApple(_:nonce:deviceName:)` takes the credential itself.
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
        // Signed in anonymously: the identity keeps this account (its bearer token says which).
        let keeping = currentUser?.isAnonymous == true ? try await accessToken() : nil
        return try await signIn(
            name == "apple"
                ? Call(AuthAPI.apple, NoParameters(), body: body) : Call(AuthAPI.oidc, ProviderName(name), body: body),
            token: keeping)
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
