import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierTestSupport
import Testing

@testable import PierClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// ES256 checked by OpenSSL: what an app on Linux passes (Apple platforms use CryptoKit).
struct OpenSSLVerifier: SignatureVerifier {
    func isValidES256(signature: [UInt8], of message: [UInt8], x: [UInt8], y: [UInt8]) -> Bool {
        (try? P256PublicKey(x: x, y: y))?.isValidSignature(signature, for: message) ?? false
    }
}

/// Statuses trusted only when signed by the server's pinned key: they survive a relaunch
/// offline; a status edited on the device, an answer changed on the way, a replay and another
/// user's signed status are all refused.
extension PierClientTests {
    static func signing() async throws -> StatusSigning {
        let jwks = try await PierClient(baseURL: try await base()).call(
            "GET", "/subscriptions/.well-known/jwks.json", signedIn: false)
        return try StatusSigning(jwks: jwks, verifier: OpenSSLVerifier())
    }

    static func signedOptions(_ signing: StatusSigning, installation: String = "install-a") -> PierClient.Options {
        .init(retry: RetryPolicy(maxAttempts: 1), installationID: installation, statusSigning: signing)
    }

    @Test func aSignedStatusSurvivesARelaunchOfflineAndAnEditedOneIsRefused() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pier-signed-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = FileSessionStore(url: folder.appendingPathComponent("session.json"))
        let (_, session) = try await Self.client(signedInAs: Self.email(), store: store)
        let signing = try await Self.signing()
        let pier = PierClient(baseURL: try await Self.base(), sessionStore: store, options: Self.signedOptions(signing))
        let admin = try await Self.adminClient()
        let plan = "signed-\(UUID().uuidString.prefix(8).lowercased())"
        try await admin.admin.createPlan(
            CreatePlan(id: plan, name: "Signed", price: 499, currency: "USD", billingPeriod: "P1M", entitlements: [plan]))
        let unpaid = try await pier.subscriptions.status()
        #expect(!unpaid.active && !unpaid.isStale)
        let grant = try await admin.admin.grant(
            CreateGrant(userId: session.user.id, planId: plan, duration: "P7D", reason: "signed test"))
        pier.subscriptions.invalidate()
        #expect(await pier.subscriptions.isEntitled(plan))

        // Relaunched with no server: the signed status, stale, still entitled.
        let nobody = try PortHolder()
        let offline = URL(string: "http://127.0.0.1:\(nobody.port)")!
        func relaunch(installation: String = "install-a") -> PierClient {
            PierClient(baseURL: offline, sessionStore: store, options: Self.signedOptions(signing, installation: installation))
        }
        #expect(await relaunch().subscriptions.isEntitled(plan))
        #expect(try await relaunch().subscriptions.status().isStale)
        // Not on another installation (a kept file copied to another device).
        #expect(!(await relaunch(installation: "install-b").subscriptions.isEntitled(plan)))
        let copied = relaunch(installation: "install-b")
        await #expect(throws: PierError.self) { try await copied.subscriptions.status() }
        #expect(copied.subscriptions.lastRefusal?.kind == .untrusted)

        // The grant revoked: the signed status the device keeps now says so. The owner edits
        // the kept status to give themselves the plan again: refused, whichever part they edit.
        _ = try await admin.admin.revokeGrant(grant.id)
        pier.subscriptions.invalidate()
        #expect(!(await pier.subscriptions.isEntitled(plan)))
        let kept = try Data(contentsOf: store.statusURL)
        var edited = try #require(try JSONSerialization.jsonObject(with: kept) as? [String: Any])
        var value = try #require(edited["value"] as? [String: Any])
        let later = try #require(
            (try JSONSerialization.jsonObject(with: JSONEncoder().encode(grant)) as? [String: Any])?["endsAt"])
        value["active"] = true
        value["status"] = "active"
        value["entitlements"] = [["key": plan, "expiresAt": later]]
        edited["value"] = value
        try JSONSerialization.data(withJSONObject: edited).write(to: store.statusURL)
        #expect(!(await relaunch().subscriptions.isEntitled(plan)))
        // Offline, the answer is the refusal the README promises, not the network's error.
        let refused = relaunch()
        do {
            _ = try await refused.subscriptions.status()
            Issue.record("an edited status was served")
        } catch {
            #expect(error.kind == .untrusted && error.detail.contains("edited"), "\(error)")
        }
        #expect(refused.subscriptions.lastRefusal?.kind == .untrusted)

        // The signed claims themselves edited (the signature kept), and the kept value to match:
        // refused too.
        edited = try #require(try JSONSerialization.jsonObject(with: kept) as? [String: Any])
        let parts = try #require(edited["signed"] as? String).split(separator: ".").map(String.init)
        let signedClaims = try #require(StatusSigning.base64URL(parts[1]))
        var claims = try #require(try JSONSerialization.jsonObject(with: Data(signedClaims)) as? [String: Any])
        var signedStatus = try #require(claims["status"] as? [String: Any])
        signedStatus["active"] = true
        signedStatus["status"] = "active"
        signedStatus["entitlements"] = [["key": plan, "expiresAt": "2099-01-01T00:00:00Z"]]
        claims["status"] = signedStatus
        let forgedPayload = try JSONSerialization.data(withJSONObject: claims).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        edited["signed"] = [parts[0], forgedPayload, parts[2]].joined(separator: ".")
        let year2099 = try #require(ISO8601DateFormatter().date(from: "2099-01-01T00:00:00Z"))
        value["entitlements"] = [["key": plan, "expiresAt": year2099.timeIntervalSinceReferenceDate]]
        edited["value"] = value
        try JSONSerialization.data(withJSONObject: edited).write(to: store.statusURL)
        #expect(!(await relaunch().subscriptions.isEntitled(plan)))

        // Put back as the server signed it: served again.
        try kept.write(to: store.statusURL)
        #expect(try await relaunch().subscriptions.status().isStale)
    }

    @Test func answersChangedOnTheWayAreRefused() async throws {
        let store = MemorySessionStore()
        let (_, session) = try await Self.client(signedInAs: Self.email(), store: store)
        let (_, other) = try await Self.client(signedInAs: Self.email())
        let signing = try await Self.signing()
        let real = try await Self.base()

        // What the real server signs for `token`, with the nonce and installation given.
        @Sendable func signedByServer(token: String, nonce: String, installation: String) async throws -> (String, Data) {
            var request = URLRequest(url: real.appendingPathComponent("subscriptions/me"))
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.setValue(nonce, forHTTPHeaderField: SignedStatusClaims.nonceHeader)
            request.setValue(installation, forHTTPHeaderField: "X-Installation-ID")
            let (body, response) = try await URLSession.shared.data(for: request)
            guard let jws = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: SignedStatusClaims.header) else {
                throw TestFailure("the server signed nothing")
            }
            return (jws, body)
        }
        let replayed = try await signedByServer(
            token: session.accessToken, nonce: "an-older-request-0123456789", installation: "install-a")
        let attacker = try P256PrivateKey.generate()
        let kid = try #require(signing.keys.keys.first)

        // A man in the middle that answers as it likes, in five ways.
        let answer = Locked("")
        let router = Router<BasicRequestContext>()
        router.get("/subscriptions/me") { request, _ in
            let nonce = request.headers[SignedStatusClaims.nonceHeader] ?? ""
            let installation = request.headers["X-Installation-ID"] ?? ""
            var active = try JSONSerialization.jsonObject(with: replayed.1) as? [String: Any] ?? [:]
            active["active"] = true
            active["status"] = "active"
            active["entitlements"] = [["key": "pro", "expiresAt": "2099-01-01T00:00:00Z"]]
            let body = try JSONSerialization.data(withJSONObject: active)
            var headers: HTTPHeaders = ["Content-Type": "application/json"]
            switch answer.withLock({ $0 }) {
            case "unsigned": break
            case "replayed": headers.set(SignedStatusClaims.header, replayed.0)
            case "another user's":
                let theirs = try await signedByServer(token: other.accessToken, nonce: nonce, installation: installation)
                headers.set(SignedStatusClaims.header, theirs.0)
            case "body changed":
                let genuine = try await signedByServer(token: session.accessToken, nonce: nonce, installation: installation)
                headers.set(SignedStatusClaims.header, genuine.0)
            default:  // signed by a key of the attacker's, under the pinned key's id
                let claims: [String: Any] = [
                    "sub": session.user.id.uuidString.lowercased(), "ins": installation, "nonce": nonce,
                    "iat": Int(Date().timeIntervalSince1970), "exp": Int(Date().timeIntervalSince1970) + 3600,
                    "status": active,
                ]
                headers.set(
                    SignedStatusClaims.header,
                    try JWS.sign(
                        payload: Array(try JSONSerialization.data(withJSONObject: claims)),
                        header: JWSHeader(alg: "ES256", kid: kid, typ: SignedStatusClaims.type), key: attacker))
            }
            return Response(status: 200, headers: headers, body: Array(body))
        }
        // The live stream's change, pushed as the server pushes one (read again, signed, by the app).
        router.get("/subscriptions/me/events") { _, _ in
            let event = "event: status\ndata: " + String(decoding: replayed.1, as: UTF8.self) + "\n\n"
            return Response(status: 200, headers: ["Content-Type": "text/event-stream"], body: Array(event.utf8))
        }
        let middle = try HTTPServer.started(router, name: "middle")
        defer { Task { await middle.shutdown() } }
        let pier = PierClient(
            baseURL: URL(string: "http://127.0.0.1:\(middle.port)")!, sessionStore: store,
            options: Self.signedOptions(signing))
        for way in ["unsigned", "replayed", "another user's", "body changed", "forged"] {
            answer.withLock { $0 = way }
            pier.subscriptions.invalidate()
            do {
                let status = try await pier.subscriptions.status()
                // Only the genuine signature passes, and then its status is the server's, not the body's.
                #expect(way == "body changed" && !status.active, "\(way): \(status.value)")
            } catch {
                #expect(error.kind == .untrusted && way != "body changed", "\(way): \(error)")
            }
            #expect(!(await pier.subscriptions.isEntitled("pro")), "\(way)")
        }
        // On the live stream, a change that fails its check shows as no access, and says why.
        answer.withLock { $0 = "forged" }
        var pushed: SubscriptionStatus? = nil
        for await status in pier.subscriptions.updates {
            pushed = status
            break
        }
        #expect(pushed?.active == false && pushed?.entitlements.isEmpty == true, "\(String(describing: pushed))")
        #expect(pier.subscriptions.lastRefusal?.kind == .untrusted)
    }
}

/// What `StatusSigning` pins: ES256 signing keys on P-256 only; a set that is not a JWKS, or
/// holds no such key, is refused when the app starts, not at the first status.
@Suite struct StatusSigningKeySetTests {
    static func entry(alg: String? = "ES256", use: String? = "sig", crv: String = "P-256", kid: String = "k1") throws
        -> [String: String]
    {
        let key = try P256PrivateKey.generate().publicKey
        let jwk = JWK(key: key, kid: kid)
        var entry = ["kty": "EC", "crv": crv, "x": jwk.x, "y": jwk.y, "kid": kid]
        entry["alg"] = alg
        entry["use"] = use
        return entry
    }

    static func set(_ keys: [[String: String]]) throws -> Data {
        try JSONSerialization.data(withJSONObject: ["keys": keys])
    }

    @Test func onlyES256SigningKeysArePinned() throws {
        let pinned = try StatusSigning(
            jwks: try Self.set([
                try Self.entry(kid: "status"), try Self.entry(alg: nil, use: nil, kid: "bare"),
                try Self.entry(alg: "ECDH-ES", kid: "agreement"), try Self.entry(use: "enc", kid: "encryption"),
                try Self.entry(crv: "P-384", kid: "other-curve"),
            ]), verifier: OpenSSLVerifier())
        #expect(Set(pinned.keys.keys) == ["status", "bare"])
    }

    @Test func setsWithoutAStatusKeyAreRefused() throws {
        let refused: [(String, Data)] = [
            ("empty", Data()), ("not JSON", Data("<html>".utf8)), ("no keys", Data(#"{"keys":[]}"#.utf8)),
            ("a key, not a set", Data(#"{"kty":"EC","crv":"P-256"}"#.utf8)),
            ("encryption keys only", try Self.set([try Self.entry(use: "enc")])),
            ("another algorithm only", try Self.set([try Self.entry(alg: "RS256")])),
            (
                "x too short",
                Data(#"{"keys":[{"kty":"EC","crv":"P-256","kid":"k","x":"AAAA","y":"AAAA","alg":"ES256"}]}"#.utf8)
            ),
        ]
        for (name, jwks) in refused {
            #expect(throws: PierError.self, "\(name)") { try StatusSigning(jwks: jwks, verifier: OpenSSLVerifier()) }
            do {
                _ = try StatusSigning(jwks: jwks, verifier: OpenSSLVerifier())
            } catch {
                #expect(error.kind == .decoding, "\(name): \(error)")
            }
        }
    }
}
