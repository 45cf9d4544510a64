import Foundation
import PierCrypto
import PierHTTP
import PierIdentity
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierTestSupport
import Testing

@testable import AuthService

/// The team's roles and what they do to accounts: each test on a fresh database (the last
/// admin is counted), in the orders an attacker chooses, with the audit log checked.
@Suite(.serialized) struct StaffTests {
    let takeover = TakeoverTests()
    static let password = TakeoverTests.password

    func withService(settings: [String: String] = [:], _ body: (AuthHarness) async throws -> Void) async throws {
        try await AuthHarness.with(database: "pier_test_auth_staff", settings: settings, body)
    }

    /// A signed-in account of `role`, its address verified.
    func member(_ auth: AuthHarness, _ role: AccountRole, _ who: String = "staff") async throws -> (AuthSession, String) {
        let (_, email) = try await auth.register(TakeoverTests.email(who))
        try await auth.pool.execute(
            "UPDATE auth.users SET role = \(role.rawValue), email_verified_at = now() WHERE email = \(email)")
        return (try await takeover.login(auth, email).decode(AuthSession.self), email)
    }

    func setRole(_ auth: AuthHarness, _ user: UUID, _ role: String, by admin: AuthSession, password: String? = nil)
        async throws -> Reply
    {
        let confirmation = password.map { #","password":"\#($0)""# } ?? ""
        return try await auth.send(
            "PUT", "/auth/users/\(user)/role", json: #"{"role":"\#(role)"\#(confirmation)}"#, token: admin.accessToken)
    }

    func audit(_ auth: AuthHarness, _ query: String, as staff: AuthSession) async throws -> [AuditEntry] {
        let reply = try await auth.send("GET", "/auth/audit?\(query)", token: staff.accessToken)
        #expect(reply.status == 200, "\(reply.text)")
        return try reply.decode(AuditList.self).items
    }

    /// A team role granted to an account someone else holds a session of: that session, its
    /// pending change of address and the identity linked while the address was unproven all
    /// end; only a fresh sign-in carries the role. Taking the role away ends the team's tokens.
    @Test func aRoleGrantedEndsWhatSomeoneElseHeldOfTheAccount() async throws {
        try await withService { auth in
            let (admin, _) = try await member(auth, .admin, "admin")
            let email = TakeoverTests.email("support")
            let (owner, _) = try await auth.register(email)
            // Someone else's session of it, asking to move the account to their mailbox, and an
            // identity of theirs linked before the address was proven.
            let thief = try await takeover.login(auth, email).decode(AuthSession.self)
            let theirs = TakeoverTests.email("attacker")
            #expect(try await takeover.askChange(auth, thief, to: theirs).status == 202)
            let change = try await auth.mailedToken(to: theirs, containing: "/auth/email/change/confirm?token=")
            try await auth.pool.execute(
                """
                INSERT INTO auth.identities (provider, subject, user_id, email, unverified_link)
                VALUES ('apple', 'thief.1', \(owner.user.id), \(email), true)
                """)

            // A team role needs a proven address; the grant does not happen, nothing ends.
            let unproven = try await setRole(auth, owner.user.id, "support", by: admin)
            #expect(unproven.status == 409 && unproven.problem?.code == .addressUnverified, "\(unproven.text)")
            #expect(try await takeover.refresh(auth, thief) == 200)
            let current = try await takeover.login(auth, email).decode(AuthSession.self)
            try await auth.pool.execute("UPDATE auth.users SET email_verified_at = now() WHERE id = \(owner.user.id)")

            let granted = try await setRole(auth, owner.user.id, "support", by: admin)
            #expect(granted.status == 200, "\(granted.text)")
            #expect(try granted.decode(User.self).role == "support")
            #expect(try await takeover.refresh(auth, current) == 401)
            #expect(try await eventually { try await auth.send("GET", "/auth/me", token: current.accessToken).status == 401 })
            #expect(try await takeover.confirm(auth, change).status == 422)
            let identities = try await auth.pool.query(
                "SELECT count(*)::int AS n FROM auth.identities WHERE user_id = \(owner.user.id)")
            #expect(try identities[0].decode("n", as: Int.self) == 0)
            let support = try await takeover.login(auth, email).decode(AuthSession.self)
            #expect(support.user.role == "support")
            #expect(try await auth.send("GET", "/auth/users?q=\(email)", token: support.accessToken).status == 200)

            // Taken away: the team token is refused, and the next one is a user's.
            #expect(try await setRole(auth, owner.user.id, "user", by: admin).status == 200)
            #expect(try await takeover.refresh(auth, support) == 401)
            #expect(
                try await eventually { try await auth.send("GET", "/auth/users?q=x", token: support.accessToken).status == 401 })
            let again = try await takeover.login(auth, email).decode(AuthSession.self)
            #expect(try await auth.send("GET", "/auth/users?q=x", token: again.accessToken).status == 403)

            // Who did what to whom, before and after.
            let entries = try await audit(auth, "subject=\(owner.user.id)", as: admin)
            #expect(entries.map(\.action) == ["user.role_changed", "user.role_changed"])
            #expect(entries.allSatisfy { $0.actorId == admin.user.id && $0.actorRole == "admin" && $0.service == "auth" })
            #expect(entries.last?.before == .object(["role": .string("user")]))
            #expect(entries.last?.after == .object(["role": .string("support")]))
            #expect(entries.last?.requestId?.isEmpty == false)
        }
    }

    /// Role changes are the admins', confirmed by the password (or a recent sign-in); support is
    /// refused them and deletion; the last admin stays one; bad input names its field.
    @Test func onlyAdminsChangeRolesAndTheLastAdminStays() async throws {
        try await withService { auth in
            let (admin, _) = try await member(auth, .admin, "admin")
            let (support, _) = try await member(auth, .support)
            let (user, _) = try await auth.register()
            try await auth.pool.execute("UPDATE auth.users SET email_verified_at = now() WHERE id = \(user.user.id)")

            let bySupport = try await setRole(auth, user.user.id, "admin", by: support)
            #expect(bySupport.status == 403, "\(bySupport.text)")
            #expect(try await auth.send("DELETE", "/auth/users/\(user.user.id)", token: support.accessToken).status == 403)
            #expect(try await setRole(auth, user.user.id, "admin", by: user).status == 403)
            let wrongPassword = try await setRole(auth, user.user.id, "support", by: admin, password: "not the password")
            #expect(wrongPassword.status == 401 && wrongPassword.problem?.code == .reauthenticationRequired)
            let unknown = try await setRole(auth, user.user.id, "owner", by: admin)
            #expect(unknown.status == 422 && unknown.fields == ["role"], "\(unknown.text)")
            let missing = try await auth.send("PUT", "/auth/users/\(user.user.id)/role", json: "{}", token: admin.accessToken)
            #expect(missing.status == 422 && missing.fields == ["role"], "\(missing.text)")
            #expect(try await setRole(auth, UUID(), "support", by: admin).status == 404)

            // The one admin cannot stop being one, nor be deleted.
            let last = try await setRole(auth, admin.user.id, "support", by: admin, password: Self.password)
            #expect(last.status == 409 && last.problem?.code == .lastAdmin, "\(last.text)")
            let deleteLast = try await auth.send(
                "DELETE", "/auth/users/\(admin.user.id)", json: #"{"password":"\#(Self.password)"}"#, token: admin.accessToken)
            #expect(deleteLast.status == 409 && deleteLast.problem?.code == .lastAdmin)
            // With a second admin, the first may step down (its own sessions end with it).
            #expect(try await setRole(auth, user.user.id, "admin", by: admin).status == 200)
            #expect(try await setRole(auth, admin.user.id, "support", by: admin).status == 200)
            #expect(try await takeover.refresh(auth, admin) == 401)

            // Nothing here changed an audit entry, and nothing can.
            for statement in ["UPDATE auth.audit SET actor_role = 'x'", "DELETE FROM auth.audit", "TRUNCATE auth.audit"] {
                await #expect(throws: PostgresError.self) { try await auth.pool.execute(PostgresQuery(unsafeSQL: statement)) }
            }
            let count = try await auth.pool.query("SELECT count(*)::int AS n FROM auth.audit WHERE action = 'user.role_changed'")
            #expect(try count[0].decode("n", as: Int.self) == 2)
        }
    }

    /// Disabled: its sessions end, its tokens are refused within the revocation bound, and it
    /// cannot sign in (a wrong password is still just wrong) until it is enabled again.
    @Test func aDisabledAccountCannotSignInOrRefresh() async throws {
        try await withService { auth in
            let (support, supportEmail) = try await member(auth, .support)
            let (phone, email) = try await auth.register()
            let laptop = try await takeover.login(auth, email).decode(AuthSession.self)

            let disabled = try await auth.send("POST", "/auth/users/\(phone.user.id)/disable", token: support.accessToken)
            #expect(disabled.status == 200, "\(disabled.text)")
            #expect(try disabled.decode(User.self).disabledAt != nil)
            #expect(try await takeover.refresh(auth, phone) == 401)
            #expect(try await takeover.refresh(auth, laptop) == 401)
            #expect(try await eventually { try await auth.send("GET", "/auth/me", token: laptop.accessToken).status == 401 })
            let refused = try await takeover.login(auth, email)
            #expect(refused.status == 403 && refused.problem?.code == .accountDisabled, "\(refused.text)")
            let wrong = try await takeover.login(auth, email, "not the password at all")
            #expect(wrong.status == 401 && wrong.problem?.code == .invalidCredentials)
            // Twice is once; one's own account and unknown ones are refused.
            #expect(try await auth.send("POST", "/auth/users/\(phone.user.id)/disable", token: support.accessToken).status == 200)
            let own = try await auth.send("POST", "/auth/users/\(support.user.id)/disable", token: support.accessToken)
            #expect(own.status == 409, "\(own.text)")
            #expect(try await auth.send("POST", "/auth/users/\(UUID())/disable", token: support.accessToken).status == 404)
            #expect(try await auth.send("POST", "/auth/users/\(support.user.id)/disable", token: phone.accessToken).status == 401)

            let enabled = try await auth.send("POST", "/auth/users/\(phone.user.id)/enable", token: support.accessToken)
            #expect(try enabled.decode(User.self).disabledAt == nil)
            #expect(try await takeover.login(auth, email).status == 200)
            let entries = try await audit(auth, "actor=\(support.user.id)", as: support)
            #expect(entries.map(\.action) == ["user.enabled", "user.disabled"])
            #expect(entries.allSatisfy { $0.subjectId == phone.user.id && $0.targetId == phone.user.id.text() })
            _ = supportEmail
        }
    }

    /// In the attacker's order: someone holding a session of the account asks to move it to
    /// their mailbox and a reset link is out; the team disables the account; neither link works,
    /// not even once the account is enabled again. A login waiting on the row while the disable
    /// commits is refused, never let in with a session the disable did not see.
    @Test func aDisableEndsTheLinksAndTheLoginsInFlight() async throws {
        try await withService { auth in
            let (support, _) = try await member(auth, .support)
            let email = TakeoverTests.email()
            let (owner, _) = try await auth.register(email)
            let thief = try await takeover.login(auth, email).decode(AuthSession.self)
            let theirs = TakeoverTests.email("attacker")
            #expect(try await takeover.askChange(auth, thief, to: theirs).status == 202)
            let change = try await auth.mailedToken(to: theirs, containing: "/auth/email/change/confirm?token=")
            #expect(try await auth.send("POST", "/auth/password/forgot", json: #"{"email":"\#(email)"}"#).status == 202)
            let reset = try await auth.mailedToken(to: email, containing: "/auth/password/reset?token=")

            let disabled = try await auth.send("POST", "/auth/users/\(owner.user.id)/disable", token: support.accessToken)
            #expect(disabled.status == 200, "\(disabled.text)")
            #expect(try await takeover.confirm(auth, change).status == 422)
            #expect(try await auth.send("POST", "/auth/users/\(owner.user.id)/enable", token: support.accessToken).status == 200)
            #expect(try await takeover.confirm(auth, change).status == 422)
            let stale = try await auth.send(
                "POST", "/auth/password/reset", json: #"{"token":"\#(reset)","newPassword":"the thief's passphrase"}"#)
            #expect(stale.status == 422, "\(stale.text)")
            #expect(try await takeover.refresh(auth, thief) == 401)
            #expect(
                try await auth.pool.query("SELECT email FROM auth.users WHERE id = \(owner.user.id)")[0].decode(
                    "email", as: String.self) == email)

            // A disable holding the row (as its transaction does) while a login comes in: the
            // login waits for it, then is refused, and opens no session.
            let holder = auth.pool
            let sessionsBefore = try await auth.pool.query(
                "SELECT count(*)::int AS n FROM auth.sessions WHERE user_id = \(owner.user.id)")[0].decode("n", as: Int.self)
            let (locked, release) = AsyncStream.makeStream(of: Void.self)
            let (go, proceed) = AsyncStream.makeStream(of: Void.self)
            let disabling = Task {
                try await holder.withTransaction { connection in
                    _ = try await connection.query("SELECT id FROM auth.users WHERE id = \(owner.user.id) FOR UPDATE")
                    release.yield()
                    for await _ in go { break }
                    try await connection.execute("UPDATE auth.users SET disabled_at = now() WHERE id = \(owner.user.id)")
                }
            }
            for await _ in locked { break }
            let login = Task { try await takeover.login(auth, email) }
            // The login is waiting on the row: its backend shows a lock wait.
            #expect(
                try await eventually {
                    try await auth.pool.query(
                        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
                    )[0].decode("n", as: Int.self) >= 1
                })
            proceed.yield()
            try await disabling.value
            let refused = try await login.value
            #expect(refused.status == 403 && refused.problem?.code == .accountDisabled, "\(refused.text)")
            let sessionsAfter = try await auth.pool.query(
                "SELECT count(*)::int AS n FROM auth.sessions WHERE user_id = \(owner.user.id)")[0].decode("n", as: Int.self)
            #expect(sessionsAfter == sessionsBefore)
        }
    }

    /// Support helps without the password: lists and ends sessions (one or all), sends the reset
    /// and verification mails, exports the account's data; each step is in the log, and the log
    /// pages and filters.
    @Test func supportHelpsAnAccountAndTheLogSaysHow() async throws {
        try await withService { auth in
            let (support, _) = try await member(auth, .support)
            let (phone, email) = try await auth.register()
            let laptop = try await takeover.login(auth, email).decode(AuthSession.self)

            let listed = try await auth.send("GET", "/auth/users/\(phone.user.id)/sessions", token: support.accessToken)
            let sessions = try listed.decode(ItemList<SessionInfo>.self).items
            #expect(sessions.count == 2 && sessions.allSatisfy { !$0.current })
            // The most recently used first: the laptop's.
            let laptopSession = sessions[0]
            let one = try await auth.send(
                "DELETE", "/auth/users/\(phone.user.id)/sessions/\(laptopSession.id)", token: support.accessToken)
            #expect(try one.decode(SessionsEnded.self).ended == 1)
            #expect(try await takeover.refresh(auth, laptop) == 401)
            #expect(
                try await auth.send(
                    "DELETE", "/auth/users/\(phone.user.id)/sessions/\(laptopSession.id)", token: support.accessToken
                )
                .status == 404)
            let all = try await auth.send("DELETE", "/auth/users/\(phone.user.id)/sessions", token: support.accessToken)
            #expect(try all.decode(SessionsEnded.self).ended == 1)
            #expect(try await takeover.refresh(auth, phone) == 401)
            let identities = try await auth.send("GET", "/auth/users/\(phone.user.id)/identities", token: support.accessToken)
            #expect(try identities.decode(ItemList<LinkedIdentity>.self).items.isEmpty)

            func mail(_ kind: String) async throws -> Reply {
                try await auth.send(
                    "POST", "/auth/users/\(phone.user.id)/mail", json: #"{"mail":"\#(kind)"}"#, token: support.accessToken)
            }
            let seen = auth.mailedTokens(to: email, containing: "/auth/email/verify?token=")
            #expect(try await mail("verification").status == 202)
            let verify = try await auth.mailedToken(to: email, containing: "/auth/email/verify?token=", seen: seen)
            #expect(try await auth.send("POST", "/auth/email/verify", json: #"{"token":"\#(verify)"}"#).status == 200)
            #expect(try await mail("verification").status == 409)
            #expect(try await mail("password-reset").status == 202)
            let reset = try await auth.mailedToken(to: email, containing: "/auth/password/reset?token=")
            #expect(
                try await auth.send(
                    "POST", "/auth/password/reset", json: #"{"token":"\#(reset)","newPassword":"a new passphrase here"}"#
                )
                .status == 204)
            let bad = try await mail("welcome")
            #expect(bad.status == 422 && bad.fields == ["mail"])
            // Two sent; three more, concurrently, and then the account's inbox is left alone.
            let more = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 { group.addTask { try await mail("password-reset").status } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(more.sorted() == [202, 202, 202, 429], "\(more)")
            let flood = try await mail("password-reset")
            #expect(flood.status == 429 && Int(flood.headers["Retry-After"] ?? "") ?? 0 > 3000, "\(flood.text)")

            let export = try await auth.send("GET", "/auth/users/\(phone.user.id)/export", token: support.accessToken)
            #expect(export.status == 200, "\(export.text)")
            let document = try export.decode(JSONValue.self).objectValue
            #expect(document?["userId"] == .string(phone.user.id.text()))
            let part = document?["services"]?.objectValue?["auth"]?.objectValue
            #expect(part?["user"]?.objectValue?["email"] == .string(email))
            guard case .array(let exported)? = part?["audit"] else {
                Issue.record("the export has no audit entries: \(export.text)")
                return
            }
            #expect(exported.count == 8)

            // Newest first, paged by `before`, filtered by target.
            let entries = try await audit(auth, "subject=\(phone.user.id)", as: support)
            #expect(
                entries.map(\.action) == [
                    "user.exported", "user.mail_sent", "user.mail_sent", "user.mail_sent", "user.mail_sent", "user.mail_sent",
                    "user.sessions_ended", "user.sessions_ended",
                ])
            let first = try await auth.send("GET", "/auth/audit?subject=\(phone.user.id)&limit=2", token: support.accessToken)
                .decode(AuditList.self)
            #expect(first.items.map(\.id) == entries.prefix(2).map(\.id))
            let next = try #require(first.next)
            let second = try await audit(auth, "subject=\(phone.user.id)&limit=10&before=\(next)", as: support)
            #expect(second.map(\.id) == entries.dropFirst(2).map(\.id))
            #expect(try await audit(auth, "target=\(phone.user.id.text())", as: support).count == 8)
            #expect(try await audit(auth, "target=nothing", as: support).isEmpty)
            // By action and by time.
            let mailed = try await audit(auth, "subject=\(phone.user.id)&action=user.mail_sent", as: support)
            #expect(mailed.count == 5 && mailed.allSatisfy { $0.action == .userMailSent })
            #expect(try await audit(auth, "subject=\(phone.user.id)&since=2000-01-01", as: support).count == 8)
            #expect(try await audit(auth, "subject=\(phone.user.id)&until=2000-01-01", as: support).isEmpty)
            let newest = try #require(entries.first?.at)
            let later = try await audit(
                auth, "subject=\(phone.user.id)&since=\(CivilDate.iso8601(secondsSince1970: newest.timeIntervalSince1970 + 1))",
                as: support)
            #expect(later.isEmpty)
            for (query, field) in [
                ("subject=nope", "subject"), ("actor=1", "actor"), ("limit=0", "limit"), ("limit=201", "limit"),
                ("before=0", "before"), ("before=x", "before"), ("target=", "target"), ("action=user.exploded", "action"),
                ("since=yesterday", "since"), ("until=2026-13-01", "until"),
            ] {
                let refused = try await auth.send("GET", "/auth/audit?\(query)", token: support.accessToken)
                #expect(refused.status == 422 && refused.fields == [field], "\(query): \(refused.text)")
            }
            #expect(try await auth.send("GET", "/auth/audit", token: phone.accessToken).status == 401)
            let user = try await takeover.login(auth, email, "a new passphrase here").decode(AuthSession.self)
            #expect(try await auth.send("GET", "/auth/audit", token: user.accessToken).status == 403)
            #expect(try await auth.send("GET", "/auth/users/\(phone.user.id)/export", token: user.accessToken).status == 403)
        }
    }

    /// An admin deletes an account as its owner would (the event published, the address free
    /// again), after confirming; the log keeps the entry about the account that is gone.
    @Test func anAdminDeletesAnAccount() async throws {
        try await withService { auth in
            let (admin, _) = try await member(auth, .admin, "admin")
            let (user, email) = try await auth.register()
            let wrong = try await auth.send(
                "DELETE", "/auth/users/\(user.user.id)", json: #"{"password":"not it at all"}"#, token: admin.accessToken)
            #expect(wrong.status == 401 && wrong.problem?.code == .reauthenticationRequired)
            #expect(try await auth.send("DELETE", "/auth/users/\(user.user.id)", token: admin.accessToken).status == 204)
            #expect(try await auth.send("DELETE", "/auth/users/\(user.user.id)", token: admin.accessToken).status == 404)
            #expect(try await takeover.refresh(auth, user) == 401)
            let events = try await auth.pool.query(
                "SELECT count(*)::int AS n FROM events.events WHERE type = 'account.deleted' AND payload->>'userId' = \(user.user.id.text())"
            )
            #expect(try events[0].decode("n", as: Int.self) == 1)
            #expect(try await auth.register(email).0.user.id != user.user.id)
            let entries = try await audit(auth, "subject=\(user.user.id)", as: admin)
            #expect(entries.map(\.action) == ["user.deleted"])
            #expect(entries.first?.before?.objectValue?["email"] == .string(email))
        }
    }

    /// The step-up: the password again gives a new access token of the same session whose
    /// `auth_time` is now; a wrong one is refused as any re-authentication is.
    @Test func reauthenticatingGivesAFreshSignInTime() async throws {
        try await withService { auth in
            let (session, _) = try await auth.register()
            let missing = try await auth.send("POST", "/auth/reauthenticate", json: "{}", token: session.accessToken)
            #expect(missing.status == 422 && missing.fields == ["password"])
            let wrong = try await auth.send(
                "POST", "/auth/reauthenticate", json: #"{"password":"not it at all"}"#, token: session.accessToken)
            #expect(wrong.status == 401 && wrong.problem?.code == .reauthenticationRequired)
            #expect(try await auth.send("POST", "/auth/reauthenticate", json: #"{"password":"x"}"#).status == 401)
            let reply = try await auth.send(
                "POST", "/auth/reauthenticate", json: #"{"password":"\#(Self.password)"}"#, token: session.accessToken)
            #expect(reply.status == 200 && reply.headers["Cache-Control"] == "no-store", "\(reply.text)")
            let token = try reply.decode(StepUpToken.self)
            let verifier = AccessTokenVerifier(
                keys: StaticKeyProvider(keys: auth.keys.verificationKeys), issuer: "pier", audience: "pier")
            let before = try await verifier.verify(session.accessToken)
            let after = try await verifier.verify(token.accessToken)
            #expect(after.sid == before.sid && after.sub == before.sub)
            #expect(abs((after.authTime ?? 0) - Int(Date().timeIntervalSince1970)) <= 2)
        }
    }

    /// `pier-auth set-role`: the operator's way, with the same rules, logged as the operator's.
    @Test func theSetRoleCommandFollowsTheSameRules() async throws {
        try await withService { auth in
            var configuration = auth.live.configuration
            configuration.environment = Environment(["PIER_AUTH_ARGON2_MEMORY_KIB": "1024", "PIER_AUTH_ARGON2_ITERATIONS": "1"])
            let context = ServiceContext(
                configuration: configuration, database: auth.pool,
                logger: Logger(service: "auth", level: .error, sink: { _ in }),
                authenticator: auth.live.running.authenticator, events: auth.live.running.events!, http: TestHTTP.client)
            func run(_ arguments: [String]) async throws -> String? {
                do {
                    try await AdminCommand.setRole.run(arguments, context)
                    return nil
                } catch let error as CommandError {
                    return error.description
                }
            }
            let (session, email) = try await auth.register()
            #expect(try await run(["--email", email, "--role", "support"])?.contains("never verified") == true)
            try await auth.pool.execute("UPDATE auth.users SET email_verified_at = now() WHERE id = \(session.user.id)")
            #expect(try await run(["--email", email, "--role", "boss"])?.contains("--role") == true)
            #expect(try await run(["--email", "nobody@example.com", "--role", "support"])?.contains("no account") == true)
            #expect(try await run(["--role", "support"])?.contains("--email") == true)
            #expect(try await run(["--email", email, "--role", "admin"]) == nil)
            #expect(try await takeover.refresh(auth, session) == 401)
            #expect(try await takeover.login(auth, email).decode(AuthSession.self).user.role == "admin")
            #expect(try await run(["--email", email, "--role", "user"])?.contains("last admin") == true)
            let entry = try await auth.pool.query(
                "SELECT actor_id, actor_role FROM auth.audit WHERE subject_id = \(session.user.id) AND action = 'user.role_changed'"
            )
            #expect(entry.count == 1)
            #expect(try entry[0].decode("actor_role", as: String.self) == "operator")
            #expect(try entry[0].decode("actor_id", as: UUID?.self) == nil)
        }
    }
}
