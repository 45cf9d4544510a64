import Foundation
import PierModels

/// Passkeys: the options to hand to the platform's authenticator, and what it answers sent back.
/// On Apple platforms ``PierAuth/signInWithPasskey(anchor:)`` and ``PierAuth/addPasskey(anchor:)``
/// (`PasskeysApple.swift`) drive `ASAuthorizationPlatformPublicKeyCredentialProvider`; elsewhere,
/// or with another UI, these calls take and give WebAuthn's JSON forms.
extension PierAuth {
    /// Options to create a passkey for the signed-in user (a sensitive action: `password`, or a
    /// code with two-step sign-in, unless the user signed in within 5 minutes).
    public func passkeyRegistrationOptions(password: String? = nil, code: String? = nil) async throws(PierError)
        -> PasskeyCreationOptions
    {
        try await authorized.call(
            AuthAPI.passkeyRegistrationOptions, NoParameters(), body: ReauthenticationRequest(password: password, code: code))
    }

    /// Keeps the passkey the authenticator created (`invalid_passkey`, 422, names what was wrong).
    @discardableResult
    public func registerPasskey(_ registration: PasskeyRegistration) async throws(PierError) -> Passkey {
        try await authorized.call(AuthAPI.registerPasskey, NoParameters(), body: registration)
    }

    /// Options to sign in with a passkey: without an address, any passkey of the site the
    /// device holds (the system's account picker).
    public func passkeyLoginOptions(email: String? = nil) async throws(PierError) -> PasskeyRequestOptions {
        try await authorized.call(
            AuthAPI.passkeyLoginOptions, NoParameters(), body: PasskeyOptionsRequest(email: email), signedIn: false)
    }

    /// Signs in with the assertion the authenticator made. Throws `invalid_passkey` (401), or
    /// `mfa_required` when the passkey did not verify the user and the account has an
    /// authenticator app (then ``completeSignIn(mfaToken:code:)``).
    @discardableResult
    public func signIn(passkey assertion: PasskeyAssertion) async throws(PierError) -> User {
        try await signIn(Call(AuthAPI.passkeyLogin, NoParameters(), body: Transport.body(assertion)))
    }

    /// Options to confirm a sensitive action with one of the signed-in user's passkeys; the
    /// assertion goes to ``reauthenticate(password:code:passkey:)``. Throws `conflict` (409)
    /// when the account has no passkey.
    public func passkeyReauthenticationOptions() async throws(PierError) -> PasskeyRequestOptions {
        try await authorized.call(AuthAPI.reauthenticationPasskeyOptions, NoParameters())
    }

    /// The signed-in user's passkeys.
    public func passkeys() async throws(PierError) -> [Passkey] {
        try await authorized.call(AuthAPI.passkeyList, NoParameters()).items
    }

    @discardableResult
    public func renamePasskey(_ id: UUID, to name: String) async throws(PierError) -> Passkey {
        try await authorized.call(AuthAPI.renamePasskey, PathID(id), body: PasskeyRename(name: name))
    }

    /// Removes a passkey (a sensitive action, as ``passkeyRegistrationOptions(password:code:)``).
    public func removePasskey(_ id: UUID, password: String? = nil, code: String? = nil) async throws(PierError) {
        try await authorized.perform(
            AuthAPI.removePasskey, PathID(id), body: ReauthenticationRequest(password: password, code: code))
    }
}
