// Compiled on Apple platforms only (AuthenticationServices); nothing on Linux builds or tests this
// file. It moves WebAuthn's JSON between Pier and ASAuthorizationPlatformPublicKeyCredentialProvider;
// the calls it makes (`passkeyLoginOptions`, `signIn(passkey:)`, `passkeyOptions(mfaToken:)`,
// `completeSignIn(mfaToken:passkey:)`, `passkeyReauthenticationOptions`, `reauthenticate(passkey:)`,
// `passkeyRegistrationOptions`, `registerPasskey`) are tested on Linux with a software authenticator.
#if canImport(AuthenticationServices)
    import AuthenticationServices
    import Foundation
    import PierModels

    @available(iOS 16, macOS 13, visionOS 1, *)
    extension PierAuth {
        /// Signs in with a passkey the device holds: the system's sheet lists this site's
        /// passkeys (all of them, or `email`'s). The app's associated domain must be the relying
        /// party (`webcredentials:` in the entitlement, `PIER_AUTH_PASSKEY_RP_ID` on the server).
        @MainActor @discardableResult
        public func signInWithPasskey(anchor: ASPresentationAnchor, email: String? = nil, deviceName: String? = nil)
            async throws -> User
        {
            var assertion = try await Self.assertion(for: try await passkeyLoginOptions(email: email), anchor: anchor)
            assertion.deviceName = deviceName
            return try await signIn(passkey: assertion)
        }

        /// Finishes a sign-in that threw `mfa_required` (``PierError/factors`` naming `passkey`)
        /// with one of the account's passkeys on this device.
        @MainActor @discardableResult
        public func completeSignInWithPasskey(mfaToken: String, anchor: ASPresentationAnchor) async throws -> User {
            let options = try await passkeyOptions(mfaToken: mfaToken)
            return try await completeSignIn(mfaToken: mfaToken, passkey: try await Self.assertion(for: options, anchor: anchor))
        }

        /// Confirms a sensitive action with one of the signed-in user's passkeys: for 5 minutes
        /// the session counts as a fresh sign-in (see ``reauthenticate(password:code:passkey:)``).
        @MainActor
        public func reauthenticateWithPasskey(anchor: ASPresentationAnchor) async throws {
            let options = try await passkeyReauthenticationOptions()
            try await reauthenticate(passkey: try await Self.assertion(for: options, anchor: anchor))
        }

        /// The system's sheet for `options`: an assertion by a passkey this device holds.
        @MainActor
        static func assertion(for options: PasskeyRequestOptions, anchor: ASPresentationAnchor) async throws
            -> PasskeyAssertion
        {
            let provider = ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: options.rpId)
            let request = provider.createCredentialAssertionRequest(challenge: try data(options.challenge))
            request.allowedCredentials = try options.allowCredentials.map {
                ASAuthorizationPlatformPublicKeyCredentialDescriptor(credentialID: try data($0.id))
            }
            guard
                let assertion = try await PasskeyAuthorization(anchor).perform(request)
                    as? ASAuthorizationPlatformPublicKeyCredentialAssertion
            else { throw PierError(kind: .decoding, detail: "The system answered no passkey assertion.") }
            return PasskeyAssertion(
                id: text(assertion.credentialID),
                response: .init(
                    clientDataJSON: text(assertion.rawClientDataJSON), authenticatorData: text(assertion.rawAuthenticatorData),
                    signature: text(assertion.signature), userHandle: text(assertion.userID)))
        }

        /// Creates a passkey on this device for the signed-in user and registers it.
        @MainActor @discardableResult
        public func addPasskey(anchor: ASPresentationAnchor, name: String? = nil, password: String? = nil) async throws
            -> Passkey
        {
            let options = try await passkeyRegistrationOptions(password: password)
            let provider = ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: options.rp.id)
            let request = provider.createCredentialRegistrationRequest(
                challenge: try Self.data(options.challenge), name: options.user.name, userID: try Self.data(options.user.id))
            guard
                let registration = try await PasskeyAuthorization(anchor).perform(request)
                    as? ASAuthorizationPlatformPublicKeyCredentialRegistration,
                let attestation = registration.rawAttestationObject
            else { throw PierError(kind: .decoding, detail: "The system answered no new passkey.") }
            return try await registerPasskey(
                PasskeyRegistration(
                    id: Self.text(registration.credentialID),
                    response: .init(
                        clientDataJSON: Self.text(registration.rawClientDataJSON), attestationObject: Self.text(attestation),
                        transports: ["internal", "hybrid"]),
                    name: name))
        }

        static func data(_ base64URL: String) throws -> Data {
            var text = base64URL.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            text += String(repeating: "=", count: (4 - text.count % 4) % 4)
            guard let data = Data(base64Encoded: text) else { throw PierError(kind: .decoding, detail: "Not base64url.") }
            return data
        }

        static func text(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
    }

    /// One request to the system's passkey sheet, awaited.
    @available(iOS 16, macOS 13, visionOS 1, *)
    @MainActor
    final class PasskeyAuthorization: NSObject, ASAuthorizationControllerDelegate,
        ASAuthorizationControllerPresentationContextProviding
    {
        private let anchor: ASPresentationAnchor
        private var controller: ASAuthorizationController?
        private var continuation: CheckedContinuation<ASAuthorizationCredential, any Error>?

        init(_ anchor: ASPresentationAnchor) { self.anchor = anchor }

        func perform(_ request: ASAuthorizationRequest) async throws -> ASAuthorizationCredential {
            try await withCheckedThrowingContinuation { continuation in
                self.continuation = continuation
                let controller = ASAuthorizationController(authorizationRequests: [request])
                controller.delegate = self
                controller.presentationContextProvider = self
                self.controller = controller
                controller.performRequests()
            }
        }

        nonisolated func authorizationController(
            controller: ASAuthorizationController, didCompleteWithAuthorization authorization: ASAuthorization
        ) {
            MainActor.assumeIsolated {
                continuation?.resume(returning: authorization.credential)
                continuation = nil
                self.controller = nil
            }
        }

        nonisolated func authorizationController(controller: ASAuthorizationController, didCompleteWithError error: any Error) {
            MainActor.assumeIsolated {
                continuation?.resume(throwing: error)
                continuation = nil
                self.controller = nil
            }
        }

        nonisolated func presentationAnchor(for controller: ASAuthorizationController) -> ASPresentationAnchor {
            MainActor.assumeIsolated { anchor }
        }
    }
#endif
