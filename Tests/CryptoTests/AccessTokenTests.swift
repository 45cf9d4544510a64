import Synchronization
import Testing

@testable import PierCrypto

@Suite struct AccessTokenTests {
    let key: P256PrivateKey
    let signer: AccessTokenSigner
    let now = 1_800_000_000

    init() throws {
        key = try P256PrivateKey.generate()
        signer = AccessTokenSigner(key: key, kid: "k1")
    }

    func claims(exp: Int? = nil, nbf: Int? = nil, iss: String = "pier", aud: String = "pier-api") -> AccessClaims {
        AccessClaims(
            iss: iss, sub: "0b0f5b8e-4d3a-4c57-9a0e-111111111111", aud: aud, iat: now, nbf: nbf ?? now,
            exp: exp ?? now + 900, jti: "j", sid: "s", role: "user")
    }

    func verifier(at time: Int? = nil, keys: [String: P256PublicKey]? = nil) throws -> AccessTokenVerifier {
        let clock = time ?? now
        return AccessTokenVerifier(
            keys: StaticKeyProvider(keys: try keys ?? ["k1": key.publicKey]),
            issuer: "pier", audience: "pier-api", clock: { clock })
    }

    @Test func roundTrip() async throws {
        let token = try signer.sign(claims())
        let verified = try await verifier().verify(token)
        #expect(verified == claims())
        // The second call is answered from the cache, with the same result.
        #expect(try await verifier().verify(token) == claims())
    }

    @Test func timesIssuerAndAudienceAreChecked() async throws {
        await #expect(throws: TokenError.expired) { try await verifier(at: now + 900 + 31).verify(signer.sign(claims())) }
        _ = try await verifier(at: now + 900 + 29).verify(signer.sign(claims()))  // within leeway
        await #expect(throws: TokenError.notYetValid) { try await verifier().verify(signer.sign(claims(nbf: now + 120))) }
        await #expect(throws: TokenError.wrongIssuer) { try await verifier().verify(signer.sign(claims(iss: "evil"))) }
        await #expect(throws: TokenError.wrongAudience) { try await verifier().verify(signer.sign(claims(aud: "other"))) }
    }

    /// Installation tokens share the keys, never the type: neither passes for the other, and
    /// theirs are checked as an access token's are.
    @Test func installationTokensAreNoAccessTokens() async throws {
        let installation = InstallationClaims(iss: "pier", sub: "inst-1", aud: "pier-api", iat: now, exp: now + 3600, jti: "j")
        let token = try signer.sign(installation)
        #expect(try await verifier().verifyInstallation(token) == installation)
        await #expect(throws: TokenError.wrongType) { try await verifier().verify(token) }
        await #expect(throws: TokenError.wrongType) { try await verifier().verifyInstallation(signer.sign(claims())) }
        await #expect(throws: TokenError.expired) { try await verifier(at: now + 3600 + 31).verifyInstallation(token) }
        let elsewhere = InstallationClaims(iss: "evil", sub: "inst-1", aud: "pier-api", iat: now, exp: now + 60, jti: "j")
        await #expect(throws: TokenError.wrongIssuer) { try await verifier().verifyInstallation(signer.sign(elsewhere)) }
        let forged = try AccessTokenSigner(key: try P256PrivateKey.generate(), kid: "k1").sign(installation)
        await #expect(throws: TokenError.malformed(.badSignature)) { try await verifier().verifyInstallation(forged) }
    }

    @Test func cachedTokensStillExpire() async throws {
        let clock = Mutex(now)
        let verifier = AccessTokenVerifier(
            keys: StaticKeyProvider(keys: ["k1": try key.publicKey]), issuer: "pier",
            audience: "pier-api", clock: { clock.withLock { $0 } })
        let token = try signer.sign(claims())
        _ = try await verifier.verify(token)
        clock.withLock { $0 = now + 2000 }
        await #expect(throws: TokenError.expired) { try await verifier.verify(token) }
    }

    @Test func headerTampering() async throws {
        let token = try signer.sign(claims())
        let parts = token.split(separator: ".").map(String.init)
        func with(header: String) -> String { Base64.urlEncoded(Array(header.utf8)) + "." + parts[1] + "." + parts[2] }
        await #expect(throws: TokenError.malformed(.unsupportedAlgorithm("none"))) {
            try await verifier().verify(with(header: #"{"alg":"none","kid":"k1","typ":"at+jwt"}"#))
        }
        await #expect(throws: TokenError.malformed(.unsupportedAlgorithm("HS256"))) {
            try await verifier().verify(with(header: #"{"alg":"HS256","kid":"k1","typ":"at+jwt"}"#))
        }
        await #expect(throws: TokenError.unknownKey("k2")) {
            try await verifier().verify(with(header: #"{"alg":"ES256","kid":"k2","typ":"at+jwt"}"#))
        }
        await #expect(throws: TokenError.missingKeyID) {
            try await verifier().verify(with(header: #"{"alg":"ES256","typ":"at+jwt"}"#))
        }
        await #expect(throws: TokenError.wrongType) {
            try await verifier().verify(with(header: #"{"alg":"ES256","kid":"k1","typ":"JWT"}"#))
        }
        // alg:none with an empty signature.
        await #expect(throws: TokenError.self) {
            try await verifier().verify(Base64.urlEncoded(Array(#"{"alg":"none"}"#.utf8)) + "." + parts[1] + ".")
        }
    }

    @Test func everyClaimChangeBreaksTheSignature() async throws {
        let token = try signer.sign(claims())
        let parts = token.split(separator: ".").map(String.init)
        let payload = String(decoding: Base64.urlDecoded(parts[1])!, as: UTF8.self)
        let edits = [
            ("\"role\":\"user\"", "\"role\":\"admin\""), ("\"sub\":\"0b0f", "\"sub\":\"1b0f"),
            ("\"exp\":\(now + 900)", "\"exp\":\(now + 90000)"), ("\"iss\":\"pier\"", "\"iss\":\"pier \""),
            ("\"aud\":\"pier-api\"", "\"aud\":[\"pier-api\"]"), ("\"jti\":\"j\"", "\"jti\":\"k\""),
        ]
        for (from, to) in edits {
            #expect(payload.contains(from), "\(from)")
            let forged =
                parts[0] + "." + Base64.urlEncoded(Array(payload.replacingOccurrences(of: from, with: to).utf8)) + "." + parts[2]
            await #expect(throws: TokenError.malformed(.badSignature)) { try await verifier().verify(forged) }
        }
    }

    @Test func wrongKeyAndOversizedTokens() async throws {
        let other = try P256PrivateKey.generate()
        let forged = try AccessTokenSigner(key: other, kid: "k1").sign(claims())
        await #expect(throws: TokenError.malformed(.badSignature)) { try await verifier().verify(forged) }
        await #expect(throws: TokenError.malformed(.tooLarge)) {
            try await verifier().verify(String(repeating: "a", count: 5000))
        }
    }
}

extension String {
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}

/// Every numeric claim of a correctly signed token, set to numbers at and beyond the edges of
/// what the verifier's integers hold: each is refused or accepted by the rules, and none can
/// make an overflow trap (which would end the process serving every other request).
@Suite struct AccessTokenExtremeNumberTests {
    /// JSON number texts, and the strings that look like numbers to a careless reader.
    static let extremes = [
        "1e300", "-1e300", "1.8e308", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "-9223372036854775809", "0", "-1", "1.5", "-0", "\"NaN\"", "\"Infinity\"", "\"1800000000\"", "null", "[]", "{}",
    ]
    static let now = 1_800_000_000

    func token(_ claim: String, _ value: String, key: P256PrivateKey) throws -> String {
        var claims = [
            "iss": "\"pier\"", "sub": "\"0b0f5b8e-4d3a-4c57-9a0e-111111111111\"", "aud": "\"pier-api\"",
            "iat": "\(Self.now)", "nbf": "\(Self.now)", "exp": "\(Self.now + 900)", "jti": "\"j\"", "role": "\"user\"",
        ]
        claims[claim] = value
        let json = "{" + claims.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
        return try JWS.sign(payload: Array(json.utf8), header: JWSHeader(alg: "ES256", kid: "k1", typ: "at+jwt"), key: key)
    }

    @Test(arguments: ["iat", "nbf", "exp"])
    func extremeTimesAreJudgedWithoutOverflow(claim: String) async throws {
        let key = try P256PrivateKey.generate()
        let verifier = AccessTokenVerifier(
            keys: StaticKeyProvider(keys: ["k1": try key.publicKey]), issuer: "pier", audience: "pier-api",
            clock: { Self.now })
        for value in Self.extremes {
            let signed = try token(claim, value, key: key)
            let outcome: Result<AccessClaims, TokenError>
            do { outcome = .success(try await verifier.verify(signed)) } catch { outcome = .failure(error) }
            switch (claim, value) {
            case ("exp", "9223372036854775807"):
                // Never expires by the clock: accepted (it is validly signed), and no `exp + leeway`.
                #expect((try? outcome.get()) != nil, "\(claim)=\(value)")
            case ("exp", "0"), ("exp", "-1"), ("exp", "-0"), ("exp", "-9223372036854775808"):
                #expect(outcome == .failure(.expired), "\(claim)=\(value)")
            case ("nbf", "9223372036854775807"):
                #expect(outcome == .failure(.notYetValid), "\(claim)=\(value)")
            case ("iat", "0"), ("iat", "-1"), ("iat", "-0"), ("iat", "-9223372036854775808"), ("iat", "9223372036854775807"),
                ("nbf", "0"), ("nbf", "-1"), ("nbf", "-0"), ("nbf", "-9223372036854775808"):
                #expect((try? outcome.get()) != nil, "\(claim)=\(value)")
            default:
                // Not an integer that fits: the claims are malformed.
                guard case .failure(.malformed) = outcome else {
                    Issue.record("\(claim)=\(value) gave \(outcome)")
                    continue
                }
            }
        }
    }
}
