import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierRuntime
import PierTestSupport
import Testing

@testable import AuthService

@Suite(.serialized) struct IdentitySignInTests {
    func withService(_ idp: TestIdentityProvider, _ body: (AuthHarness) async throws -> Void) async throws {
        let oidc =
            #"[{"name":"google","issuer":"https://accounts.google.com","jwksURL":"\#(idp.jwksURL)","audiences":["client-1"],"nonce":"plain"}]"#
        try await AuthHarness.with(
            database: "pier_test_auth_identity",
            settings: [
                "PIER_AUTH_APPLE_AUDIENCES": "dev.pier.seeds, dev.pier.seeds.web", "PIER_AUTH_APPLE_JWKS_URL": idp.jwksURL,
                "PIER_AUTH_OIDC_PROVIDERS": oidc,
            ], body)
    }

    static func body(_ token: String, nonce: String = "raw-nonce", extra: String = "") -> String {
        #"{"identityToken":"\#(token)","nonce":"\#(nonce)"\#(extra)}"#
    }

    @Test func signInWithAppleCreatesThenFindsTheAccount() async throws {
        let idp = try TestIdentityProvider()
        try await withService(idp) { auth in
            let first = try await auth.send(
                "POST", "/auth/apple",
                json: Self.body(try idp.token(), extra: #","fullName":"Anna Apple","deviceName":"Anna's iPhone""#))
            #expect(first.status == 201, "\(first.text)")
            let created = try first.decode(AuthSession.self)
            #expect(created.user.email == "anna@privaterelay.appleid.com" && created.user.emailVerified)
            #expect(created.user.displayName == "Anna Apple")
            #expect(try await auth.send("GET", "/auth/me", token: created.accessToken).status == 200)
            // Later authorizations carry no name (and may carry no address): the same account, the name kept.
            let again = try await auth.send("POST", "/auth/apple", json: Self.body(try idp.token(removing: ["email"])))
            #expect(again.status == 200)
            let session = try again.decode(AuthSession.self)
            #expect(session.user.id == created.user.id && session.user.displayName == "Anna Apple")
            // ES256 tokens too, and the web service id as audience.
            let ec = try await auth.send(
                "POST", "/auth/apple", json: Self.body(try idp.token(["aud": "dev.pier.seeds.web"], alg: "ES256", kid: "ec-1")))
            #expect(ec.status == 200)
            #expect(try ec.decode(AuthSession.self).user.id == created.user.id)
            // No password: a password login fails like any wrong one.
            let login = try await auth.send(
                "POST", "/auth/login", json: #"{"email":"anna@privaterelay.appleid.com","password":"anything at all"}"#)
            #expect(login.status == 401)
        }
        await idp.server.shutdown()
    }

    /// An account with two-step sign-in asks its code of Sign in with Apple too: the provider's
    /// token alone gives no session, and the session the code completes says `otp` and `mfa`
    /// (Apple's sign-in has no RFC 8176 name of its own).
    @Test func signInWithAppleAsksTheSecondFactorToo() async throws {
        let idp = try TestIdentityProvider()
        try await withService(idp) { auth in
            let created = try await auth.send("POST", "/auth/apple", json: Self.body(try idp.token())).decode(AuthSession.self)
            let secret = try await SecondFactorTests.turnOn(auth, created.accessToken)
            let asked = try await auth.send("POST", "/auth/apple", json: Self.body(try idp.token()))
            #expect(asked.status == 401 && asked.problem?.code == .mfaRequired, "\(asked.text)")
            #expect(!asked.text.contains("accessToken"))
            let token = try #require(asked.problem?.mfaToken)
            let signedIn = try await auth.send(
                "POST", "/auth/mfa/verify",
                json: #"{"mfaToken":"\#(token)","code":"\#(SecondFactorTests.code(secret, step: 1))"}"#)
            #expect(signedIn.status == 200, "\(signedIn.text)")
            let session = try signedIn.decode(AuthSession.self)
            #expect(session.user.id == created.user.id && session.deviceToken == nil)
            let claims = try SecondFactorTests.claims(session.accessToken)
            #expect(Set(claims["amr"] as? [String] ?? []) == ["otp", "mfa"] && claims["acr"] as? String == "aal2")
        }
        await idp.server.shutdown()
    }

    /// Pre-hijacking with a passkey: an account of the owner's address that was never proven (as
    /// if someone registered it first, with a passkey of theirs) is claimed by the owner's Sign
    /// in with Apple: the squatter's passkey goes with everything else they held.
    @Test func claimingAnUnprovenAddressRemovesItsPasskeys() async throws {
        let idp = try TestIdentityProvider()
        try await withService(idp) { auth in
            let (squatter, email) = try await auth.register("anna@privaterelay.appleid.com")
            try await auth.pool.execute("UPDATE auth.users SET email_verified_at = now() WHERE email = \(email)")
            let key = try SoftwareAuthenticator.es256(rpID: "127.0.0.1", origin: "http://127.0.0.1:8080")
            let options = try await auth.send("POST", "/auth/passkeys/register/options", token: squatter.accessToken)
            let added = try await auth.send(
                "POST", "/auth/passkeys/register",
                json: String(
                    decoding: try JSONEncoder().encode(try key.register(options.decode(PasskeyCreationOptions.self))),
                    as: UTF8.self),
                token: squatter.accessToken)
            #expect(added.status == 201, "\(added.text)")
            // The address as never proven (a passkey added before that was required of it).
            try await auth.pool.execute("UPDATE auth.users SET email_verified_at = NULL WHERE email = \(email)")
            #expect(try await auth.send("POST", "/auth/apple", json: Self.body(try idp.token())).status == 200)
            let loginOptions = try await auth.send("POST", "/auth/passkeys/login/options", json: "{}").decode(
                PasskeyRequestOptions.self)
            let refused = try await auth.send(
                "POST", "/auth/passkeys/login",
                json: String(decoding: try JSONEncoder().encode(try key.assert(loginOptions, userHandle: nil)), as: UTF8.self))
            #expect(refused.status == 401 && refused.problem?.code == .invalidPasskey, "\(refused.text)")
        }
        await idp.server.shutdown()
    }

    /// Every way an ID token can be wrong is refused with 401 `invalid_identity_token` and a reason.
    @Test func forgedOrMisdirectedTokensAreRefused() async throws {
        let idp = try TestIdentityProvider()
        let other = try TestRSAKey()
        try await withService(idp) { auth in
            let good = try idp.token()
            let parts = good.split(separator: ".").map(String.init)
            var forgedClaims = try JSONSerialization.jsonObject(with: Data(Base64.urlDecoded(parts[1])!)) as! [String: Any]
            forgedClaims["sub"] = "someone.else"
            let tampered =
                parts[0] + "." + Base64.urlEncoded(Array(try JSONSerialization.data(withJSONObject: forgedClaims))) + "."
                + parts[2]
            let noneHeader = Base64.urlEncoded(Array(#"{"alg":"none","kid":"rsa-1"}"#.utf8))
            let cases: [(String, String, String)] = [
                ("tampered", tampered, "signature"),
                ("wrong aud", try idp.token(["aud": "com.example.other"]), "another app"),
                ("wrong iss", try idp.token(["iss": "https://evil.example"]), "not from"),
                ("expired", try idp.token(["exp": Int(Date().timeIntervalSince1970) - 3600]), "expired"),
                ("future", try idp.token(["iat": Int(Date().timeIntervalSince1970) + 3600]), "future"),
                ("no nonce", try idp.token(removing: ["nonce"]), "nonce"),
                ("wrong nonce", try idp.token(["nonce": TestIdentityProvider.hex("another-nonce")]), "nonce"),
                ("raw nonce", try idp.token(["nonce": "raw-nonce"]), "nonce"),
                ("alg none", noneHeader + "." + parts[1] + ".", "algorithm none"),
                ("HS256", try idp.token(alg: "HS256", signature: Array(repeating: 1, count: 32)), "algorithm HS256"),
                ("unknown kid", try idp.token(kid: "rsa-9"), "rsa-9"),
                ("no kid", try idp.token(kid: nil), "kid"),
                ("foreign key", try idp.token(signature: other.sign(Array((parts[0] + "." + parts[1]).utf8))), "signature"),
                ("ES256 claimed for an RSA key", try idp.token(alg: "ES256", kid: "rsa-1"), "signature"),
                ("garbage", "not.a.jwt", "malformed"),
            ]
            for (name, token, reason) in cases {
                let reply = try await auth.send("POST", "/auth/apple", json: Self.body(token))
                #expect(reply.status == 401, "\(name): \(reply.status) \(reply.text)")
                let problem = try reply.decode(Problem.self)
                #expect(problem.code == .invalidIdentityToken, "\(name)")
                #expect(problem.detail?.contains(reason) == true, "\(name): \(problem.detail ?? "")")
            }
            // Malformed requests name the field.
            #expect(try await auth.send("POST", "/auth/apple", json: #"{"identityToken":"x"}"#).status == 422)
            #expect(try await auth.send("POST", "/auth/apple", json: Self.body(good, nonce: "")).status == 422)
            let longName = String(repeating: "n", count: 101)
            let named = try await auth.send("POST", "/auth/apple", json: Self.body(good, extra: #","fullName":"\#(longName)""#))
            #expect(named.status == 422 && named.text.contains("fullName"))
            #expect(try await auth.send("POST", "/auth/apple", json: Self.body(good, extra: #","colour":"red""#)).status == 422)
            #expect(try await auth.send("POST", "/auth/oidc/nobody", json: Self.body(good)).status == 404)
            // Nothing was created by any of it.
            let users = try await auth.pool.query("SELECT count(*)::int AS n FROM auth.identities")[0]
            #expect(try users.decode("n", as: Int.self) == 0)
        }
        await idp.server.shutdown()
    }

    /// An account whose address was proven is linked by address when the provider verified the
    /// address too; the password keeps working. An unverified provider address links nothing
    /// (and does not say whether an account has it).
    @Test func linkingNeedsAVerifiedAddress() async throws {
        let idp = try TestIdentityProvider()
        try await withService(idp) { auth in
            let (session, email) = try await auth.register("ada-\(UUID().uuidString.prefix(6).lowercased())@example.com")
            let token = try await auth.mailedToken(to: email, containing: "/auth/email/verify?token=")
            #expect(try await auth.send("POST", "/auth/email/verify", json: #"{"token":"\#(token)"}"#).status == 200)
            let unverified = try await auth.send(
                "POST", "/auth/apple",
                json: Self.body(try idp.token(["sub": "ada.1", "email": email, "email_verified": "false"])))
            #expect(unverified.status == 403 && unverified.text.contains("email_unverified"), "\(unverified.text)")
            let nobody = try await auth.send(
                "POST", "/auth/apple",
                json: Self.body(try idp.token(["sub": "ada.2", "email": "nobody@example.com", "email_verified": "false"])))
            #expect(nobody.status == 403 && nobody.text.contains("email_unverified"))
            let linked = try await auth.send(
                "POST", "/auth/apple",
                json: Self.body(try idp.token(["sub": "ada.1", "email": email.uppercased(), "email_verified": true])))
            #expect(linked.status == 200, "\(linked.text)")
            let user = try linked.decode(AuthSession.self).user
            #expect(user.id == session.user.id && user.emailVerified)
            // The password still works, and so does the session: a user may have both.
            #expect(
                try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"a long enough passphrase"}"#)
                    .status == 200)
            #expect(try await auth.send("GET", "/auth/me", token: session.accessToken).status == 200)
            // Another OpenID Connect provider, its nonce plain.
            let google = try idp.token(
                [
                    "iss": "https://accounts.google.com", "aud": "client-1", "sub": "g-1", "email": email, "email_verified": true,
                    "nonce": "raw-nonce",
                ])
            let viaGoogle = try await auth.send("POST", "/auth/oidc/google", json: Self.body(google))
            #expect(viaGoogle.status == 200, "\(viaGoogle.text)")
            #expect(try viaGoogle.decode(AuthSession.self).user.id == session.user.id)
            #expect(try await auth.send("POST", "/auth/oidc/apple", json: Self.body(google)).status == 404)
            let users = try await auth.pool.query(
                "SELECT count(*)::int AS n FROM auth.users WHERE email_key = 'nobody@example.com'")
            #expect(try users[0].decode("n", as: Int.self) == 0)
        }
        await idp.server.shutdown()
    }

    /// Apple's server-to-server events: consent revoked or Apple account deleted end the
    /// sessions; an account left with no way in is deleted the normal way.
    @Test func appleNotificationsAreApplied() async throws {
        let idp = try TestIdentityProvider()
        try await withService(idp) { auth in
            let created = try await auth.send(
                "POST", "/auth/apple",
                json: Self.body(try idp.token(["sub": "note.1", "email": "note1@privaterelay.appleid.com"])))
            let session = try created.decode(AuthSession.self)
            // As Apple sends them: iss, aud, iat, exp, jti and events; no sub, no nonce.
            func notify(_ type: String, _ subject: String) async throws -> Reply {
                let events = #"{"type":"\#(type)","sub":"\#(subject)","event_time":\#(Int(Date().timeIntervalSince1970) * 1000)}"#
                return try await auth.send(
                    "POST", "/auth/apple/notifications", json: #"{"payload":"\#(try idp.notification(events))"}"#)
            }
            #expect(try await notify("email-disabled", "note.1").status == 200)
            let disabled = try await auth.pool.query("SELECT email_disabled FROM auth.identities WHERE subject = 'note.1'")[0]
            #expect(try disabled.decode("email_disabled", as: Bool.self))
            #expect(try await notify("consent-revoked", "note.1").status == 200)
            #expect(
                try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#).status == 401)
            #expect(try await eventually { try await auth.send("GET", "/auth/me", token: session.accessToken).status == 401 })
            // Signing in again links again; then Apple says the Apple account is gone: so is this one.
            let back = try await auth.send(
                "POST", "/auth/apple",
                json: Self.body(try idp.token(["sub": "note.1", "email": "note1@privaterelay.appleid.com"])))
            #expect(back.status == 200)
            #expect(try await notify("account-delete", "note.1").status == 200)
            let gone = try await auth.pool.query(
                "SELECT count(*)::int AS n FROM auth.users WHERE email = 'note1@privaterelay.appleid.com'")[0]
            #expect(try gone.decode("n", as: Int.self) == 0)
            let event = try await auth.pool.query(
                "SELECT count(*)::int AS n FROM events.events WHERE type = 'account.deleted' AND payload ->> 'userId' = \(session.user.id.text())"
            )
            #expect(try event[0].decode("n", as: Int.self) == 1)
            // A replayed notification is refused, and applies nothing again.
            let again = try await auth.send(
                "POST", "/auth/apple",
                json: Self.body(try idp.token(["sub": "note.2", "email": "note2@privaterelay.appleid.com"])))
            let second = try again.decode(AuthSession.self)
            let revoke = try idp.notification(#"{"type":"consent-revoked","sub":"note.2"}"#)
            #expect(try await auth.send("POST", "/auth/apple/notifications", json: #"{"payload":"\#(revoke)"}"#).status == 200)
            let relinked = try await auth.send(
                "POST", "/auth/apple",
                json: Self.body(try idp.token(["sub": "note.2", "email": "note2@privaterelay.appleid.com"])))
            #expect(relinked.status == 200)
            let replay = try await auth.send("POST", "/auth/apple/notifications", json: #"{"payload":"\#(revoke)"}"#)
            #expect(replay.status == 401 && replay.text.contains("used already"), "\(replay.text)")
            let relinkedSession = try relinked.decode(AuthSession.self)
            #expect(try await auth.send("GET", "/auth/me", token: relinkedSession.accessToken).status == 200)
            #expect(try await eventually { try await auth.send("GET", "/auth/me", token: second.accessToken).status == 401 })
            // Without a jti, or a ten-year life, a notification is refused.
            let noID = try idp.token(
                ["events": #"{"type":"consent-revoked","sub":"note.2"}"#], removing: ["sub", "nonce", "email"])
            let refusedNoID = try await auth.send("POST", "/auth/apple/notifications", json: #"{"payload":"\#(noID)"}"#)
            #expect(refusedNoID.status == 401 && refusedNoID.text.contains("jti"))
            let decade = try idp.notification(
                #"{"type":"consent-revoked","sub":"note.2"}"#, overrides: ["exp": Int(Date().timeIntervalSince1970) + 315_360_000]
            )
            #expect(try await auth.send("POST", "/auth/apple/notifications", json: #"{"payload":"\#(decade)"}"#).status == 401)
            // A signed payload without events is refused, naming the field.
            let empty = try idp.notification("{}")
            let noEvents = try await auth.send("POST", "/auth/apple/notifications", json: #"{"payload":"\#(empty)"}"#)
            #expect(noEvents.status == 422 && noEvents.text.contains("payload"))
            // Unknown subjects are acknowledged; a forged payload is not.
            #expect(try await notify("consent-revoked", "nobody").status == 200)
            let forged = try idp.token(["events": #"{"type":"account-delete","sub":"x"}"#], kid: "rsa-9")
            #expect(try await auth.send("POST", "/auth/apple/notifications", json: #"{"payload":"\#(forged)"}"#).status == 401)
        }
        await idp.server.shutdown()
    }

    /// A provider whose keys cannot be fetched is an outage (503), not a refusal.
    @Test func anUnreachableKeySetIsAnOutage() async throws {
        let idp = try TestIdentityProvider()
        await idp.server.shutdown()
        try await withService(idp) { auth in
            let reply = try await auth.send("POST", "/auth/apple", json: Self.body(try idp.token()))
            #expect(reply.status == 503 && reply.headers["Retry-After"] != nil, "\(reply.text)")
        }
    }
}
