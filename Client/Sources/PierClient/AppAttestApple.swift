// Apple platforms only: DCAppAttestService and CryptoKit do not exist on Linux, where this file
// compiles to nothing (the protocol it implements, AppAttestation, is everywhere).
#if canImport(DeviceCheck) && canImport(CryptoKit)
    import CryptoKit
    import DeviceCheck
    import Foundation

    /// App Attest with `DCAppAttestService`: the attested key's id kept in `UserDefaults`.
    @available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
    public struct DeviceCheckAttestation: AppAttestation {
        let defaultsKey: String

        public init(defaultsKey: String = "pier.appAttest.keyId") { self.defaultsKey = defaultsKey }

        public func attestedKeyId() async -> String? {
            DCAppAttestService.shared.isSupported ? UserDefaults.standard.string(forKey: defaultsKey) : nil
        }

        public func generateAndAttestKey(challenge: Data) async throws -> (keyId: String, attestation: Data) {
            let service = DCAppAttestService.shared
            let keyId = try await service.generateKey()
            let attestation = try await service.attestKey(keyId, clientDataHash: Data(SHA256.hash(data: challenge)))
            return (keyId, attestation)
        }

        public func keep(keyId: String) async { UserDefaults.standard.set(keyId, forKey: defaultsKey) }

        public func assertion(keyId: String, challenge: Data) async throws -> Data {
            try await DCAppAttestService.shared.generateAssertion(keyId, clientDataHash: Data(SHA256.hash(data: challenge)))
        }
    }
#endif
