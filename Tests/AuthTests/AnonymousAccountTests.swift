import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierTestSupport
import Testing

@testable import AuthService

/// Anonymous accounts: made without signing up, limited, refused what needs a permanent
/// account, and kept in place by an address and password (through the mailed link), an
/// identity or a passkey, in the orders an attacker would choose. Each test on a fresh database.
@Suite(.serialized) struct AnonymousAccountTests {
    static let password = "a long enough passphrase"

    func withService(_ settings: [String: String] = [:], _ body: (AuthHarness) async throws -> Void) async throws {
        try await AuthHarness.with(database: "pier_test_auth_anonymous", settings: settings, body)
    }

    static func email(_ who: String = "kept") -> String { "\(who)-\(UUID().uuidString.prefix(8).lowercased())@example.com" }

    /// An anonymous account's session, for a fresh installation unless one is given.
    static func anonymous(_ auth: AuthHarness, installation: String = UUID().uuidString) async throws -> AuthSession {
        let reply = try await auth.send("POST", "/auth/anonymous", json: #"{"installationId":"\#(installation)"}"#)
        guard reply.status == 201 else { throw TestFailure("anonymous sign-in answered \(reply.status): \(reply.text)") }
        return try reply.decode(AuthSession.self)
    }

    static func keep(_ auth: AuthHarness, _ session: AuthSession, _ email: String, password: String = Self.password)
        async throws -> Reply
    {
        try await auth.send(
            "POST", "/auth/anonymous/upgrade", json: #"{"email":"\#(email)","password":"\#(password)"}"#,
            token: session.accessToken)
    }

    static func confirm(_ auth: AuthHarness, _ token: String) async throws -> Reply {
        try await auth.send("POST", "/auth/email/change/confirm", json: #"{"token":"\#(token)"}"#)
    }

    static func login(_ auth: AuthHarness, _ email: String, _ password: String = Self.password) async throws -> Reply {
        try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"\#(password)"}"#)
    }

    static func me(_ auth: AuthHarness, _ session: AuthSession) async throws -> Reply {
        try await auth.send("GET", "/auth/me", token: session.accessToken)
    }

    static let link = "/auth/email/change/confirm?token="

    /// Registers a new passkey with `session`: the authenticator and the answer.
    static func registerPasskey(_ auth: AuthHarness, _ session: AuthSession) async throws -> (SoftwareAuthenticator, Reply) {
        let key = try SoftwareAuthenticator.es256(rpID: "127.0.0.1", origin: "http://127.0.0.1:8080")
        let options = try await auth.send("POST", "/auth/passkeys/register/options", token: session.accessToken)
        let credential = try key.register(options.decode(PasskeyCreationOptions.self))
        let added = try await auth.send(
            "POST", "/auth/passkeys/register", json: String(decoding: try JSONEncoder().encode(credential), as: UTF8.self),
            token: session.accessToken)
        return (key, added)
    }

    /// The service's account use cases, on its database.
    static func accounts(_ auth: AuthHarness) -> Accounts {
        Accounts(
            database: auth.pool, lifetimes: .init(refreshDays: 30, accessTTL: 900),
            mails: Mails(appName: "Pier", publicURL: "http://127.0.0.1:8080", from: "Pier <no-reply@localhost>"))
    }

    /// Opens another session of `user` (as if another device held the account): its refresh token.
    static func anotherSession(_ auth: AuthHarness, of user: UUID) async throws -> String {
        let accounts = Self.accounts(auth)
        let refreshToken = "copied-" + UUID().uuidString
        _ = try await accounts.database.withTransaction { connection in
            try await Sessions(connection, accounts.lifetimes).open(
                for: user, refreshToken: refreshToken, device: Sessions.Device(name: "another", address: "127.0.0.1"))
        }
        return refreshToken
    }

    // MARK: - Starting without signing up

    @Test func anAnonymousAccountIsASignedInUserWithoutAnAddress() async throws {
        try await withService { auth in
            let reply = try await auth.send(
                "POST", "/auth/anonymous", json: #"{"installationId":"inst-1","deviceName":"Ada's iPhone"}"#)
            #expect(reply.status == 201, "\(reply.text)")
            let session = try reply.decode(AuthSession.self)
            #expect(session.user.isAnonymous && session.user.email == nil && !session.user.emailVerified)
            #expect(session.user.anonymousAt != nil && session.user.permanentAt == nil && session.user.role == .user)
            #expect(!reply.text.contains("\"email\""))
            let claims = try SecondFactorTests.claims(session.accessToken)
            #expect(claims["amr"] as? [String] == ["anon"])
            #expect(try await Self.me(auth, session).decode(User.self) == session.user)
            let refreshed = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#)
            #expect(refreshed.status == 200)
            let sessions = try await auth.send(
                "GET", "/auth/sessions", token: try refreshed.decode(AuthSession.self).accessToken)
            #expect(try sessions.decode(ItemList<SessionInfo>.self).items.map(\.deviceName) == ["Ada's iPhone"])

            // What is not an installation id is named.
            for (body, field) in [
                (#"{}"#, "installationId"), (#"{"installationId":""}"#, "installationId"),
                (#"{"installationId":"has spaces in it"}"#, "installationId"),
                (#"{"installationId":"\#(String(repeating: "x", count: 129))"}"#, "installationId"),
                (#"{"installationId":"ok","deviceName":7}"#, "deviceName"),
            ] {
                let refused = try await auth.send("POST", "/auth/anonymous", json: body)
                #expect(refused.status == 422, "\(body): \(refused.text)")
                #expect(refused.problem?.errors?.map(\.field) == [field], "\(body): \(refused.text)")
            }
            let users = try await auth.pool.query("SELECT count(*)::int AS n FROM auth.users")
            #expect(try users[0].decode("n", as: Int.self) == 1)
        }
    }

    /// Past the installation's daily limit or the network's hourly one: 429 with Retry-After,
    /// counted under a lock (a burst from one installation makes no more than its limit).
    /// (The burst's six transactions wait in line for the installation's lock, each holding a
    /// connection, and those without one wait for the pool: on a machine busy with every other
    /// suite, two of them once waited past the default 5 s and were 503, busy. The limit is what
    /// is tested here, so the pool's wait is long.)
    @Test func signUpsAreLimitedPerInstallationAndPerNetwork() async throws {
        let settings = [
            "PIER_AUTH_ANONYMOUS_PER_INSTALLATION_PER_DAY": "2", "PIER_AUTH_ANONYMOUS_PER_ADDRESS_PER_HOUR": "5",
            "PIER_DB_ACQUIRE_TIMEOUT_MS": "60000",
        ]
        try await withService(settings) { auth in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        try await auth.send("POST", "/auth/anonymous", json: #"{"installationId":"burst"}"#).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.sorted() == [201, 201, 429, 429, 429, 429])
            let limited = try await auth.send("POST", "/auth/anonymous", json: #"{"installationId":"burst"}"#)
            #expect(limited.status == 429 && limited.problem?.code == .rateLimited)
            #expect(Int(limited.headers["Retry-After"] ?? "") ?? 0 > 0)
            // Other installations from the same network, up to its limit.
            _ = try await Self.anonymous(auth, installation: "second")
            _ = try await Self.anonymous(auth, installation: "second")
            _ = try await Self.anonymous(auth, installation: "third")
            let network = try await auth.send("POST", "/auth/anonymous", json: #"{"installationId":"fourth"}"#)
            #expect(network.status == 429, "\(network.text)")
            let users = try await auth.pool.query("SELECT count(*)::int AS n FROM auth.users WHERE anonymous_at IS NOT NULL")
            #expect(try users[0].decode("n", as: Int.self) == 5)
        }
    }

    /// What needs a permanent account is refused with `anonymous_account`, changing nothing.
    @Test func whatNeedsAPermanentAccountIsRefused() async throws {
        try await withService { auth in
            let session = try await Self.anonymous(auth)
            let token = session.accessToken
            for (method, path, body) in [
                ("POST", "/auth/mfa/totp", nil),
                ("POST", "/auth/password", #"{"currentPassword":"anything","newPassword":"a new passphrase here"}"#),
                ("POST", "/auth/email/change", #"{"newEmail":"\#(Self.email())"}"#),
            ] {
                let refused = try await auth.send(method, path, json: body, token: token)
                #expect(refused.status == 409 && refused.problem?.code == .anonymousAccount, "\(path): \(refused.text)")
            }
            // A team role, even from an admin.
            let (admin, adminEmail) = try await auth.register()
            try await auth.pool.execute(
                "UPDATE auth.users SET role = 'admin', email_verified_at = now() WHERE email = \(adminEmail)")
            let signedIn = try await Self.login(auth, adminEmail).decode(AuthSession.self)
            let role = try await auth.send(
                "PUT", "/auth/users/\(session.user.id)/role", json: #"{"role":"support","password":"\#(Self.password)"}"#,
                token: signedIn.accessToken)
            #expect(role.status == 409 && role.problem?.code == .anonymousAccount, "\(role.text)")
            _ = admin
            #expect(try await Self.me(auth, session).decode(User.self) == session.user)
            // Deleting itself needs no password it never had.
            #expect(try await auth.send("DELETE", "/auth/me", token: token).status == 204)
            let left = try await auth.pool.query("SELECT count(*)::int AS n FROM auth.users WHERE id = \(session.user.id)")
            #expect(try left[0].decode("n", as: Int.self) == 0)
        }
    }

    // MARK: - Kept with an address and a password

    /// Nothing counts before the mailed link is opened; then the same account has the address
    /// (proven) and the password, every other session ends, the asking one goes on, and a
    /// second request voided the first.
    @Test func anAddressAndPasswordCountOnlyThroughTheMailedLink() async throws {
        try await withService { auth in
            let session = try await Self.anonymous(auth)
            let other = try await Self.anonymous(auth)
            // A second session of the account (another device holding it).
            let copy = try await Self.anotherSession(auth, of: session.user.id)
            let first = Self.email()
            let asked = try await Self.keep(auth, session, first)
            #expect(asked.status == 202 && asked.text.contains(first), "\(asked.text)")
            let firstToken = try await auth.mailedToken(to: first, containing: Self.link)
            #expect(try await Self.me(auth, session).decode(User.self).isAnonymous)
            #expect(try await Self.login(auth, first).status == 401)

            let second = Self.email()
            #expect(try await Self.keep(auth, session, second).status == 202)
            let secondToken = try await auth.mailedToken(to: second, containing: Self.link)
            let voided = try await Self.confirm(auth, firstToken)
            #expect(voided.status == 422 && voided.problem?.code == .invalidEmailToken, "\(voided.text)")
            // Someone else's anonymous session cannot spend another account's link into itself.
            let confirmed = try await auth.send(
                "POST", "/auth/email/change/confirm", json: #"{"token":"\#(secondToken)"}"#, token: other.accessToken)
            #expect(confirmed.status == 200, "\(confirmed.text)")
            let kept = try confirmed.decode(User.self)
            #expect(kept.id == session.user.id && kept.email == second && kept.emailVerified && !kept.isAnonymous)
            #expect(kept.anonymousAt == session.user.anonymousAt && kept.permanentAt != nil)
            #expect(try await Self.me(auth, other).decode(User.self).isAnonymous)
            #expect(try await Self.confirm(auth, secondToken).status == 422)

            // The asking session goes on; the other one of the account ended.
            #expect(try await Self.me(auth, session).decode(User.self) == kept)
            let ended = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(copy)"}"#)
            #expect(ended.status == 401, "\(ended.text)")
            // Its next token no longer says anonymous: feedback and the rest stop treating it so.
            let refreshed = try await auth.send(
                "POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#)
            let claims = try SecondFactorTests.claims(try refreshed.decode(AuthSession.self).accessToken)
            #expect(!((claims["amr"] as? [String]) ?? []).contains("anon"), "\(claims)")
            let signedIn = try await Self.login(auth, second)
            #expect(signedIn.status == 200)
            #expect(try signedIn.decode(AuthSession.self).user.id == session.user.id)
            #expect(try await Self.login(auth, first).status == 401)
            let again = try await Self.keep(auth, session, Self.email())
            #expect(again.status == 409 && again.problem?.code == .notAnonymous, "\(again.text)")
        }
    }

    /// Attacker's orders: the link outlives neither the session that asked for it nor the
    /// address staying free; an address with an account is `identity_taken` at once.
    @Test func theLinkDiesWithItsSessionAndAnAddressTakenMeanwhile() async throws {
        try await withService { auth in
            // Asked, then the asking session signed out: the link is dead.
            let session = try await Self.anonymous(auth)
            let email = Self.email()
            #expect(try await Self.keep(auth, session, email).status == 202)
            let token = try await auth.mailedToken(to: email, containing: Self.link)
            let body = #"{"refreshToken":"\#(session.refreshToken)"}"#
            #expect(try await auth.send("POST", "/auth/logout", json: body, token: session.accessToken).status == 204)
            #expect(try await Self.confirm(auth, token).status == 422)
            let still = try await auth.pool.query(
                "SELECT email IS NULL AND permanent_at IS NULL AS anonymous FROM auth.users WHERE id = \(session.user.id)")
            #expect(try still[0].decode("anonymous", as: Bool.self))

            // Asked, then someone else registers the address first: it stays theirs.
            let late = try await Self.anonymous(auth)
            let contested = Self.email()
            #expect(try await Self.keep(auth, late, contested).status == 202)
            let lateToken = try await auth.mailedToken(to: contested, containing: Self.link)
            let (owner, _) = try await auth.register(contested, password: "the owner's passphrase")
            let taken = try await Self.confirm(auth, lateToken)
            #expect(taken.status == 409 || taken.status == 422, "\(taken.text)")
            #expect(try await Self.me(auth, late).decode(User.self).isAnonymous)
            #expect(try await Self.me(auth, owner).decode(User.self).id == owner.user.id)
            #expect(try await Self.login(auth, contested, "the owner's passphrase").status == 200)
            #expect(try await Self.login(auth, contested).status == 401)

            // Asked for an address that has an account: 409 identity_taken, offering to sign in.
            let refused = try await Self.keep(auth, late, contested.uppercased())
            #expect(refused.status == 409 && refused.problem?.code == .identityTaken, "\(refused.text)")
            #expect(refused.problem?.offer == ["sign_in", "merge"])
            #expect(auth.mails(to: contested).count == 2)  // the owner's verification and the dead link, nothing more

            // Bad input is named.
            let bad = try await Self.keep(auth, late, "not an address", password: "short")
            #expect(bad.status == 422 && Set(bad.problem?.errors?.map(\.field) ?? []) == ["email", "password"], "\(bad.text)")
            let signedOut = try await auth.send(
                "POST", "/auth/anonymous/upgrade", json: #"{"email":"\#(Self.email())","password":"\#(Self.password)"}"#)
            #expect(signedOut.status == 401)
        }
    }

    // MARK: - Kept with an identity or a passkey

    @Test func signInWithAppleKeepsTheAccountOrSaysItIsTaken() async throws {
        let idp = try TestIdentityProvider()
        try await withService(["PIER_AUTH_APPLE_AUDIENCES": "dev.pier.seeds", "PIER_AUTH_APPLE_JWKS_URL": idp.jwksURL]) {
            auth in
            let session = try await Self.anonymous(auth)
            let body = IdentitySignInTests.body(try idp.token())
            let linked = try await auth.send("POST", "/auth/apple", json: body, token: session.accessToken)
            #expect(
                linked.status == 200 || linked.status == 201, "\(linked.text) \(auth.logs.all.filter { $0.contains("rror") })")
            let kept = try linked.decode(AuthSession.self)
            #expect(kept.user.id == session.user.id && !kept.user.isAnonymous && kept.user.permanentAt != nil)
            #expect(kept.user.email == "anna@privaterelay.appleid.com" && kept.user.emailVerified)
            // The anonymous session ended with the account's anonymity; the new one works.
            #expect(try await eventually { try await Self.me(auth, session).status == 401 })
            #expect(try await Self.me(auth, kept).status == 200)
            // Signing in with Apple later finds the same account.
            let later = try await auth.send("POST", "/auth/apple", json: IdentitySignInTests.body(try idp.token()))
            #expect(try later.decode(AuthSession.self).user.id == session.user.id)

            // Another anonymous account with the same Apple ID: taken, nothing changed.
            let other = try await Self.anonymous(auth)
            let taken = try await auth.send(
                "POST", "/auth/apple", json: IdentitySignInTests.body(try idp.token()), token: other.accessToken)
            #expect(taken.status == 409 && taken.problem?.code == .identityTaken, "\(taken.text)")
            #expect(taken.problem?.offer == ["sign_in", "merge"] && !taken.text.contains("accessToken"))
            #expect(try await Self.me(auth, other).decode(User.self) == other.user)
            // A forged token with an anonymous bearer is refused like any.
            let forged = try await auth.send(
                "POST", "/auth/apple", json: IdentitySignInTests.body(try idp.token() + "x"), token: other.accessToken)
            #expect(forged.status == 401 && forged.problem?.code == .invalidIdentityToken)
            #expect(try await Self.me(auth, other).decode(User.self).isAnonymous)
        }
        await idp.server.shutdown()
    }

    @Test func aPasskeyKeepsTheAccount() async throws {
        try await withService { auth in
            let session = try await Self.anonymous(auth)
            let (key, added) = try await Self.registerPasskey(auth, session)
            #expect(added.status == 201, "\(added.text) \(auth.logs.all.filter { $0.contains("rror") })")
            let kept = try await Self.me(auth, session).decode(User.self)
            #expect(kept.id == session.user.id && !kept.isAnonymous && kept.email == nil && kept.permanentAt != nil)
            // The passkey signs in to it from another device.
            let loginOptions = try await auth.send("POST", "/auth/passkeys/login/options", json: "{}").decode(
                PasskeyRequestOptions.self)
            let signedIn = try await auth.send(
                "POST", "/auth/passkeys/login",
                json: String(decoding: try JSONEncoder().encode(try key.assert(loginOptions, userHandle: nil)), as: UTF8.self))
            #expect(signedIn.status == 200, "\(signedIn.text)")
            #expect(try signedIn.decode(AuthSession.self).user.id == session.user.id)
            // Kept by a passkey alone, it still has no password to change.
            let password = try await auth.send(
                "POST", "/auth/password", json: #"{"currentPassword":"x","newPassword":"a new passphrase here"}"#,
                token: session.accessToken)
            #expect(password.status == 409, "\(password.text)")
        }
    }

    // MARK: - Housekeeping

    /// Anonymous accounts no session used for the configured days go, each with its
    /// `account.deleted`; recent, used or kept ones stay.
    @Test func unusedAnonymousAccountsAreDeletedAfterTheirDays() async throws {
        try await withService { auth in
            let old = try await Self.anonymous(auth)
            let used = try await Self.anonymous(auth)
            let recent = try await Self.anonymous(auth)
            let keptOld = try await Self.anonymous(auth)
            #expect(try await Self.registerPasskey(auth, keptOld).1.status == 201)
            for id in [old.user.id, used.user.id, keptOld.user.id] {
                try await auth.pool.execute(
                    "UPDATE auth.users SET anonymous_at = now() - interval '100 days' WHERE id = \(id)")
                try await auth.pool.execute(
                    """
                    UPDATE auth.sessions SET created_at = now() - interval '100 days', last_used_at = now() - interval '95 days'
                    WHERE user_id = \(id)
                    """)
            }
            try await auth.pool.execute(
                "UPDATE auth.sessions SET last_used_at = now() - interval '3 days' WHERE user_id = \(used.user.id)")

            let deleted = try await Self.accounts(auth).deleteUnusedAnonymous(olderThan: 90, batch: 1)
            #expect(deleted == 1)
            let left: [UUID] = try await auth.pool.query("SELECT id FROM auth.users ORDER BY created_at").map {
                try $0.decode("id")
            }
            #expect(Set(left) == [used.user.id, recent.user.id, keptOld.user.id])
            let events = try await auth.pool.query(
                "SELECT payload->>'userId' AS id FROM events.events WHERE type = 'account.deleted'")
            #expect(try events.map { try $0.decode("id", as: String.self) } == [old.user.id.uuidString.lowercased()])
            #expect(try await eventually { try await Self.me(auth, old).status == 401 })
            #expect(try await Self.accounts(auth).deleteUnusedAnonymous(olderThan: 90) == 0)
        }
    }
}
