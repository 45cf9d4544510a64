import Foundation
import PierCrypto
import PierModels
import PierPostgres
import PierService
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import PierClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Starting without signing up, as an app does it through PierClient against the whole stack:
/// what the anonymous account did is still its own once it is kept.
@Suite(.serialized) struct AnonymousJourneyTests {
    static func withStack(
        _ extra: [String: String] = [:], _ body: (URL, PostgresPool, TestCA) async throws -> Void
    ) async throws {
        let ca = try TestCA()
        let url = try await TestDatabase.create("pier_test_anonymous_journey")
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("pier-anonymous-\(UUID())").path
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        try ca.rootPEM.write(toFile: data + "/roots.pem", atomically: true, encoding: .utf8)
        let stack = try await EmbeddedStack.start(
            databaseURL: url,
            settings: extra.merging([
                "PIER_DATA_DIR": data, "PIER_SUBSCRIPTIONS_APPSTORE_ROOTS": data + "/roots.pem",
                "PIER_SUBSCRIPTIONS_APPSTORE_BUNDLE_ID": AppStorePayload.bundleID,
                "PIER_SUBSCRIPTIONS_APPSTORE_APP_APPLE_ID": String(AppStorePayload.appAppleID),
                "PIER_AUTH_SMTP_URL": try await PierClientTests.smtp.value.url,
                "PIER_AUTH_PUBLIC_URL": "https://seeds.example", "PIER_APP_NAME": "Seeds",
                "PIER_AUTH_HASHES_PER_ADDRESS": "1000", "PIER_AUTH_LOGINS_PER_ADDRESS_PER_MINUTE": "100000",
            ]) { given, _ in given })
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 1))
        let base = URL(string: "http://127.0.0.1:\(stack.server.port)")!
        do {
            try await body(base, pool, ca)
        } catch {
            pool.close()
            await stack.shutdown()
            throw error
        }
        pool.close()
        await stack.shutdown()
    }

    /// An admin who made the plan "Pro" (the App Store's `pier.pro.monthly`), and a support member.
    static func team(_ base: URL, _ pool: PostgresPool) async throws -> (admin: PierClient, support: PierClient) {
        let admin = try await Self.staff("admin", base, pool)
        try await admin.admin.createPlan(
            CreatePlan(
                id: "pro", name: "Pro", price: 499, currency: "USD", billingPeriod: "P1M", entitlements: ["pro"],
                appStoreProductIds: ["pier.pro.monthly"]))
        return (admin, try await Self.staff("support", base, pool))
    }

    /// A member of the team with `role`, signed in.
    static func staff(_ role: String, _ base: URL, _ pool: PostgresPool) async throws -> PierClient {
        let pier = PierClient(baseURL: base, options: PierClientTests.fast)
        let email = PierClientTests.email()
        try await pier.auth.register(email: email, password: "a team passphrase")
        try await pool.execute("UPDATE auth.users SET role = \(role) WHERE email = \(email)")
        try await pier.auth.login(email: email, password: "a team passphrase")
        return pier
    }

    /// Feedback with a reply, then an App Store purchase made with the anonymous id as its
    /// `appAccountToken`, then the address and password: the same account holds all of it, and
    /// the rows counted before and after are the same rows.
    @Test func whatAnAnonymousAccountDidIsStillItsOwnOnceKept() async throws {
        try await Self.withStack { base, pool, ca in
            let (_, support) = try await Self.team(base, pool)

            let pier = PierClient(baseURL: base, options: PierClientTests.fast)
            let user = try await pier.auth.signInAnonymously(deviceName: "Ada's iPhone")
            #expect(user.isAnonymous && user.email == nil && pier.auth.isAnonymous && pier.auth.currentUser == user)
            #expect(user.anonymousAt != nil && user.permanentAt == nil)

            let item = try await pier.feedback.send(NewFeedback(message: "Where are my seeds?", rating: 3))
            let reply = try await support.admin.reply(to: item.id, "In the garden tab.")
            #expect(reply.delivery == "account")
            let now = Date()
            let purchase = try ca.sign(
                AppStorePayload.transaction(
                    id: "9001", original: "9000", purchased: now, expires: now.addingTimeInterval(30 * 86_400), user: user.id))
            #expect(try await pier.subscriptions.submit(signedTransaction: purchase).active)
            let before = try await Self.rows(of: user.id, pool)
            #expect(before == Held(feedback: 1, replies: 1, owned: 1, accounts: 1))

            // Kept with an address and a password: nothing changes before the mailed link is opened.
            let email = PierClientTests.email()
            #expect(try await pier.auth.keepAccount(email: email, password: "a long enough passphrase") == email)
            #expect(try await pier.auth.me().isAnonymous)
            let login = PierClient(baseURL: base, options: PierClientTests.fast)
            await #expect(throws: PierError.self) {
                try await login.auth.login(email: email, password: "a long enough passphrase")
            }
            let token = try await PierClientTests.mailedToken(to: email, "/auth/email/change/confirm")
            let confirmed = try await login.call(
                "POST", "/auth/email/change/confirm", json: Data(#"{"token":"\#(token)"}"#.utf8), signedIn: false)
            #expect(!confirmed.isEmpty)

            // The same id, an address proven by the link, the password working, this device still signed in.
            let kept = try await pier.auth.me()
            #expect(kept.id == user.id && kept.email == email && kept.emailVerified && !kept.isAnonymous)
            #expect(kept.anonymousAt == user.anonymousAt && kept.permanentAt != nil)
            #expect(try await login.auth.login(email: email, password: "a long enough passphrase").id == user.id)
            #expect(try await Self.rows(of: user.id, pool) == before)
            let mine = try #require(try await pier.feedback.mine().items.first)
            #expect(mine.id == item.id && mine.replies?.map(\.message) == ["In the garden tab."])
            pier.subscriptions.invalidate()
            #expect(try await pier.subscriptions.status().active)
            #expect(await pier.subscriptions.isEntitled("pro"))
            #expect(try await login.subscriptions.status().active)
        }
    }

    /// The address the anonymous account asks for already has an account (with its own feedback
    /// and a grant): merged through PierClient, everything of both sides is that account's, the
    /// rows counted before and after, and later purchases naming the anonymous id are its too.
    @Test func anAnonymousAccountMergesIntoTheAccountThatHasItsAddress() async throws {
        try await Self.withStack { base, pool, ca in
            let (admin, support) = try await Self.team(base, pool)
            let (email, password) = (PierClientTests.email(), "a long enough passphrase")
            let owner = PierClient(baseURL: base, options: PierClientTests.fast)
            let account = try await owner.auth.register(email: email, password: password)
            _ = try await owner.feedback.send(NewFeedback(message: "Love the app", rating: 5))
            _ = try await admin.admin.grant(CreateGrant(userId: account.id, planId: "pro", duration: "P1M", reason: "beta"))

            let pier = PierClient(baseURL: base, options: PierClientTests.fast)
            let anonymous = try await pier.auth.signInAnonymously()
            let item = try await pier.feedback.send(NewFeedback(message: "Where are my seeds?", rating: 3))
            _ = try await support.admin.reply(to: item.id, "In the garden tab.")
            let now = Date()
            let purchase = try ca.sign(
                AppStorePayload.transaction(
                    id: "9101", original: "9100", purchased: now, expires: now.addingTimeInterval(30 * 86_400),
                    user: anonymous.id))
            #expect(try await pier.subscriptions.submit(signedTransaction: purchase).active)
            #expect(try await Self.rows(of: anonymous.id, pool) == Held(feedback: 1, replies: 1, owned: 1, accounts: 2))
            #expect(try await Self.rows(of: account.id, pool) == Held(feedback: 1, replies: 0, owned: 0, accounts: 2))
            let totals = try await Self.totals(pool)

            // Keeping the account with the taken address says so, and offers the merge.
            do {
                try await pier.auth.keepAccount(email: email, password: password)
                Issue.record("a taken address was accepted")
            } catch let error as PierError {
                #expect(error.code == .identityTaken && error.offer == ["sign_in", "merge"], "\(error)")
            }
            let anonymousToken = try await pier.auth.accessToken()
            // A sign-in that fails leaves the device anonymous, as it was.
            await #expect(throws: PierError.self) {
                try await pier.auth.merge { () async throws(PierError) in
                    _ = try await pier.auth.login(email: email, password: "not the password at all")
                }
            }
            #expect(pier.auth.currentUser?.id == anonymous.id && pier.auth.isAnonymous)
            let merged = try await pier.auth.merge { () async throws(PierError) in
                _ = try await pier.auth.login(email: email, password: password)
            }
            #expect(merged == AnonymousMergeAnswer(mergedUserId: anonymous.id, userId: account.id))
            #expect(pier.auth.currentUser?.id == account.id && !pier.auth.isAnonymous)

            // Within seconds each service moved what it kept: nothing lost, nothing twice.
            #expect(
                await eventually {
                    (try? await Self.rows(of: account.id, pool)) == Held(feedback: 2, replies: 1, owned: 1, accounts: 1)
                })
            #expect(try await Self.rows(of: anonymous.id, pool) == Held(feedback: 0, replies: 0, owned: 0, accounts: 1))
            #expect(try await Self.totals(pool) == totals)
            let mine = try await pier.feedback.mine().items
            #expect(Set(mine.map(\.id)).contains(item.id) && mine.count == 2)
            #expect(mine.first { $0.id == item.id }?.replies?.map(\.message) == ["In the garden tab."])
            pier.subscriptions.invalidate()
            #expect(try await pier.subscriptions.status().active)
            #expect(try await admin.admin.grants(of: account.id).count == 1)

            // A renewal Apple signs later still names the anonymous id: it is the account's now.
            let renewal = try ca.sign(
                AppStorePayload.transaction(
                    id: "9102", original: "9100", purchased: now, expires: now.addingTimeInterval(60 * 86_400),
                    user: anonymous.id))
            #expect(try await pier.subscriptions.submit(signedTransaction: renewal).active)
            #expect(try await Self.rows(of: account.id, pool).owned == 1)
            // The anonymous account's token is refused everywhere.
            #expect(await eventually { (try? await Self.status(base, "/auth/me", token: anonymousToken)) == 401 })
            #expect(try await Self.status(base, "/feedback/mine", token: anonymousToken) == 401)
        }
    }

    /// The stack with `PIER_AUTH_APP_ATTEST=required`, trusting `device`'s stand-in CA.
    static func withAttestingStack(
        _ device: TestAppAttest, _ extra: [String: String] = [:], _ body: (URL, PostgresPool) async throws -> Void
    ) async throws {
        let roots = FileManager.default.temporaryDirectory.appendingPathComponent("app-attest-\(UUID()).pem")
        try device.ca.rootPEM.write(to: roots, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: roots) }
        let settings = [
            "PIER_AUTH_APP_ATTEST": "required", "PIER_AUTH_APP_ATTEST_APP_IDS": SoftwareAttestation.appID,
            "PIER_AUTH_APP_ATTEST_ROOTS": roots.path,
        ]
        try await withStack(settings.merging(extra) { $1 }) { base, pool, _ in try await body(base, pool) }
    }

    /// A server that signs up only attested installations: PierClient attests the installation's
    /// key once, then signs every anonymous sign-up with an assertion whose counter grows.
    @Test func anAttestedInstallationStartsWithoutSigningUp() async throws {
        let device = try TestAppAttest()
        try await Self.withAttestingStack(device) { base, pool in
            let pier = PierClient(baseURL: base, options: PierClientTests.fast)
            await #expect(throws: PierError.self) { try await pier.auth.signInAnonymously() }
            do {
                try await pier.auth.signInAnonymously()
            } catch let error as PierError {
                #expect(error.code == .attestationRequired && error.status == 403, "\(error)")
            }
            let attestation = SoftwareAttestation(device)
            #expect(try await pier.auth.signInAnonymously(attestation: attestation).isAnonymous)
            await pier.auth.logout()
            #expect(try await pier.auth.signInAnonymously(attestation: attestation).isAnonymous)
            let keys = try await pool.query("SELECT count(*)::int AS n, max(counter)::int AS counter FROM auth.app_attest_keys")
            #expect(try keys[0].decode("n", as: Int.self) == 1 && keys[0].decode("counter", as: Int.self) == 2)
        }
    }

    /// A server that takes anonymous feedback only from attested installations: PierClient with
    /// ``PierClient/Options/appAttestation`` sends it with an installation token (one assertion
    /// for two items); without it, or with tokens that are not the installation's, it is refused.
    @Test func anAttestedInstallationSendsAnonymousFeedback() async throws {
        let device = try TestAppAttest()
        try await Self.withAttestingStack(device, ["PIER_FEEDBACK_APP_ATTEST": "required"]) { base, pool in
            let bare = PierClient(baseURL: base, options: PierClientTests.fast)
            do {
                try await bare.feedback.send(NewFeedback(message: "no proof"))
                Issue.record("anonymous feedback without a token was taken")
            } catch let error as PierError {
                #expect(error.code == .attestationRequired && error.status == 403, "\(error)")
            }
            var options = PierClientTests.fast
            options.appAttestation = SoftwareAttestation(device)
            let pier = PierClient(baseURL: base, options: options)
            try await pier.feedback.send(NewFeedback(message: "the first"))
            try await pier.feedback.send(NewFeedback(message: "the second"))
            let keys = try await pool.query("SELECT max(counter)::int AS counter FROM auth.app_attest_keys")
            #expect(try keys[0].decode("counter", as: Int.self) == 1)
            let items = try await pool.query("SELECT count(*)::int AS n FROM feedback.items")
            #expect(try items[0].decode("n", as: Int.self) == 2)

            // What an attacker sends instead: garbage, a user's access token, another
            // installation's token, the installation token as a bearer token.
            let tokens = try #require(pier.feedback.attestations)
            let token = try #require(try await tokens.token(pier.authorized, installation: pier.installationID))
            let user = PierClient(baseURL: base, options: PierClientTests.fast)
            try await user.auth.register(email: PierClientTests.email(), password: "a long passphrase")
            let access = try #require(await user.authorized.sessions.current()?.accessToken)
            for (sent, installation) in [("garbage", pier.installationID), (access, pier.installationID), (token, "other")] {
                let reply = try await Self.anonymousFeedback(base, token: sent, installation: installation)
                #expect(reply.status == 422 && reply.code == "invalid_attestation", "\(reply)")
            }
            #expect(try await Self.status(base, "auth/me", token: token) == 401)
            #expect(try await Self.anonymousFeedback(base, token: token, installation: pier.installationID).status == 201)
        }
    }

    /// `POST /feedback` with no bearer, `token` as `X-Installation-Token`: the status and problem code.
    static func anonymousFeedback(_ base: URL, token: String, installation: String) async throws -> (status: Int, code: String?) {
        var request = URLRequest(url: base.appendingPathComponent("feedback"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(token, forHTTPHeaderField: "X-Installation-Token")
        request.setValue(installation, forHTTPHeaderField: "X-Installation-ID")
        request.httpBody = Data(#"{"message":"sent by hand"}"#.utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        let problem = try? JSONDecoder().decode(Problem.self, from: data)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, problem?.code?.rawValue)
    }

    /// App Attest in software, for a platform without DeviceCheck: the test's stand-in device.
    final class SoftwareAttestation: AppAttestation {
        static let appID = "ABCDE12345.com.example.seeds"
        let device: TestAppAttest
        let kept = Locked<String?>(nil)
        let counter = Locked<UInt32>(0)
        init(_ device: TestAppAttest) { self.device = device }

        func attestedKeyId() async -> String? { kept.withLock { $0 } }
        func generateAndAttestKey(challenge: Data) async throws -> (keyId: String, attestation: Data) {
            let object = try device.attestation(appID: Self.appID, clientDataHash: SHA256.hash(Array(challenge)))
            return (Data(device.keyID).base64EncodedString(), Data(object))
        }
        func keep(keyId: String) async { kept.withLock { $0 = keyId } }
        func assertion(keyId: String, challenge: Data) async throws -> Data {
            let next = counter.withLock { value -> UInt32 in
                value += 1
                return value
            }
            return Data(try device.assertion(appID: Self.appID, clientDataHash: SHA256.hash(Array(challenge)), counter: next))
        }
    }

    /// What the database holds in all: feedback items, replies, App Store owners, grants.
    static func totals(_ pool: PostgresPool) async throws -> [Int] {
        let row = try await pool.query(
            """
            SELECT (SELECT count(*)::int FROM feedback.items) AS a, (SELECT count(*)::int FROM feedback.replies) AS b,
                   (SELECT count(*)::int FROM subscriptions.appstore_owners) AS c,
                   (SELECT count(*)::int FROM subscriptions.grants) AS d
            """)[0]
        return try ["a", "b", "c", "d"].map { try row.decode($0, as: Int.self) }
    }

    /// The status a GET with `token` answers.
    static func status(_ base: URL, _ path: String, token: String) async throws -> Int {
        var request = URLRequest(url: base.appendingPathComponent(path))
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    struct Held: Equatable {
        var feedback: Int, replies: Int, owned: Int, accounts: Int
    }

    /// What the database holds of `user`, counted.
    static func rows(of user: UUID, _ pool: PostgresPool) async throws -> Held {
        let row = try await pool.query(
            """
            SELECT (SELECT count(*)::int FROM feedback.items WHERE user_id = \(user)) AS feedback,
                   (SELECT count(*)::int FROM feedback.replies r JOIN feedback.items i ON i.id = r.item_id
                     WHERE i.user_id = \(user)) AS replies,
                   (SELECT count(*)::int FROM subscriptions.appstore_owners WHERE user_id = \(user)) AS owned,
                   (SELECT count(*)::int FROM auth.users) AS accounts
            """)[0]
        return Held(
            feedback: try row.decode("feedback", as: Int.self), replies: try row.decode("replies", as: Int.self),
            owned: try row.decode("owned", as: Int.self),
            accounts: try row.decode("accounts", as: Int.self) - 2)
    }
}
