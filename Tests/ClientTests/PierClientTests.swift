import Foundation
import PierCrypto
import PierHTTP
import PierIdentity
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import Gateway
@testable import PierClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// PierClient against the whole stack over HTTP, as an app uses it.
@Suite struct PierClientTests {
    /// One stack for the suite's tests; each test registers its own users.
    static let stack: Task<(Hosted, String), Error> = Task {
        let url = try await TestDatabase.create("pier_test_client")
        // Every test's client comes from 127.0.0.1: per-address guards would make them wait on each other.
        let settings = [
            "PIER_AUTH_REQUIRE_MFA_FOR_ROLES": "none", "PIER_AUTH_HASHES_PER_ADDRESS": "1000",
            "PIER_AUTH_LOGINS_PER_ADDRESS_PER_MINUTE": "100000", "PIER_AUTH_FORGOT_PER_ADDRESS_PER_HOUR": "100000",
            // Mails go to a real SMTP server; links as an app's universal links would carry them.
            "PIER_AUTH_SMTP_URL": try await smtp.value.url, "PIER_AUTH_PUBLIC_URL": "https://seeds.example",
            "PIER_APP_NAME": "Seeds",
            // Dozens of tests share this stack at once: on a machine busy with every other suite a
            // request waited past the pool's default 5 s and was 503 (busy), which is not what
            // any test here checks.
            "PIER_DB_ACQUIRE_TIMEOUT_MS": "30000",
            // Sign in with Apple against a JWKS the test serves.
            "PIER_AUTH_APPLE_AUDIENCES": "dev.pier.seeds", "PIER_AUTH_APPLE_JWKS_URL": try await identityProvider.value.jwksURL,
        ]
        return (try await EmbeddedStack.start(databaseURL: url, settings: settings), url)
    }

    static func base() async throws -> URL {
        URL(string: "http://127.0.0.1:\(try await stack.value.0.server.port)")!
    }

    static let smtp = Task { try await SMTPTestServer.start() }
    static let identityProvider = Task { try TestIdentityProvider() }

    /// The token of the latest mailed link to `email` whose path holds `path`, waiting up to 10 s.
    static func mailedToken(to email: String, _ path: String) async throws -> String {
        let link = try await mailedLink(to: email, path)
        return String(link.split(separator: "token=").last ?? "")
    }

    /// The last link containing `path` mailed to `email`, whole, as its reader would copy it.
    static func mailedLink(to email: String, _ path: String, other used: String? = nil) async throws -> String {
        let smtp = try await smtp.value
        for _ in 0..<500 {
            let links = smtp.mails().filter { $0.headers["x-envelope-to"] == email }.compactMap { $0.link(containing: path) }
            if let link = links.last, link != used { return link }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw CocoaError(.fileReadNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "no mail to \(email) with \(path)"])
    }

    static func email() -> String { "app-\(UUID().uuidString.prefix(8).lowercased())@example.com" }

    static let fast = PierClient.Options(retry: RetryPolicy(maxAttempts: 3, baseDelay: 0.05, maxDelay: 0.2))

    /// How many refresh tokens the session of `refreshToken` has had: 1 + its rotations.
    static func rotations(of refreshToken: String) async throws -> Int {
        let pool = PostgresPool(configuration: PostgresConfiguration(url: try await stack.value.1, poolSize: 1))
        defer { pool.close() }
        let rows = try await pool.query(
            """
            SELECT count(*)::int AS n FROM auth.refresh_tokens WHERE session_id =
                (SELECT session_id FROM auth.refresh_tokens WHERE token_hash = \(PostgresBytes(SHA256.hash(refreshToken))))
            """)
        return try rows[0].decode("n", as: Int.self)
    }

    /// A signed-in client whose stored access token is `expired` (by its date) or `garbled`.
    static func client(
        signedInAs email: String, store: any SessionStore = MemorySessionStore(), spoil: ((inout Session) -> Void)? = nil
    ) async throws -> (PierClient, Session) {
        let first = PierClient(baseURL: try await base(), sessionStore: store, options: fast)
        try await first.auth.register(email: email, password: "a long enough passphrase")
        var session = try #require(try store.load())
        spoil?(&session)
        try store.save(session)
        return (PierClient(baseURL: try await base(), sessionStore: store, options: fast), session)
    }

    /// Registers `email` with a proven address (as if the mailed link was opened): the database
    /// pool that proved it, for the test to use and close.
    static func registerProven(_ pier: PierClient, _ email: String, password: String) async throws -> PostgresPool {
        try await pier.auth.register(email: email, password: password)
        let pool = PostgresPool(configuration: PostgresConfiguration(url: try await Self.stack.value.1, poolSize: 1))
        try await pool.execute("UPDATE auth.users SET email_verified_at = now() WHERE email = \(email)")
        return pool
    }

    @Test func aLoginScreenAndTheFeedbackFormWork() async throws {
        let pier = PierClient(baseURL: try await Self.base(), options: Self.fast)
        let events = pier.auth.events
        let email = Self.email()
        #expect(pier.auth.currentUser == nil)
        let user = try await pier.auth.register(email: email, password: "a long enough passphrase", displayName: "Ada")
        #expect(user.email == email && user.displayName == "Ada" && pier.auth.currentUser == user)
        #expect(try await pier.auth.me() == user)

        let item = try await pier.feedback.send(
            NewFeedback(message: "The checkout button does nothing", rating: 2, category: "bug"))
        #expect(item.message == "The checkout button does nothing" && item.rating == 2 && item.category == "bug")
        #expect(try await pier.feedback.mine().items.map(\.id) == [item.id])

        let status = try await pier.subscriptions.status()
        #expect(status.status == "none" && !status.active && !status.isStale)
        #expect(await !pier.subscriptions.isEntitled("pro"))
        #expect(try await pier.subscriptions.plans().allSatisfy(\.active))

        await pier.auth.logout()
        #expect(pier.auth.currentUser == nil)
        await #expect(throws: PierError.self) { try await pier.feedback.mine() }
        // Anonymous feedback still goes through.
        #expect(
            try await pier.feedback.send(NewFeedback(message: "Signed out and still talking")).message
                == "Signed out and still talking")
        #expect(try await pier.auth.login(email: email, password: "a long enough passphrase") == user)

        var seen: [AuthEvent] = []
        for await event in events {
            seen.append(event)
            if seen.count == 3 { break }
        }
        #expect(seen == [.signedIn(user), .signedOut(.requested), .signedIn(user)])
    }

    /// Counts the refresh requests `pier` sends.
    static func countRefreshes(_ pier: PierClient) -> PierTestSupport.Locked<Int> {
        let count = PierTestSupport.Locked(0)
        pier.auth.manager.beforeRefresh.withLock { $0 = { count.withLock { $0 += 1 } } }
        return count
    }

    /// 50 calls at once on a token that is expired by its date (refreshed before sending) or
    /// refused by the server (a 401, then refreshed): one refresh request, every call answered.
    @Test(arguments: ["expired", "refused"])
    func fiftyCallersShareOneRefresh(token: String) async throws {
        let (pier, session) = try await Self.client(signedInAs: Self.email()) { session in
            if token == "expired" { session.accessTokenExpiresAt = .distantPast } else { session.accessToken += "x" }
        }
        let refreshes = Self.countRefreshes(pier)
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 { group.addTask { try await pier.feedback.mine().items.count } }
            for try await count in group { #expect(count == 0) }
        }
        #expect(refreshes.withLock { $0 } == 1)
        #expect(try await Self.rotations(of: session.refreshToken) == 2)
        #expect(pier.auth.currentUser == session.user)
    }

    /// The login screen of an account with two-step sign-in, through PierClient: the password
    /// asks for a code, a wrong one is said so, the right one signs in; a recovery code
    /// re-authenticates, and two-step sign-in turns off.
    @Test func anAuthenticatorAppGuardsTheLoginScreen() async throws {
        let pier = PierClient(baseURL: try await Self.base(), options: Self.fast)
        let email = Self.email()
        let password = "a long enough passphrase"
        let pool = try await Self.registerProven(pier, email, password: password)
        defer { pool.close() }
        let setup = try await pier.auth.setUpAuthenticatorApp()
        #expect(setup.qrCode.hasPrefix("<svg") && setup.uri.hasPrefix("otpauth://totp/"))
        let totp = TOTP(secret: try #require(Base32.decode(setup.secret)))
        let step = TOTP.step(at: Int(Date().timeIntervalSince1970))
        let codes = try await pier.auth.confirmAuthenticatorApp(code: totp.code(step: step))
        #expect(codes.count == 10)
        await pier.auth.logout()
        var token: String?
        do {
            try await pier.auth.login(email: email, password: password)
            Issue.record("the password alone signed in")
        } catch {
            #expect(error.code == .mfaRequired && error.status == 401)
            token = error.mfaToken
        }
        let mfaToken = try #require(token)
        #expect(pier.auth.currentUser == nil)
        do {
            try await pier.auth.completeSignIn(mfaToken: mfaToken, code: "000000")
            Issue.record("a wrong code signed in")
        } catch {
            #expect(error.code == .invalidCode)
        }
        let user = try await pier.auth.completeSignIn(mfaToken: mfaToken, code: totp.code(step: step + 1))
        #expect(user.email == email && pier.auth.currentUser == user)
        #expect(try await pier.auth.twoStepStatus().recoveryCodesLeft == 10)
        try await pier.auth.reauthenticate(code: codes[0])
        #expect(try await pier.auth.twoStepStatus().recoveryCodesLeft == 9)
        try await pier.auth.turnOffTwoStep()
        #expect(try await pier.auth.twoStepStatus().totpEnabledAt == nil)
    }

    /// A passkey screen through PierClient, with a software authenticator in the iOS origin form
    /// (the app's associated domain): added, signed in with usernameless, renamed, removed; a
    /// replayed assertion refused with `invalid_passkey`.
    @Test func aPasskeyScreenThroughTheClient() async throws {
        let pier = PierClient(baseURL: try await Self.base(), options: Self.fast)
        let email = Self.email()
        let pool = try await Self.registerProven(pier, email, password: "a long enough passphrase")
        defer { pool.close() }
        let phone = try SoftwareAuthenticator.es256(rpID: "seeds.example", origin: "https://seeds.example")
        let options = try await pier.auth.passkeyRegistrationOptions()
        #expect(options.rp.id == "seeds.example")
        let added = try await pier.auth.registerPasskey(try phone.register(options, name: "Anna's iPhone"))
        #expect(added.name == "Anna's iPhone")
        await pier.auth.logout()
        let assertion = try phone.assert(try await pier.auth.passkeyLoginOptions(), userHandle: nil)
        let user = try await pier.auth.signIn(passkey: assertion)
        #expect(user.email == email && pier.auth.currentUser == user)
        do {
            try await pier.auth.signIn(passkey: assertion)
            Issue.record("a replayed assertion signed in")
        } catch {
            #expect(error.code == .invalidPasskey && error.fieldErrors.first?.field == "response.clientDataJSON")
        }
        let list = try await pier.auth.passkeys()
        #expect(list.map(\.name) == ["Anna's iPhone"])
        #expect(try await pier.auth.renamePasskey(added.id, to: "Work phone").name == "Work phone")
        try await pier.auth.removePasskey(added.id)
        #expect(try await pier.auth.passkeys().isEmpty)
    }

    /// Two-step sign-in finished with a passkey, and a sensitive action confirmed with one,
    /// through PierClient: the problem's `factors` offers it, the options name the account's
    /// passkey, and the step-up lets new recovery codes through without a code.
    @Test func aPasskeyIsASecondFactorThroughTheClient() async throws {
        let store = MemorySessionStore()
        let pier = PierClient(baseURL: try await Self.base(), sessionStore: store, options: Self.fast)
        let email = Self.email()
        let password = "a long enough passphrase"
        let pool = try await Self.registerProven(pier, email, password: password)
        defer { pool.close() }
        let phone = try SoftwareAuthenticator.es256(rpID: "seeds.example", origin: "https://seeds.example")
        try await pier.auth.registerPasskey(try phone.register(try await pier.auth.passkeyRegistrationOptions()))
        let totp = TOTP(secret: try #require(Base32.decode(try await pier.auth.setUpAuthenticatorApp().secret)))
        _ = try await pier.auth.confirmAuthenticatorApp(code: totp.code(step: TOTP.step(at: Int(Date().timeIntervalSince1970))))
        await pier.auth.logout()
        var challenge: PierError?
        do { try await pier.auth.login(email: email, password: password) } catch { challenge = error }
        let token = try #require(challenge?.mfaToken)
        #expect(challenge?.factors == ["totp", "recovery_code", "passkey"])
        let options = try await pier.auth.passkeyOptions(mfaToken: token)
        #expect(options.allowCredentials.map(\.id) == [Base64.urlEncoded(phone.credentialID)])
        let user = try await pier.auth.completeSignIn(mfaToken: token, passkey: try phone.assert(options, userHandle: nil))
        #expect(user.email == email && pier.auth.currentUser == user)
        // An hour later (the app restarted with the session kept, its access token expired),
        // then the step-up with the passkey.
        try await pool.execute("UPDATE auth.sessions SET authenticated_at = now() - interval '1 hour'")
        var kept = try #require(try store.load())
        kept.accessTokenExpiresAt = .distantPast
        try store.save(kept)
        let later = PierClient(baseURL: try await Self.base(), sessionStore: store, options: Self.fast)
        do {
            _ = try await later.auth.newRecoveryCodes()
            Issue.record("new recovery codes without a fresh second factor")
        } catch {
            #expect(error.code == .reauthenticationRequired)
        }
        let stepUp = try phone.assert(try await later.auth.passkeyReauthenticationOptions(), userHandle: nil)
        try await later.auth.reauthenticate(passkey: stepUp)
        #expect(try await later.auth.newRecoveryCodes().count == 10)
    }

    @Test func aSignOutDuringARefreshIsNotUndone() async throws {
        let store = MemorySessionStore()
        let (pier, _) = try await Self.client(signedInAs: Self.email(), store: store) { $0.accessTokenExpiresAt = .distantPast }
        let events = pier.auth.events
        let started = PierTestSupport.Locked(false)
        pier.auth.manager.beforeRefresh.withLock {
            $0 = {
                started.withLock { $0 = true }
                try? await Task.sleep(nanoseconds: 300_000_000)
            }
        }
        let call = Task { try await pier.feedback.mine() }
        #expect(await eventually(interval: .milliseconds(5)) { started.withLock { $0 } })
        await pier.auth.logout()
        await #expect(throws: PierError.self) { try await call.value }
        #expect(pier.auth.currentUser == nil)
        #expect(try store.load() == nil)
        var seen: [AuthEvent] = []
        for await event in events {
            seen.append(event)
            break
        }
        #expect(seen == [.signedOut(.requested)])
        // Nothing came back to life a moment later either.
        try await Task.sleep(nanoseconds: 400_000_000)
        #expect(try pier.auth.currentUser == nil && store.load() == nil)
    }

    @Test func onlyTheServerRefusingTheRefreshSignsOut() async throws {
        let email = Self.email()
        let store = MemorySessionStore()
        let (_, session) = try await Self.client(signedInAs: email, store: store) { $0.accessTokenExpiresAt = .distantPast }
        // Unreachable server: the call fails, the session stays.
        let nobody = try PortHolder()
        let offline = PierClient(
            baseURL: URL(string: "http://127.0.0.1:\(nobody.port)")!, sessionStore: store,
            options: .init(retry: RetryPolicy(maxAttempts: 2, baseDelay: 0.01, maxDelay: 0.02)))
        do {
            _ = try await offline.feedback.mine()
            Issue.record("a dead server answered")
        } catch {
            #expect(error.kind == .network && error.isTransient)
        }
        #expect(try offline.auth.currentUser == session.user && store.load() == session)

        // The session ended elsewhere (another device signed it out): the refresh is refused.
        let pier = PierClient(baseURL: try await Self.base(), sessionStore: store, options: Self.fast)
        let events = pier.auth.events
        let elsewhere = MemorySessionStore()
        try elsewhere.save(session)
        await PierClient(baseURL: try await Self.base(), sessionStore: elsewhere, options: Self.fast).auth.logout()
        do {
            _ = try await pier.feedback.mine()
            Issue.record("a call went through on an ended session")
        } catch {
            #expect(error.status == 401 && error.code == .invalidRefreshToken)
        }
        #expect(try pier.auth.currentUser == nil && store.load() == nil)
        for await event in events {
            #expect(event == .signedOut(.sessionEnded))
            break
        }
    }

    @Test func twoProcessesSharingAStoreDoNotSignEachOtherOut() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pier-client-\(UUID())/session.json")
        let store = FileSessionStore(url: file)
        let (app, session) = try await Self.client(signedInAs: Self.email(), store: store) {
            $0.accessTokenExpiresAt = .distantPast
        }
        let widget = PierClient(baseURL: try await Self.base(), sessionStore: FileSessionStore(url: file), options: Self.fast)
        let (appRefreshes, widgetRefreshes) = (Self.countRefreshes(app), Self.countRefreshes(widget))
        #expect(try await app.feedback.mine().items.isEmpty)
        // The widget read the old session at launch; it finds the rotated one in the store.
        #expect(try await widget.feedback.mine().items.isEmpty)
        #expect(appRefreshes.withLock { $0 } == 1 && widgetRefreshes.withLock { $0 } == 0)
        #expect(try await Self.rotations(of: session.refreshToken) == 2)
        #expect(app.auth.currentUser == session.user && widget.auth.currentUser == session.user)
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    /// A store that cannot be read (a corrupt file, a locked Keychain) is not a sign-out: nothing
    /// is erased, calls say "sign in first", and a sign-in writes a good session over it.
    @Test func anUnreadableStoreSignsNobodyOut() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pier-client-\(UUID())/session.json")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("{not a session".utf8).write(to: file)
        let pier = PierClient(baseURL: try await Self.base(), sessionStore: FileSessionStore(url: file), options: Self.fast)
        #expect(pier.auth.currentUser == nil)
        do {
            _ = try await pier.feedback.mine()
            Issue.record("a call went through without a session")
        } catch {
            #expect(error.kind == .signedOut)
        }
        #expect(try String(contentsOf: file, encoding: .utf8) == "{not a session")
        let email = Self.email()
        let user = try await pier.auth.register(email: email, password: "a long enough passphrase")
        #expect(try FileSessionStore(url: file).load()?.user == user)
        #expect(try await pier.feedback.mine().items.isEmpty)
    }

    @Test func problemsBecomeErrorsWithTheirCodeAndFields() async throws {
        let pier = PierClient(baseURL: try await Self.base(), options: Self.fast)
        let email = Self.email()
        try await pier.auth.register(email: email, password: "a long enough passphrase")
        await pier.auth.logout()
        do {
            try await pier.auth.register(email: email, password: "a long enough passphrase")
            Issue.record("registered twice")
        } catch {
            #expect(error.status == 409 && error.code == .emailTaken && error.requestId != nil)
        }
        do {
            try await pier.auth.register(email: Self.email(), password: "password1")
            Issue.record("a weak password was taken")
        } catch {
            #expect(error.code == .weakPassword && error.fieldErrors.map(\.field) == ["password"])
        }
        var failedID: String?
        do {
            try await pier.auth.login(email: email, password: "not the passphrase")
            Issue.record("a wrong password signed in")
        } catch {
            #expect(error.code == .invalidCredentials && !error.isTransient)
            failedID = error.requestId
        }
        // The failed call's id rides along with the next feedback, for support to find.
        let item = try await pier.feedback.send(NewFeedback(message: "I cannot sign in"))
        let id = try #require(failedID)
        let admin = try await Self.adminToken()
        let stored = try await pier.feedback.authorized.transport.json(
            FeedbackItem.self, Call(method: "GET", path: "/feedback/\(item.id.uuidString.lowercased())", retryable: true),
            token: admin)
        #expect(stored.requestIds.contains(id))
        // Reported once: the next feedback carries only what failed since.
        let next = try await pier.feedback.send(NewFeedback(message: "And another thing"))
        let nextStored = try await pier.feedback.authorized.transport.json(
            FeedbackItem.self, Call(method: "GET", path: "/feedback/\(next.id.uuidString.lowercased())", retryable: true),
            token: admin)
        #expect(nextStored.requestIds.isEmpty && pier.feedback.authorized.transport.failedRequestIDs.isEmpty)

        // Every code the server documents reads back as itself.
        for code in ProblemCode.all {
            let body = Data(#"{"type":"about:blank","code":"\#(code)","title":"t","status":400,"detail":"d"}"#.utf8)
            let response = HTTPURLResponse(
                url: URL(string: "http://x")!, statusCode: 400, httpVersion: nil, headerFields: ["Retry-After": "7"])!
            let error = Transport.problem(body, response, requestID: "r")
            #expect(error.code == code && error.detail == "d" && error.retryAfter == 7)
        }
    }

    static func adminToken() async throws -> String { try await adminClient().auth.accessToken() }

    /// A client signed in as a new admin.
    static func adminClient() async throws -> PierClient {
        let pool = PostgresPool(configuration: PostgresConfiguration(url: try await stack.value.1, poolSize: 1))
        defer { pool.close() }
        let pier = PierClient(baseURL: try await base(), options: fast)
        let email = Self.email()
        try await pier.auth.register(email: email, password: "an admin passphrase")
        try await pool.execute("UPDATE auth.users SET role = 'admin' WHERE email = \(email)")
        try await pier.auth.login(email: email, password: "an admin passphrase")
        return pier
    }

    /// Whether `grant` was made; false when its end passed before the server saw it.
    static func grant(by admin: PierClient, _ grant: CreateGrant) async -> Bool {
        do {
            try await admin.admin.grant(grant)
            return true
        } catch {
            #expect(error.fieldErrors.map(\.field) == ["until"] && Date() >= grant.until ?? .distantFuture, "\(error)")
            return false
        }
    }

    @Test func aPayingUsersStatusSurvivesARelaunchWithoutNetworkUntilItEnds() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pier-status-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = FileSessionStore(url: folder.appendingPathComponent("session.json"))
        let (pier, session) = try await Self.client(signedInAs: Self.email(), store: store)
        let admin = try await Self.adminClient()
        let nobody = try PortHolder()
        // Granted until a few seconds from now (whole seconds: the server keeps them), so that the
        // end comes within the test; on a machine too busy to check everything before it, again
        // with a longer grant.
        var checked: (plan: String, until: Date, relaunched: PierClient)?
        for seconds in [4.0, 20, 90] where checked == nil {
            let plan = "offline-\(UUID().uuidString.prefix(8).lowercased())"
            try await admin.admin.createPlan(
                CreatePlan(id: plan, name: "Offline", price: 499, currency: "USD", billingPeriod: "P1M", entitlements: [plan]))
            let until = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + seconds).rounded(.up))
            // The end may pass before the grant reaches the server (422 on `until`): not a verdict.
            let granted = await Self.grant(
                by: admin, CreateGrant(userId: session.user.id, planId: plan, until: until, reason: "offline test"))
            guard granted else { continue }
            pier.subscriptions.invalidate()
            let online = try await pier.subscriptions.status()
            let entitled = await pier.subscriptions.isEntitled(plan)
            #expect(FileManager.default.fileExists(atPath: store.statusURL.path))

            // Relaunched with no server: the status the server gave, stale, and still entitled.
            let relaunched = PierClient(
                baseURL: URL(string: "http://127.0.0.1:\(nobody.port)")!, sessionStore: store,
                options: .init(retry: RetryPolicy(maxAttempts: 1)))
            relaunched.subscriptions.invalidate()  // past max-age: it must ask, and cannot
            let offline = try await relaunched.subscriptions.status()
            let entitledOffline = await relaunched.subscriptions.isEntitled(plan)
            guard Date() < until else { continue }  // ended while being checked: not a verdict
            #expect(online.active && !online.isStale && entitled)
            // The status kept, as the server gave it; only the time to ask again may have moved
            // (`isEntitled` asks again once `max-age` passed, and a 304 sets a new one).
            var kept = offline.value
            kept.checkAgainAt = online.value.checkAgainAt
            #expect(offline.isStale && kept == online.value)
            #expect(entitledOffline)
            #expect(!(await relaunched.subscriptions.isEntitled("other")))
            checked = (plan, until, relaunched)
        }
        let (plan, until, relaunched) = try #require(checked, "every grant ended before it was checked")
        // The grant's end ends the access, offline too.
        #expect(await eventually(timeout: .seconds(120)) { Date() > until })
        #expect(!(await relaunched.subscriptions.isEntitled(plan)))

        // Another account signed in on the same store (the kept status is not theirs): nothing served.
        var someoneElse = session
        someoneElse.user.id = UUID()
        try store.save(someoneElse)
        let other = PierClient(
            baseURL: URL(string: "http://127.0.0.1:\(nobody.port)")!, sessionStore: store,
            options: .init(retry: RetryPolicy(maxAttempts: 1)))
        await #expect(throws: PierError.self) { try await other.subscriptions.status() }
        #expect(!(await other.subscriptions.isEntitled(plan)))
        try store.save(session)
        // A status kept as something else (a damaged file) is not one: nothing is served.
        try Data("{\"value\":".utf8).write(to: store.statusURL)
        let damaged = PierClient(
            baseURL: URL(string: "http://127.0.0.1:\(nobody.port)")!, sessionStore: store,
            options: .init(retry: RetryPolicy(maxAttempts: 1)))
        await #expect(throws: PierError.self) { try await damaged.subscriptions.status() }
        // Signing out forgets it with the session.
        _ = try await pier.subscriptions.status()
        #expect(FileManager.default.fileExists(atPath: store.statusURL.path))
        await pier.auth.logout()
        #expect(!FileManager.default.fileExists(atPath: store.statusURL.path))
    }

    @Test func statusIsCachedAsTheServerSaysAndServedStaleWhenOffline() async throws {
        let store = MemorySessionStore()
        let (pier, _) = try await Self.client(signedInAs: Self.email(), store: store)
        let first = try await pier.subscriptions.status()
        #expect(first.freshUntil > first.fetchedAt && !first.isStale)
        #expect(try await pier.subscriptions.status() == first)  // from the cache: the same fetch
        // Past max-age, it asks again: in a later second, when the server's checkAgainAt and
        // max-age have moved on, the answer is still "unchanged" (its tag leaves them out).
        let nextSecond = (first.fetchedAt.timeIntervalSince1970 + 1).rounded(.down)
        try await Task.sleep(nanoseconds: UInt64(max(0, nextSecond - Date().timeIntervalSince1970 + 0.05) * 1e9))
        pier.subscriptions.cache.withLock { $0?.freshUntil = .distantPast }
        let second = try await pier.subscriptions.status()
        #expect(second.fetchedAt > first.fetchedAt && !second.isStale)
        #expect(second.status == first.status && second.plan == first.plan && second.entitlements == first.entitlements)
        #expect(first.etag != nil && second.etag == first.etag)  // revalidated: 304, no body
        // Offline past max-age: the last answer, marked stale.
        let nobody = try PortHolder()
        let offline = PierClient(
            baseURL: URL(string: "http://127.0.0.1:\(nobody.port)")!, sessionStore: store,
            options: .init(retry: RetryPolicy(maxAttempts: 1)))
        offline.subscriptions.invalidate()
        let stale = try await offline.subscriptions.status()
        #expect(stale.isStale && stale.value == second.value)
    }
}

/// Retries against a server that answers 503 or 429 with `Retry-After` before it succeeds.
@Suite struct RetryTests {
    final class Flaky: Sendable {
        /// When each call arrived.
        let times: PierTestSupport.Locked<[Date]>
        let server: HTTPServer

        /// Answers `failures` (statuses, with `Retry-After`) to the plan list before a 200; a
        /// login is always a 503.
        init(failures: [Int], retryAfter: String) throws {
            let answers = PierTestSupport.Locked(failures)
            let times = PierTestSupport.Locked<[Date]>([])
            let router = Router<BasicRequestContext>()
            router.get("/subscriptions/plans") { _, _ in
                times.withLock { $0.append(Date()) }
                if let status = answers.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
                    throw HTTPError(status, detail: "busy", headers: ["Retry-After": retryAfter])
                }
                return Response(status: 200, headers: ["Content-Type": "application/json"], body: Array(#"{"items":[]}"#.utf8))
            }
            // What a proxy in front may answer: not a problem, not JSON.
            router.get("/html") { _, _ in
                times.withLock { $0.append(Date()) }
                return Response(status: 502, headers: ["Content-Type": "text/html"], body: Array("<html>Bad Gateway</html>".utf8))
            }
            router.post("/auth/login") { _, _ -> Response in
                times.withLock { $0.append(Date()) }
                throw HTTPError(503, detail: "busy", headers: ["Retry-After": "1"])
            }
            // A feedback quota spent for the day.
            router.post("/feedback") { _, _ -> Response in
                times.withLock { $0.append(Date()) }
                throw HTTPError(429, detail: "feedback quota reached", headers: ["Retry-After": "3600"])
            }
            server = try HTTPServer.started(router, name: "flaky")
            self.times = times
        }
    }

    @Test(arguments: [503, 429])
    func retryAfterIsWaitedForThenTheCallSucceeds(status: Int) async throws {
        let flaky = try Flaky(failures: [status], retryAfter: "1")
        defer { Task { await flaky.server.shutdown() } }
        let pier = PierClient(baseURL: URL(string: "http://127.0.0.1:\(flaky.server.port)")!)
        #expect(try await pier.subscriptions.plans().isEmpty)
        let times = flaky.times.withLock { $0 }
        #expect(times.count == 2)
        // The second attempt came no sooner than the server asked.
        #expect(times[1].timeIntervalSince(times[0]) >= 0.95)
    }

    @Test func aWaitLongerThanThePolicyAllowsIsTheCallersToDecide() async throws {
        let flaky = try Flaky(failures: [429], retryAfter: "120")
        defer { Task { await flaky.server.shutdown() } }
        let pier = PierClient(baseURL: URL(string: "http://127.0.0.1:\(flaky.server.port)")!)
        do {
            _ = try await pier.subscriptions.plans()
            Issue.record("no error")
        } catch {
            #expect(error.status == 429 && error.code == .rateLimited && error.retryAfter == 120)
        }
        #expect(flaky.times.withLock { $0.count } == 1)
    }

    @Test func anAnswerThatIsNotAProblemStillGivesAnError() async throws {
        let flaky = try Flaky(failures: [], retryAfter: "1")
        defer { Task { await flaky.server.shutdown() } }
        let pier = PierClient(
            baseURL: URL(string: "http://127.0.0.1:\(flaky.server.port)")!,
            options: .init(retry: RetryPolicy(maxAttempts: 3, baseDelay: 0.01, maxDelay: 0.02)))
        do {
            _ = try await pier.call("GET", "/html", signedIn: false)
            Issue.record("a 502 was taken for an answer")
        } catch {
            #expect(error.kind == .server && error.status == 502 && error.code == .badGateway && error.isTransient)
            #expect(error.requestId != nil)
        }
        #expect(flaky.times.withLock { $0.count } == 3)  // a GET, retried to the policy's limit
    }

    @Test func aLimitIsNotAnOutage() async throws {
        let flaky = try Flaky(failures: [], retryAfter: "1")
        defer { Task { await flaky.server.shutdown() } }
        let outbox = FileManager.default.temporaryDirectory.appendingPathComponent("pier-outbox-\(UUID())")
        defer { try? FileManager.default.removeItem(at: outbox) }
        let pier = PierClient(
            baseURL: URL(string: "http://127.0.0.1:\(flaky.server.port)")!, options: .init(feedbackOutbox: outbox))
        do {
            _ = try await pier.feedback.send(NewFeedback(message: "over the quota"))
            Issue.record("no error")
        } catch {
            // Kept for later, but the server answered: the app must not say "offline".
            #expect(error.queuedForRetry && !error.isOffline && error.status == 429 && error.retryAfter == 3600)
        }
        #expect(pier.feedback.queuedCount == 1)
        let nobody = try PortHolder()
        let offline = PierClient(
            baseURL: URL(string: "http://127.0.0.1:\(nobody.port)")!, options: .init(retry: RetryPolicy(maxAttempts: 1)))
        do {
            _ = try await offline.subscriptions.plans()
            Issue.record("an answer from nobody")
        } catch {
            #expect(error.isOffline && error.status == nil)
        }
    }

    @Test func aLoginIsNeverSentTwice() async throws {
        let flaky = try Flaky(failures: [], retryAfter: "1")
        defer { Task { await flaky.server.shutdown() } }
        let pier = PierClient(baseURL: URL(string: "http://127.0.0.1:\(flaky.server.port)")!)
        await #expect(throws: PierError.self) { try await pier.auth.login(email: "a@example.com", password: "whatever it is") }
        #expect(flaky.times.withLock { $0.count } == 1)
    }
}

/// Feedback written while the server is down is sent once it is back, exactly once.
@Suite struct OutboxTests {
    @Test func feedbackWaitsInTheOutboxWhileTheServerIsDown() async throws {
        let url = try await TestDatabase.create("pier_test_client_outbox")
        let holder = try PortHolder()
        let port = holder.port
        var stack = try await EmbeddedStack.start(databaseURL: url, port: port)
        let outbox = FileManager.default.temporaryDirectory.appendingPathComponent("pier-outbox-\(UUID())")
        let pier = PierClient(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!,
            options: .init(retry: RetryPolicy(maxAttempts: 2, baseDelay: 0.01, maxDelay: 0.02), feedbackOutbox: outbox))
        #expect(try await pier.feedback.send(NewFeedback(message: "while online")).message == "while online")
        #expect(pier.feedback.queuedCount == 0)

        await stack.shutdown()
        let offline = NewFeedback(id: UUID(), message: "written on the train")
        do {
            _ = try await pier.feedback.send(offline)
            Issue.record("sent to a stopped server")
        } catch {
            #expect(error.queuedForRetry && error.kind == .network && error.isOffline)
        }
        #expect(pier.feedback.queuedCount == 1)
        #expect(await pier.feedback.flushOutbox() == 0)  // still down: kept
        // After a relaunch the queued feedback is still this installation's (its anonymous ids
        // and keys are scoped to it, whatever network the app is on).
        let relaunched = PierClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!, options: .init(feedbackOutbox: outbox))
        #expect(relaunched.feedback.installationID == pier.feedback.installationID)
        #expect(pier.feedback.queuedCount == 1)

        stack = try await EmbeddedStack.start(databaseURL: url, port: port)
        // Flushed as an app would, on each chance, until the outbox is empty (the first attempt
        // may meet a connection the old server closed).
        let sent = PierTestSupport.Locked(0)
        #expect(
            await eventually {
                let flushed = await pier.feedback.flushOutbox()
                sent.withLock { $0 += flushed }
                return pier.feedback.queuedCount == 0
            })
        #expect(sent.withLock { $0 } == 1)
        // A crash after sending but before forgetting it: sent again, stored once.
        let file = outbox.appendingPathComponent("\(try #require(offline.id).uuidString.lowercased()).json")
        try JSONEncoder().encode(offline).write(to: file)
        #expect(
            await eventually {
                _ = await pier.feedback.flushOutbox(); return pier.feedback.queuedCount == 0
            })
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 1))
        defer { pool.close() }
        let rows = try await pool.query("SELECT count(*)::int AS n FROM feedback.items WHERE id = \(offline.id)")
        #expect(try rows[0].decode("n", as: Int.self) == 1)
        await stack.shutdown()
        _ = holder
    }
}

/// The account screens an app builds on PierClient: verification and password reset through
/// the mailed links (read from a real SMTP server), and the list of signed-in devices.
@Suite struct AccountScreensTests {
    @Test func verifyResetAndDevicesThroughTheClient() async throws {
        let base = URL(string: "http://127.0.0.1:\(try await PierClientTests.stack.value.0.server.port)")!
        let phone = PierClient(baseURL: base, options: PierClientTests.fast)
        let email = PierClientTests.email()
        let password = "a long enough passphrase"
        let user = try await phone.auth.register(email: email, password: password, deviceName: "Anna's iPhone")
        #expect(user.emailVerified == false)

        // Verification: the link opens the app (a universal link), which reads it and passes its token.
        let link = try await PierClientTests.mailedLink(to: email, "/auth/email/verify")
        guard case .verifyEmail(let token)? = MailedLink(try #require(URL(string: link))) else {
            throw TestFailure("not read as a verification link: \(link)")
        }
        #expect(try await phone.auth.verifyEmail(token: token).emailVerified)
        do {
            _ = try await phone.auth.verifyEmail(token: token)
            Issue.record("a used token verified")
        } catch {
            #expect(error.code == .invalidEmailToken && error.fieldErrors.first?.field == "token")
        }
        try await phone.auth.resendVerification()
        try await phone.auth.resendVerification(email: "nobody-\(email)")

        // Devices: a second one signs in; the phone lists both and ends the other.
        let laptop = PierClient(baseURL: base, options: PierClientTests.fast)
        try await laptop.auth.login(email: email, password: password, deviceName: "MacBook")
        let sessions = try await phone.auth.sessions()
        #expect(Set(sessions.compactMap(\.deviceName)) == ["Anna's iPhone", "MacBook"])
        #expect(sessions.first(where: \.current)?.deviceName == "Anna's iPhone")
        let other = try #require(sessions.first { !$0.current })
        try await phone.auth.endSession(other.id)
        // The laptop learns it on its next call (its refresh token is dead) and is signed out.
        let ended = await eventually(timeout: .seconds(10)) {
            do {
                _ = try await laptop.auth.me()
                return false
            } catch {
                return laptop.auth.currentUser == nil
            }
        }
        #expect(ended)

        // Password reset from the signed-out screen; every session ends.
        try await phone.auth.forgotPassword(email: email)
        let resetLink = try await PierClientTests.mailedLink(to: email, "/auth/password/reset")
        guard case .resetPassword(let resetToken)? = MailedLink(try #require(URL(string: resetLink))) else {
            throw TestFailure("not read as a reset link: \(resetLink)")
        }
        do {
            try await phone.auth.resetPassword(token: resetToken, newPassword: "short")
            Issue.record("a weak password was accepted")
        } catch {
            #expect(error.code == .weakPassword)
        }
        try await phone.auth.resetPassword(token: resetToken, newPassword: "an entirely new passphrase")
        let signedOut = await eventually(timeout: .seconds(10)) {
            (try? await phone.auth.me()) == nil && phone.auth.currentUser == nil
        }
        #expect(signedOut)
        try await phone.auth.login(email: email, password: "an entirely new passphrase")

        // Everywhere at once: signed out here too.
        try await laptop.auth.login(email: email, password: "an entirely new passphrase")
        try await phone.auth.logoutEverywhere()
        #expect(phone.auth.currentUser == nil)
        let laptopOut = await eventually(timeout: .seconds(10)) {
            (try? await laptop.auth.me()) == nil && laptop.auth.currentUser == nil
        }
        #expect(laptopOut)
    }

    /// The two-way feedback: the team replies; the sender's app shows the reply and the item's
    /// moves, and the reply is mailed (to a verified address, or the anonymous sender's reply
    /// address; never to an address nobody proved).
    @Test func theTeamsReplyReachesTheAppAndTheSendersMailbox() async throws {
        let base = try await PierClientTests.base()
        let pool = PostgresPool(configuration: PostgresConfiguration(url: try await PierClientTests.stack.value.1, poolSize: 1))
        defer { pool.close() }
        let staff = PierClient(baseURL: base, options: PierClientTests.fast)
        let staffEmail = PierClientTests.email()
        try await staff.auth.register(email: staffEmail, password: "a support passphrase")
        try await pool.execute("UPDATE auth.users SET role = 'support' WHERE email = \(staffEmail)")
        try await staff.auth.login(email: staffEmail, password: "a support passphrase")

        // A sender whose address is verified, one whose is not, one anonymous with an address.
        let (verified, _) = try await PierClientTests.client(signedInAs: PierClientTests.email())
        let verifiedEmail = try #require(verified.auth.currentUser?.email)
        let token = try await PierClientTests.mailedToken(to: verifiedEmail, "/auth/email/verify")
        _ = try await verified.auth.verifyEmail(token: token)
        let (unproven, _) = try await PierClientTests.client(signedInAs: PierClientTests.email())
        let unprovenEmail = try #require(unproven.auth.currentUser?.email)
        let anonymous = PierClient(baseURL: base, options: PierClientTests.fast)
        let anonymousEmail = PierClientTests.email()
        let asked = try await verified.feedback.send(NewFeedback(message: "Can I export my garden as <b>CSV</b>?"))
        let unprovenItem = try await unproven.feedback.send(NewFeedback(message: "Hello from an unproven address"))
        let anonymousItem = try await anonymous.feedback.send(
            NewFeedback(message: "Anonymous question", email: anonymousEmail))

        // Triage, then the reply; a retry of the same reply stores and mails nothing more.
        try await staff.admin.updateFeedback(asked.id, UpdateFeedback(status: "triaged"))
        try await staff.admin.updateFeedback(asked.id, UpdateFeedback(status: "planned"))
        let text = "Yes: it comes in the next version.\nThank you for asking!"
        let replyID = UUID()
        let reply = try await staff.admin.reply(to: asked.id, text, replyID: replyID)
        #expect(reply.id == replyID && reply.message == text && reply.delivery == "account")
        #expect(try await staff.admin.reply(to: asked.id, text, replyID: replyID) == reply)
        do {
            try await staff.admin.reply(to: asked.id, "Another text", replyID: replyID)
            Issue.record("a reply's id was taken again with another text")
        } catch {
            #expect(error.status == 409)
        }
        #expect(try await staff.admin.reply(to: unprovenItem.id, "Thanks!").delivery == "account")
        #expect(try await staff.admin.reply(to: anonymousItem.id, "Thanks, stranger!").delivery == "address")
        for (message, field) in [("", "message"), (String(repeating: "x", count: 5001), "message")] {
            do {
                try await staff.admin.reply(to: asked.id, message)
                Issue.record("a reply of \(message.count) characters was stored")
            } catch {
                #expect(error.status == 422 && error.fieldErrors.first?.field == field)
            }
        }
        do {
            try await staff.admin.reply(to: UUID(), "Nobody there")
            Issue.record("a reply to no item was stored")
        } catch {
            #expect(error.status == 404)
        }
        // A sender is not the team.
        do {
            try await verified.admin.reply(to: asked.id, "I answer myself")
            Issue.record("a sender replied as the team")
        } catch {
            #expect(error.status == 403)
        }

        // The app shows the reply (without who wrote it) and the item's moves.
        let mine = try await verified.feedback.mine()
        let shown = try #require(mine.items.first { $0.id == asked.id })
        #expect(shown.replies?.map(\.message) == [text] && shown.replies?.first?.authorId == nil)
        #expect(shown.statusChanges?.map(\.status) == ["triaged", "planned"] && shown.status == "planned")
        #expect(
            try await verified.feedback.mine().items.first { $0.id == asked.id }?.updatedAt ?? .distantPast >= reply.createdAt)
        // The team sees who replied and where it went.
        let item = try await staff.admin.feedbackItem(asked.id)
        #expect(item.replies?.first?.authorId == staff.auth.currentUser?.id)

        // Mailed once to the verified address, its text escaped in the HTML twin, and to the
        // anonymous sender's; the unproven address gets nothing (the anonymous reply was queued
        // after it: its arrival means the unproven one was handled).
        let smtp = try await PierClientTests.smtp.value
        let arrived = await eventually(timeout: .seconds(20)) {
            smtp.mails().contains { $0.headers["x-envelope-to"] == anonymousEmail }
        }
        #expect(arrived)
        let replies = smtp.mails().filter { $0.headers["subject"] == "Seeds replied to your feedback" }
        let toVerified = replies.filter { $0.headers["x-envelope-to"] == verifiedEmail }
        #expect(toVerified.count == 1)
        #expect(toVerified.first?.text.contains("Thank you for asking!") == true)
        #expect(toVerified.first?.text.contains("<b>CSV</b>") == true)
        #expect(toVerified.first?.html.contains("&lt;b&gt;CSV&lt;/b&gt;") == true)
        #expect(toVerified.first?.html.contains("<b>") == false)
        #expect(replies.filter { $0.headers["x-envelope-to"] == anonymousEmail }.count == 1)
        #expect(!replies.contains { $0.headers["x-envelope-to"] == unprovenEmail })
        // In the audit log, about the sender.
        let audit = try await staff.admin.audit("feedback", PierAdmin.AuditFilter(subject: verified.auth.currentUser?.id))
        #expect(audit.items.contains { $0.action == "feedback.replied" && $0.targetId == asked.id.uuidString.lowercased() })
    }

    @Test func theCurrentUserFollowsEveryChangeAtOnce() async throws {
        let base = URL(string: "http://127.0.0.1:\(try await PierClientTests.stack.value.0.server.port)")!
        let store = MemorySessionStore()
        let phone = PierClient(baseURL: base, sessionStore: store, options: PierClientTests.fast)
        let email = PierClientTests.email()
        let password = "a long enough passphrase"
        try await phone.auth.register(email: email, password: password)
        let events = phone.auth.events

        let named = try await phone.auth.updateProfile(displayName: "Ada")
        #expect(phone.auth.currentUser == named && named.displayName == "Ada")
        #expect(try store.load()?.user == named)  // a relaunch starts from it too
        let verified = try await phone.auth.verifyEmail(
            token: try await PierClientTests.mailedToken(to: email, "/auth/email/verify"))
        #expect(phone.auth.currentUser == verified && verified.emailVerified && verified.displayName == "Ada")

        // Another account's link opened on this device verifies that account, not this one.
        let other = PierClientTests.email()
        try await PierClient(baseURL: base, options: PierClientTests.fast).auth.register(email: other, password: password)
        let theirs = try await phone.auth.verifyEmail(
            token: try await PierClientTests.mailedToken(to: other, "/auth/email/verify"))
        #expect(theirs.email == other && phone.auth.currentUser == verified)

        // A change made on another device shows after reload().
        let tablet = PierClient(baseURL: base, options: PierClientTests.fast)
        try await tablet.auth.login(email: email, password: password)
        try await tablet.auth.updateProfile(displayName: "Grace")
        #expect(phone.auth.currentUser?.displayName == "Ada")
        let reloaded = try await phone.auth.reload()
        #expect(reloaded.displayName == "Grace" && phone.auth.currentUser == reloaded)
        try await phone.auth.reload()  // unchanged: no event

        var seen: [AuthEvent] = []
        for await event in events {
            seen.append(event)
            if seen.count == 3 { break }
        }
        #expect(seen == [.userUpdated(named), .userUpdated(verified), .userUpdated(reloaded)])
    }

    @Test func profileAddressAndDeletionThroughTheClient() async throws {
        let base = URL(string: "http://127.0.0.1:\(try await PierClientTests.stack.value.0.server.port)")!
        let pier = PierClient(baseURL: base, options: PierClientTests.fast)
        let email = PierClientTests.email()
        let password = "a long enough passphrase"
        try await pier.auth.register(email: email, password: password)
        let named = try await pier.auth.updateProfile(displayName: "Ada", locale: "fr-CA")
        #expect(named.displayName == "Ada" && named.locale == "fr-CA")
        #expect(try await pier.auth.updateProfile(locale: "").locale == nil)
        do {
            try await pier.auth.updateProfile(locale: "not a locale")
            Issue.record("a bad locale was accepted")
        } catch {
            #expect(error.fieldErrors.first?.field == "locale")
        }

        let newEmail = PierClientTests.email()
        try await pier.auth.changeEmail(to: newEmail)
        let token = try await PierClientTests.mailedToken(to: newEmail, "/auth/email/change/confirm")
        #expect(try await pier.auth.confirmEmailChange(token: token).email == newEmail)
        #expect(try await pier.auth.me().email == newEmail)

        do {
            try await pier.auth.deleteAccount(password: "not the password")
            Issue.record("deleted with a wrong password")
        } catch {
            #expect(error.code == .reauthenticationRequired && error.status == 401)
        }
        #expect(pier.auth.currentUser != nil)
        // A step-up: a wrong password is refused and signs nobody out; the right one gives the
        // session a new access token whose sign-in time is now.
        do {
            try await pier.auth.reauthenticate(password: "not the password")
            Issue.record("a wrong password stepped up")
        } catch {
            #expect(error.code == .reauthenticationRequired)
        }
        let before = try await pier.auth.accessToken()
        try await pier.auth.reauthenticate(password: password)
        let after = try await pier.auth.accessToken()
        #expect(after != before && pier.auth.currentUser != nil)
        #expect(try await pier.auth.me().email == newEmail)
        try await pier.auth.deleteAccount(password: password)
        #expect(pier.auth.currentUser == nil)
        do {
            try await pier.auth.login(email: newEmail, password: password)
            Issue.record("a deleted account signed in")
        } catch {
            #expect(error.code == .invalidCredentials)
        }
    }

    @Test func signInWithAppleThroughTheClientAndTheCommandLine() async throws {
        let idp = try await PierClientTests.identityProvider.value
        let base = URL(string: "http://127.0.0.1:\(try await PierClientTests.stack.value.0.server.port)")!
        let pier = PierClient(baseURL: base, options: PierClientTests.fast)
        let subject = "apple.\(UUID().uuidString.prefix(8).lowercased())"
        let email = "\(subject)@privaterelay.appleid.com"
        let token = try idp.token(["sub": subject, "email": email])
        let user = try await pier.auth.signInWithApple(identityToken: token, nonce: "raw-nonce", fullName: "Anna Apple")
        #expect(user.email == email && user.displayName == "Anna Apple" && user.emailVerified)
        #expect(pier.auth.currentUser?.id == user.id)
        do {
            try await pier.auth.signInWithApple(identityToken: token, nonce: "another nonce")
            Issue.record("a token bound to another nonce signed in")
        } catch {
            #expect(error.code == .invalidIdentityToken && error.status == 401)
        }
        do {
            try await pier.auth.signIn(provider: "google", identityToken: token, nonce: "raw-nonce")
            Issue.record("an unconfigured provider signed in")
        } catch {
            #expect(error.status == 404)
        }
        // The command line, the same way.
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("pier-cli-\(UUID())")
        let cli = try await CommandLineTests.pier(
            [
                "sign-in", "apple", try idp.token(["sub": subject, "email": email]), "--nonce", "raw-nonce", "--device",
                "Terminal",
            ],
            home: home, url: base.absoluteString)
        #expect(cli.status == 0 && cli.output.contains("Signed in as \(email)"), "\(cli)")
        let refused = try await CommandLineTests.pier(
            ["sign-in", "apple", try idp.token(["sub": subject]), "--nonce", "wrong"], home: home, url: base.absoluteString)
        #expect(refused.status == 3 && refused.errors.contains("invalid_identity_token"), "\(refused)")
        #expect(try await CommandLineTests.pier(["sign-in", "apple", "x"], home: home, url: base.absoluteString).status == 2)

        // The identities the account signs in with, and the last way in kept.
        let identities = try await pier.auth.identities()
        #expect(identities.map(\.provider) == ["apple"] && identities.first?.email == email)
        let only = try #require(identities.first)
        do {
            try await pier.auth.unlinkIdentity(only.id)
            Issue.record("the last way in was unlinked")
        } catch {
            #expect(error.code == .lastSignInMethod && error.status == 409)
        }
        let listed = try await CommandLineTests.pier(["identities"], home: home, url: base.absoluteString)
        #expect(listed.status == 0 && listed.output.contains("apple") && listed.output.contains(email), "\(listed)")
        let unlink = try await CommandLineTests.pier(
            ["identities", "unlink", identities[0].id.uuidString], home: home, url: base.absoluteString)
        #expect(unlink.status == 5 && unlink.errors.contains("last_sign_in_method"), "\(unlink)")
    }

    /// The notice to the old address cancels a change of address; the device that asked is
    /// signed out. The command line takes the whole mailed link.
    @Test func aChangeOfAddressIsCancelledFromTheOldAddress() async throws {
        let base = URL(string: "http://127.0.0.1:\(try await PierClientTests.stack.value.0.server.port)")!
        let pier = PierClient(baseURL: base, options: PierClientTests.fast)
        let email = PierClientTests.email()
        try await pier.auth.register(email: email, password: "a long enough passphrase")
        try await pier.auth.changeEmail(to: PierClientTests.email())
        let first = try await PierClientTests.mailedLink(to: email, "/auth/email/change/cancel")
        let token = String(try #require(first.split(separator: "token=").last))
        #expect(try await pier.auth.cancelEmailChange(token: token).email == email)
        // Ended at once; its access token is refused everywhere within a second.
        #expect(
            await eventually {
                do {
                    _ = try await pier.auth.me()
                    return false
                } catch let error as PierError {
                    return error.status == 401
                } catch {
                    return false
                }
            })

        let home = FileManager.default.temporaryDirectory.appendingPathComponent("pier-cli-\(UUID())")
        #expect(
            try await CommandLineTests.pier(
                ["login", email], home: home, url: base.absoluteString, password: "a long enough passphrase"
            )
            .status == 0)
        let target = PierClientTests.email()
        #expect(try await CommandLineTests.pier(["email", "change", target], home: home, url: base.absoluteString).status == 0)
        let link = try await PierClientTests.mailedLink(to: email, "/auth/email/change/cancel", other: first)
        let cancelled = try await CommandLineTests.pier(["email", "cancel", link], home: home, url: base.absoluteString)
        #expect(cancelled.status == 0 && cancelled.output.contains("Change cancelled"), "\(cancelled)")
        let noToken = try await CommandLineTests.pier(
            ["email", "cancel", "https://seeds.example/auth/email/change/cancel?nothing=1"], home: home,
            url: base.absoluteString)
        #expect(noToken.status == 2 && noToken.errors.contains("token"))
    }

    /// The device token of a password sign-in is kept by the store across sign-outs (beside the
    /// session, readable by its owner only) and sent with the next login of that address.
    @Test func theDeviceTokenOutlivesSignOutAndGoesWithTheNextLogin() async throws {
        let base = URL(string: "http://127.0.0.1:\(try await PierClientTests.stack.value.0.server.port)")!
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pier-devices-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileSessionStore(url: directory.appendingPathComponent("session.json"))
        let pier = PierClient(baseURL: base, sessionStore: store, options: PierClientTests.fast)
        let email = PierClientTests.email()
        try await pier.auth.register(email: email.uppercased(), password: "a long enough passphrase")
        let first = try #require(store.deviceToken(for: email))
        let mode = try FileManager.default.attributesOfItem(atPath: store.devicesURL.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        await pier.auth.logout()
        #expect(try store.load() == nil && store.deviceToken(for: email) == first)
        try await pier.auth.login(email: email, password: "a long enough passphrase")
        let second = try #require(store.deviceToken(for: email))
        #expect(second != first)
        let memory = MemorySessionStore()
        memory.saveDeviceToken("t", for: "a@example.com")
        #expect(memory.deviceToken(for: "a@example.com") == "t" && memory.deviceToken(for: "b@example.com") == nil)
    }

    @Test func downloadMyDataGathersEveryService() async throws {
        let base = URL(string: "http://127.0.0.1:\(try await PierClientTests.stack.value.0.server.port)")!
        let pier = PierClient(baseURL: base, options: PierClientTests.fast)
        let email = PierClientTests.email()
        try await pier.auth.register(email: email, password: "a long enough passphrase", deviceName: "Export phone")
        try await pier.feedback.send(NewFeedback(message: "Please export me", rating: 5))
        let document = try JSONSerialization.jsonObject(with: try await pier.auth.exportData()) as? [String: Any]
        let services = try #require(document?["services"] as? [String: Any])
        #expect(Set(services.keys) == ["auth", "feedback", "subscriptions"])
        let auth = services["auth"] as? [String: Any]
        #expect((auth?["user"] as? [String: Any])?["email"] as? String == email)
        #expect(((auth?["sessions"] as? [[String: Any]])?.first?["deviceName"]) as? String == "Export phone")
        let items = (services["feedback"] as? [String: Any])?["items"] as? [[String: Any]]
        #expect(items?.map { $0["message"] as? String } == ["Please export me"])
        let subscription = (services["subscriptions"] as? [String: Any])?["subscription"] as? [String: Any]
        #expect(subscription?["status"] as? String == "none")
        // Each service's own part, too; signed in only.
        let part = try JSONSerialization.jsonObject(with: try await pier.call("GET", "/feedback/me/export")) as? [String: Any]
        #expect(part?["service"] as? String == "feedback")
        do {
            _ = try await pier.call("GET", "/subscriptions/me/export", signedIn: false)
            Issue.record("an anonymous export answered")
        } catch {
            #expect(error.status == 401)
        }
        // From the terminal.
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("pier-cli-\(UUID())")
        _ = try await CommandLineTests.pier(
            ["login", email], home: home, url: base.absoluteString, password: "a long enough passphrase")
        let file = home.appendingPathComponent("export.json")
        let exported = try await CommandLineTests.pier(["export", "--output", file.path], home: home, url: base.absoluteString)
        #expect(exported.status == 0, "\(exported)")
        #expect(try String(contentsOf: file, encoding: .utf8).contains("Please export me"))
    }
}

/// `subscriptions.updates`: the status pushed to the app as it changes.
extension PierClientTests {
    /// Statuses an app's task received from `updates`, in order.
    final class Received: Sendable {
        let statuses = PierTestSupport.Locked<[SubscriptionStatus]>([])
        func append(_ status: SubscriptionStatus) { statuses.withLock { $0.append(status) } }
        var all: [SubscriptionStatus] { statuses.withLock { $0 } }
    }

    static func listen(_ pier: PierClient, into received: Received) -> Task<Void, Never> {
        Task {
            for await status in pier.subscriptions.updates { received.append(status) }
        }
    }

    @Test func aGrantAndItsRevocationArriveThroughUpdatesAndTheCacheFollows() async throws {
        let (pier, session) = try await Self.client(signedInAs: Self.email())
        let admin = try await Self.adminClient()
        let plan = "live-\(UUID().uuidString.prefix(8).lowercased())"
        try await admin.admin.createPlan(
            CreatePlan(id: plan, name: "Live", price: 299, currency: "USD", billingPeriod: "P1M", entitlements: [plan]))
        let received = Received()
        let listening = Self.listen(pier, into: received)
        // The status now, first.
        #expect(await eventually { received.all.count == 1 })
        #expect(received.all.first?.active == false)
        // Cached as not entitled, fresh: isEntitled asks nobody.
        #expect(await !pier.subscriptions.isEntitled(plan))

        let started = Date()
        let grant = try await admin.admin.grant(
            CreateGrant(userId: session.user.id, planId: plan, duration: "P7D", reason: "live test"))
        #expect(await eventually { received.all.last?.active == true })
        print("subscriptions.updates: a grant seen \(Int(-started.timeIntervalSinceNow * 1000)) ms after it was asked for")
        #expect(received.all.last?.entitlements.map(\.key) == [plan])
        // The cache followed: entitled at once, without asking the server again.
        #expect(await pier.subscriptions.isEntitled(plan))

        _ = try await admin.admin.revokeGrant(grant.id)
        #expect(await eventually { received.all.last?.active == false })
        #expect(await !pier.subscriptions.isEntitled(plan))
        // Each change once: none, active, ended.
        #expect(received.all.map(\.active) == [false, true, false])

        // Signing out ends the stream.
        await pier.auth.logout()
        await listening.value
    }
}

/// `auth.userUpdates`: the account pushed to the app as it changes elsewhere.
extension PierClientTests {
    @Test func changesMadeElsewhereUpdateCurrentUserAndAnEndedSessionSignsOut() async throws {
        let email = Self.email()
        let (phone, _) = try await Self.client(signedInAs: email)
        let laptop = PierClient(baseURL: try await Self.base(), options: Self.fast)
        try await laptop.auth.login(email: email, password: "a long enough passphrase")
        let users = PierTestSupport.Locked<[User]>([])
        let events = phone.auth.events
        let listening = Task {
            for await user in phone.auth.userUpdates { users.withLock { $0.append(user) } }
        }
        #expect(await eventually { users.withLock { $0.count } == 1 })

        // Renamed on the laptop: the phone's currentUser follows, with no call of its own.
        let started = Date()
        _ = try await laptop.auth.updateProfile(displayName: "Anna")
        #expect(await eventually { phone.auth.currentUser?.displayName == "Anna" })
        print("auth.userUpdates: a rename seen \(Int(-started.timeIntervalSinceNow * 1000)) ms after it was made")
        // The address verified through the mailed link, opened in a browser (no session).
        let token = try await Self.mailedToken(to: email, "/auth/email/verify")
        let anyone = PierClient(baseURL: try await Self.base(), options: Self.fast)
        _ = try await anyone.call(
            "POST", "/auth/email/verify", json: Data(#"{"token":"\#(token)"}"#.utf8), signedIn: false)
        #expect(await eventually { phone.auth.currentUser?.emailVerified == true })
        #expect(await eventually { users.withLock { $0.last?.emailVerified == true && $0.last?.displayName == "Anna" } })

        // The phone's session ended from the laptop (a lost phone): signed out, the stream ends.
        let sessions = try await laptop.auth.sessions()
        let phoneSession = try #require(sessions.first { !$0.current })
        try await laptop.auth.endSession(phoneSession.id)
        await listening.value
        #expect(phone.auth.currentUser == nil)
        var reasons: [SignOutReason] = []
        for await event in events {
            if case .signedOut(let reason) = event {
                reasons.append(reason)
                break
            }
        }
        #expect(reasons == [.sessionEnded])
        // The laptop, not listening, learns the verification when it asks.
        #expect(laptop.auth.currentUser?.emailVerified == false)
        #expect(try await laptop.auth.reload().emailVerified && laptop.auth.currentUser?.emailVerified == true)
    }
}
