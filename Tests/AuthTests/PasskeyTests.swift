import Foundation
import PierAppAssociation
import PierCBOR
import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierTestSupport
import Testing

@testable import AuthService

/// Passkeys through HTTP with a software authenticator (``SoftwareAuthenticator``): registered and
/// used usernameless and by address, with ES256, EdDSA and RS256, and refused in every way the
/// specification asks: a replayed or expired challenge, another origin or relying party, another
/// key's signature, no user presence, a counter that goes backwards, malformed CBOR.
@Suite(.serialized) struct PasskeyTests {
    let takeover = TakeoverTests()
    static let rpID = "seeds.example"
    static let origin = "https://seeds.example"
    static let settings = [
        "PIER_AUTH_PUBLIC_URL": "https://seeds.example", "PIER_ANDROID_PACKAGE": "example.seeds",
        "PIER_ANDROID_CERT_SHA256": Array(repeating: "AB", count: 32).joined(separator: ":"),
    ]

    func withService(_ body: (AuthHarness) async throws -> Void) async throws {
        try await AuthHarness.with(database: "pier_test_auth_passkeys", settings: Self.settings, body)
    }

    static func json(_ value: some Encodable) throws -> String {
        String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
    }

    /// A signed-in account with a proven address.
    func account(_ auth: AuthHarness) async throws -> (AuthSession, String) {
        let (_, email) = try await auth.register(TakeoverTests.email("passkey"))
        try await auth.pool.execute("UPDATE auth.users SET email_verified_at = now() WHERE email = \(email)")
        return (try await takeover.login(auth, email).decode(AuthSession.self), email)
    }

    /// Registers `authenticator`'s passkey for the account of `session`.
    func register(_ auth: AuthHarness, _ session: AuthSession, _ authenticator: SoftwareAuthenticator) async throws -> Reply {
        let options = try await auth.send("POST", "/auth/passkeys/register/options", token: session.accessToken)
        #expect(options.status == 200, "\(options.text)")
        return try await auth.send(
            "POST", "/auth/passkeys/register",
            json: try Self.json(try authenticator.register(options.decode(PasskeyCreationOptions.self))),
            token: session.accessToken)
    }

    func loginOptions(_ auth: AuthHarness, email: String? = nil) async throws -> PasskeyRequestOptions {
        let reply = try await auth.send(
            "POST", "/auth/passkeys/login/options", json: email.map { #"{"email":"\#($0)"}"# } ?? "{}")
        #expect(reply.status == 200, "\(reply.text)")
        return try reply.decode(PasskeyRequestOptions.self)
    }

    func login(_ auth: AuthHarness, _ assertion: PasskeyAssertion) async throws -> Reply {
        try await auth.send("POST", "/auth/passkeys/login", json: try Self.json(assertion))
    }

    @Test func aPasskeySignsInUsernamelessAndByAddress() async throws {
        try await withService { auth in
            let (session, email) = try await account(auth)
            let phone = try SoftwareAuthenticator.es256(rpID: Self.rpID, origin: Self.origin)
            let options = try await auth.send("POST", "/auth/passkeys/register/options", token: session.accessToken)
                .decode(PasskeyCreationOptions.self)
            #expect(options.rp.id == Self.rpID && options.user.name == email && options.attestation == "none")
            #expect(options.user.id == Base64.urlEncoded(session.user.id.bytes))
            #expect(
                options.pubKeyCredParams.map(\.alg) == [-7, -8, -257] && options.authenticatorSelection.residentKey == "required")
            let added = try await auth.send(
                "POST", "/auth/passkeys/register", json: try Self.json(try phone.register(options, name: "Anna's iPhone")),
                token: session.accessToken)
            #expect(added.status == 201, "\(added.text)")
            let passkey = try added.decode(Passkey.self)
            #expect(passkey.name == "Anna's iPhone" && passkey.backedUp && !passkey.suspended)
            #expect(
                await eventually {
                    auth.mails(to: email).contains { ($0.headers["subject"] ?? "").contains("passkey was added") }
                })
            // The same authenticator again: excluded by the options, refused by the server.
            let again = try await auth.send("POST", "/auth/passkeys/register/options", token: session.accessToken)
                .decode(PasskeyCreationOptions.self)
            #expect(again.excludeCredentials.map(\.id) == [Base64.urlEncoded(phone.credentialID)])
            #expect(try await register(auth, session, phone).status == 409)

            // Usernameless: no address, any passkey of the site.
            let anyone = try await loginOptions(auth)
            #expect(anyone.rpId == Self.rpID && anyone.allowCredentials.isEmpty)
            let signedIn = try await login(auth, try phone.assert(anyone, userHandle: session.user.id.bytes))
            #expect(signedIn.status == 200, "\(signedIn.text)")
            let claims = try SecondFactorTests.claims(try signedIn.decode(AuthSession.self).accessToken)
            #expect(Set(claims["amr"] as? [String] ?? []) == ["swk", "mfa"] && claims["acr"] as? String == "aal2")
            // By address: the account's passkeys are named; an unknown address gets one that
            // matches nothing, the same each time.
            let named = try await loginOptions(auth, email: email)
            #expect(named.allowCredentials.map(\.id) == [Base64.urlEncoded(phone.credentialID)])
            #expect(try await login(auth, try phone.assert(named, userHandle: nil)).status == 200)
            let stranger = try await loginOptions(auth, email: "nobody@example.com")
            #expect(stranger.allowCredentials.count == 1)
            #expect(try await loginOptions(auth, email: "nobody@example.com").allowCredentials == stranger.allowCredentials)
            // A security key (not synced, user verified by PIN): `hwk`.
            let key = try SoftwareAuthenticator.es256(rpID: Self.rpID, origin: Self.origin)
            key.flags = SoftwareAuthenticator.up | SoftwareAuthenticator.uv
            key.counter = 7
            #expect(try await register(auth, session, key).status == 201)
            let viaKey = try await login(auth, try key.assert(try await loginOptions(auth), userHandle: nil))
            #expect(
                Set(try SecondFactorTests.claims(try viaKey.decode(AuthSession.self).accessToken)["amr"] as? [String] ?? []) == [
                    "hwk", "mfa",
                ])
            let list = try await auth.send("GET", "/auth/passkeys", token: session.accessToken).decode(ItemList<Passkey>.self)
                .items
            #expect(list.count == 2 && list.allSatisfy { $0.lastUsedAt != nil })
        }
    }

    /// An address never proven adds no passkey: whoever registered it first would keep a way in
    /// after its owner claims the account.
    @Test func anUnprovenAddressAddsNoPasskey() async throws {
        try await withService { auth in
            let (session, _) = try await auth.register(TakeoverTests.email("squatter"))
            let options = try await auth.send("POST", "/auth/passkeys/register/options", token: session.accessToken)
            #expect(options.status == 403 && options.problem?.code == .emailUnverified, "\(options.text)")
        }
    }

    @Test func edDSAAndRS256KeysAndTheAndroidOrigin() async throws {
        try await withService { auth in
            let (session, _) = try await account(auth)
            let android = try #require(try AppAssociation(environment: Environment(Self.settings)).androidOrigins.first)
            for authenticator in [
                SoftwareAuthenticator(.edDSA(try Ed25519PrivateKey.generate()), rpID: Self.rpID, origin: Self.origin),
                SoftwareAuthenticator(.rs256(try TestRSAKey()), rpID: Self.rpID, origin: android),
            ] {
                let added = try await register(auth, session, authenticator)
                #expect(added.status == 201, "\(added.text)")
                let signedIn = try await login(auth, try authenticator.assert(try await loginOptions(auth), userHandle: nil))
                #expect(signedIn.status == 200, "\(signedIn.text)")
            }
            // RSA keys of 2048 to 4096 bits only: a larger one slows every later check.
            let large = SoftwareAuthenticator(.rs256(try TestRSAKey(bits: 4608)), rpID: Self.rpID, origin: android)
            let refused = try await register(auth, session, large)
            #expect(refused.status == 422 && refused.text.contains("4608-bit"), "\(refused.text)")
        }
    }

    @Test func ceremoniesAreRefusedAsTheSpecificationAsks() async throws {
        try await withService { auth in
            let (session, _) = try await account(auth)
            let phone = try SoftwareAuthenticator.es256(rpID: Self.rpID, origin: Self.origin)
            #expect(try await register(auth, session, phone).status == 201)
            func refused(_ assertion: PasskeyAssertion, _ field: String, _ what: String) async throws {
                let reply = try await login(auth, assertion)
                #expect(reply.status == 401 && reply.problem?.code == .invalidPasskey, "\(what): \(reply.text)")
                #expect(reply.fields == [field], "\(what): \(reply.text)")
            }
            // A replayed challenge: the same assertion twice.
            let first = try phone.assert(try await loginOptions(auth), userHandle: nil)
            #expect(try await login(auth, first).status == 200)
            try await refused(first, "response.clientDataJSON", "a replayed challenge")
            // An expired one.
            let late = try await loginOptions(auth)
            try await auth.pool.execute("UPDATE auth.webauthn_challenges SET expires_at = now() - interval '1 second'")
            try await refused(try phone.assert(late, userHandle: nil), "response.clientDataJSON", "an expired challenge")
            // Another origin, another relying party, a registration's client data.
            phone.origin = "https://seeds.example.evil.com"
            try await refused(
                try phone.assert(try await loginOptions(auth), userHandle: nil), "response.clientDataJSON", "origin")
            phone.origin = Self.origin
            phone.rpID = "evil.example"
            try await refused(try phone.assert(try await loginOptions(auth), userHandle: nil), "response.authenticatorData", "rp")
            phone.rpID = Self.rpID
            phone.type = "webauthn.create"
            try await refused(try phone.assert(try await loginOptions(auth), userHandle: nil), "response.clientDataJSON", "type")
            phone.type = "webauthn.get"
            // Another key's signature; the user not present; another account's user handle.
            let thief = try SoftwareAuthenticator.es256(rpID: Self.rpID, origin: Self.origin)
            try await refused(
                try phone.assert(try await loginOptions(auth), userHandle: nil, signWith: thief), "response.signature", "key")
            phone.flags &= ~SoftwareAuthenticator.up
            try await refused(try phone.assert(try await loginOptions(auth), userHandle: nil), "response.authenticatorData", "UP")
            phone.flags |= SoftwareAuthenticator.up
            try await refused(try phone.assert(try await loginOptions(auth), userHandle: UUID().bytes), "id", "user handle")
            // Unknown to this server.
            try await refused(try thief.assert(try await loginOptions(auth), userHandle: nil), "id", "unknown")
            // Still good after all that.
            #expect(try await login(auth, try phone.assert(try await loginOptions(auth), userHandle: nil)).status == 200)
        }
    }

    /// A counter that goes backwards suspends the passkey (§6.1.1, a cloned authenticator): the
    /// sign-in is refused, the list says so, and no later sign-in passes with it.
    @Test func aCounterGoingBackwardsSuspendsThePasskey() async throws {
        try await withService { auth in
            let (session, _) = try await account(auth)
            let key = try SoftwareAuthenticator.es256(rpID: Self.rpID, origin: Self.origin)
            key.flags = SoftwareAuthenticator.up | SoftwareAuthenticator.uv
            key.counter = 10
            #expect(try await register(auth, session, key).status == 201)
            #expect(try await login(auth, try key.assert(try await loginOptions(auth), userHandle: nil)).status == 200)
            key.counter = 3
            let cloned = try await login(auth, try key.assert(try await loginOptions(auth), userHandle: nil))
            #expect(cloned.status == 401 && cloned.fields == ["response.authenticatorData"], "\(cloned.text)")
            let list = try await auth.send("GET", "/auth/passkeys", token: session.accessToken).decode(ItemList<Passkey>.self)
            #expect(list.items.first?.suspended == true)
            key.counter = 50
            let after = try await login(auth, try key.assert(try await loginOptions(auth), userHandle: nil))
            #expect(after.status == 401 && after.text.contains("suspended"), "\(after.text)")
            // Removed (a sensitive action: a recent sign-in here), it is unknown.
            let id = try #require(list.items.first?.id)
            #expect(try await auth.send("DELETE", "/auth/passkeys/\(id)", token: session.accessToken).status == 204)
            #expect(try await auth.send("GET", "/auth/passkeys", token: session.accessToken).text.contains(#""items":[]"#))
        }
    }

    /// A passkey that did not verify the user is one factor: an account with an authenticator
    /// app is asked its code; one that did is two, and signs in.
    @Test func aPasskeyWithoutUserVerificationMeetsTheSecondFactor() async throws {
        try await withService { auth in
            let (session, email) = try await account(auth)
            let phone = try SoftwareAuthenticator.es256(rpID: Self.rpID, origin: Self.origin)
            #expect(try await register(auth, session, phone).status == 201)
            let secret = try await SecondFactorTests.turnOn(auth, session.accessToken)
            #expect(try await login(auth, try phone.assert(try await loginOptions(auth), userHandle: nil)).status == 200)
            phone.flags &= ~SoftwareAuthenticator.uv
            let asked = try await login(auth, try phone.assert(try await loginOptions(auth), userHandle: nil))
            #expect(asked.status == 401 && asked.problem?.code == .mfaRequired, "\(asked.text)")
            let done = try await auth.send(
                "POST", "/auth/mfa/verify",
                json:
                    #"{"mfaToken":"\#(try #require(asked.problem?.mfaToken))","code":"\#(SecondFactorTests.code(secret, step: 1))"}"#
            )
            #expect(done.status == 200, "\(done.text)")
            #expect(
                Set(try SecondFactorTests.claims(try done.decode(AuthSession.self).accessToken)["amr"] as? [String] ?? []) == [
                    "swk", "otp", "mfa",
                ])
            _ = email
        }
    }

    /// Malformed attestation objects, fuzzed from a valid one (bytes flipped, cut, inserted), and
    /// garbage: never a crash, never a 5xx; each answer a problem naming a field.
    @Test func malformedCBORIsRefusedNeverAServerError() async throws {
        try await withService { auth in
            let (session, _) = try await account(auth)
            let phone = try SoftwareAuthenticator.es256(rpID: Self.rpID, origin: Self.origin)
            var generator = SystemRandomNumberGenerator()
            for round in 0..<60 {
                let options = try await auth.send("POST", "/auth/passkeys/register/options", token: session.accessToken)
                    .decode(PasskeyCreationOptions.self)
                var registration = try phone.register(options)
                var object = Base64.urlDecoded(registration.response.attestationObject)!
                switch round % 4 {
                case 0:
                    for _ in 0..<3 {
                        object[Int.random(in: 0..<object.count, using: &generator)] ^= UInt8.random(
                            in: 1...255, using: &generator)
                    }
                case 1: object = Array(object.prefix(Int.random(in: 0..<object.count, using: &generator)))
                case 2: object.insert(contentsOf: SecureRandom.bytes(5), at: Int.random(in: 0..<object.count, using: &generator))
                default: object = SecureRandom.bytes(Int.random(in: 1..<400, using: &generator))
                }
                if object.isEmpty { object = [0xFF] }
                registration.response.attestationObject = Base64.urlEncoded(object)
                let reply = try await auth.send(
                    "POST", "/auth/passkeys/register", json: try Self.json(registration), token: session.accessToken)
                #expect([201, 409, 422].contains(reply.status), "round \(round): \(reply.status) \(reply.text)")
                if reply.status == 422 { #expect(reply.problem?.errors?.isEmpty == false) }
            }
        }
    }
}
