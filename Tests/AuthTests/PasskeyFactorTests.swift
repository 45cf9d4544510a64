import Foundation
import PierCrypto
import PierModels
import PierTestSupport
import Testing

@testable import AuthService

/// A passkey as the second factor of a sign-in and as re-authentication before a sensitive
/// action, with the orders an attacker chooses: another account's passkey, a challenge handed out
/// for another ceremony or account, the same passkey as both factors, an assertion replayed.
@Suite(.serialized) struct PasskeyFactorTests {
    let passkeys = PasskeyTests()
    let takeover = TakeoverTests()

    func withService(_ body: (AuthHarness) async throws -> Void) async throws {
        try await AuthHarness.with(database: "pier_test_auth_passkey_factor", settings: PasskeyTests.settings, body)
    }

    func authenticator() throws -> SoftwareAuthenticator {
        try SoftwareAuthenticator.es256(rpID: PasskeyTests.rpID, origin: PasskeyTests.origin)
    }

    /// An account with a proven address and a passkey of `authenticator`'s (and two-step sign-in
    /// on, with `totp`): its session and address.
    func account(_ auth: AuthHarness, _ authenticator: SoftwareAuthenticator, totp: Bool) async throws
        -> (AuthSession, String)
    {
        let (session, email) = try await passkeys.account(auth)
        let added = try await passkeys.register(auth, session, authenticator)
        #expect(added.status == 201, "\(added.text)")
        guard totp else { return (session, email) }
        try await SecondFactorTests.turnOn(auth, session.accessToken)
        return (session, email)
    }

    /// Signs in with the password: the problem of a sign-in waiting for its second factor.
    func challenge(_ auth: AuthHarness, _ email: String) async throws -> Problem {
        let reply = try await takeover.login(auth, email)
        #expect(reply.status == 401 && reply.problem?.code == .mfaRequired, "\(reply.text)")
        return try #require(reply.problem)
    }

    func options(_ auth: AuthHarness, mfaToken: String) async throws -> Reply {
        try await auth.send("POST", "/auth/mfa/passkey-options", json: #"{"mfaToken":"\#(mfaToken)"}"#)
    }

    func verify(_ auth: AuthHarness, _ token: String, _ assertion: PasskeyAssertion) async throws -> Reply {
        try await auth.send(
            "POST", "/auth/mfa/verify", json: try PasskeyTests.json(MFAVerifyRequest(mfaToken: token, passkey: assertion)))
    }

    func reauthenticationOptions(_ auth: AuthHarness, _ token: String) async throws -> PasskeyRequestOptions {
        let reply = try await auth.send("POST", "/auth/reauthenticate/passkey-options", token: token)
        #expect(reply.status == 200, "\(reply.text)")
        return try reply.decode(PasskeyRequestOptions.self)
    }

    func reauthenticate(_ auth: AuthHarness, _ token: String, _ assertion: PasskeyAssertion) async throws -> Reply {
        try await auth.send(
            "POST", "/auth/reauthenticate", json: try PasskeyTests.json(ReauthenticationRequest(passkey: assertion)),
            token: token)
    }

    @Test func aPasskeyFinishesASignInWaitingForItsSecondFactor() async throws {
        try await withService { auth in
            let phone = try authenticator()
            let (_, email) = try await account(auth, phone, totp: true)
            let problem = try await challenge(auth, email)
            #expect(problem.factors == ["totp", "recovery_code", "passkey"])
            let token = try #require(problem.mfaToken)
            let reply = try await options(auth, mfaToken: token)
            #expect(reply.status == 200 && reply.headers["cache-control"] == "no-store", "\(reply.text)")
            let options = try reply.decode(PasskeyRequestOptions.self)
            #expect(
                options.rpId == PasskeyTests.rpID && options.allowCredentials.map(\.id) == [Base64.urlEncoded(phone.credentialID)]
            )
            // A second factor needs the user present, not verified: the password was the other.
            phone.flags &= ~SoftwareAuthenticator.uv
            let assertion = try phone.assert(options, userHandle: nil)
            let signedIn = try await verify(auth, token, assertion)
            #expect(signedIn.status == 200, "\(signedIn.text)")
            let claims = try SecondFactorTests.claims(try signedIn.decode(AuthSession.self).accessToken)
            #expect(Set(claims["amr"] as? [String] ?? []) == ["pwd", "swk", "mfa"] && claims["acr"] as? String == "aal2")
            // The token and the challenge are spent.
            let again = try await verify(auth, token, assertion)
            #expect(again.status == 401 && again.problem?.code == .invalidMFAToken, "\(again.text)")
            let replayed = try await verify(auth, try #require(try await challenge(auth, email).mfaToken), assertion)
            #expect(replayed.status == 401 && replayed.problem?.code == .invalidPasskey, "\(replayed.text)")
            #expect(replayed.fields == ["passkey.response.clientDataJSON"])
        }
    }

    /// Someone who knows the victim's password brings their own passkey: neither it, nor a
    /// challenge handed out for their own sign-in or re-authentication, finishes the victim's.
    @Test func anotherAccountsPasskeyOrChallengeFinishesNothing() async throws {
        try await withService { auth in
            let (phone, thiefKey) = (try authenticator(), try authenticator())
            let (_, email) = try await account(auth, phone, totp: true)
            let (thief, _) = try await account(auth, thiefKey, totp: false)
            let token = try #require(try await challenge(auth, email).mfaToken)
            let victimOptions = try await options(auth, mfaToken: token).decode(PasskeyRequestOptions.self)
            let foreign = try await verify(auth, token, try thiefKey.assert(victimOptions, userHandle: nil))
            #expect(foreign.status == 401 && foreign.fields == ["passkey.id"], "\(foreign.text)")
            let ownSignIn = try await passkeys.loginOptions(auth)
            let viaLogin = try await verify(auth, token, try thiefKey.assert(ownSignIn, userHandle: nil))
            #expect(viaLogin.status == 401 && viaLogin.fields == ["passkey.response.clientDataJSON"], "\(viaLogin.text)")
            let ownStepUp = try await reauthenticationOptions(auth, thief.accessToken)
            let viaStepUp = try await verify(auth, token, try phone.assert(ownStepUp, userHandle: nil))
            #expect(viaStepUp.status == 401 && viaStepUp.fields == ["passkey.response.clientDataJSON"], "\(viaStepUp.text)")
            // The victim's own passkey, over a challenge of the victim's sign-in, still does.
            let fresh = try await options(auth, mfaToken: token).decode(PasskeyRequestOptions.self)
            #expect(try await verify(auth, token, try phone.assert(fresh, userHandle: nil)).status == 200)
        }
    }

    /// Five refused passkeys end the MFA token, as five wrong codes do.
    @Test func refusedPasskeysEndTheToken() async throws {
        try await withService { auth in
            let (phone, other) = (try authenticator(), try authenticator())
            let (_, email) = try await account(auth, phone, totp: true)
            let token = try #require(try await challenge(auth, email).mfaToken)
            for _ in 0..<SecondFactorFlows.challengeFailureLimit {
                let options = try await options(auth, mfaToken: token).decode(PasskeyRequestOptions.self)
                let refused = try await verify(auth, token, try phone.assert(options, userHandle: nil, signWith: other))
                #expect(refused.status == 401 && refused.fields == ["passkey.response.signature"], "\(refused.text)")
            }
            let ended = try await options(auth, mfaToken: token)
            #expect(ended.status == 401 && ended.problem?.code == .invalidMFAToken, "\(ended.text)")
        }
    }

    /// A passkey is offered as the second factor only when the account has one and the first
    /// factor was not a passkey: the same passkey twice is one factor.
    @Test func aPasskeyIsNotBothFactors() async throws {
        try await withService { auth in
            let phone = try authenticator()
            _ = try await account(auth, phone, totp: true)
            phone.flags &= ~SoftwareAuthenticator.uv
            let asked = try await passkeys.login(auth, try phone.assert(try await passkeys.loginOptions(auth), userHandle: nil))
            #expect(asked.status == 401 && asked.problem?.factors == ["totp", "recovery_code"], "\(asked.text)")
            let token = try #require(asked.problem?.mfaToken)
            #expect(try await options(auth, mfaToken: token).status == 409)
            let ownOptions = try await passkeys.loginOptions(auth)
            #expect(try await verify(auth, token, try phone.assert(ownOptions, userHandle: nil)).status == 409)
            // An account with an app and no passkey is offered none either.
            let (session, email) = try await passkeys.account(auth)
            try await SecondFactorTests.turnOn(auth, session.accessToken)
            let plain = try await challenge(auth, email)
            #expect(plain.factors == ["totp", "recovery_code"])
            #expect(try await options(auth, mfaToken: try #require(plain.mfaToken)).status == 409)
            #expect(try await options(auth, mfaToken: "unknown").problem?.code == .invalidMFAToken)
        }
    }

    /// On an account with two-step sign-in, a password sign-in's token is not enough for a
    /// sensitive action; a passkey of the account, asserted now, is (on its own step-up or in
    /// the action's body). Another account's passkey, another account's challenge and a
    /// sign-in's challenge are refused.
    @Test func aPasskeyReauthenticates() async throws {
        try await withService { auth in
            let (phone, spare) = (try authenticator(), try authenticator())
            let (session, _) = try await account(auth, phone, totp: true)
            let code = try await auth.send("POST", "/auth/mfa/recovery-codes", token: session.accessToken)
            #expect(code.status == 401 && code.problem?.code == .reauthenticationRequired, "\(code.text)")
            // The step-up.
            let stepUp = try await reauthenticate(
                auth, session.accessToken,
                try phone.assert(try await reauthenticationOptions(auth, session.accessToken), userHandle: nil))
            #expect(stepUp.status == 200, "\(stepUp.text)")
            let token = try stepUp.decode(StepUpToken.self).accessToken
            let claims = try SecondFactorTests.claims(token)
            #expect(Set(claims["amr"] as? [String] ?? []) == ["pwd", "otp", "swk", "mfa"] && claims["acr"] as? String == "aal2")
            #expect(try await auth.send("POST", "/auth/mfa/recovery-codes", token: token).status == 200)
            // In the action's body: adding a second passkey with the first.
            // The first token still says `pwd` alone.
            let fresh = session.accessToken
            let refused = try await auth.send("POST", "/auth/passkeys/register/options", token: fresh)
            #expect(refused.status == 401 && refused.problem?.code == .reauthenticationRequired)
            let body = ReauthenticationRequest(
                passkey: try phone.assert(try await reauthenticationOptions(auth, fresh), userHandle: nil))
            let options = try await auth.send(
                "POST", "/auth/passkeys/register/options", json: try PasskeyTests.json(body), token: fresh)
            #expect(options.status == 200, "\(options.text)")
            let added = try await auth.send(
                "POST", "/auth/passkeys/register",
                json: try PasskeyTests.json(try spare.register(options.decode(PasskeyCreationOptions.self))), token: fresh)
            #expect(added.status == 201, "\(added.text)")

            // Refused: another account's passkey over this account's challenge; this account's
            // challenge used by another account; a sign-in's challenge; a replay.
            let thiefKey = try authenticator()
            let (thief, _) = try await account(auth, thiefKey, totp: false)
            let mine = try await reauthenticationOptions(auth, fresh)
            let foreignKey = try await reauthenticate(auth, fresh, try thiefKey.assert(mine, userHandle: nil))
            #expect(foreignKey.status == 401 && foreignKey.fields == ["passkey.id"], "\(foreignKey.text)")
            let stolenChallenge = try await reauthenticate(
                auth, thief.accessToken, try thiefKey.assert(try await reauthenticationOptions(auth, fresh), userHandle: nil))
            #expect(stolenChallenge.status == 401 && stolenChallenge.fields == ["passkey.response.clientDataJSON"])
            let signInChallenge = try await reauthenticate(
                auth, fresh, try phone.assert(try await passkeys.loginOptions(auth), userHandle: nil))
            #expect(signInChallenge.status == 401 && signInChallenge.fields == ["passkey.response.clientDataJSON"])
            let once = try phone.assert(try await reauthenticationOptions(auth, fresh), userHandle: nil)
            #expect(try await reauthenticate(auth, fresh, once).status == 200)
            #expect(try await reauthenticate(auth, fresh, once).problem?.code == .invalidPasskey)
            // A malformed assertion is named under `passkey`.
            var broken = once
            broken.response.signature = "%%"
            let malformed = try await reauthenticate(auth, fresh, broken)
            #expect(malformed.status == 422 && malformed.fields == ["passkey.response.signature"], "\(malformed.text)")
        }
    }

    /// Without two-step sign-in, a passkey re-authenticates as the password does; an account
    /// without passkeys is told to confirm another way.
    @Test func aPasskeyReauthenticatesAnAccountWithoutAnApp() async throws {
        try await withService { auth in
            let phone = try authenticator()
            let (session, _) = try await account(auth, phone, totp: false)
            let stepUp = try await reauthenticate(
                auth, session.accessToken,
                try phone.assert(try await reauthenticationOptions(auth, session.accessToken), userHandle: nil))
            #expect(stepUp.status == 200, "\(stepUp.text)")
            let claims = try SecondFactorTests.claims(try stepUp.decode(StepUpToken.self).accessToken)
            #expect(Set(claims["amr"] as? [String] ?? []) == ["pwd", "swk", "mfa"])
            let (bare, _) = try await passkeys.account(auth)
            #expect(try await auth.send("POST", "/auth/reauthenticate/passkey-options", token: bare.accessToken).status == 409)
        }
    }
    /// The database goes away between the two steps of a sign-in: the second step is answered
    /// 503 with `Retry-After` (never a 500), and nothing is spent — when it is back, the same MFA
    /// token finishes the sign-in with the passkey.
    @Test func theDatabaseGoingAwayMidSignInSpendsNothing() async throws {
        try await withService { auth in
            let phone = try authenticator()
            let (session, email) = try await passkeys.account(auth)
            #expect(try await passkeys.register(auth, session, phone).status == 201)
            let secret = try await SecondFactorTests.turnOn(auth, session.accessToken)
            let token = try #require(try await challenge(auth, email).mfaToken)
            let options = try await options(auth, mfaToken: token).decode(PasskeyRequestOptions.self)
            try await TestDatabase.away("pier_test_auth_passkey_factor") { () async throws in
                let byCode = try await auth.send(
                    "POST", "/auth/mfa/verify",
                    json: #"{"mfaToken":"\#(token)","code":"\#(SecondFactorTests.code(secret, step: 1))"}"#)
                #expect(byCode.status == 503 && byCode.headers["Retry-After"] != nil, "\(byCode.status) \(byCode.text)")
                let byPasskey = try await verify(auth, token, try phone.assert(options, userHandle: nil))
                #expect(byPasskey.status == 503, "\(byPasskey.text)")
                #expect(try await self.options(auth, mfaToken: token).status == 503)
            }
            let back = try await eventually {
                try await verify(auth, token, try phone.assert(options, userHandle: nil)).status == 200
            }
            #expect(back, "the token and the challenge outlived the outage")
        }
    }
}
