import Foundation
import PierModels

/// Two-step sign-in: an authenticator app (TOTP) and recovery codes.
///
/// A sign-in of an account with it on throws `mfa_required` with ``PierError/mfaToken``; the
/// app asks for a code and calls ``completeSignIn(mfaToken:code:)`` within 5 minutes — or, when
/// ``PierError/factors`` names `passkey`, uses a passkey of the account instead
/// (``passkeyOptions(mfaToken:)`` and ``completeSignIn(mfaToken:passkey:)``; on Apple platforms
/// `completeSignInWithPasskey(mfaToken:anchor:)` does both). Setting it
/// up: ``setUpAuthenticatorApp(password:)`` gives a secret and its QR code, and
/// ``confirmAuthenticatorApp(code:)`` with the app's first code turns it on and gives the ten
/// recovery codes to show once.
extension PierAuth {
    /// Finishes a sign-in that threw `mfa_required`, with a code from the authenticator app or a
    /// recovery code. Throws `invalid_code` (401: wrong or used; ask again) or `invalid_mfa_token`
    /// (401: expired, or five wrong codes: sign in again).
    @discardableResult
    public func completeSignIn(mfaToken: String, code: String) async throws(PierError) -> User {
        let body = Transport.body(MFAVerifyRequest(mfaToken: mfaToken, code: code))
        let user = try await signIn(Call(AuthAPI.verifySecondFactor, NoParameters(), body: body))
        return user
    }

    /// Options for a passkey of the account whose sign-in threw `mfa_required` (its passkeys,
    /// and a challenge for 5 minutes). Throws `conflict` (409) when a passkey cannot finish it.
    public func passkeyOptions(mfaToken: String) async throws(PierError) -> PasskeyRequestOptions {
        try await authorized.call(
            AuthAPI.secondFactorPasskeyOptions, NoParameters(), body: MFATokenRequest(mfaToken: mfaToken), signedIn: false)
    }

    /// Finishes a sign-in that threw `mfa_required` with a passkey's assertion over the options
    /// of ``passkeyOptions(mfaToken:)``. Throws `invalid_passkey` (401) or `invalid_mfa_token`.
    @discardableResult
    public func completeSignIn(mfaToken: String, passkey assertion: PasskeyAssertion) async throws(PierError) -> User {
        let body = Transport.body(MFAVerifyRequest(mfaToken: mfaToken, passkey: assertion))
        return try await signIn(Call(AuthAPI.verifySecondFactor, NoParameters(), body: body))
    }

    /// The signed-in user's second factors.
    public func twoStepStatus() async throws(PierError) -> MFAStatus {
        try await authorized.call(AuthAPI.secondFactorStatus, NoParameters())
    }

    /// A new authenticator-app secret: show `TOTPEnrolment.qrCode` (SVG) or open
    /// `TOTPEnrolment.uri`, then confirm with the app's first code. Needs `password` (or `code`,
    /// when a factor exists) unless the user signed in within 5 minutes; `email_unverified` (403)
    /// until the address is proven.
    public func setUpAuthenticatorApp(password: String? = nil) async throws(PierError) -> TOTPEnrolment {
        try await authorized.call(
            AuthAPI.setUpAuthenticatorApp, NoParameters(), body: ReauthenticationRequest(password: password))
    }

    /// Turns two-step sign-in on with the app's first code: the ten recovery codes to show the
    /// user once (`invalid_code`, 422, when the code is wrong). Other devices are signed out;
    /// this session's tokens are renewed at once to carry the second factor (a team member's
    /// role may need it).
    public func confirmAuthenticatorApp(code: String) async throws(PierError) -> [String] {
        let codes = try await authorized.call(
            AuthAPI.confirmAuthenticatorApp, NoParameters(), body: MFACodeRequest(code: code)
        ).codes
        // Best effort: should it fail, the next refresh carries it all the same.
        if let session = await manager.current() { _ = try? await manager.refresh(session) }
        return codes
    }

    /// Ten new recovery codes; the old ones stop working. Needs a code unless the user signed in
    /// with one within 5 minutes.
    public func newRecoveryCodes(code: String? = nil) async throws(PierError) -> [String] {
        try await authorized.call(AuthAPI.replaceRecoveryCodes, NoParameters(), body: ReauthenticationRequest(code: code))
            .codes
    }

    /// Turns two-step sign-in off (the owner is mailed). Needs a code unless the user signed in
    /// with one within 5 minutes.
    public func turnOffTwoStep(code: String? = nil) async throws(PierError) {
        try await authorized.perform(AuthAPI.removeAuthenticatorApp, NoParameters(), body: ReauthenticationRequest(code: code))
    }
}
