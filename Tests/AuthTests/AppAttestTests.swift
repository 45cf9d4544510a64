import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierService
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import AuthService

/// App Attest in front of anonymous sign-ups, against a stand-in of Apple's App Attest CA: an
/// attested installation signs up with an assertion; what Apple's documentation says to refuse
/// is refused, each with the field at fault. Each test on a fresh database.
@Suite(.serialized) struct AppAttestTests {
    static let appID = "ABCDE12345.com.example.seeds"

    func withService(
        _ device: TestAppAttest, mode: String = "required", settings: [String: String] = [:],
        _ body: (AuthHarness) async throws -> Void
    ) async throws {
        let roots = FileManager.default.temporaryDirectory.appendingPathComponent("app-attest-\(UUID()).pem")
        try device.ca.rootPEM.write(to: roots, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: roots) }
        try await AuthHarness.with(
            database: "pier_test_auth_app_attest",
            settings: [
                "PIER_AUTH_APP_ATTEST": mode, "PIER_AUTH_APP_ATTEST_APP_IDS": Self.appID,
                "PIER_AUTH_APP_ATTEST_ROOTS": roots.path,
            ].merging(settings) { $1 }, body)
    }

    static func challenge(_ auth: AuthHarness) async throws -> String {
        let reply = try await auth.send("POST", "/auth/app-attest/challenge")
        guard reply.status == 201 else { throw TestFailure("challenge answered \(reply.status)") }
        return try reply.decode(AppAttestChallenge.self).challenge
    }

    static func register(
        _ auth: AuthHarness, _ device: TestAppAttest, installation: String, keyID: [UInt8]? = nil,
        headers: HTTPHeaders = [:], _ make: (String) throws -> [UInt8]
    ) async throws -> Reply {
        let challenge = try await challenge(auth)
        let body = AppAttestKeyRequest(
            installationId: installation, keyId: Base64.encoded(keyID ?? device.keyID),
            attestation: Base64.encoded(try make(challenge)), challenge: challenge)
        return try await auth.send(
            "POST", "/auth/app-attest/keys", json: String(decoding: try JSONEncoder().encode(body), as: UTF8.self),
            headers: headers)
    }

    static func signUp(_ auth: AuthHarness, installation: String, _ proof: AppAttestAssertion?) async throws -> Reply {
        let body = AnonymousSignInRequest(installationId: installation, appAttest: proof)
        return try await auth.send(
            "POST", "/auth/anonymous", json: String(decoding: try JSONEncoder().encode(body), as: UTF8.self))
    }

    static func proof(_ device: TestAppAttest, _ challenge: String, counter: UInt32, signer: P256PrivateKey? = nil) throws
        -> AppAttestAssertion
    {
        AppAttestAssertion(
            keyId: Base64.encoded(device.keyID),
            assertion: Base64.encoded(
                try device.assertion(appID: appID, clientDataHash: SHA256.hash(challenge), counter: counter, signer: signer)),
            challenge: challenge)
    }

    @Test func anAttestedInstallationSignsUpAndReplaysAreRefused() async throws {
        let device = try TestAppAttest()
        try await withService(device) { auth in
            let registered = try await Self.register(auth, device, installation: "inst-1") {
                try device.attestation(appID: Self.appID, clientDataHash: SHA256.hash($0))
            }
            #expect(registered.status == 201, "\(registered.text)")
            // Without an assertion: refused, nothing made.
            let bare = try await Self.signUp(auth, installation: "inst-1", nil)
            #expect(bare.status == 403 && bare.problem?.code == .attestationRequired, "\(bare.text)")

            let challenge = try await Self.challenge(auth)
            let first = try Self.proof(device, challenge, counter: 1)
            let signedUp = try await Self.signUp(auth, installation: "inst-1", first)
            #expect(signedUp.status == 201, "\(signedUp.text)")
            #expect(try signedUp.decode(AuthSession.self).user.isAnonymous)

            func refused(_ reply: Reply, _ field: String) {
                #expect(reply.status == 422 && reply.problem?.code == .invalidAttestation, "\(reply.text)")
                #expect(reply.problem?.errors?.map(\.field) == [field], "\(reply.text)")
            }
            // The same assertion again, and a counter that goes back.
            refused(try await Self.signUp(auth, installation: "inst-1", first), "appAttest.assertion")
            refused(
                try await Self.signUp(auth, installation: "inst-1", try Self.proof(device, challenge, counter: 1)),
                "appAttest.assertion")
            // Signed by another key; for another installation; over a challenge not ours or expired.
            let other = try P256PrivateKey.generate()
            refused(
                try await Self.signUp(auth, installation: "inst-1", try Self.proof(device, challenge, counter: 5, signer: other)),
                "appAttest.assertion")
            refused(
                try await Self.signUp(auth, installation: "inst-2", try Self.proof(device, challenge, counter: 6)),
                "appAttest.keyId")
            refused(
                try await Self.signUp(auth, installation: "inst-1", try Self.proof(device, "made-up", counter: 7)),
                "appAttest.challenge")
            // A challenge past its five minutes (made and checked by one gate).
            let gate = AppAttestGate(
                database: auth.pool, settings: try AppAttestSettings(Environment([:])),
                keys: try SigningKeys(signing: try P256PrivateKey.generate()))
            let stale = gate.challenge(now: Date().addingTimeInterval(-600)).challenge
            #expect(throws: WebAuthn.Failure.self) { try gate.clientDataHash(stale, field: "challenge") }
            #expect(try gate.clientDataHash(gate.challenge().challenge, field: "challenge").count == 32)
            // The next assertion, with a growing counter, passes.
            let next = try await Self.signUp(
                auth, installation: "inst-1", try Self.proof(device, try await Self.challenge(auth), counter: 9))
            #expect(next.status == 201, "\(next.text)")
            let users = try await auth.pool.query("SELECT count(*)::int AS n FROM auth.users")
            #expect(try users[0].decode("n", as: Int.self) == 2)
        }
    }

    /// What the outsider did: one genuine device makes a new key for each new installation id,
    /// and each installation signs up its own five. The keys one network attests in a day bound
    /// it; another network is not affected, and a refused attestation does not count.
    @Test func newInstallationsAreBoundPerNetwork() async throws {
        let first = try TestAppAttest()
        try await withService(
            first,
            settings: ["PIER_AUTH_APP_ATTEST_KEYS_PER_ADDRESS_PER_DAY": "2", "PIER_TRUSTED_PROXIES": "127.0.0.1"]
        ) { auth in
            func attest(_ device: TestAppAttest, _ installation: String, from address: String, valid: Bool = true)
                async throws -> Reply
            {
                try await Self.register(auth, device, installation: installation, headers: ["X-Forwarded-For": address]) {
                    try device.attestation(
                        appID: valid ? Self.appID : "ABCDE12345.com.example.other", clientDataHash: SHA256.hash($0))
                }
            }
            let devices = [first] + (try (0..<3).map { _ in try TestAppAttest(ca: first.ca) })
            // A refused attestation (another app's) counts for nothing.
            let wrong = try await attest(devices[0], "inst-0", from: "198.51.100.9", valid: false)
            #expect(wrong.status == 422 && wrong.problem?.code == .invalidAttestation, "\(wrong.text)")
            for (index, device) in devices.prefix(2).enumerated() {
                let kept = try await attest(device, "inst-\(index)", from: "198.51.100.9")
                #expect(kept.status == 201, "\(kept.text)")
            }
            let limited = try await attest(devices[2], "inst-2", from: "198.51.100.9")
            #expect(limited.status == 429 && limited.problem?.code == .rateLimited, "\(limited.text)")
            #expect(Int(limited.headers["Retry-After"] ?? "") == 3600, "\(limited.headers)")
            // Nothing was kept for the refused key: it cannot sign an installation up.
            let proof = try Self.proof(devices[2], try await Self.challenge(auth), counter: 1)
            let unknown = try await Self.signUp(auth, installation: "inst-2", proof)
            #expect(unknown.problem?.errors?.map(\.field) == ["appAttest.keyId"], "\(unknown.text)")
            // Another network attests its own.
            #expect(try await attest(devices[3], "inst-3", from: "203.0.113.4").status == 201)
            let keys = try await auth.pool.query(
                "SELECT address, count(*)::int AS n FROM auth.app_attest_keys GROUP BY address ORDER BY address")
            #expect(
                try keys.map { [try $0.decode("address", as: String.self): try $0.decode("n", as: Int.self)] } == [
                    ["198.51.100.9": 2], ["203.0.113.4": 1],
                ])
        }
    }

    @Test func attestationsApplesDocumentationRefusesAreRefused() async throws {
        let device = try TestAppAttest()
        try await withService(device) { auth in
            func refused(_ field: String, keyID: [UInt8]? = nil, _ make: @escaping (String) throws -> [UInt8]) async throws {
                let reply = try await Self.register(auth, device, installation: "inst-1", keyID: keyID, make)
                #expect(reply.status == 422 && reply.problem?.code == .invalidAttestation, "\(field): \(reply.text)")
                #expect(reply.problem?.errors?.map(\.field) == [field], "\(reply.text)")
            }
            let hash = { (challenge: String) in SHA256.hash(challenge) }
            try await refused("attestation") {
                try device.attestation(appID: "ABCDE12345.com.example.other", clientDataHash: hash($0))
            }
            try await refused("attestation") {
                try device.attestation(appID: Self.appID, clientDataHash: hash($0), aaguid: TestAppAttest.development)
            }
            try await refused("attestation") { try device.attestation(appID: Self.appID, clientDataHash: hash($0), counter: 1) }
            try await refused("attestation") {
                try device.attestation(appID: Self.appID, clientDataHash: hash($0), nonceOver: SHA256.hash("another challenge"))
            }
            try await refused("keyId", keyID: SHA256.hash("another key")) {
                try device.attestation(appID: Self.appID, clientDataHash: hash($0))
            }
            // Another CA's chain (not the configured root).
            let stranger = try TestAppAttest()
            try await refused("attestation", keyID: stranger.keyID) {
                try stranger.attestation(appID: Self.appID, clientDataHash: hash($0))
            }
            try await refused("attestation") { _ in Array("not cbor at all".utf8) }
            // Accepted once; the same key again is refused.
            let make = { (challenge: String) in try device.attestation(appID: Self.appID, clientDataHash: hash(challenge)) }
            #expect(try await Self.register(auth, device, installation: "inst-1", make).status == 201)
            try await refused("keyId", make)
        }
    }

    /// An assertion buys an installation token (what anonymous feedback shows): spent like a
    /// sign-up's, signed by the service's keys under its own type, never a bearer token.
    @Test func anAssertionBuysAnInstallationTokenOnce() async throws {
        let device = try TestAppAttest()
        try await withService(device) { auth in
            _ = try await Self.register(auth, device, installation: "inst-1") {
                try device.attestation(appID: Self.appID, clientDataHash: SHA256.hash($0))
            }
            func exchange(_ installation: String, _ proof: AppAttestAssertion) async throws -> Reply {
                let body = InstallationTokenRequest(installationId: installation, appAttest: proof)
                return try await auth.send(
                    "POST", "/auth/app-attest/installation-token",
                    json: String(decoding: try JSONEncoder().encode(body), as: UTF8.self))
            }
            let proof = try Self.proof(device, try await Self.challenge(auth), counter: 1)
            let made = try await exchange("inst-1", proof)
            #expect(made.status == 201, "\(made.text)")
            let token = try made.decode(InstallationToken.self)
            #expect(abs(token.expiresAt.timeIntervalSinceNow - 3600) < 60)
            let verifier = AccessTokenVerifier(
                keys: StaticKeyProvider(keys: auth.keys.verificationKeys), issuer: "pier", audience: "pier")
            #expect(try await verifier.verifyInstallation(token.token).sub == "inst-1")
            // The same assertion again; another installation's; no assertion at all.
            let replayed = try await exchange("inst-1", proof)
            #expect(replayed.status == 422 && replayed.problem?.code == .invalidAttestation, "\(replayed.text)")
            let elsewhere = try await exchange("inst-2", try Self.proof(device, try await Self.challenge(auth), counter: 2))
            #expect(elsewhere.problem?.errors?.map(\.field) == ["appAttest.keyId"], "\(elsewhere.text)")
            let bare = try await auth.send("POST", "/auth/app-attest/installation-token", json: #"{"installationId":"inst-1"}"#)
            #expect(bare.status == 422 && bare.problem?.errors?.map(\.field) == ["appAttest"], "\(bare.text)")
            // Never a bearer token.
            #expect(try await auth.send("GET", "/auth/me", token: token.token).status == 401)
        }
    }

    /// Apple's App Attestation Root CA ships and is trusted when PIER_AUTH_APP_ATTEST_ROOTS names
    /// none: the certificate Apple publishes (its SHA-256), self-signed, and not the stand-in's.
    @Test func applesRootShipsAndIsTheDefault() throws {
        let settings = try AppAttestSettings(
            Environment(["PIER_AUTH_APP_ATTEST": "required", "PIER_AUTH_APP_ATTEST_APP_IDS": Self.appID]))
        #expect(settings.roots.count == 1)
        let root = try #require(settings.roots.first)
        #expect(
            SHA256.hash(root.der).map { String(format: "%02x", $0) }.joined()
                == "1cb9823ba28ba6ad2d33a006941de2ae4f513ef1d4e831b9f7e0fa7b6242c932")
        #expect(try CertificateChainVerifier(roots: [root]).verify(leaf: root, intermediates: [], at: Date()).count == 1)
        let device = try TestAppAttest()
        let verifier = AppAttest(
            roots: CertificateChainVerifier(roots: settings.roots), appIDs: [Self.appID], environment: .production)
        let object = try device.attestation(appID: Self.appID, clientDataHash: SHA256.hash("challenge"))
        #expect(throws: WebAuthn.Failure.self) {
            try verifier.attestation(object, keyID: device.keyID, clientDataHash: SHA256.hash("challenge"))
        }
    }

    @Test func optionalChecksWhatIsSentAndOffRefusesKeys() async throws {
        let device = try TestAppAttest()
        try await withService(device, mode: "optional") { auth in
            #expect(try await Self.signUp(auth, installation: "inst-1", nil).status == 201)
            let forged = try Self.proof(device, try await Self.challenge(auth), counter: 1)
            #expect(try await Self.signUp(auth, installation: "inst-1", forged).problem?.code == .invalidAttestation)
        }
        try await withService(device, mode: "off") { auth in
            let reply = try await Self.register(auth, device, installation: "inst-1") {
                try device.attestation(appID: Self.appID, clientDataHash: SHA256.hash($0))
            }
            #expect(reply.status == 404, "\(reply.text)")
            let token = try await auth.send(
                "POST", "/auth/app-attest/installation-token",
                json: String(
                    decoding: try JSONEncoder().encode(
                        InstallationTokenRequest(
                            installationId: "inst-1", appAttest: try Self.proof(device, "any", counter: 1))), as: UTF8.self))
            #expect(token.status == 404, "\(token.text)")
        }
    }
}
