import Foundation
import PierHTTP
import PierModels
import PierService
import PierTestSupport
import Testing

@testable import AuthService

/// `GET /auth/me/events`: the account pushed as it changes, over a real connection; the
/// stream ends with the session that opened it and with the account.
@Suite(.serialized) struct LiveAccountTests {
    func withService(_ body: (AuthHarness) async throws -> Void) async throws {
        try await AuthHarness.with(database: "pier_test_auth_live", settings: ["PIER_LIVE_HEARTBEAT_S": "1"], body)
    }

    func open(_ auth: AuthHarness, _ session: AuthSession) async throws -> EventStream {
        let stream = try await EventStream.open(auth.base + "/auth/me/events", token: session.accessToken)
        #expect(stream.status == 200)
        #expect(stream.headers["Content-Type"] == "text/event-stream; charset=utf-8")
        return stream
    }

    func login(_ auth: AuthHarness, _ email: String, password: String = "a long enough passphrase") async throws
        -> AuthSession
    {
        try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"\#(password)"}"#)
            .decode(AuthSession.self)
    }

    func user(_ message: EventStream.Message?) throws -> User {
        let message = try #require(message)
        #expect(message.event == "user")
        return try JSONDecoder.pier.decode(User.self, from: Data(try #require(message.data).utf8))
    }

    @Test func profileAndVerificationArePushedAsTheyChange() async throws {
        try await withService { auth in
            let (session, email) = try await auth.register()
            let stream = try await open(auth, session)
            let first = try user(try await stream.nextEvent())
            #expect(first.id == session.user.id && first.email == email && !first.emailVerified)

            // Another account's change sends nothing here; this one's does.
            let (other, _) = try await auth.register()
            #expect(
                try await auth.send("PATCH", "/auth/me", json: #"{"displayName":"Other"}"#, token: other.accessToken).status
                    == 200)
            let renamed = try await auth.send("PATCH", "/auth/me", json: #"{"displayName":"Anna"}"#, token: session.accessToken)
            #expect(renamed.status == 200)
            #expect(try user(try await stream.nextEvent()).displayName == "Anna")

            // The address proven through the mailed link, opened anywhere (no token needed).
            let token = try await auth.mailedToken(to: email, containing: "/auth/email/verify?token=")
            let verified = try await auth.send("POST", "/auth/email/verify", json: #"{"token":"\#(token)"}"#)
            #expect(verified.status == 200, "\(verified.text)")
            let now = try user(try await stream.nextEvent())
            #expect(now.emailVerified && now.displayName == "Anna")

            // Saving the same name changes nothing: no message, heartbeats only.
            #expect(
                try await auth.send("PATCH", "/auth/me", json: #"{"displayName":"Anna"}"#, token: session.accessToken).status
                    == 200)
            #expect(try await stream.next()?.isHeartbeat == true)
            await stream.close()
        }
    }

    @Test func aStreamEndsWithItsSessionAndWithTheAccount() async throws {
        try await withService { auth in
            let (phone, email) = try await auth.register()
            let login = try await auth.send(
                "POST", "/auth/login", json: #"{"email":"\#(email)","password":"a long enough passphrase"}"#)
            let laptop = try login.decode(AuthSession.self)
            let phoneStream = try await open(auth, phone)
            let laptopStream = try await open(auth, laptop)
            _ = try await phoneStream.nextEvent()
            _ = try await laptopStream.nextEvent()

            // The phone signs out: its stream ends, the laptop's goes on.
            let out = try await auth.send("POST", "/auth/logout", json: #"{"refreshToken":"\#(phone.refreshToken)"}"#)
            #expect(out.status == 204, "\(out.text)")
            #expect(try await phoneStream.nextEvent() == nil)
            #expect(try await laptopStream.next()?.isHeartbeat == true)
            // A stream cannot be opened again with the signed-out session's token.
            #expect(
                try await eventually {
                    let again = try await EventStream.open(auth.base + "/auth/me/events", token: phone.accessToken)
                    await again.close()
                    return again.status == 401
                })

            // The account deleted: the last stream ends.
            #expect(try await auth.send("DELETE", "/auth/me", token: laptop.accessToken).status == 204)
            #expect(try await laptopStream.nextEvent() == nil)
        }
    }

    /// A thief holding a session of the account (the password, a copied refresh token) keeps
    /// no stream once the owner ends it: by changing the password, by a refresh token used
    /// twice, or when a team role granted to the account ends every session of it.
    @Test func everyEndOfAThiefsSessionEndsTheirStream() async throws {
        try await withService { auth in
            let password = "a long enough passphrase"
            let (owner, email) = try await auth.register()

            // The password changed from the owner's session: the thief's stream ends, the owner's not.
            let thief = try await login(auth, email)
            let thiefs = try await open(auth, thief)
            let owners = try await open(auth, owner)
            _ = try await thiefs.nextEvent()
            _ = try await owners.nextEvent()
            let changed = try await auth.send(
                "POST", "/auth/password", json: #"{"currentPassword":"\#(password)","newPassword":"another long passphrase"}"#,
                token: owner.accessToken)
            #expect(changed.status == 200 || changed.status == 204, "\(changed.text)")
            #expect(try await thiefs.nextEvent() == nil)
            #expect(try await owners.next()?.isHeartbeat == true)
            await owners.close()

            // A copied refresh token: the thief refreshes first and streams on the new token;
            // the owner's app then sends the old one (after the grace window): the family ends.
            let copied = try await auth.send(
                "POST", "/auth/refresh", json: #"{"refreshToken":"\#(owner.refreshToken)"}"#
            ).decode(AuthSession.self)
            let copiedStream = try await open(auth, copied)
            _ = try await copiedStream.nextEvent()
            #expect(
                try await eventually(interval: .milliseconds(200)) {
                    try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(owner.refreshToken)"}"#)
                        .status == 401
                })
            #expect(try await copiedStream.nextEvent() == nil)
        }
    }

    /// A team role granted to an account ends every stream of it (its sessions end: only a fresh
    /// sign-in carries the role); disabling the account ends the next one.
    @Test func aRoleGrantedOrTheAccountDisabledEndsItsStreams() async throws {
        try await withService { auth in
            let (admin, adminEmail) = try await auth.register()
            try await auth.pool.execute(
                "UPDATE auth.users SET role = 'admin', email_verified_at = now() WHERE id = \(admin.user.id)")
            let staff = try await login(auth, adminEmail)
            let (phone, email) = try await auth.register()
            try await auth.pool.execute("UPDATE auth.users SET email_verified_at = now() WHERE id = \(phone.user.id)")
            let thief = try await login(auth, email)
            let streams = [try await open(auth, phone), try await open(auth, thief)]
            for stream in streams { _ = try await stream.nextEvent() }
            let granted = try await auth.send(
                "PUT", "/auth/users/\(phone.user.id)/role", json: #"{"role":"support"}"#, token: staff.accessToken)
            #expect(granted.status == 200, "\(granted.text)")
            // The new role may be sent before the end; each stream ends in any case.
            for stream in streams {
                var messages: [EventStream.Message] = []
                while let message = try await stream.nextEvent() { messages.append(message) }
                #expect(try messages.allSatisfy { try user($0).role == "support" })
            }

            let support = try await login(auth, email)
            let stream = try await open(auth, support)
            _ = try await stream.nextEvent()
            let disabled = try await auth.send("POST", "/auth/users/\(phone.user.id)/disable", token: staff.accessToken)
            #expect(disabled.status == 200, "\(disabled.text)")
            var messages: [EventStream.Message] = []
            while let message = try await stream.nextEvent() { messages.append(message) }
            #expect(try messages.allSatisfy { try user($0).disabledAt != nil })
        }
    }
}
