import Foundation
import PierModels

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension PierAuth {
    /// Starts without signing up: an anonymous account for this installation, signed in
    /// (``currentUser`` has `isAnonymous`). Feedback, replies, purchases and live updates work
    /// as for any account. Keep it later, with the same id and everything it holds, through
    /// ``keepAccount(email:password:)``, Sign in with Apple or another provider
    /// (``signIn(provider:identityToken:nonce:fullName:deviceName:authorizationCode:)``), or a
    /// passkey. Throws `rate_limited` (429) past the installation's or network's limit.
    ///
    /// The sign-up is counted against this installation (``PierClient/installationID``).
    /// With `attestation` (or ``PierClient/Options/appAttestation``; `DeviceCheckAttestation` on
    /// Apple platforms), the sign-up carries an
    /// App Attest assertion, as a server with `PIER_AUTH_APP_ATTEST=required` asks
    /// (`attestation_required`, 403, without one); the installation's key is attested the first time.
    @discardableResult
    public func signInAnonymously(deviceName: String? = nil, attestation: (any AppAttestation)? = nil)
        async throws(PierError) -> User
    {
        var proof: AppAttestAssertion?
        if let attestation = attestation ?? attestations?.attestation {
            proof = try await authorized.appAttest(attestation, installation: installationID)
        }
        let body = Transport.body(
            AnonymousSignInRequest(installationId: installationID, deviceName: deviceName, appAttest: proof))
        return try await signIn(Call(AuthAPI.signInAnonymously, NoParameters(), body: body))
    }

    /// Whether the signed-in user is anonymous (false when signed out).
    public var isAnonymous: Bool { currentUser?.isAnonymous ?? false }

    /// Keeps the anonymous account with an address and a password: Pier mails a link to the
    /// address, and when it is opened (on any device) the account takes both, keeps its id and
    /// everything it holds, and its other sessions end; ``userUpdates`` tells when
    /// (`isAnonymous` becomes false). Returns the address the link went to. Throws
    /// `identity_taken` (409: another account has the address; ``PierError/offer`` says what
    /// to propose), `not_anonymous` (409), `weak_password` or `validation_failed` (422).
    @discardableResult
    public func keepAccount(email: String, password: String) async throws(PierError) -> String {
        try await authorized.call(
            AuthAPI.upgradeAnonymous, NoParameters(), body: AnonymousUpgradeRequest(email: email, password: password)
        ).sentTo
    }

    /// Merges the anonymous account into the account that has the address or identity it asked
    /// for, when a keep or a sign-in threw `identity_taken` with `merge` in ``PierError/offer``:
    /// proves the anonymous side, then runs `signIn` (sign in to that account: ``login(email:password:deviceName:)``
    /// with its second factor, Sign in with Apple, a passkey), then merges. Afterwards the app is
    /// signed in to that account and everything the anonymous one held (feedback and replies,
    /// App Store purchases, grants) is that account's within seconds.
    ///
    /// All or nothing on this device: when `signIn` or the merge fails, the anonymous session
    /// is signed in again (and the other account's new session ended), and the error is thrown.
    /// Throws `not_anonymous` (409) for a permanent account, `invalid_merge_token` (422) when the
    /// flow took more than ten minutes.
    @discardableResult
    public func merge(into signIn: () async throws(PierError) -> Void) async throws(PierError) -> AnonymousMergeAnswer {
        let ticket = try await authorized.call(AuthAPI.startMerge, NoParameters())
        guard let anonymous = await manager.setAside() else { throw PierError.signedOut() }
        do {
            try await signIn()
            return try await authorized.call(
                AuthAPI.mergeAnonymous, NoParameters(), body: AnonymousMergeRequest(mergeToken: ticket.mergeToken))
        } catch {
            if let other = await manager.current(), other.user.id != anonymous.user.id {
                let body = Transport.body(RefreshRequest(refreshToken: other.refreshToken))
                _ = try? await authorized.transport.send(Call(AuthAPI.logout, NoParameters(), body: body), token: nil)
            }
            await manager.signIn(anonymous)
            throw error
        }
    }
}
