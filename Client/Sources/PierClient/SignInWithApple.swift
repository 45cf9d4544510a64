// Compiled on Apple platforms only (AuthenticationServices, CryptoKit); nothing on Linux builds
// or tests this file. Everything it calls, `PierAuth.signInWithApple(identityToken:nonce:…)`,
// is tested on Linux.
#if canImport(AuthenticationServices) && canImport(CryptoKit)
    import AuthenticationServices
    import CryptoKit
    import Foundation
    import PierModels

    @available(iOS 16, macOS 13, tvOS 16, watchOS 9, visionOS 1, *)
    extension PierAuth {
        /// A fresh nonce for an `ASAuthorizationAppleIDRequest`: give `hashed` to the request's
        /// `nonce`, keep `raw` for `signInWithApple(_:nonce:deviceName:)`.
        public static func appleNonce() -> (raw: String, hashed: String) {
            var bytes = [UInt8](repeating: 0, count: 32)
            _ = SecRandomCopyBytes(kSecRandomDefault, bytes.count, &bytes)
            let raw = Data(bytes).base64EncodedString()
            let hashed = SHA256.hash(data: Data(raw.utf8)).map { String(format: "%02x", $0) }.joined()
            return (raw, hashed)
        }

        /// Signs in with the credential `SignInWithAppleButton` (or `ASAuthorizationController`)
        /// returned, and the raw nonce from ``appleNonce()``.
        @discardableResult
        public func signInWithApple(_ credential: ASAuthorizationAppleIDCredential, nonce: String, deviceName: String? = nil)
            async throws -> User
        {
            guard let data = credential.identityToken, let token = String(data: data, encoding: .utf8) else {
                throw PierError(kind: .decoding, detail: "The Apple credential carries no identity token.")
            }
            let name = credential.fullName.map { PersonNameComponentsFormatter().string(from: $0) }
            let code = credential.authorizationCode.flatMap { String(data: $0, encoding: .utf8) }
            return try await signInWithApple(
                identityToken: token, nonce: nonce, fullName: name?.isEmpty == false ? name : nil, deviceName: deviceName,
                authorizationCode: code)
        }
    }
#endif
