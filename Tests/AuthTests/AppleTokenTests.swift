import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierTestSupport
import Testing

@testable import AuthService

/// Apple's token and revoke endpoints as a local server: each request's client secret is checked
/// as Apple documents it (an ES256 JWT by the Sign in with Apple key: header `alg` ES256 and
/// `kid` the key id; `iss` the team id, `sub` the client id, which the form's `client_id`
/// repeats, `aud` `https://appleid.apple.com`, `iat` now and `exp` later, at most six months on),
/// codes are exchanged once, and revocations are recorded. It can be told to be away.
final class FakeAppleTokenEndpoints: Sendable {
    static let teamID = "TEAM123456"
    static let keyID = "KEY7890ABC"
    static let clientID = "dev.pier.seeds"

    let key: P256PrivateKey
    let server: HTTPServer
    /// The refresh tokens revoked, in order.
    let revoked = Locked<[String]>([])
    /// Codes exchanged (each once).
    let exchanged = Locked<Set<String>>([])
    /// Revocations answered 503 before Apple is back.
    let awayFor = Locked(0)
    /// Every client secret that was refused, and why.
    let refusals = Locked<[String]>([])
    var url: String { "http://127.0.0.1:\(server.port)" }

    init() throws {
        let key = try P256PrivateKey.generate()
        self.key = key
        let publicKey = try key.publicKey
        let router = Router<BasicRequestContext>()
        let (revoked, exchanged, awayFor, refusals) = (revoked, exchanged, awayFor, refusals)
        @Sendable func checked(_ request: Request) -> [String: String]? {
            guard let form = try? request.form(), let secret = form["client_secret"] else {
                refusals.withLock { $0.append("no form or client_secret") }
                return nil
            }
            do {
                let jws = try JWS(compact: secret)
                try jws.verify(with: publicKey)
                let claims = try JSONSerialization.jsonObject(with: Data(jws.payload)) as? [String: Any] ?? [:]
                let now = Int(Date().timeIntervalSince1970)
                let iat = claims["iat"] as? Int ?? 0
                let exp = claims["exp"] as? Int ?? 0
                guard jws.header.alg == "ES256", jws.header.kid == Self.keyID, claims["iss"] as? String == Self.teamID,
                    claims["sub"] as? String == Self.clientID, form["client_id"] == Self.clientID,
                    claims["aud"] as? String == "https://appleid.apple.com", iat <= now + 5, exp > now,
                    exp - iat <= 15_777_000
                else {
                    refusals.withLock { $0.append("claims \(claims) header \(jws.header)") }
                    return nil
                }
                return form
            } catch {
                refusals.withLock { $0.append("\(error)") }
                return nil
            }
        }
        @Sendable func answer(_ status: Int, _ json: String) -> Response {
            Response(status: status, headers: ["Content-Type": "application/json"], body: Array(json.utf8))
        }
        router.post("/auth/token") { request, _ in
            guard let form = checked(request) else { return answer(400, #"{"error":"invalid_client"}"#) }
            guard form["grant_type"] == "authorization_code", let code = form["code"],
                exchanged.withLock({ $0.insert(code).inserted })
            else { return answer(400, #"{"error":"invalid_grant"}"#) }
            return answer(
                200,
                #"{"access_token":"a-\#(code)","token_type":"Bearer","expires_in":3600,"refresh_token":"r-\#(code)","id_token":"x"}"#
            )
        }
        router.post("/auth/revoke") { request, _ in
            guard let form = checked(request) else { return answer(400, #"{"error":"invalid_client"}"#) }
            if awayFor.withLock({ count in
                defer { count = max(0, count - 1) }
                return count > 0
            }) {
                return answer(503, "{}")
            }
            guard form["token_type_hint"] == "refresh_token", let token = form["token"] else {
                return answer(400, #"{"error":"invalid_request"}"#)
            }
            revoked.withLock { $0.append(token) }
            return answer(200, "")
        }
        server = try HTTPServer.started(router, name: "apple")
    }
}

/// Sign in with Apple's authorization code exchanged at sign-in, its refresh token kept sealed,
/// and revoked from the queue when the account is deleted or Apple unlinked — retried while
/// Apple is away, never holding up the deletion.
@Suite(.serialized) struct AppleTokenTests {
    func withService(
        _ idp: TestIdentityProvider, _ apple: FakeAppleTokenEndpoints, _ body: (AuthHarness) async throws -> Void
    ) async throws {
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("apple-\(UUID()).p8").path
        try apple.key.pemRepresentation().write(toFile: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        try await AuthHarness.with(
            database: "pier_test_auth_apple_tokens",
            settings: [
                "PIER_AUTH_APPLE_AUDIENCES": FakeAppleTokenEndpoints.clientID, "PIER_AUTH_APPLE_JWKS_URL": idp.jwksURL,
                "PIER_AUTH_APPLE_TEAM_ID": FakeAppleTokenEndpoints.teamID,
                "PIER_AUTH_APPLE_KEY_ID": FakeAppleTokenEndpoints.keyID,
                "PIER_AUTH_APPLE_KEY_FILE": keyFile, "PIER_AUTH_APPLE_URL": apple.url, "PIER_AUTH_APPLE_RETRY_S": "1",
                // The worker's own rounds wait: the test drives it.
                "PIER_AUTH_MAIL_POLL_S": "3600",
            ], body)
    }

    func signIn(_ auth: AuthHarness, _ idp: TestIdentityProvider, code: String?, subject: String = "001234.abcdef")
        async throws -> Reply
    {
        let extra = code.map { #","authorizationCode":"\#($0)""# } ?? ""
        return try await auth.send(
            "POST", "/auth/apple", json: IdentitySignInTests.body(try idp.token(["sub": subject]), extra: extra))
    }

    /// The revocations the queue holds: revoked, given up, waiting.
    func queue(_ auth: AuthHarness) async throws -> [(revoked: Bool, failed: Bool, attempts: Int)] {
        try await auth.pool.query(
            "SELECT revoked_at IS NOT NULL AS revoked, failed_at IS NOT NULL AS failed, attempts FROM auth.apple_revocations ORDER BY id"
        ).map { (try $0.decode("revoked"), try $0.decode("failed"), try $0.decode("attempts")) }
    }

    @Test func deletingTheAccountRevokesApplesTokenEvenWhileAppleIsAway() async throws {
        let (idp, apple) = (try TestIdentityProvider(), try FakeAppleTokenEndpoints())
        try await withService(idp, apple) { auth in
            let created = try await signIn(auth, idp, code: "c1")
            #expect(created.status == 201, "\(created.text)")
            #expect(apple.exchanged.withLock { $0 } == ["c1"] && apple.refusals.withLock { $0 }.isEmpty)
            // Kept sealed: the token's text is nowhere in the row.
            let stored = try await auth.pool.query(
                "SELECT apple_refresh_token FROM auth.identities WHERE provider = 'apple'")[0]
                .decode("apple_refresh_token", as: PostgresBytes.self).bytes
            #expect(!stored.isEmpty && String(decoding: stored, as: UTF8.self).contains("r-c1") == false)

            apple.awayFor.withLock { $0 = 2 }
            let session = try created.decode(AuthSession.self)
            #expect(try await auth.send("DELETE", "/auth/me", token: session.accessToken).status == 204)
            #expect(try await queue(auth).count == 1, "queued in the deletion's transaction")
            let revocations = try #require(auth.live.service.appleRevocations)
            #expect(await revocations.revokeDue() == 0)
            #expect(try await queue(auth).first?.attempts == 1 && apple.revoked.withLock { $0 }.isEmpty)
            // Retried (after its delay) until Apple is back.
            #expect(
                await eventually(timeout: .seconds(20)) {
                    await revocations.revokeDue()
                    return apple.revoked.withLock { $0 } == ["r-c1"]
                })
            #expect(try await queue(auth).first?.revoked == true)
            #expect(try await auth.pool.query("SELECT 1 FROM auth.apple_revocations WHERE sealed_token IS NOT NULL").isEmpty)
            #expect(apple.refusals.withLock { $0 }.isEmpty, "\(apple.refusals.withLock { $0 })")
        }
        await apple.server.shutdown()
        await idp.server.shutdown()
    }

    /// Unlinking Apple revokes its token; a newer token replaces (and revokes) the older; a
    /// sign-in without a code, or with a code Apple refuses, still signs in.
    @Test func unlinkingAppleAndANewerTokenRevokeTheOldOne() async throws {
        let (idp, apple) = (try TestIdentityProvider(), try FakeAppleTokenEndpoints())
        try await withService(idp, apple) { auth in
            let subject = "009999.unlink"
            #expect(try await signIn(auth, idp, code: "u1", subject: subject).status == 201)
            #expect(
                try await signIn(auth, idp, code: "u1", subject: subject).status == 200, "a spent code: signed in all the same")
            #expect(try await signIn(auth, idp, code: nil, subject: subject).status == 200)
            let oversized = try await signIn(auth, idp, code: String(repeating: "c", count: 1025), subject: subject)
            #expect(oversized.status == 422 && oversized.fields == ["authorizationCode"], "\(oversized.text)")
            let session = try await signIn(auth, idp, code: "u2", subject: subject).decode(AuthSession.self)
            let revocations = try #require(auth.live.service.appleRevocations)
            await revocations.revokeDue()
            #expect(apple.revoked.withLock { $0 } == ["r-u1"], "the replaced token")
            // A password (another account's hash), so that Apple may go.
            _ = try await auth.register(TakeoverTests.email("password"))
            try await auth.pool.execute(
                "UPDATE auth.users SET password_hash = (SELECT password_hash FROM auth.users WHERE password_hash IS NOT NULL LIMIT 1) WHERE id = \(session.user.id)"
            )
            let identities = try await auth.send("GET", "/auth/identities", token: session.accessToken)
                .decode(ItemList<LinkedIdentity>.self).items
            let id = try #require(identities.first?.id)
            let unlinked = try await auth.send("DELETE", "/auth/identities/\(id)", token: session.accessToken)
            #expect(unlinked.status == 204, "\(unlinked.text)")
            await revocations.revokeDue()
            #expect(apple.revoked.withLock { $0 } == ["r-u1", "r-u2"])
        }
        await apple.server.shutdown()
        await idp.server.shutdown()
    }

    @Test func settingsGoTogether() {
        #expect(throws: Environment.Failure.self) {
            try AuthConfiguration(
                environment: Environment(["PIER_AUTH_APPLE_TEAM_ID": "T", "PIER_AUTH_APPLE_KEY_ID": "K"]), production: false)
        }
        #expect(throws: Environment.Failure.self) {
            try AuthConfiguration(
                environment: Environment([
                    "PIER_AUTH_APPLE_AUDIENCES": "a", "PIER_AUTH_APPLE_TEAM_ID": "T", "PIER_AUTH_APPLE_KEY_ID": "K",
                    "PIER_AUTH_APPLE_KEY_FILE": "/x", "PIER_AUTH_APPLE_URL": "http://apple.example",
                ]), production: false)
        }
        #expect(AppleTokens.form([("a b", "x+y/é&=")]) == "a%20b=x%2By%2F%C3%A9%26%3D")
    }

    /// Deployments always name the optional key's path (a Secret or credential that may be
    /// absent): the file absent or empty with neither id is the feature off; a key present with
    /// the ids missing is an error that names the setting, as is an id with no key.
    @Test func anOptionalKeyThatIsNotThereTurnsTheFeatureOff() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pier-apple-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (absent, empty, key) = (folder.path + "/none.p8", folder.path + "/empty.p8", folder.path + "/key.p8")
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        #expect(FileManager.default.createFile(atPath: key, contents: Data("-----BEGIN PRIVATE KEY-----".utf8)))
        for path in [absent, empty] {
            let configuration = try AuthConfiguration(
                environment: Environment(["PIER_AUTH_APPLE_KEY_FILE": path]), production: false)
            #expect(configuration.appleTokens == nil, "\(path)")
        }
        for settings in [
            ["PIER_AUTH_APPLE_KEY_FILE": key],
            ["PIER_AUTH_APPLE_KEY_FILE": absent, "PIER_AUTH_APPLE_TEAM_ID": "T"],
            ["PIER_AUTH_APPLE_KEY_FILE": empty, "PIER_AUTH_APPLE_KEY_ID": "K"],
        ] {
            #expect(throws: Environment.Failure.self, "\(settings)") {
                try AuthConfiguration(environment: Environment(settings), production: false)
            }
        }
        let on = try AuthConfiguration(
            environment: Environment([
                "PIER_AUTH_APPLE_KEY_FILE": key, "PIER_AUTH_APPLE_TEAM_ID": "T", "PIER_AUTH_APPLE_KEY_ID": "K",
                "PIER_AUTH_APPLE_AUDIENCES": "com.example.app",
            ]), production: false)
        #expect(on.appleTokens?.teamID == "T")
    }
}
