import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierTestSupport
import Testing

@testable import AuthService
@testable import PierService

@Suite struct AuthEndpointTests {
    static let harness = Task { try await AuthHarness.start(database: "pier_test_auth") }
    var auth: AuthHarness { get async throws { try await Self.harness.value } }

    @Test func registerAnswersASessionWhoseTokenVerifies() async throws {
        let auth = try await auth
        let reply = try await auth.send(
            "POST", "/auth/register",
            json: #"{"email":"  Grace.Hopper@Example.COM ","password":"pässwörd 🔑 long","displayName":"Grace"}"#)
        #expect(reply.status == 201)
        // A token response: never cached by the client's or a proxy's cache (RFC 6749 §5.1).
        #expect(reply.headers["Cache-Control"] == "no-store")
        let session = try reply.decode(AuthSession.self)
        #expect(session.user.email == "Grace.Hopper@Example.COM")
        #expect(session.user.displayName == "Grace")
        #expect(session.user.role == "user")
        // The app can say where the link that verifies the address went.
        #expect(session.verificationSentTo == "Grace.Hopper@Example.COM" && !session.user.emailVerified)
        #expect(session.tokenType == "Bearer" && session.expiresIn == 900)
        // The session's end, 30 days out by default (refreshing moves it on).
        let ends = try #require(session.refreshExpiresAt)
        #expect(abs(ends.timeIntervalSinceNow - 30 * 86_400) < 60)
        #expect(Base64.urlDecoded(session.refreshToken)?.count == 32)
        let verifier = AccessTokenVerifier(
            keys: StaticKeyProvider(keys: auth.keys.verificationKeys), issuer: "pier", audience: "pier")
        let claims = try await verifier.verify(session.accessToken)
        #expect(UUID(uuidString: claims.sub) == session.user.id)
        #expect(claims.exp - claims.iat == 900 && claims.sid != nil && claims.role == "user")
        // The refresh token is stored only as its SHA-256.
        let stored = try await auth.pool.query(
            "SELECT count(*)::int AS n FROM auth.refresh_tokens WHERE token_hash = \(PostgresBytes(SHA256.hash(session.refreshToken)))"
        )
        #expect(try stored[0].decode("n", as: Int.self) == 1)
        let plain = try await auth.pool.query("SELECT count(*)::int AS n FROM auth.users WHERE password_hash LIKE '%pässwörd%'")
        #expect(try plain[0].decode("n", as: Int.self) == 0)
        // The same address in other case is the same account.
        let again = try await auth.send(
            "POST", "/auth/register", json: #"{"email":"grace.hopper@example.com","password":"another long passphrase"}"#)
        #expect(again.status == 409)
        #expect(again.headers["Content-Type"] == "application/problem+json")
    }

    @Test(arguments: [
        (#"{"email":"not-an-email","password":"a long enough passphrase"}"#, 422, "email"),
        (#"{"email":"a@b","password":"a long enough passphrase"}"#, 422, "email"),
        (#"{"email":"a b@example.com","password":"a long enough passphrase"}"#, 422, "email"),
        (#"{"email":"x@example.com","password":"short"}"#, 422, "password"),
        (#"{"email":"x@example.com","password":"password1"}"#, 422, "password"),
        (#"{"email":"x@example.com","password":"PASSWORD1"}"#, 422, "password"),
        (#"{"email":"x@example.com","password":"iloveyou2"}"#, 422, "password"),
        (#"{"email":"x@example.com","password":"x@example.com"}"#, 422, "password"),
        (#"{"email":"x@example.com","password":"\#(String(repeating: "p", count: 129))"}"#, 422, "password"),
        (
            #"{"email":"x@example.com","password":"a long enough passphrase","displayName":"\#(String(repeating: "n", count: 101))"}"#,
            422, "displayName"
        ),
        (#"{"email":"x@example.com"}"#, 422, "password"),
        (#"{"password":"a long enough passphrase"}"#, 422, "email"),
        (#"{"email":42,"password":"a long enough passphrase"}"#, 422, "email"),
        (#"{"email":"x@example.com","password":null}"#, 422, "password"),
        (#"{"email":"x@example.com","password":"#, 400, ""),
        (#"["x@example.com"]"#, 400, ""),
        ("", 400, ""),
    ])
    func registerRefusesBadInput(body: String, status: Int, field: String) async throws {
        let reply = try await auth.send("POST", "/auth/register", json: body)
        #expect(reply.status == status, "\(body.prefix(80))")
        if !field.isEmpty { #expect(reply.problem?.errors?.map(\.field).contains(field) == true, "\(reply.text)") }
        #expect(reply.problem?.requestId != nil)
    }

    @Test func exactlyEightCharactersAndAnyUnicodeAreAccepted() async throws {
        let auth = try await auth
        _ = try await auth.register(password: "zq8!Lm2#")
        _ = try await auth.register(password: "Ωμέγα密码🔒🔑ü")
    }

    @Test func loginIsGenericAndRehashesOldHashes() async throws {
        let auth = try await auth
        let (_, email) = try await auth.register()
        let ok = try await auth.send(
            "POST", "/auth/login", json: #"{"email":"\#(email.uppercased())","password":"a long enough passphrase"}"#)
        #expect(ok.status == 200)
        #expect(ok.headers["Cache-Control"] == "no-store")
        let wrong = try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"not the passphrase"}"#)
        let unknown = try await auth.send(
            "POST", "/auth/login", json: #"{"email":"nobody-\#(UUID())@example.com","password":"not the passphrase"}"#)
        #expect(wrong.status == 401 && unknown.status == 401)
        #expect(wrong.problem?.detail == unknown.problem?.detail)
        // A hash made with other parameters is replaced on the next successful login.
        let old = try Argon2idHasher(memoryKiB: 512, iterations: 1).hash("a long enough passphrase")
        try await auth.pool.execute("UPDATE auth.users SET password_hash = \(old) WHERE email_key = \(email.lowercased())")
        #expect(
            try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"a long enough passphrase"}"#)
                .status == 200)
        let rows = try await auth.pool.query("SELECT password_hash FROM auth.users WHERE email_key = \(email.lowercased())")
        #expect(try rows[0].decode("password_hash", as: String.self).hasPrefix("$argon2id$v=19$m=1024,t=1,p=1$"))
    }

    @Test func failedLoginsBackOffPerAccount() async throws {
        let auth = try await auth
        let (_, email) = try await auth.register()
        for _ in 0..<5 {
            let reply = try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"wrong passphrase"}"#)
            #expect(reply.status == 401)
        }
        // The right password does not get through while the account is backing off.
        let blocked = try await auth.send(
            "POST", "/auth/login", json: #"{"email":"\#(email)","password":"a long enough passphrase"}"#)
        #expect(blocked.status == 429)
        #expect(Int(blocked.headers["Retry-After"] ?? "") ?? 0 >= 1)
        // Other accounts are not affected.
        let (_, other) = try await auth.register()
        #expect(
            try await auth.send("POST", "/auth/login", json: #"{"email":"\#(other)","password":"a long enough passphrase"}"#)
                .status == 200)
        // Recorded in the database, so every replica sees it.
        #expect(try await auth.recordedFailures(email) == 5)
        // The back-off ends (1 s after the fifth failure): the right password gets through.
        #expect(
            try await eventually(interval: .milliseconds(100)) {
                try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"a long enough passphrase"}"#)
                    .status == 200
            })
    }

    @Test func refreshRotatesAndReuseRevokesTheFamily() async throws {
        // A grace window of its own, wide enough for two requests on a busy machine.
        let grace = 5
        let auth = try await AuthHarness.start(
            database: "pier_test_auth_refresh_grace", settings: ["PIER_AUTH_REFRESH_GRACE_S": String(grace)])
        defer { Task { await auth.stop() } }
        // Resent at once (an app killed mid-refresh): the same new token, not a revocation. A
        // resend answered more than the grace window after the first was sent is a reuse, and
        // no verdict on the grace (a machine busy with other work): again, with a new session.
        var checked: (session: AuthSession, rotated: AuthSession)?
        for _ in 0..<5 where checked == nil {
            let (session, _) = try await auth.register()
            let sent = ContinuousClock.now
            let first = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#)
            #expect(first.status == 200)
            let rotated = try first.decode(AuthSession.self)
            #expect(rotated.refreshToken != session.refreshToken)
            let retry = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#)
            guard ContinuousClock.now - sent < .seconds(grace) else { continue }
            #expect(retry.status == 200)
            #expect(try retry.decode(AuthSession.self).refreshToken == rotated.refreshToken)
            checked = (session, rotated)
        }
        let (session, rotated) = try #require(checked, "every resend was answered after the grace window")
        // Once the grace window is over, the old token is a reuse: the whole family
        // is revoked. Until then, resending it keeps answering the same successor.
        var reuse = 0
        var successors: Set<String> = []
        let ended = try await eventually(interval: .milliseconds(100)) {
            let reply = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#)
            reuse = reply.status
            if reply.status == 200 { successors.insert(try reply.decode(AuthSession.self).refreshToken) }
            return reply.status != 200
        }
        #expect(ended && reuse == 401)
        #expect(successors.isSubset(of: [rotated.refreshToken]))
        let afterReuse = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(rotated.refreshToken)"}"#)
        #expect(afterReuse.status == 401)
    }

    @Test func refreshAfterTheSuccessorWasUsedIsAReuseEvenInGrace() async throws {
        let auth = try await auth
        let (session, _) = try await auth.register()
        let second = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#).decode(
            AuthSession.self)
        let third = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(second.refreshToken)"}"#)
        #expect(third.status == 200)
        #expect(try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#).status == 401)
        #expect(
            try await auth.send(
                "POST", "/auth/refresh", json: #"{"refreshToken":"\#(try third.decode(AuthSession.self).refreshToken)"}"#
            ).status == 401)
    }

    @Test func unknownAndMalformedRefreshTokensAre401() async throws {
        let auth = try await auth
        for token in ["", "nope", String(repeating: "x", count: 5000), Base64.urlEncoded(SecureRandom.bytes(32))] {
            #expect(try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(token)"}"#).status == 401)
        }
        #expect(try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":7}"#).status == 422)
    }

    @Test func logoutEndsTheSession() async throws {
        let auth = try await auth
        let (session, _) = try await auth.register()
        let body = #"{"refreshToken":"\#(session.refreshToken)"}"#
        #expect(try await auth.send("POST", "/auth/logout", json: body, token: session.accessToken).status == 204)
        #expect(try await auth.send("POST", "/auth/refresh", json: body).status == 401)
        // The access token of the ended session is refused too, as soon as the revocation is read.
        #expect(try await eventually { try await auth.send("GET", "/auth/me", token: session.accessToken).status == 401 })
        let again = try await auth.send("POST", "/auth/logout", json: body, token: session.accessToken)
        #expect(again.status == 401 && again.problem?.code == .sessionRevoked)
    }

    /// An app whose access token expired signs out with its refresh token alone; a token that is
    /// unknown or already ended is answered the same way (nothing to learn from it).
    @Test func logoutNeedsOnlyTheRefreshToken() async throws {
        let auth = try await auth
        let (session, _) = try await auth.register()
        let (other, _) = try await auth.register()
        let body = #"{"refreshToken":"\#(session.refreshToken)"}"#
        #expect(try await auth.send("POST", "/auth/logout", json: body).status == 204)
        #expect(try await auth.send("POST", "/auth/refresh", json: body).status == 401)
        #expect(try await eventually { try await auth.send("GET", "/auth/me", token: session.accessToken).status == 401 })
        #expect(try await auth.send("POST", "/auth/logout", json: body).status == 204)
        #expect(try await auth.send("POST", "/auth/logout", json: #"{"refreshToken":"never-issued"}"#).status == 204)
        // Another user's session is untouched.
        #expect(try await auth.send("GET", "/auth/me", token: other.accessToken).status == 200)
        // Someone else's refresh token sent with my access token ends only my session.
        let (mine, _) = try await auth.register()
        let theirs = #"{"refreshToken":"\#(other.refreshToken)"}"#
        #expect(try await auth.send("POST", "/auth/logout", json: theirs, token: mine.accessToken).status == 204)
        #expect(try await auth.send("POST", "/auth/refresh", json: theirs).status == 200)
    }

    /// Typos in a body are named, every missing and every unknown field in one answer.
    @Test func everyMissingAndUnknownFieldIsNamedAtOnce() async throws {
        let auth = try await auth
        let reply = try await auth.send("POST", "/auth/register", json: #"{"emial":"a@example.com","pasword":"long enough"}"#)
        #expect(reply.status == 422 && reply.problem?.code == .validationFailed)
        #expect(reply.problem?.errors?.map(\.field) == ["email", "emial", "password", "pasword"])
        let login = try await auth.send("POST", "/auth/login", json: #"{"email":"a@example.com","password":"x","remember":true}"#)
        #expect(login.status == 422 && login.problem?.errors?.map(\.field) == ["remember"])
    }

    /// Each refusal an app handles carries its stable code, whatever its wording.
    @Test func problemsCarryStableCodes() async throws {
        let auth = try await auth
        let (session, email) = try await auth.register()
        func code(_ reply: Reply) -> ProblemCode? { reply.problem?.code }
        let taken = try await auth.send("POST", "/auth/register", json: #"{"email":"\#(email)","password":"another passphrase"}"#)
        #expect(taken.status == 409 && code(taken) == .emailTaken)
        let weak = try await auth.send("POST", "/auth/register", json: #"{"email":"w@example.com","password":"password1"}"#)
        #expect(weak.status == 422 && code(weak) == .weakPassword)
        let badEmail = try await auth.send("POST", "/auth/register", json: #"{"email":"nope","password":"password1"}"#)
        #expect(badEmail.status == 422 && code(badEmail) == .validationFailed)
        let wrong = try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"not the passphrase"}"#)
        #expect(wrong.status == 401 && code(wrong) == .invalidCredentials)
        let unknown = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"never-issued"}"#)
        #expect(unknown.status == 401 && code(unknown) == .invalidRefreshToken)
        let notJSON = try await auth.send("POST", "/auth/login", json: "{")
        #expect(notJSON.status == 400 && code(notJSON) == .badRequest)
        #expect(code(try await auth.send("GET", "/auth/nowhere")) == .notFound)
        #expect(try await auth.send("DELETE", "/auth/me", token: session.accessToken).status == 204)
        let gone = try await auth.send("GET", "/auth/me", token: session.accessToken)
        #expect(gone.status == 401 && [.accountDeleted, .sessionRevoked].contains(code(gone)))
    }

    @Test func meNeedsAValidToken() async throws {
        let auth = try await auth
        let (session, email) = try await auth.register()
        let me = try await auth.send("GET", "/auth/me", token: session.accessToken)
        #expect(me.status == 200)
        #expect(try me.decode(User.self).email == email)
        // No token: a bare challenge (RFC 6750 §3.1); a refused token: `invalid_token`; each with its code.
        let anonymous = try await auth.send("GET", "/auth/me")
        #expect(anonymous.status == 401 && anonymous.headers["WWW-Authenticate"] == "Bearer")
        #expect(anonymous.problem?.code == .authenticationRequired)
        #expect(try await auth.send("GET", "/auth/me", headers: ["Authorization": "Basic abc"]).status == 401)
        var tampered = Array(session.accessToken)
        tampered[tampered.count / 2] = tampered[tampered.count / 2] == "A" ? "B" : "A"
        let refused = try await auth.send("GET", "/auth/me", token: String(tampered))
        #expect(refused.status == 401 && refused.problem?.code == .tokenInvalid)
        #expect(refused.headers["WWW-Authenticate"]?.hasPrefix(#"Bearer error="invalid_token""#) == true)
        // Signed with the right key but expired.
        let now = Int(Date().timeIntervalSince1970)
        let expired = try auth.keys.signer.sign(
            AccessClaims(
                iss: "pier", sub: session.user.id.uuidString, aud: "pier",
                iat: now - 3600, nbf: now - 3600, exp: now - 1800, jti: "x", sid: nil, role: "user"))
        let reply = try await auth.send("GET", "/auth/me", token: expired)
        #expect(reply.status == 401 && reply.problem?.code == .tokenExpired)
        #expect(
            reply.headers["WWW-Authenticate"]
                == #"Bearer error="invalid_token", error_description="The access token has expired; refresh it.""#)
        // Signed by a stranger.
        let forged = try AccessTokenSigner(key: P256PrivateKey.generate(), kid: auth.keys.signer.kid).sign(
            AccessClaims(
                iss: "pier", sub: session.user.id.uuidString, aud: "pier", iat: now, nbf: now, exp: now + 600, jti: "y", sid: nil,
                role: "admin"))
        #expect(try await auth.send("GET", "/auth/me", token: forged).status == 401)
    }

    /// The team finds an account by the start of its address or of its display name (case
    /// aside), or by its id; what was typed is matched as text, wildcards included; only admins
    /// may look.
    @Test func adminsFindAccountsByAddressNameOrID() async throws {
        let auth = try await auth
        let tag = UUID().uuidString.prefix(8).lowercased()
        func register(_ local: String, name: String? = nil) async throws -> UUID {
            let named = name.map { #","displayName":"\#($0)""# } ?? ""
            let reply = try await auth.send(
                "POST", "/auth/register",
                json: #"{"email":"\#(local).\#(tag)@example.com","password":"a long enough passphrase"\#(named)}"#)
            #expect(reply.status == 201, "\(reply.text)")
            return try reply.decode(AuthSession.self).user.id
        }
        let ann = try await register("ann", name: "Zed \(tag)")
        let bob = try await register("bob")
        let underscore = try await register("under_score")
        _ = try await register("underxscore")
        let team = [try await register("t1", name: "Team \(tag) one"), try await register("t2", name: "team \(tag) two")]
        let (member, _) = try await auth.register()
        let (_, adminEmail) = try await auth.register()
        try await auth.pool.execute("UPDATE auth.users SET role = 'admin' WHERE email = \(adminEmail)")
        let admin = try await auth.send(
            "POST", "/auth/login", json: #"{"email":"\#(adminEmail)","password":"a long enough passphrase"}"#
        ).decode(AuthSession.self).accessToken

        func search(_ query: String, _ extra: String = "", token: String? = nil) async throws -> Reply {
            let encoded = query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? query
            return try await auth.send("GET", "/auth/users?q=\(encoded)\(extra)", token: token ?? admin)
        }
        func found(_ query: String, _ extra: String = "") async throws -> [UUID] {
            let reply = try await search(query, extra)
            #expect(reply.status == 200, "\(reply.text)")
            return try reply.decode(UserList.self).items.map(\.id)
        }
        #expect(try await found("ANN.\(tag)") == [ann])
        #expect(try await found("  zed \(tag) ") == [ann])
        #expect(try await found(bob.uuidString) == [bob])
        #expect(try await found(bob.uuidString.lowercased()) == [bob])
        #expect(try await found("under_score.\(tag)") == [underscore])
        #expect(try await found("_nn.\(tag)").isEmpty)
        #expect(try await found("%nn.\(tag)").isEmpty)
        // By the start of any word of the name or the address, in any order.
        #expect(try await found("one \(tag)") == [team[0]])
        #expect(try await found("\(tag) bo") == [bob])
        #expect(try await found("\(tag.prefix(5)) scor") == [underscore])
        #expect(try await found("\\").isEmpty)
        // A word PostgreSQL's parser reads as a number and a word (`7e3` and `a…`) in a name is
        // found as typed, whole or its start.
        let scientific = try await register("sci", name: "Dr 7e3a\(tag)")
        #expect(try await found("7e3a\(tag)") == [scientific])
        #expect(try await found("dr 7e3a\(tag.prefix(3))") == [scientific])
        // By address, at most `limit`, saying when more match.
        let two = try await search("team \(tag)", "&limit=1").decode(UserList.self)
        #expect(two.items.map(\.id) == [team[0]] && two.more)
        let all = try await search("team \(tag)", "&limit=2").decode(UserList.self)
        #expect(all.items.map(\.id) == team && !all.more)
        let one = try await auth.send("GET", "/auth/users/\(ann.uuidString.lowercased())", token: admin)
        #expect(try one.decode(User.self).email == "ann.\(tag)@example.com")
        #expect(try await auth.send("GET", "/auth/users/\(UUID())", token: admin).status == 404)

        // Clear refusals, each naming its field.
        for (query, extra, field) in [
            ("", "", "q"), ("   ", "", "q"), (String(repeating: "a", count: 255), "", "q"), ("a\u{01}b", "", "q"),
            ("ann", "&limit=0", "limit"), ("ann", "&limit=101", "limit"), ("ann", "&limit=ten", "limit"),
        ] {
            let refused = try await search(query, extra)
            #expect(refused.status == 422 && refused.fields == [field], "\(query.prefix(8)) \(extra): \(refused.text)")
        }
        // NUL, or bytes that are not UTF-8 once decoded: the request itself is refused.
        for raw in ["a%00b", "%FF%FE"] {
            let refused = try await auth.send("GET", "/auth/users?q=\(raw)", token: admin)
            #expect(refused.status == 400 && refused.problem != nil, "\(raw): \(refused.status) \(refused.text)")
        }
        // Only admins.
        #expect(try await search("ann", token: member.accessToken).status == 403)
        #expect(try await auth.send("GET", "/auth/users?q=ann").status == 401)
        #expect(try await auth.send("GET", "/auth/users/\(ann)", token: member.accessToken).status == 403)
    }

    @Test func passwordChangeRevokesOtherSessions() async throws {
        let auth = try await auth
        let (phone, email) = try await auth.register()
        let laptop = try await auth.send(
            "POST", "/auth/login", json: #"{"email":"\#(email)","password":"a long enough passphrase"}"#
        ).decode(AuthSession.self)
        let wrong = try await auth.send(
            "POST", "/auth/password", json: #"{"currentPassword":"nope nope nope","newPassword":"brand new passphrase"}"#,
            token: phone.accessToken)
        #expect(wrong.status == 422 && wrong.problem?.errors?.first?.field == "currentPassword")
        let weak = try await auth.send(
            "POST", "/auth/password", json: #"{"currentPassword":"a long enough passphrase","newPassword":"12345678"}"#,
            token: phone.accessToken)
        #expect(weak.status == 422 && weak.problem?.errors?.first?.field == "newPassword")
        let changed = try await auth.send(
            "POST", "/auth/password",
            json: #"{"currentPassword":"a long enough passphrase","newPassword":"brand new passphrase"}"#,
            token: phone.accessToken)
        #expect(changed.status == 204)
        #expect(try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(laptop.refreshToken)"}"#).status == 401)
        #expect(try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(phone.refreshToken)"}"#).status == 200)
        #expect(
            try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"a long enough passphrase"}"#)
                .status == 401)
        #expect(
            try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"brand new passphrase"}"#).status
                == 200)
    }

    @Test func deletingTheAccountRemovesItAndRecordsAnEvent() async throws {
        let auth = try await auth
        let (session, email) = try await auth.register()
        #expect(try await auth.send("DELETE", "/auth/me", token: session.accessToken).status == 204)
        #expect(try await auth.send("GET", "/auth/me", token: session.accessToken).status == 401)
        #expect(
            try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"a long enough passphrase"}"#)
                .status == 401)
        #expect(try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#).status == 401)
        let events = try await auth.pool.query(
            """
            SELECT count(*)::int AS n FROM events.events WHERE type = 'account.deleted' AND payload->>'userId' = \(session.user.id.text())
            """)
        #expect(try events[0].decode("n", as: Int.self) == 1)
        #expect(try await auth.send("DELETE", "/auth/me", token: session.accessToken).status == 401)
    }

    /// A body that may be left out (a confirmation) is read strictly when it is sent: malformed
    /// JSON, `null`, an unknown member or a member of the wrong type is refused, naming it, and
    /// nothing is deleted; an empty body is no confirmation (a recent sign-in stands in).
    @Test func anOptionalBodyIsReadStrictlyWhenSent() async throws {
        let auth = try await auth
        let (session, _) = try await auth.register()
        let malformed = try await auth.send("DELETE", "/auth/me", json: "{", token: session.accessToken)
        #expect(malformed.status == 400 && malformed.problem?.code == .badRequest, "\(malformed.text)")
        let null = try await auth.send("DELETE", "/auth/me", json: "null", token: session.accessToken)
        #expect(null.status == 422 && null.problem?.code == .validationFailed, "\(null.text)")
        let unknown = try await auth.send("DELETE", "/auth/me", json: #"{"pasword":"x"}"#, token: session.accessToken)
        #expect(unknown.status == 422 && unknown.text.contains("pasword"), "\(unknown.text)")
        let wrongType = try await auth.send("DELETE", "/auth/me", json: #"{"password":42}"#, token: session.accessToken)
        #expect(wrongType.status == 422 && wrongType.text.contains("password"), "\(wrongType.text)")
        #expect(try await auth.send("GET", "/auth/me", token: session.accessToken).status == 200)
        #expect(try await auth.send("DELETE", "/auth/me", token: session.accessToken).status == 204)
    }

    @Test func jwksPublishesTheSigningKey() async throws {
        let auth = try await auth
        let reply = try await auth.send("GET", "/auth/.well-known/jwks.json")
        #expect(reply.status == 200)
        let set = try reply.decode(JWKSet.self)
        let (session, _) = try await auth.register()
        let kid = try JWS(compact: session.accessToken).header.kid
        let jwk = try #require(set.keys.first { $0.kid == kid })
        try JWS(compact: session.accessToken).verify(with: jwk.publicKey())
        #expect(!reply.text.contains("\"d\""))
    }

    @Test func operatorEndpoints() async throws {
        let auth = try await auth
        #expect(try await auth.send("GET", "/healthz").status == 200)
        let ready = try await auth.send("GET", "/readyz")
        #expect(ready.status == 200 && ready.text.contains("\"status\":\"ready\""))
        _ = try await auth.send("GET", "/auth/me")
        let metrics = try await auth.send("GET", "/metrics")
        #expect(metrics.text.contains(#"pier_http_requests_total{service="auth",route="/auth/me",method="GET",status="401"}"#))
        #expect(metrics.text.contains("pier_db_pool_connections"))
    }

    /// Every connection of the request pool busy (a slow burst) is load, not ill health: the
    /// probe is answered at once from the background checks, which have a connection of their
    /// own, instead of queueing past the pool's acquire timeout into a 503.
    @Test func aSaturatedPoolDoesNotFailReadiness() async throws {
        let auth = try await AuthHarness.start(
            database: "pier_test_auth_readiness", settings: ["PIER_DB_POOL_SIZE": "2", "PIER_DB_ACQUIRE_TIMEOUT_MS": "1000"])
        #expect(try await auth.send("GET", "/readyz").status == 200)
        let token = try await auth.register().0.accessToken
        // Both connections held until the checks are done, then released by cancelling their
        // statements: no sleep has to outlast the checks on a slow machine.
        let admin = PostgresPool(configuration: auth.pool.configuration)
        defer { admin.close() }
        async let first = { try? await auth.pool.execute("SELECT pg_sleep(600) /* held */") }()
        async let second = { try? await auth.pool.execute("SELECT pg_sleep(600) /* held */") }()
        // Both statements running (not just two connections lent: the mail outbox borrows one
        // too, and on a busy machine a held statement may not have asked for its own yet).
        #expect(
            await eventually {
                let running = try? await admin.query(
                    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600) /* held */'")
                return (try? running?.first?.decode("n", as: Int.self)) == 2
            })
        // A request that needs the pool meets its acquire timeout meanwhile...
        let starved = try await auth.send("GET", "/auth/me", token: token)
        #expect(starved.status == 503, "\(starved.status) \(starved.text)")
        // ...while readiness, checked on its own connection, stays ready.
        for _ in 0..<3 {
            let ready = try await auth.send("GET", "/readyz")
            #expect(ready.status == 200, "\(ready.text)")
        }
        // Cancelled until both are back: a statement still on its way is not in pg_stat_activity yet.
        #expect(
            await eventually {
                _ = try? await admin.execute(
                    "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600) /* held */'")
                return auth.pool.statistics.inUse == 0
            })
        _ = await (first, second)
        await auth.server.shutdown()
    }

    @Test func twiceMoreConcurrentRequestsThanConnectionsAllComplete() async throws {
        let auth = try await AuthHarness.start(database: "pier_test_auth_small", settings: ["PIER_DB_POOL_SIZE": "2"])
        let (session, _) = try await auth.register()
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<16 {
                group.addTask {
                    index % 4 == 0
                        ? try await auth.send("GET", "/healthz").status
                        : try await auth.send("GET", "/auth/me", token: session.accessToken).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 16 && statuses.allSatisfy { $0 == 200 })
        await auth.server.shutdown()
    }
}

/// The database going away and coming back: requests in between fail with 503 and
/// `Retry-After` (never a 500, never a hang), and the service recovers by itself.
/// Restarts the shared server, so it runs on its own (see scripts/test.sh).
@Suite(
    .serialized, .enabled(if: TestEnvironment.mayRestartTheServer, "restarts the shared server: scripts/test.sh runs it alone"))
struct AuthRestartTests {
    /// `migrate` started with its database (as podman-compose, which ignores `depends_on`
    /// conditions, or a Kubernetes job starts it) waits for it instead of failing; past its wait
    /// it fails, and each wait is logged with its reason.
    @Test func migrateWaitsForTheDatabaseToStart() async throws {
        let url = try await TestDatabase.create("pier_test_auth_migrate_wait")
        let logs = LogLines()
        let logger = Logger(service: "auth", level: .info, sink: { logs.append($0) })
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 2))
        defer { pool.close() }
        #expect(runCommandInRepository(["scripts/postgres.sh", "stop"]) == 0)
        defer { _ = runCommandInRepository(["scripts/postgres.sh", "start"]) }
        await #expect(throws: PostgresError.self) {
            try await Plugin(AuthService.self).migrate(pool: pool, logger: logger, waitingUpTo: 0)
        }
        let gaveUp = MonotonicClock.seconds()
        await #expect(throws: PostgresError.self) {
            try await Plugin(AuthService.self).migrate(pool: pool, logger: logger, waitingUpTo: 2)
        }
        #expect(MonotonicClock.seconds() - gaveUp >= 2)
        let migrating = Task { try await Plugin(AuthService.self).migrate(pool: pool, logger: logger, waitingUpTo: 60) }
        try await Task.sleep(for: .seconds(2))
        #expect(runCommandInRepository(["scripts/postgres.sh", "start"]) == 0)
        try await migrating.value
        #expect(logs.all.contains { $0.contains("waiting for the database") && $0.contains("\"up_to_s\":60") })
        #expect(logs.all.last?.contains("migrated") == true)
        let applied = try await pool.query("SELECT count(*)::int AS n FROM auth.schema_migrations")
        #expect(try applied.first?.decode("n", as: Int.self) == AuthService.migrations.count)
    }

    @Test func serviceRecoversWhenTheDatabaseComesBack() async throws {
        let smtp = try await SMTPTestServer.start()
        let auth = try await AuthHarness.start(
            database: "pier_test_auth_restart", settings: ["PIER_AUTH_SMTP_URL": smtp.url, "PIER_AUTH_MAIL_POLL_S": "1"])
        let (session, email) = try await auth.register()
        // The verification mail of the registration.
        #expect(await smtp.waitForMails(1).count == 1)
        #expect(try await auth.send("GET", "/auth/me", token: session.accessToken).status == 200)
        let stop = runCommandInRepository(["scripts/postgres.sh", "stop"])
        #expect(stop == 0)
        let during = try await auth.send("GET", "/auth/me", token: session.accessToken)
        #expect(during.status == 503)
        #expect(during.headers["Retry-After"] != nil)
        #expect(!during.text.contains("connection") && !during.text.contains("5432"))
        // Readiness is checked in the background every second: it turns within a few.
        #expect(try await eventually { try await auth.send("GET", "/readyz").status == 503 })
        #expect(runCommandInRepository(["scripts/postgres.sh", "start"]) == 0)
        // Back by itself: the pool reconnects, and the revocation list (stale after 5 s without
        // the database, so tokens got 503 meanwhile) reads the log again within a second.
        #expect(try await eventually { try await auth.send("GET", "/auth/me", token: session.accessToken).status == 200 })
        #expect(try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#).status == 200)
        // The mail outbox polls again: a reset asked now is mailed.
        #expect(try await auth.send("POST", "/auth/password/forgot", json: #"{"email":"\#(email)"}"#).status == 202)
        #expect(await smtp.waitForMails(2).last?.link(containing: "token=") != nil)
        // And every worker still stops (the outbox, the event listener, the pool).
        await auth.stop()
    }
}

/// Guessing and flooding, from one address and from many.
@Suite struct LoginAbuseTests {
    /// The attempt is reserved before the password is hashed: concurrent guesses queue on the
    /// account's row and those past the limit are refused unhashed.
    @Test func concurrentGuessesCannotOutrunTheLimit() async throws {
        let auth = try await AuthHarness.start(database: "pier_test_auth_guesses")
        let (_, email) = try await auth.register()
        let statuses = try await concurrently(64) { _ in
            try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"wrong passphrase"}"#).status
        }
        let checked = statuses.filter { $0 == 401 }.count
        #expect(statuses.allSatisfy { $0 == 401 || $0 == 429 })
        #expect(checked <= 10, "\(checked) of 64 guesses were checked")
        // In one replica, never more than the limit (fewer when attempts end while others read).
        #expect((1...5).contains(checked), "\(checked) of 64 guesses were checked")
        #expect(try await auth.recordedFailures(email) == checked)
        await auth.server.shutdown()
    }

    /// A stolen access token is no faster way to guess: the password change checks the current
    /// password under the same guards as login, concurrent guesses included, and counts its
    /// failures against the same account.
    @Test func guessesThroughPasswordChangeMeetTheSameLimit() async throws {
        let auth = try await AuthHarness.start(database: "pier_test_auth_change_guesses")
        let (session, email) = try await auth.register()
        let statuses = try await concurrently(32) { index in
            try await auth.send(
                "POST", "/auth/password",
                json: #"{"currentPassword":"guess number \#(index)","newPassword":"brand new passphrase"}"#,
                token: session.accessToken
            ).status
        }
        let checked = statuses.filter { $0 == 422 }.count
        #expect(statuses.allSatisfy { $0 == 422 || $0 == 429 }, "\(statuses)")
        #expect((1...5).contains(checked), "\(checked) of 32 guesses were checked")
        // Counted against the account, as login's failures are.
        #expect(try await auth.recordedFailures(email) == checked)
        await auth.server.shutdown()
    }

    /// One address flooding logins with its own valid password cannot take the hashing threads
    /// from another: the other's logins all succeed, promptly.
    @Test func oneAddressFloodingLeavesLoginsToOthers() async throws {
        // Real Argon2 cost and two hashing threads, as on a small production replica.
        let auth = try await AuthHarness.start(
            database: "pier_test_auth_flood",
            settings: [
                "PIER_AUTH_ARGON2_MEMORY_KIB": "19456", "PIER_AUTH_ARGON2_ITERATIONS": "2", "PIER_AUTH_HASH_THREADS": "2",
                "PIER_AUTH_HASHES_PER_ADDRESS": "2", "PIER_TRUSTED_PROXIES": "127.0.0.1",
            ])
        let (_, flooder) = try await auth.register()
        let (_, other) = try await auth.register()
        // Over sockets: what is measured is the server under a real flood.
        let login: @Sendable (String, String) async throws -> Int = { email, address in
            try await auth.socket.send(
                "POST", "/auth/login", json: #"{"email":"\#(email)","password":"a long enough passphrase"}"#,
                headers: ["X-Forwarded-For": address]
            ).status
        }
        func timed(_ email: String, _ address: String) async throws -> (Int, Double) {
            let started = ContinuousClock.now
            let status = try await login(email, address)
            let elapsed = ContinuousClock.now - started
            return (status, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        // The same login with nobody flooding: what "promptly" is measured against, on this
        // machine as busy as it is now.
        var alone: [Double] = []
        for _ in 0..<5 { alone.append(try await timed(other, "203.0.113.7").1) }
        let flooding = Locked(true)
        let floodStatuses = Locked<[Int: Int]>([:])
        let flood = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<80 {
                    group.addTask {
                        while flooding.withLock({ $0 }) {
                            let status = try await login(flooder, "198.51.100.1")
                            floodStatuses.withLock { $0[status, default: 0] += 1 }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        #expect(await eventually { floodStatuses.withLock { $0.values.reduce(0, +) } > 100 })
        var durations: [Double] = []
        var statuses: [Int] = []
        for _ in 0..<10 {
            let (status, seconds) = try await timed(other, "203.0.113.7")
            statuses.append(status)
            durations.append(seconds)
        }
        flooding.withLock { $0 = false }
        try await flood.value
        let median = durations.sorted()[durations.count / 2]
        let baseline = alone.sorted()[alone.count / 2]
        print(
            "flood: \(floodStatuses.withLock { $0 }); other address: \(statuses), median \(Int(median * 1000)) ms"
                + " (alone \(Int(baseline * 1000)) ms)")
        #expect(statuses == Array(repeating: 200, count: 10))
        // The flooder holds at most its share of the hashing threads (2 of 2 here): another
        // address waits for those hashes and its own, never for the flood's queue. Compared with
        // the same login alone, in the same run, so a busy machine slows both alike.
        #expect(median < 6 * baseline, "median \(median) s, alone \(baseline) s")
        #expect(floodStatuses.withLock { $0[429, default: 0] } > 0)
        await auth.server.shutdown()
    }

    /// Successful logins count too: a client cannot keep the hashing threads busy with its own
    /// valid password; another address is not affected.
    @Test func loginsPerAddressAreRateLimited() async throws {
        let auth = try await AuthHarness.start(
            database: "pier_test_auth_login_rate",
            settings: ["PIER_AUTH_LOGINS_PER_ADDRESS_PER_MINUTE": "3", "PIER_TRUSTED_PROXIES": "127.0.0.1"])
        let (_, email) = try await auth.register()
        func login(from address: String) async throws -> Reply {
            try await auth.send(
                "POST", "/auth/login", json: #"{"email":"\#(email)","password":"a long enough passphrase"}"#,
                headers: ["X-Forwarded-For": address])
        }
        for _ in 0..<3 { #expect(try await login(from: "2001:db8:7:7::1").status == 200) }
        // Another address of the same /64 is the same client.
        let limited = try await login(from: "2001:db8:7:7::2")
        #expect(limited.status == 429)
        #expect(Int(limited.headers["Retry-After"] ?? "") ?? 0 >= 1)
        #expect(try await login(from: "2001:db8:7:8::1").status == 200)
        await auth.server.shutdown()
    }
}
