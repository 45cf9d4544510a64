import Foundation
import PierModels

/// What proves to the server that an anonymous sign-up comes from a genuine installation of the
/// app (App Attest; the server's `PIER_AUTH_APP_ATTEST`). On Apple platforms
/// `DeviceCheckAttestation` is it (`AppAttestApple.swift`, over `DCAppAttestService`); elsewhere
/// implement it with the platform's own (or leave it out when the server does not require it).
///
/// Each method receives the server's challenge as bytes; the `clientDataHash` Apple's API takes is
/// its SHA-256.
public protocol AppAttestation: Sendable {
    /// The key this installation attested before and the server accepted, if any.
    func attestedKeyId() async -> String?
    /// Generates a new key and has it attested over `challenge`: its id (base64) and the
    /// attestation object.
    func generateAndAttestKey(challenge: Data) async throws -> (keyId: String, attestation: Data)
    /// Keeps `keyId` as this installation's attested key (the server accepted it).
    func keep(keyId: String) async
    /// An assertion by `keyId` over `challenge`.
    func assertion(keyId: String, challenge: Data) async throws -> Data
}

extension Authorized {
    /// An assertion of `installation`: its key attested first when it has none (once), then an
    /// assertion over a fresh challenge.
    func appAttest(_ attestation: any AppAttestation, installation: String) async throws(PierError) -> AppAttestAssertion {
        var keyId = await attestation.attestedKeyId()
        if keyId == nil {
            let challenge = try await call(AuthAPI.appAttestChallenge, NoParameters(), signedIn: false).challenge
            let attested: (keyId: String, attestation: Data)
            do { attested = try await attestation.generateAndAttestKey(challenge: Data(challenge.utf8)) } catch {
                throw PierError(kind: .device, detail: "App Attest could not attest a key: \(error)")
            }
            let body = AppAttestKeyRequest(
                installationId: installation, keyId: attested.keyId,
                attestation: attested.attestation.base64EncodedString(), challenge: challenge)
            _ = try await call(AuthAPI.appAttestKey, NoParameters(), body: body, signedIn: false)
            await attestation.keep(keyId: attested.keyId)
            keyId = attested.keyId
        }
        let challenge = try await call(AuthAPI.appAttestChallenge, NoParameters(), signedIn: false).challenge
        guard let keyId else { throw PierError(kind: .device, detail: "App Attest has no key") }
        do {
            let assertion = try await attestation.assertion(keyId: keyId, challenge: Data(challenge.utf8))
            return AppAttestAssertion(keyId: keyId, assertion: assertion.base64EncodedString(), challenge: challenge)
        } catch {
            throw PierError(kind: .device, detail: "App Attest could not make an assertion: \(error)")
        }
    }
}

/// The installation token anonymous feedback carries (`X-Installation-Token`), made from an
/// assertion and kept until a minute before it expires.
final class InstallationTokens: Sendable {
    let attestation: any AppAttestation
    private let kept = Locked<InstallationToken?>(nil)

    init(_ attestation: any AppAttestation) { self.attestation = attestation }

    /// The kept token or a new one; nil when the server has App Attest off (404).
    func token(_ authorized: Authorized, installation: String) async throws(PierError) -> String? {
        if let token = kept.withLock({ $0 }), token.expiresAt.timeIntervalSinceNow > 60 { return token.token }
        let proof = try await authorized.appAttest(attestation, installation: installation)
        let made: InstallationToken
        do throws(PierError) {
            made = try await authorized.call(
                AuthAPI.installationToken, NoParameters(),
                body: InstallationTokenRequest(installationId: installation, appAttest: proof), signedIn: false)
        } catch {
            guard error.status == 404 else { throw error }
            return nil
        }
        kept.withLock { $0 = made }
        return made.token
    }

    /// Forgets the kept token (the server refused it: its keys changed).
    func forget() { kept.withLock { $0 = nil } }
}
