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

/// Two-step sign-in with an authenticator app (TOTP) and recovery codes, through HTTP: the codes
/// are computed here from the secret the service hands out, at the real clock, as an app would.
@Suite(.serialized) struct SecondFactorTests {
    let takeover = TakeoverTests()
    static let password = TakeoverTests.password

    func withService(settings: [String: String] = [:], _ body: (AuthHarness) async throws -> Void) async throws {
        try await AuthHarness.with(database: "pier_test_auth_mfa", settings: settings, body)
    }

    /// The code of `step` steps from now, as the app shows it.
    static func code(_ secret: [UInt8], step offset: Int = 0) -> String {
        TOTP(secret: secret).code(step: TOTP.step(at: Int(Date().timeIntervalSince1970)) + offset)
    }

    /// Turns two-step sign-in on for the account of `token` (a recent sign-in): the app's secret.
    @discardableResult
    static func turnOn(_ auth: AuthHarness, _ token: String) async throws -> [UInt8] {
        let setup = try await auth.send("POST", "/auth/mfa/totp", token: token).decode(TOTPEnrolment.self)
        let secret = try #require(Base32.decode(setup.secret))
        let on = try await auth.send("POST", "/auth/mfa/totp/confirm", json: #"{"code":"\#(code(secret))"}"#, token: token)
        #expect(on.status == 200, "\(on.text)")
        return secret
    }

    /// A team member's session asks to set up its first second factor (403
    /// `enrolment_approval_required`, a link mailed) and the link mailed to `email` approves it.
    static func approve(_ auth: AuthHarness, _ email: String, _ token: String) async throws {
        let seen = auth.mailedTokens(to: email, containing: "/auth/mfa/approve")
        let asked = try await auth.send("POST", "/auth/mfa/totp", token: token)
        #expect(asked.status == 403 && asked.problem?.code == .enrolmentApprovalRequired, "\(asked.text)")
        let link = try await auth.mailedToken(to: email, containing: "/auth/mfa/approve", seen: seen)
        let approved = try await auth.send("POST", "/auth/mfa/approve", json: #"{"token":"\#(link)"}"#)
        #expect(approved.status == 204, "\(approved.text)")
    }

    /// The session (`sid`) an access token was issued for.
    static func session(of token: String) throws -> UUID {
        let sid = try #require(try claims(token)["sid"] as? String)
        return try #require(UUID(uuidString: sid))
    }

    static func claims(_ token: String) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(try JWS(compact: token).payload)) as? [String: Any])
    }

    /// An account with a proven address, signed in, its app set up and its recovery codes; `used`:
    /// the step whose code confirmed it (spent).
    func account(_ auth: AuthHarness, role: AccountRole = .user) async throws
        -> (session: AuthSession, email: String, secret: [UInt8], recovery: [String], used: Int)
    {
        let (_, email) = try await auth.register(TakeoverTests.email("mfa"))
        try await auth.pool.execute("UPDATE auth.users SET email_verified_at = now() WHERE email = \(email)")
        let session = try await takeover.login(auth, email).decode(AuthSession.self)
        let offered = try await auth.send("POST", "/auth/mfa/totp", token: session.accessToken)
        #expect(offered.status == 201, "\(offered.text)")
        let enrolment = try offered.decode(TOTPEnrolment.self)
        let secret = try #require(Base32.decode(enrolment.secret))
        let used = TOTP.step(at: Int(Date().timeIntervalSince1970))
        let confirmed = try await auth.send(
            "POST", "/auth/mfa/totp/confirm", json: #"{"code":"\#(TOTP(secret: secret).code(step: used))"}"#,
            token: session.accessToken)
        #expect(confirmed.status == 200, "\(confirmed.text)")
        // The role once the factor is set (a team member's first needs approval: below).
        try await auth.pool.execute("UPDATE auth.users SET role = \(role.rawValue) WHERE email = \(email)")
        return (session, email, secret, try confirmed.decode(RecoveryCodes.self).codes, used)
    }

    /// Signs in with the password: the MFA token the answer asks a code for.
    func challenge(_ auth: AuthHarness, _ email: String) async throws -> String {
        let reply = try await takeover.login(auth, email)
        #expect(reply.status == 401 && reply.problem?.code == .mfaRequired, "\(reply.text)")
        #expect(reply.problem?.factors == ["totp", "recovery_code"])
        return try #require(reply.problem?.mfaToken)
    }

    func verify(_ auth: AuthHarness, _ token: String, _ code: String) async throws -> Reply {
        try await auth.send("POST", "/auth/mfa/verify", json: #"{"mfaToken":"\#(token)","code":"\#(code)"}"#)
    }

    @Test func enrolmentOffersASecretThatAConfirmingCodeTurnsOn() async throws {
        try await withService { auth in
            let (_, email) = try await auth.register(TakeoverTests.email("mfa"))
            try await auth.pool.execute("UPDATE auth.users SET email_verified_at = now() WHERE email = \(email)")
            let session = try await takeover.login(auth, email).decode(AuthSession.self)
            let other = try await takeover.login(auth, email).decode(AuthSession.self)
            let offered = try await auth.send("POST", "/auth/mfa/totp", token: session.accessToken)
            #expect(offered.status == 201 && offered.headers["Cache-Control"] == "no-store")
            let enrolment = try offered.decode(TOTPEnrolment.self)
            let secret = try #require(Base32.decode(enrolment.secret))
            #expect(secret.count == 20)
            #expect(enrolment.uri.hasPrefix("otpauth://totp/Pier:mfa-") && enrolment.uri.contains("secret=\(enrolment.secret)"))
            #expect(enrolment.qrCode.hasPrefix("<svg") && enrolment.qrCode.hasSuffix("</svg>"))
            // Offered, not confirmed: a sign-in asks nothing more.
            #expect(try await takeover.login(auth, email).status == 200)
            let wrong = try await auth.send(
                "POST", "/auth/mfa/totp/confirm", json: #"{"code":"\#(Self.code(secret, step: 5))"}"#, token: session.accessToken)
            #expect(wrong.status == 422 && wrong.problem?.code == .invalidCode && wrong.problem?.errors?.first?.field == "code")
            let confirmed = try await auth.send(
                "POST", "/auth/mfa/totp/confirm", json: #"{"code":"\#(Self.code(secret))"}"#, token: session.accessToken)
            #expect(confirmed.status == 200, "\(confirmed.text)")
            let codes = try confirmed.decode(RecoveryCodes.self).codes
            #expect(codes.count == 10 && Set(codes).count == 10)
            #expect(codes.allSatisfy { $0.count == 14 && $0.split(separator: "-").count == 3 })
            // Every other session ended; this one goes on, its refresh now carrying the code.
            #expect(try await takeover.refresh(auth, other) == 401)
            let refreshed = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#)
            #expect(refreshed.status == 200)
            let claims = try Self.claims(try refreshed.decode(AuthSession.self).accessToken)
            #expect(claims["acr"] as? String == "aal2")
            #expect(Set(claims["amr"] as? [String] ?? []) == ["pwd", "otp", "mfa"])
            let status = try await auth.send("GET", "/auth/mfa", token: session.accessToken).decode(MFAStatus.self)
            #expect(status.totpEnabledAt != nil && status.recoveryCodesLeft == 10)
            #expect(
                await eventually {
                    auth.mails(to: email).contains { ($0.headers["subject"] ?? "").contains("Two-step sign-in is on") }
                })
            // A second app while one is set up: refused (to a token that carries the code; the
            // one from before the code is stale and must re-authenticate first).
            #expect(try await auth.send("POST", "/auth/mfa/totp", token: session.accessToken).status == 401)
            let current = try refreshed.decode(AuthSession.self).accessToken
            #expect(try await auth.send("POST", "/auth/mfa/totp", token: current).status == 409)
        }
    }

    @Test func thePasswordAloneGivesNoTokenAndEachCodeWorksOnce() async throws {
        try await withService { auth in
            let (_, email, secret, _, used) = try await account(auth)
            let first = try await challenge(auth, email)
            let refused = try await takeover.login(auth, email)
            #expect(!refused.text.contains("accessToken") && !refused.text.contains("refreshToken"))
            // The code confirming enrolment was spent on its step: not again (refused all the
            // same should its step have left the window meanwhile, on a slow machine).
            let spent = try await verify(auth, first, TOTP(secret: secret).code(step: used))
            #expect(spent.status == 401 && spent.problem?.code == .invalidCode, "\(spent.text)")
            // A code two steps old is outside the window.
            #expect(try await verify(auth, first, Self.code(secret, step: -2)).problem?.code == .invalidCode)
            let next = Self.code(secret, step: 1)
            let signedIn = try await verify(auth, first, next)
            #expect(signedIn.status == 200, "\(signedIn.text)")
            let session = try signedIn.decode(AuthSession.self)
            #expect(session.deviceToken != nil)
            let claims = try Self.claims(session.accessToken)
            #expect(claims["acr"] as? String == "aal2")
            #expect(Set(claims["amr"] as? [String] ?? []) == ["pwd", "otp", "mfa"])
            // The MFA token is spent; the same code on a new sign-in is refused.
            #expect(try await verify(auth, first, next).problem?.code == .invalidMFAToken)
            #expect(try await verify(auth, try await challenge(auth, email), next).problem?.code == .invalidCode)
            #expect(try await auth.send("GET", "/auth/me", token: session.accessToken).status == 200)
        }
    }

    @Test func aRecoveryCodeWorksOnceAndTellsTheOwner() async throws {
        try await withService { auth in
            let (_, email, _, recovery, _) = try await account(auth)
            let typed = recovery[3].uppercased().replacingOccurrences(of: "-", with: " ")
            let signedIn = try await verify(auth, try await challenge(auth, email), typed)
            #expect(signedIn.status == 200, "\(signedIn.text)")
            let session = try signedIn.decode(AuthSession.self)
            #expect(try await verify(auth, try await challenge(auth, email), recovery[3]).problem?.code == .invalidCode)
            let status = try await auth.send("GET", "/auth/mfa", token: session.accessToken).decode(MFAStatus.self)
            #expect(status.recoveryCodesLeft == 9)
            #expect(await eventually { auth.mails(to: email).contains { $0.text.contains("9 are left") } })
            // New codes replace the old ones (a recent sign-in with a code is the confirmation).
            let renewed = try await auth.send("POST", "/auth/mfa/recovery-codes", token: session.accessToken)
            #expect(renewed.status == 200, "\(renewed.text)")
            #expect(try await verify(auth, try await challenge(auth, email), recovery[4]).problem?.code == .invalidCode)
            let fresh = try renewed.decode(RecoveryCodes.self).codes
            #expect(try await verify(auth, try await challenge(auth, email), fresh[0]).status == 200)
        }
    }

    /// Five wrong codes end the MFA token (the right code then finds nothing); wrong codes also
    /// back off per account, and a right password does not clear them.
    @Test func wrongCodesEndTheTokenAndBackOffPerAccount() async throws {
        try await withService(settings: ["PIER_AUTH_THROTTLE_ACCOUNT": "8"]) { auth in
            let (_, email, secret, _, _) = try await account(auth)
            let token = try await challenge(auth, email)
            for _ in 0..<5 { #expect(try await verify(auth, token, "000000").problem?.code == .invalidCode) }
            #expect(try await verify(auth, token, Self.code(secret, step: 1)).problem?.code == .invalidMFAToken)
            // Three more on new tokens reach the account's limit of eight: the next waits.
            for _ in 0..<3 { _ = try await verify(auth, try await challenge(auth, email), "000000") }
            let waiting = try await verify(auth, try await challenge(auth, email), Self.code(secret, step: 1))
            #expect(waiting.status == 429 && waiting.headers["Retry-After"] != nil, "\(waiting.text)")
            #expect(
                await eventually(timeout: .seconds(10)) {
                    (try? await verify(auth, try await challenge(auth, email), Self.code(secret, step: 1)).status) == 200
                })
        }
    }

    /// A sign-in waiting for its code ends with "sign out everywhere" (and so with a password
    /// change or reset): someone who learned the password cannot finish it later.
    @Test func signingOutEverywhereEndsASignInWaitingForItsCode() async throws {
        try await withService { auth in
            let (session, email, secret, _, _) = try await account(auth)
            let token = try await challenge(auth, email)
            #expect(try await auth.send("POST", "/auth/logout/all", token: session.accessToken).status == 204)
            #expect(try await verify(auth, token, Self.code(secret, step: 1)).problem?.code == .invalidMFAToken)
        }
    }

    /// On an account with a second factor the password no longer re-authenticates: a code does.
    /// Removing the factor needs it, mails the owner, and sign-ins ask only the password again.
    @Test func reauthenticationTakesACodeAndRemovalTurnsItOff() async throws {
        try await withService { auth in
            let (session, email, secret, recovery, _) = try await account(auth)
            let byPassword = try await auth.send(
                "POST", "/auth/reauthenticate", json: #"{"password":"\#(Self.password)"}"#, token: session.accessToken)
            #expect(byPassword.status == 401 && byPassword.problem?.code == .reauthenticationRequired)
            let byWrongCode = try await auth.send(
                "POST", "/auth/reauthenticate", json: #"{"code":"\#(Self.code(secret, step: 7))"}"#, token: session.accessToken)
            #expect(byWrongCode.status == 401 && byWrongCode.problem?.code == .reauthenticationRequired)
            let byCode = try await auth.send(
                "POST", "/auth/reauthenticate", json: #"{"code":"\#(recovery[0])"}"#, token: session.accessToken)
            #expect(byCode.status == 200, "\(byCode.text)")
            let stepUp = try byCode.decode(StepUpToken.self).accessToken
            #expect(try Self.claims(stepUp)["acr"] as? String == "aal2")
            // The password alone from a session that just used a code: the session lives, so the
            // answer says what is needed (it said session_revoked).
            let passwordAgain = try await auth.send(
                "POST", "/auth/reauthenticate", json: #"{"password":"\#(Self.password)"}"#, token: stepUp)
            #expect(
                passwordAgain.status == 401 && passwordAgain.problem?.code == .reauthenticationRequired, "\(passwordAgain.text)")
            #expect(passwordAgain.problem?.detail?.contains("code") == true, "\(passwordAgain.text)")
            #expect(try await auth.send("GET", "/auth/me", token: stepUp).status == 200)
            #expect(try await auth.send("DELETE", "/auth/mfa/totp", token: stepUp).status == 204)
            #expect(try await auth.send("DELETE", "/auth/mfa/totp", token: stepUp).status == 404)
            #expect(try await takeover.login(auth, email).status == 200)
            #expect(
                await eventually {
                    auth.mails(to: email).contains { ($0.headers["subject"] ?? "").contains("Two-step sign-in is off") }
                })
            #expect(try await auth.pool.query("SELECT 1 FROM auth.recovery_codes").isEmpty)
        }
    }

    /// An address never proven cannot get a second factor: whoever registered it first would
    /// lock its owner out of the account they claim through a reset or Sign in with Apple.
    @Test func anUnprovenAddressCannotEnrol() async throws {
        try await withService { auth in
            let (session, _) = try await auth.register(TakeoverTests.email("squatter"))
            let offered = try await auth.send("POST", "/auth/mfa/totp", token: session.accessToken)
            #expect(offered.status == 403 && offered.problem?.code == .emailUnverified)
            let confirm = try await auth.send(
                "POST", "/auth/mfa/totp/confirm", json: #"{"code":"123456"}"#, token: session.accessToken)
            #expect(confirm.status == 409)
        }
    }

    /// With `PIER_AUTH_REQUIRE_MFA_FOR_ROLES`, a team member who signed in without a second
    /// factor is refused by every team route (403 `mfa_enrolment_required`) but keeps their own
    /// account's routes, enrols, and is let through once signed in with a code.
    @Test func staffWithoutASecondFactorMustEnrolFirst() async throws {
        try await withService(settings: ["PIER_AUTH_REQUIRE_MFA_FOR_ROLES": "admin,support"]) { auth in
            let (_, email) = try await auth.register(TakeoverTests.email("support"))
            try await auth.pool.execute(
                "UPDATE auth.users SET role = 'support', email_verified_at = now() WHERE email = \(email)")
            let session = try await takeover.login(auth, email).decode(AuthSession.self)
            #expect(try Self.claims(session.accessToken)["mfa_enrolment_required"] as? Bool == true)
            let id = session.user.id
            for path in [
                "/auth/users", "/auth/users/stats", "/auth/users/\(id)", "/auth/users/\(id)/sessions",
                "/auth/users/\(id)/identities", "/auth/users/\(id)/export", "/auth/audit",
            ] {
                let reply = try await auth.send("GET", path, token: session.accessToken)
                #expect(reply.status == 403 && reply.problem?.code == .mfaEnrolmentRequired, "\(path): \(reply.text)")
            }
            #expect(try await auth.send("GET", "/auth/me", token: session.accessToken).status == 200)
            try await Self.approve(auth, email, session.accessToken)
            let secret = try await Self.turnOn(auth, session.accessToken)
            let refreshed = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#)
                .decode(AuthSession.self)
            #expect(try Self.claims(refreshed.accessToken)["mfa_enrolment_required"] == nil)
            let listed = try await auth.send("GET", "/auth/users?q=\(email)", token: refreshed.accessToken)
            #expect(listed.status == 200, "\(listed.text)")
            let signedIn = try await verify(auth, try await challenge(auth, email), Self.code(secret, step: 1))
            #expect(
                try await auth.send("GET", "/auth/audit", token: try signedIn.decode(AuthSession.self).accessToken).status == 200)
        }
    }

    /// The outside audit's finding: whoever had a team member's password could set up their own
    /// authenticator app (or passkey) as the member's first second factor, and be the member
    /// from then on. The first one now needs the member's mailbox (a link bound to the session
    /// that asked) or an admin's approval of that session; the orders an attacker would choose
    /// are tried: asking before the member, an offer made before the role, a link outliving its
    /// session.
    @Test func aTeamMembersFirstSecondFactorNeedsTheirMailboxOrAnAdmin() async throws {
        try await withService { auth in
            let link = "/auth/mfa/approve"
            func approve(_ token: String) async throws -> Int {
                try await auth.send("POST", link, json: #"{"token":"\#(token)"}"#).status
            }
            let (_, email) = try await auth.register(TakeoverTests.email("member"))
            try await auth.pool.execute(
                "UPDATE auth.users SET role = 'support', email_verified_at = now() WHERE email = \(email)")
            // The attacker signs in with the password: no route sets a factor up without approval.
            let attacker = try await takeover.login(auth, email).decode(AuthSession.self)
            let before = auth.mailedTokens(to: email, containing: link)
            for (path, body) in [
                ("/auth/mfa/totp", nil), ("/auth/mfa/totp/confirm", #"{"code":"123456"}"#),
                ("/auth/passkeys/register/options", nil), ("/auth/mfa/totp", nil),
            ] {
                let refused = try await auth.send("POST", path, json: body, token: attacker.accessToken)
                #expect(refused.status == 403 && refused.problem?.code == .enrolmentApprovalRequired, "\(path): \(refused.text)")
            }
            // One mail for the session's ask, however often it asks, naming where it came from.
            let attackerLink = try await auth.mailedToken(to: email, containing: link, seen: before)
            #expect(auth.mailedTokens(to: email, containing: link).subtracting(before) == [attackerLink])
            let mail = try #require(auth.mails(to: email).first { $0.link(containing: link)?.hasSuffix(attackerLink) == true })
            #expect(mail.text.contains("(address ") && mail.text.contains("If it was not you"), "\(mail.text)")

            // The member asks from their own device: their link approves their session alone.
            let member = try await takeover.login(auth, email).decode(AuthSession.self)
            let seen = auth.mailedTokens(to: email, containing: link)
            let asked = try await auth.send("POST", "/auth/mfa/totp", token: member.accessToken)
            #expect(asked.problem?.code == .enrolmentApprovalRequired, "\(asked.text)")
            let memberLink = try await auth.mailedToken(to: email, containing: link, seen: seen)
            // Opening the link shows a form (a mail scanner that fetches it approves nothing).
            let page = try await auth.send("GET", "\(link)?token=\(memberLink)")
            #expect(page.status == 200 && page.text.contains(#"name="token""#), "\(page.text)")
            #expect(try await approve(memberLink) == 204)
            #expect(try await approve(memberLink) == 422)
            let stillRefused = try await auth.send("POST", "/auth/mfa/totp", token: attacker.accessToken)
            #expect(stillRefused.problem?.code == .enrolmentApprovalRequired, "\(stillRefused.text)")
            let secret = try await Self.turnOn(auth, member.accessToken)
            // Turning it on ended every other session: the attacker's, and with it their link.
            #expect(try await approve(attackerLink) == 422)
            #expect(try await takeover.refresh(auth, attacker) == 401)
            // Signed in with a code, the member adds a passkey unasked: the session proved a factor.
            let signedIn = try await verify(auth, try await challenge(auth, email), Self.code(secret, step: 1))
                .decode(AuthSession.self)
            let options = try await auth.send("POST", "/auth/passkeys/register/options", token: signedIn.accessToken)
            #expect(options.status == 200, "\(options.text)")

            // An authenticator offered while the account was a user's cannot be confirmed once
            // it is a team member's, until approved.
            let (_, laterEmail) = try await auth.register(TakeoverTests.email("later"))
            try await auth.pool.execute("UPDATE auth.users SET email_verified_at = now() WHERE email = \(laterEmail)")
            let asUser = try await takeover.login(auth, laterEmail).decode(AuthSession.self)
            let offered = try await auth.send("POST", "/auth/mfa/totp", token: asUser.accessToken).decode(TOTPEnrolment.self)
            let offeredSecret = try #require(Base32.decode(offered.secret))
            try await auth.pool.execute("UPDATE auth.users SET role = 'support' WHERE email = \(laterEmail)")
            let asStaff = try await takeover.login(auth, laterEmail).decode(AuthSession.self)
            let seenLater = auth.mailedTokens(to: laterEmail, containing: link)
            let late = try await auth.send(
                "POST", "/auth/mfa/totp/confirm", json: #"{"code":"\#(Self.code(offeredSecret))"}"#, token: asStaff.accessToken)
            #expect(late.status == 403 && late.problem?.code == .enrolmentApprovalRequired, "\(late.text)")
            let status = try await auth.send("GET", "/auth/mfa", token: asStaff.accessToken).decode(MFAStatus.self)
            #expect(status.totpEnabledAt == nil)
            // A link is live only while the session that asked is.
            let staleLink = try await auth.mailedToken(to: laterEmail, containing: link, seen: seenLater)
            let out = try await auth.send("POST", "/auth/logout", json: #"{"refreshToken":"\#(asStaff.refreshToken)"}"#)
            #expect(out.status == 204, "\(out.text)")
            #expect(try await approve(staleLink) == 422)

            // An admin sees the sessions that wait and approves one; a user cannot.
            let admin = try await account(auth, role: .admin).session
            let adminToken = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(admin.refreshToken)"}"#)
                .decode(AuthSession.self).accessToken
            let waiting = try await takeover.login(auth, laterEmail).decode(AuthSession.self)
            #expect(try await auth.send("POST", "/auth/mfa/totp", token: waiting.accessToken).status == 403)
            let id = waiting.user.id
            let seenByAdmin = try await auth.send("GET", "/auth/users/\(id)/mfa", token: adminToken)
            let asks = try #require(try seenByAdmin.decode(MFAStatus.self).awaitingApproval, "\(seenByAdmin.text)")
            let waitingSession = try Self.session(of: waiting.accessToken)
            #expect(asks.map(\.sessionId) == [waitingSession], "\(seenByAdmin.text)")
            let body = #"{"sessionId":"\#(waitingSession)"}"#
            let (user, _) = try await auth.register(TakeoverTests.email("user"))
            #expect(
                try await auth.send("POST", "/auth/users/\(id)/mfa/approve", json: body, token: user.accessToken).status == 403)
            let ended = #"{"sessionId":"\#(try Self.session(of: asStaff.accessToken))"}"#
            #expect(try await auth.send("POST", "/auth/users/\(id)/mfa/approve", json: ended, token: adminToken).status == 404)
            let approved = try await auth.send("POST", "/auth/users/\(id)/mfa/approve", json: body, token: adminToken)
            #expect(approved.status == 204, "\(approved.text)")
            let audit = try await auth.send("GET", "/auth/audit?target=\(id)", token: adminToken)
            #expect(audit.text.contains("user.second_factor_approved"), "\(audit.text)")
            try await Self.turnOn(auth, waiting.accessToken)
        }
    }

    /// The way around the mailbox's approval: with the password alone, move the account's
    /// mailbox to one's own, then approve one's own first second factor. A team member's address
    /// moves only from a session a second factor proved, and a link mailed before the address
    /// changed approves nothing after.
    @Test func aTeamMembersMailboxMovesOnlyFromASessionASecondFactorProved() async throws {
        try await withService { auth in
            let link = "/auth/mfa/approve"
            let (_, email) = try await auth.register(TakeoverTests.email("member"))
            try await auth.pool.execute(
                "UPDATE auth.users SET role = 'support', email_verified_at = now() WHERE email = \(email)")
            let attacker = try await takeover.login(auth, email).decode(AuthSession.self)
            let thief = TakeoverTests.email("thief")
            let move = #"{"newEmail":"\#(thief)","password":"\#(Self.password)"}"#
            let refused = try await auth.send("POST", "/auth/email/change", json: move, token: attacker.accessToken)
            #expect(refused.status == 403 && refused.problem?.code == .mfaEnrolmentRequired, "\(refused.text)")
            #expect(auth.mails(to: thief).isEmpty)

            // A link mailed to the old address approves nothing once the account has another.
            let seen = auth.mailedTokens(to: email, containing: link)
            #expect(try await auth.send("POST", "/auth/mfa/totp", token: attacker.accessToken).status == 403)
            let mailed = try await auth.mailedToken(to: email, containing: link, seen: seen)
            let moved = try #require(EmailAddress(TakeoverTests.email("moved")))
            try await auth.pool.execute(
                "UPDATE auth.users SET email = \(moved.address), email_key = \(moved.key) WHERE email = \(email)")
            let stale = try await auth.send("POST", link, json: #"{"token":"\#(mailed)"}"#)
            #expect(stale.status == 422, "\(stale.text)")
            #expect(try await auth.send("POST", "/auth/mfa/totp", token: attacker.accessToken).status == 403)

            // Approved by the mailbox and proved by a code, the member moves their own mailbox.
            let (_, own) = try await auth.register(TakeoverTests.email("own"))
            try await auth.pool.execute(
                "UPDATE auth.users SET role = 'support', email_verified_at = now() WHERE email = \(own)")
            let member = try await takeover.login(auth, own).decode(AuthSession.self)
            try await Self.approve(auth, own, member.accessToken)
            let secret = try await Self.turnOn(auth, member.accessToken)
            let proved = try await verify(auth, try await challenge(auth, own), Self.code(secret, step: 1))
                .decode(AuthSession.self)
            let newEmail = TakeoverTests.email("new")
            let asked = try await auth.send(
                "POST", "/auth/email/change", json: #"{"newEmail":"\#(newEmail)"}"#, token: proved.accessToken)
            #expect(asked.status == 202, "\(asked.text)")
        }
    }

    /// A user who lost their phone and their recovery codes asks support: the team removes the
    /// second factor (re-authenticated, audited, the owner mailed), and the password signs in
    /// alone again. Users cannot do it to each other.
    @Test func supportRemovesALostSecondFactor() async throws {
        try await withService { auth in
            let (own, email, _, _, _) = try await account(auth)
            let (_, supportEmail) = try await auth.register(TakeoverTests.email("support"))
            try await auth.pool.execute(
                "UPDATE auth.users SET role = 'support', email_verified_at = now() WHERE email = \(supportEmail)")
            let support = try await takeover.login(auth, supportEmail).decode(AuthSession.self)
            let id = own.user.id
            let other = try await auth.register(TakeoverTests.email("other")).0
            #expect(try await auth.send("DELETE", "/auth/users/\(id)/mfa", token: other.accessToken).status == 403)
            #expect(try await auth.send("DELETE", "/auth/users/\(UUID())/mfa", token: support.accessToken).status == 404)
            _ = try await challenge(auth, email)
            // What support sees first: on, ten codes left; never the secret or the codes.
            let seen = try await auth.send("GET", "/auth/users/\(id)/mfa", token: support.accessToken)
            #expect(try seen.decode(MFAStatus.self).recoveryCodesLeft == 10 && !seen.text.contains("secret"), "\(seen.text)")
            #expect(try await auth.send("GET", "/auth/users/\(id)/mfa", token: other.accessToken).status == 403)
            #expect(try await auth.send("GET", "/auth/users/\(id)/passkeys", token: support.accessToken).text == #"{"items":[]}"#)
            let removed = try await auth.send("DELETE", "/auth/users/\(id)/mfa", token: support.accessToken)
            #expect(removed.status == 204, "\(removed.text)")
            #expect(try await auth.send("DELETE", "/auth/users/\(id)/mfa", token: support.accessToken).status == 404)
            #expect(try await takeover.login(auth, email).status == 200)
            let after = try await auth.send("GET", "/auth/users/\(id)/mfa", token: support.accessToken)
            #expect(try after.decode(MFAStatus.self).totpEnabledAt == nil)
            let audit = try await auth.send("GET", "/auth/audit?target=\(id)", token: support.accessToken)
            #expect(audit.text.contains("user.second_factor_removed"), "\(audit.text)")
            #expect(
                await eventually {
                    auth.mails(to: email).contains { ($0.headers["subject"] ?? "").contains("Two-step sign-in is off") }
                })
        }
    }

    /// The outside audit's attack: support removed an admin's second factor (with the admin's
    /// password they would then enrol their own authenticator and promote themselves), and with
    /// no password at all disabled every admin, because the last-admin check counted disabled
    /// ones. A team member's account is the admins' to act on; the last *enabled* admin stays.
    @Test func supportCannotActOnTeamMembersAndTheLastEnabledAdminStays() async throws {
        try await withService { auth in
            let (owner, ownerEmail, _, _, _) = try await account(auth, role: .admin)
            let (_, supportEmail) = try await auth.register(TakeoverTests.email("support"))
            let (_, otherEmail) = try await auth.register(TakeoverTests.email("admin"))
            try await auth.pool.execute(
                "UPDATE auth.users SET role = 'support', email_verified_at = now() WHERE email = \(supportEmail)")
            try await auth.pool.execute(
                "UPDATE auth.users SET role = 'admin', email_verified_at = now() WHERE email = \(otherEmail)")
            let support = try await takeover.login(auth, supportEmail).decode(AuthSession.self)
            let other = try await takeover.login(auth, otherEmail).decode(AuthSession.self)
            let password = #"{"password":"\#(Self.password)"}"#
            for admin in [owner.user.id, other.user.id] {
                for (method, path, body) in [
                    ("DELETE", "/auth/users/\(admin)/mfa", password), ("POST", "/auth/users/\(admin)/disable", nil),
                    ("DELETE", "/auth/users/\(admin)/sessions", nil), ("POST", "/auth/users/\(admin)/enable", nil),
                ] {
                    let refused = try await auth.send(method, path, json: body, token: support.accessToken)
                    #expect(refused.status == 403 && refused.problem?.code == .forbidden, "\(method) \(path): \(refused.text)")
                }
            }
            // Nothing happened: the owner's factor, sessions and account are as they were.
            let factor = try await auth.send("GET", "/auth/users/\(owner.user.id)/mfa", token: support.accessToken)
            #expect(try factor.decode(MFAStatus.self).totpEnabledAt != nil, "\(factor.text)")
            #expect(try await takeover.refresh(auth, other) == 200)
            _ = try await challenge(auth, ownerEmail)
            let audit = try await auth.pool.query("SELECT count(*)::int AS n FROM auth.audit WHERE actor_id = \(support.user.id)")
            #expect(try audit[0].decode("n", as: Int.self) == 0)
            // Another team member's account is no different for support: a support colleague's too.
            let (_, colleagueEmail) = try await auth.register(TakeoverTests.email("colleague"))
            try await auth.pool.execute(
                "UPDATE auth.users SET role = 'support', email_verified_at = now() WHERE email = \(colleagueEmail)")
            let colleague = try await takeover.login(auth, colleagueEmail).decode(AuthSession.self)
            let onColleague = try await auth.send(
                "POST", "/auth/users/\(colleague.user.id)/disable", token: support.accessToken)
            #expect(onColleague.status == 403, "\(onColleague.text)")

            // An admin may; but once the owner is disabled, the other is the last enabled admin:
            // it cannot be disabled, demoted or deleted, by itself or anyone.
            let admin = try await takeover.login(auth, otherEmail).decode(AuthSession.self)
            let disabled = try await auth.send("POST", "/auth/users/\(owner.user.id)/disable", token: admin.accessToken)
            #expect(disabled.status == 200, "\(disabled.text)")
            let again = try await takeover.login(auth, otherEmail).decode(AuthSession.self)
            let demoted = try await auth.send(
                "PUT", "/auth/users/\(other.user.id)/role", json: #"{"role":"support","password":"\#(Self.password)"}"#,
                token: again.accessToken)
            #expect(demoted.status == 409 && demoted.problem?.code == .lastAdmin, "\(demoted.text)")
            let deleted = try await auth.send("DELETE", "/auth/users/\(other.user.id)", json: password, token: again.accessToken)
            #expect(deleted.status == 409 && deleted.problem?.code == .lastAdmin, "\(deleted.text)")
            let enabledAdmins = try await auth.pool.query(
                "SELECT count(*)::int AS n FROM auth.users WHERE role = 'admin' AND disabled_at IS NULL")
            #expect(try enabledAdmins[0].decode("n", as: Int.self) == 1)
            // Support's ordinary work on a user's account still goes through.
            let (user, _) = try await auth.register(TakeoverTests.email("user"))
            let helped = try await auth.send("POST", "/auth/users/\(user.user.id)/disable", token: support.accessToken)
            #expect(helped.status == 200, "\(helped.text)")
        }
    }

    @Test func malformedVerificationsAreNamedNeverServerErrors() async throws {
        try await withService { auth in
            for body in [
                "{}", #"{"mfaToken":"x"}"#, #"{"code":"1"}"#, #"{"mfaToken":1,"code":"1"}"#,
                #"{"mfaToken":"\#(String(repeating: "a", count: 5000))","code":"123456"}"#,
                #"{"mfaToken":"x","code":"\#(String(repeating: "9", count: 5000))"}"#, #"{"mfaToken":"x","code":"12345\u0000"}"#,
            ] {
                let reply = try await auth.send("POST", "/auth/mfa/verify", json: body)
                #expect([401, 422].contains(reply.status) && reply.problem?.code != nil, "\(body.prefix(60)): \(reply.text)")
            }
        }
    }
}
