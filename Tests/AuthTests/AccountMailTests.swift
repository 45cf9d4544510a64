import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierRuntime
import PierService
import PierTestSupport
import Testing

@testable import AuthService

/// The flows that go through a mailed link, against a real SMTP server the test starts: the
/// mail is read as its reader reads it and its link followed.
@Suite(.serialized) struct AccountMailTests {
    static let password = "a long enough passphrase"

    /// A fresh auth service mailing through `smtp` (with AUTH), links under https://seeds.example.
    func withService(
        _ smtp: SMTPTestServer?, settings: [String: String] = [:], database: String = "pier_test_auth_mail",
        _ body: (AuthHarness) async throws -> Void
    ) async throws {
        let secret = FileManager.default.temporaryDirectory.appendingPathComponent("pier-smtp-password-\(UUID())")
        try "mail-secret\n".write(to: secret, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: secret) }
        var environment = [
            "PIER_APP_NAME": "Seeds", "PIER_AUTH_PUBLIC_URL": "https://seeds.example/",
            "PIER_AUTH_MAIL_FROM": "Seeds <hello@seeds.example>", "PIER_AUTH_MAIL_POLL_S": "1",
        ]
        if let smtp {
            environment["PIER_AUTH_SMTP_URL"] = smtp.url
            environment["PIER_AUTH_SMTP_USER"] = "pier"
            environment["PIER_AUTH_SMTP_PASSWORD_FILE"] = secret.path
        }
        environment.merge(settings) { $1 }
        try await AuthHarness.with(database: database, settings: environment, body)
    }

    static func email() -> String { "seed-\(UUID().uuidString.prefix(8).lowercased())@example.com" }

    /// The path and query of a mailed link, to follow it on the test's service.
    static func path(of link: String) -> String {
        String(link.dropFirst("https://seeds.example".count))
    }

    static func form(_ fields: [String: String]) -> String {
        fields.map { name, value in
            let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
            return name + "=" + (value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value)
        }.joined(separator: "&")
    }

    static let formType: HTTPHeaders = ["Content-Type": "application/x-www-form-urlencoded"]

    @Test func registeringMailsALinkThatVerifiesTheAddress() async throws {
        let smtp = try await SMTPTestServer.start(user: "pier", password: "mail-secret")
        try await withService(smtp) { auth in
            let email = Self.email()
            let reply = try await auth.send(
                "POST", "/auth/register",
                json: #"{"email":"\#(email)","password":"\#(Self.password)","deviceName":"Anna's iPhone"}"#)
            #expect(reply.status == 201)
            let session = try reply.decode(AuthSession.self)
            #expect(session.user.emailVerified == false)

            let mails = await smtp.waitForMails(1)
            #expect(mails.count == 1)
            let mail = try #require(mails.first)
            #expect(mail.headers["x-envelope-from"] == "hello@seeds.example")
            #expect(mail.headers["x-envelope-to"] == email)
            #expect(mail.headers["from"] == "Seeds <hello@seeds.example>")
            #expect(mail.headers["subject"] == "Confirm your email address for Seeds")
            let link = try #require(mail.link(containing: "/auth/email/verify?token="))
            #expect(link.hasPrefix("https://seeds.example/auth/email/verify?token="))
            #expect(mail.html.contains(link) && mail.text.contains("Seeds"))
            // The bodies (which hold the link) are erased once sent (marked just after the server took it).
            #expect(
                try await eventually {
                    let stored = try await auth.pool.query(
                        "SELECT message IS NULL AS erased, sent_at IS NOT NULL AS sent FROM auth.outbox WHERE recipient = \(email)"
                    )
                    return try stored.count == 1
                        && stored.allSatisfy { try $0.decode("erased", as: Bool.self) && $0.decode("sent", as: Bool.self) }
                })

            // A browser opens the link: a page whose form posts the token; a prefetch spends nothing.
            let page = try await auth.send("GET", Self.path(of: link))
            #expect(page.status == 200 && page.headers["Content-Type"]?.hasPrefix("text/html") == true)
            let token = String(link.split(separator: "=", maxSplits: 1)[1])
            #expect(page.text.contains(#"name="token" value="\#(token)""#))
            let confirmed = try await auth.send(
                "POST", "/auth/email/verify", json: Self.form(["token": token]), headers: Self.formType)
            #expect(confirmed.status == 200 && confirmed.text.contains("Address confirmed"))
            let garbled = try await auth.send("POST", "/auth/email/verify", json: "token=%zz", headers: Self.formType)
            #expect(garbled.status == 400 && garbled.text.contains("percent-encoding"))
            let me = try await auth.send("GET", "/auth/me", token: session.accessToken).decode(User.self)
            #expect(me.emailVerified)
            // Single use: the app's JSON call with the same token is refused with a stable code.
            let again = try await auth.send("POST", "/auth/email/verify", json: #"{"token":"\#(token)"}"#)
            #expect(again.status == 422 && again.text.contains("invalid_email_token"))
            #expect(try await auth.send("POST", "/auth/email/verify", json: #"{"token":"made-up"}"#).status == 422)
            #expect(try await auth.send("POST", "/auth/email/verify", json: #"{"token":7}"#).status == 422)
            // Tokens minted from now on say so.
            let refreshed = try await auth.send(
                "POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#
            ).decode(AuthSession.self)
            let claims = try JSONSerialization.jsonObject(with: Data(try JWS(compact: refreshed.accessToken).payload))
            #expect((claims as? [String: Any])?["email_verified"] as? Bool == true)
            #expect(refreshed.user.emailVerified)
        }
    }

    /// With verification required, login waits for it; the link can be asked for again without
    /// being signed in (202 either way, for any address).
    @Test func loginCanRequireAVerifiedAddress() async throws {
        let smtp = try await SMTPTestServer.start(user: "pier", password: "mail-secret")
        try await withService(smtp, settings: ["PIER_AUTH_REQUIRE_VERIFIED_EMAIL": "true"]) { auth in
            let email = Self.email()
            _ = try await auth.register(email, password: Self.password)
            let login = #"{"email":"\#(email)","password":"\#(Self.password)"}"#
            let refused = try await auth.send("POST", "/auth/login", json: login)
            #expect(refused.status == 403)
            #expect(try refused.decode(Problem.self).code == .emailUnverified)

            #expect(
                try await auth.send("POST", "/auth/email/verify/resend", json: #"{"email":"nobody@example.com"}"#).status == 202)
            #expect(
                try await auth.send("POST", "/auth/email/verify/resend", json: #"{"email":"\#(email.uppercased())"}"#).status
                    == 202)
            #expect(try await auth.send("POST", "/auth/email/verify/resend", json: #"{"email":"not an address"}"#).status == 422)
            #expect(try await auth.send("POST", "/auth/email/verify/resend", json: #"{}"#).status == 422)
            // Anonymous, the address is needed; a field it does not know is named.
            #expect(try await auth.send("POST", "/auth/email/verify/resend").status == 400)
            let unknown = try await auth.send("POST", "/auth/email/verify/resend", json: #"{"email":"a@b.co","mail":"x"}"#)
            #expect(unknown.status == 422 && unknown.fields == ["mail"])
            let mails = await smtp.waitForMails(2)
            #expect(mails.count == 2)
            #expect(mails.allSatisfy { $0.headers["x-envelope-to"] == email })
            // Either link works (each is its own token); the app posts it as JSON.
            let token = try #require(mails.last?.link(containing: "token=")).split(separator: "=", maxSplits: 1)[1]
            let verified = try await auth.send("POST", "/auth/email/verify", json: #"{"token":"\#(token)"}"#)
            #expect(verified.status == 200)
            #expect(try verified.decode(User.self).emailVerified)
            #expect(try await auth.send("POST", "/auth/login", json: login).status == 200)
            // Verified: nothing more to send.
            #expect(try await auth.send("POST", "/auth/email/verify/resend", json: #"{"email":"\#(email)"}"#).status == 202)
            // Another account's mail, queued after it, arrives after whatever that sent: nothing.
            let other = Self.email()
            _ = try await auth.register(other, password: Self.password)
            let all = await smtp.waitForMails(3)
            #expect(all.count == 3 && all.last?.headers["x-envelope-to"] == other)
        }
    }

    @Test func aForgottenPasswordIsResetThroughTheMailedLink() async throws {
        let smtp = try await SMTPTestServer.start(user: "pier", password: "mail-secret")
        try await withService(smtp) { auth in
            let email = Self.email()
            let (session, _) = try await auth.register(email, password: Self.password)
            _ = await smtp.waitForMails(1)
            // An unknown address gets the same answer and no mail.
            #expect(try await auth.send("POST", "/auth/password/forgot", json: #"{"email":"nobody-\#(email)"}"#).status == 202)
            #expect(try await auth.send("POST", "/auth/password/forgot", json: #"{"email":"\#(email)"}"#).status == 202)
            #expect(try await auth.send("POST", "/auth/password/forgot", json: #"{"email":"nope"}"#).status == 422)
            #expect(try await auth.send("POST", "/auth/password/forgot", json: #"{"mail":"\#(email)"}"#).status == 422)
            let mails = await smtp.waitForMails(2)
            #expect(mails.count == 2)
            let mail = try #require(mails.last)
            #expect(mail.headers["subject"] == "Reset your Seeds password")
            let link = try #require(mail.link(containing: "/auth/password/reset?token="))
            let token = String(link.split(separator: "=", maxSplits: 1)[1])
            let page = try await auth.send("GET", Self.path(of: link))
            #expect(page.status == 200 && page.text.contains(#"name="newPassword""#))

            // The password rules apply; a weak one spends nothing.
            let weak = try await auth.send(
                "POST", "/auth/password/reset", json: #"{"token":"\#(token)","newPassword":"short"}"#)
            #expect(weak.status == 422 && weak.text.contains("weak_password"))
            let newPassword = "an entirely new passphrase"
            let reset = try await auth.send(
                "POST", "/auth/password/reset", json: #"{"token":"\#(token)","newPassword":"\#(newPassword)"}"#)
            #expect(reset.status == 204)
            // Every session ended: the refresh token no longer works, the access token is revoked.
            #expect(
                try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#).status == 401)
            #expect(try await eventually { try await auth.send("GET", "/auth/me", token: session.accessToken).status == 401 })
            #expect(
                try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"\#(Self.password)"}"#).status
                    == 401)
            let signedIn = try await auth.send(
                "POST", "/auth/login", json: #"{"email":"\#(email)","password":"\#(newPassword)"}"#)
            #expect(signedIn.status == 200)
            // Reading the mail proved the address.
            #expect(try signedIn.decode(AuthSession.self).user.emailVerified)
            // Single use, and the owner is told.
            let again = try await auth.send(
                "POST", "/auth/password/reset", json: #"{"token":"\#(token)","newPassword":"yet another passphrase"}"#)
            #expect(again.status == 422 && again.text.contains("invalid_email_token"))
            let notice = await smtp.waitForMails(3)
            #expect(notice.last?.headers["subject"] == "Your Seeds password was changed")

            // From a browser: the page's form.
            #expect(try await auth.send("POST", "/auth/password/forgot", json: #"{"email":"\#(email)"}"#).status == 202)
            let formLink = try #require(await smtp.waitForMails(4).last?.link(containing: "token="))
            let formToken = String(formLink.split(separator: "=", maxSplits: 1)[1])
            let done = try await auth.send(
                "POST", "/auth/password/reset", json: Self.form(["token": formToken, "newPassword": "a browser's passphrase"]),
                headers: Self.formType)
            #expect(done.status == 200 && done.text.contains("Password changed"))
            let stale = try await auth.send(
                "POST", "/auth/password/reset", json: Self.form(["token": formToken, "newPassword": "a browser's passphrase"]),
                headers: Self.formType)
            #expect(stale.status == 410)

            // Per account: three reset mails an hour, then silence (the answer does not change).
            for _ in 0..<3 {
                #expect(try await auth.send("POST", "/auth/password/forgot", json: #"{"email":"\#(email)"}"#).status == 202)
            }
            let third = await smtp.waitForMails(6)
            #expect(third.count == 6 && third.last?.headers["subject"] == "Reset your Seeds password")
            // Another account's mail, queued after them, arrives after whatever they sent: no more.
            let other = Self.email()
            _ = try await auth.register(other, password: Self.password)
            let all = await smtp.waitForMails(7)
            #expect(all.count == 7 && all.last?.headers["to"]?.contains(other) == true)
            #expect(all.filter { $0.headers["subject"] == "Reset your Seeds password" }.count == 3)
        }
    }

    /// A mail that cannot be handed over is kept and sent when the server comes back, once; a
    /// refusal for good is not retried.
    @Test func mailsSurviveAnSMTPServerThatIsDown() async throws {
        let port = try PortHolder.unusedPort()
        try await withService(
            nil,
            settings: [
                "PIER_AUTH_SMTP_URL": "smtp://127.0.0.1:\(port)", "PIER_AUTH_MAIL_RETRY_S": "1",
            ]
        ) { auth in
            let email = Self.email()
            _ = try await auth.register(email, password: Self.password)
            #expect(
                try await eventually(timeout: .seconds(10)) {
                    try await auth.pool.query("SELECT last_error FROM auth.outbox WHERE recipient = \(email)")
                        .first?.decode("last_error", as: String?.self) != nil
                })
            let smtp = try await SMTPTestServer.start(reject: ["rejected@example.com"], port: port)
            let mails = await smtp.waitForMails(1)
            #expect(mails.count == 1 && mails.first?.headers["x-envelope-to"] == email)
            // Marked sent just after the server took it.
            #expect(
                try await eventually {
                    let row = try await auth.pool.query(
                        "SELECT attempts, sent_at IS NOT NULL AS sent FROM auth.outbox WHERE recipient = \(email)")[0]
                    return try row.decode("sent", as: Bool.self) && row.decode("attempts", as: Int.self) >= 2
                })

            _ = try await auth.register("rejected@example.com", password: Self.password)
            #expect(
                try await eventually(timeout: .seconds(10)) {
                    try await auth.pool.query(
                        "SELECT failed_at IS NOT NULL AS failed FROM auth.outbox WHERE recipient = 'rejected@example.com'"
                    ).first?.decode("failed", as: Bool.self) == true
                })
            let failed = try await auth.pool.query(
                "SELECT attempts, last_error, message IS NULL AS erased FROM auth.outbox WHERE recipient = 'rejected@example.com'"
            )[0]
            #expect(try failed.decode("attempts", as: Int.self) == 1 && failed.decode("erased", as: Bool.self))
            #expect(try failed.decode("last_error", as: String.self).contains("550"))
            // Once a retry would be due, a mail queued later goes out, and the refused one was
            // not tried again (the server would refuse it again, unseen: its row tells).
            #expect(
                try await eventually(timeout: .seconds(10)) {
                    try await auth.pool.query(
                        "SELECT now() > failed_at + interval '1 second' AS due FROM auth.outbox WHERE recipient = 'rejected@example.com'"
                    )[0].decode("due", as: Bool.self)
                })
            let later = Self.email()
            _ = try await auth.register(later, password: Self.password)
            let delivered = await smtp.waitForMails(2)
            #expect(delivered.count == 2 && delivered.last?.headers["x-envelope-to"] == later)
            #expect(
                try await auth.pool.query("SELECT attempts FROM auth.outbox WHERE recipient = 'rejected@example.com'")[0]
                    .decode("attempts", as: Int.self) == 1)
            // Nothing the mails carried reached the log.
            let logs = auth.logs.all.joined(separator: "\n")
            #expect(!logs.contains("token=") && !logs.contains(Self.password))
        }
    }

    /// STARTTLS, required by the server: mails go over TLS to a server whose certificate the
    /// configured CA file vouches for, and not to one nobody vouches for.
    @Test func mailGoesOverTLSToATrustedServer() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pier-smtp-tls-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (certificate, key) = (
            directory.appendingPathComponent("cert.pem").path, directory.appendingPathComponent("key.pem").path
        )
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", certificate,
            "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ]
        openssl.standardError = FileHandle.nullDevice
        try await onOwnThread {
            try openssl.run()
            openssl.waitUntilExit()
        }
        let smtp = try await SMTPTestServer.start(user: "pier", password: "mail-secret", tls: (certificate, key))
        try await withService(smtp, settings: ["PIER_AUTH_SMTP_CA_FILE": certificate]) { auth in
            let (_, email) = try await auth.register(password: Self.password)
            let mails = await smtp.waitForMails(1)
            #expect(mails.first?.headers["x-envelope-to"] == email)
        }
        // The system's CAs do not know this certificate: nothing is sent, and the outbox says why.
        try await withService(smtp) { auth in
            let (_, email) = try await auth.register(password: Self.password)
            #expect(
                try await eventually(timeout: .seconds(10)) {
                    try await auth.pool.query("SELECT last_error FROM auth.outbox WHERE recipient = \(email)")
                        .first?.decode("last_error", as: String?.self) != nil
                })
            let error = try await auth.pool.query("SELECT last_error FROM auth.outbox WHERE recipient = \(email)")[0]
                .decode("last_error", as: String.self)
            #expect(error.contains("SSL") || error.contains("certificate"), "\(error)")
            #expect(smtp.mails().count == 1)
        }
    }

    /// Without SMTP, in development: each mail is an .eml file under PIER_DATA_DIR/mail and one
    /// log line gives its link, which works.
    @Test func withoutSMTPMailsAreFilesAndTheLinkIsLogged() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("pier-mail-dev-\(UUID())")
        defer { try? FileManager.default.removeItem(at: data) }
        try await withService(nil, settings: ["PIER_DATA_DIR": data.path]) { auth in
            let email = Self.email()
            let (session, _) = try await auth.register(email, password: Self.password)
            let directory = data.appendingPathComponent("mail")
            #expect(
                await eventually(timeout: .seconds(10)) {
                    ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).contains {
                        $0.hasSuffix(".eml")
                    }
                })
            let name = try #require(try FileManager.default.contentsOfDirectory(atPath: directory.path).first)
            let mail = ReceivedMail(Array(try Data(contentsOf: directory.appendingPathComponent(name))))
            let link = try #require(mail.link(containing: "/auth/email/verify?token="))
            let logged = auth.logs.all.first { $0.contains("mail queued") }
            #expect(logged?.contains(link.replacingOccurrences(of: "/", with: "\\/")) == true || logged?.contains(link) == true)
            let token = String(link.split(separator: "=", maxSplits: 1)[1])
            #expect(try await auth.send("POST", "/auth/email/verify", json: #"{"token":"\#(token)"}"#).status == 200)
            #expect(try await auth.send("GET", "/auth/me", token: session.accessToken).decode(User.self).emailVerified)
        }
    }
}

/// The caller's sessions, named by the device that opened them, and ended one by one or all at
/// once (their access tokens refused everywhere within a second).
@Suite struct SessionListTests {
    @Test func sessionsAreListedAndEnded() async throws {
        let auth = try await AuthEndpointTests.harness.value
        let email = "devices-\(UUID().uuidString.prefix(8).lowercased())@example.com"
        let password = "a long enough passphrase"
        let registered = try await auth.send(
            "POST", "/auth/register", json: #"{"email":"\#(email)","password":"\#(password)","deviceName":"  Anna's iPhone  "}"#)
        let phone = try registered.decode(AuthSession.self)
        let laptop = try await auth.send(
            "POST", "/auth/login", json: #"{"email":"\#(email)","password":"\#(password)","deviceName":"MacBook"}"#
        ).decode(AuthSession.self)
        let tooLong = String(repeating: "x", count: 101)
        let refused = try await auth.send(
            "POST", "/auth/login", json: #"{"email":"\#(email)","password":"\#(password)","deviceName":"\#(tooLong)"}"#)
        #expect(refused.status == 422 && refused.text.contains("deviceName"))

        let listed = try await auth.send("GET", "/auth/sessions", token: laptop.accessToken)
        #expect(listed.status == 200)
        let sessions = try listed.decode(ItemList<SessionInfo>.self).items
        #expect(Set(sessions.compactMap(\.deviceName)) == ["Anna's iPhone", "MacBook"])
        #expect(sessions.filter(\.current).map(\.deviceName) == ["MacBook"])
        #expect(sessions.allSatisfy { $0.clientAddress == "127.0.0.1" })
        // A session just opened was used when it was opened.
        #expect(
            sessions.allSatisfy { session in session.lastUsedAt.map { $0 >= session.createdAt.addingTimeInterval(-1) } == true })
        #expect(try await auth.send("GET", "/auth/sessions").status == 401)

        // The phone is ended from the laptop: its refresh token and access token stop working.
        let phoneID = try #require(sessions.first { $0.deviceName == "Anna's iPhone" }?.id)
        #expect(try await auth.send("DELETE", "/auth/sessions/\(phoneID.text())", token: laptop.accessToken).status == 204)
        #expect(try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(phone.refreshToken)"}"#).status == 401)
        #expect(try await eventually { try await auth.send("GET", "/auth/me", token: phone.accessToken).status == 401 })
        #expect(try await auth.send("DELETE", "/auth/sessions/\(phoneID.text())", token: laptop.accessToken).status == 404)
        #expect(try await auth.send("DELETE", "/auth/sessions/not-a-uuid", token: laptop.accessToken).status == 404)
        // Another account's session is not the caller's to end.
        let (stranger, _) = try await auth.register()
        #expect(
            try await auth.send(
                "DELETE", "/auth/sessions/\(try #require(sessions.first(where: \.current)).id.text())",
                token: stranger.accessToken
            )
            .status == 404)

        // The refresh moves "last used" on.
        let renewed = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(laptop.refreshToken)"}"#)
            .decode(AuthSession.self)
        let after = try await auth.send("GET", "/auth/sessions", token: renewed.accessToken).decode(ItemList<SessionInfo>.self)
        #expect(after.items.count == 1 && after.items[0].lastUsedAt != nil)

        // Everywhere at once.
        let tablet = try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"\#(password)"}"#)
            .decode(AuthSession.self)
        #expect(try await auth.send("POST", "/auth/logout/all", token: tablet.accessToken).status == 204)
        for session in [renewed, tablet] {
            #expect(
                try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#).status == 401)
        }
        #expect(try await eventually { try await auth.send("GET", "/auth/me", token: tablet.accessToken).status == 401 })
    }
}

/// Changing the address, the checks before sensitive actions, the profile, and the security
/// mails, against a real SMTP server.
@Suite(.serialized) struct AccountChangeTests {
    static let password = "a long enough passphrase"

    /// An access token for `session` whose last authentication was `age` seconds ago.
    static func token(_ auth: AuthHarness, _ session: AuthSession, authenticatedSecondsAgo age: Int) throws -> String {
        let claims = try JSONSerialization.jsonObject(with: Data(try JWS(compact: session.accessToken).payload)) as? [String: Any]
        let now = Int(Date().timeIntervalSince1970)
        return try auth.keys.signer.sign(
            AccessClaims(
                iss: "pier", sub: session.user.id.text(), aud: "pier", iat: now, nbf: now, exp: now + 600,
                jti: UUID().uuidString, sid: claims?["sid"] as? String, role: "user", authTime: now - age))
    }

    @Test func theAddressChangesWhenTheNewOneConfirms() async throws {
        let smtp = try await SMTPTestServer.start(user: "pier", password: "mail-secret")
        try await AccountMailTests().withService(smtp, database: "pier_test_auth_change") { auth in
            let email = AccountMailTests.email()
            let (session, _) = try await auth.register(email, password: Self.password)
            let newEmail = AccountMailTests.email()
            // Signed in a minute ago: no password needed.
            let change = try await auth.send(
                "POST", "/auth/email/change", json: #"{"newEmail":"\#(newEmail)"}"#, token: session.accessToken)
            #expect(change.status == 202, "\(change.text)")
            let mails = await smtp.waitForMails(3)
            let confirmation = try #require(mails.first { $0.headers["x-envelope-to"] == newEmail })
            #expect(confirmation.headers["subject"] == "Confirm your new email address for Seeds")
            #expect(
                mails.contains {
                    $0.headers["x-envelope-to"] == email && $0.headers["subject"] == "Your Seeds address is about to change"
                })
            // Nothing changed yet.
            #expect(try await auth.send("GET", "/auth/me", token: session.accessToken).decode(User.self).email == email)
            let link = try #require(confirmation.link(containing: "/auth/email/change/confirm?token="))
            #expect(try await auth.send("GET", AccountMailTests.path(of: link)).status == 200)
            let token = String(link.split(separator: "=", maxSplits: 1)[1])
            let confirmed = try await auth.send("POST", "/auth/email/change/confirm", json: #"{"token":"\#(token)"}"#)
            #expect(confirmed.status == 200)
            let user = try confirmed.decode(User.self)
            #expect(user.email == newEmail && user.emailVerified)
            #expect(try await auth.send("POST", "/auth/email/change/confirm", json: #"{"token":"\#(token)"}"#).status == 422)
            let notice = await smtp.waitForMails(4)
            #expect(
                notice.contains {
                    $0.headers["x-envelope-to"] == email && $0.headers["subject"] == "Your Seeds address was changed"
                })
            #expect(
                try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"\#(Self.password)"}"#).status
                    == 401)
            #expect(
                try await auth.send("POST", "/auth/login", json: #"{"email":"\#(newEmail)","password":"\#(Self.password)"}"#)
                    .status == 200)

            // Refusals: a taken address, not an address, a field that does not exist.
            let (other, otherEmail) = try await auth.register(password: Self.password)
            _ = otherEmail
            let taken = try await auth.send(
                "POST", "/auth/email/change", json: #"{"newEmail":"\#(newEmail.uppercased())"}"#, token: other.accessToken)
            #expect(taken.status == 409 && taken.text.contains("email_taken"))
            #expect(
                try await auth.send("POST", "/auth/email/change", json: #"{"newEmail":"nope"}"#, token: other.accessToken).status
                    == 422)
            #expect(
                try await auth.send("POST", "/auth/email/change", json: #"{"email":"a@b.co"}"#, token: other.accessToken).status
                    == 422)
            #expect(try await auth.send("POST", "/auth/email/change", json: #"{"newEmail":"a@b.co"}"#).status == 401)
        }
    }

    /// Changing the address and deleting the account need the password, or a sign-in within the
    /// last 5 minutes (`auth_time`); a refresh keeps the sign-in's time, not its own.
    @Test func sensitiveActionsNeedARecentSignInOrThePassword() async throws {
        let smtp = try await SMTPTestServer.start(user: "pier", password: "mail-secret")
        try await AccountMailTests().withService(smtp, database: "pier_test_auth_change") { auth in
            let (session, email) = try await auth.register(password: Self.password)
            let claims =
                try JSONSerialization.jsonObject(with: Data(try JWS(compact: session.accessToken).payload)) as? [String: Any]
            let authTime = try #require(claims?["auth_time"] as? Int)
            #expect(abs(authTime - Int(Date().timeIntervalSince1970)) < 60)
            // The clock moves past the sign-in's second: a refresh that took its own time would show.
            #expect(await eventually(interval: .milliseconds(20)) { Int(Date().timeIntervalSince1970) > authTime })
            let refreshed = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#)
                .decode(AuthSession.self)
            let after =
                try JSONSerialization.jsonObject(with: Data(try JWS(compact: refreshed.accessToken).payload)) as? [String: Any]
            #expect(after?["auth_time"] as? Int == authTime)

            let stale = try Self.token(auth, session, authenticatedSecondsAgo: 600)
            let refused = try await auth.send("POST", "/auth/email/change", json: #"{"newEmail":"x-\#(email)"}"#, token: stale)
            #expect(refused.status == 401 && refused.text.contains("reauthentication_required"))
            #expect(refused.headers["WWW-Authenticate"]?.contains("insufficient_user_authentication") == true)
            let wrong = try await auth.send(
                "POST", "/auth/email/change", json: #"{"newEmail":"x-\#(email)","password":"not it at all"}"#, token: stale)
            #expect(wrong.status == 401 && wrong.text.contains("reauthentication_required"))
            #expect(try await auth.send("DELETE", "/auth/me", token: stale).status == 401)
            #expect(try await auth.send("DELETE", "/auth/me", json: #"{"password":"not it at all"}"#, token: stale).status == 401)
            #expect(try await auth.send("DELETE", "/auth/me", json: #"{"pass":"x"}"#, token: stale).status == 422)
            // With the password: done, and the account's address is told.
            #expect(
                try await auth.send("DELETE", "/auth/me", json: #"{"password":"\#(Self.password)"}"#, token: stale).status == 204)
            let mails = await smtp.waitForMails(2)
            #expect(
                mails.contains {
                    $0.headers["x-envelope-to"] == email && $0.headers["subject"] == "Your Seeds account was deleted"
                })
        }
    }

    @Test func theProfileIsEditedAndSecurityMailsGoOut() async throws {
        let smtp = try await SMTPTestServer.start(user: "pier", password: "mail-secret")
        try await AccountMailTests().withService(smtp, database: "pier_test_auth_change") { auth in
            let (session, email) = try await auth.register(password: Self.password)
            let token = session.accessToken
            let named = try await auth.send("PATCH", "/auth/me", json: #"{"displayName":" Ada ","locale":"fr-CA"}"#, token: token)
            #expect(named.status == 200)
            let user = try named.decode(User.self)
            #expect(user.displayName == "Ada" && user.locale == "fr-CA")
            let kept = try await auth.send("PATCH", "/auth/me", json: #"{"displayName":""}"#, token: token).decode(User.self)
            #expect(kept.displayName == nil && kept.locale == "fr-CA")
            for bad in [#"{"locale":"french please"}"#, #"{"locale":"x"}"#, #"{"email":"a@b.co"}"#, #"{"displayName":7}"#] {
                #expect(try await auth.send("PATCH", "/auth/me", json: bad, token: token).status == 422, "\(bad)")
            }
            #expect(try await auth.send("PATCH", "/auth/me", json: #"{"locale":"en"}"#).status == 401)

            // A sign-in from a new device is mailed; the same device again is not.
            let login = #"{"email":"\#(email)","password":"\#(Self.password)","deviceName":"Ada's iPad"}"#
            #expect(try await auth.send("POST", "/auth/login", json: login).status == 200)
            let first = await smtp.waitForMails(2)
            let signIn = try #require(first.last)
            #expect(signIn.headers["subject"] == "New sign-in to your Seeds account" && signIn.text.contains("Ada's iPad"))
            #expect(try await auth.send("POST", "/auth/login", json: login).status == 200)
            // A password change is mailed too.
            let changed = try await auth.send(
                "POST", "/auth/password",
                json: #"{"currentPassword":"\#(Self.password)","newPassword":"a different passphrase"}"#,
                token: token)
            #expect(changed.status == 204)
            // The outbox sends in order: a mail for the second sign-in would have come third.
            let all = await smtp.waitForMails(3)
            #expect(all.count == 3 && all.last?.headers["subject"] == "Your Seeds password was changed")
        }
    }
}

/// When the services run apart, auth gathers their parts over HTTP with the caller's token; a
/// part that cannot be had is a 503, never a partial export.
@Suite struct RemoteExportTests {
    @Test func partsAreFetchedWithTheCallersToken() async throws {
        let seen = Locked<[String]>([])
        let failing = Locked(false)
        let router = Router<BasicRequestContext>()
        router.get("/feedback/me/export") { request, _ -> Response in
            seen.withLock { $0.append(request.headers["Authorization"] ?? "") }
            if failing.withLock({ $0 }) { throw HTTPError(500, detail: "down") }
            return try Response.json(ExportPart(service: "feedback", data: .object(["items": .array([.string("remote")])])))
        }
        let peer = try HTTPServer.started(router, name: "peer")
        let auth = try await AuthHarness.start(
            database: "pier_test_auth_export",
            settings: ["PIER_AUTH_EXPORT_URLS": "http://127.0.0.1:\(peer.port)/feedback/me/export"])
        let (session, email) = try await auth.register()
        let reply = try await auth.send("GET", "/auth/me/export", token: session.accessToken)
        #expect(reply.status == 200)
        #expect(reply.headers["Content-Disposition"]?.hasPrefix("attachment") == true)
        let document = try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any]
        let services = document?["services"] as? [String: Any]
        #expect(((services?["auth"] as? [String: Any])?["user"] as? [String: Any])?["email"] as? String == email)
        #expect(((services?["feedback"] as? [String: Any])?["items"] as? [String]) == ["remote"])
        #expect(seen.withLock { $0 } == ["Bearer \(session.accessToken)"])
        failing.withLock { $0 = true }
        let down = try await auth.send("GET", "/auth/me/export", token: session.accessToken)
        #expect(down.status == 503 && down.headers["Retry-After"] != nil)
        #expect(try await auth.send("GET", "/auth/me/export").status == 401)
        await auth.stop()
        await peer.shutdown()
    }
}

/// A wrong account setting stops the service at start, naming the variable and why.
@Suite struct AccountSettingsTests {
    func failure(_ values: [String: String]) -> Environment.Failure? {
        do {
            _ = try AuthConfiguration(environment: Environment(values), production: false)
            return nil
        } catch {
            return error
        }
    }

    @Test func misconfigurationIsNamed() {
        let provider =
            #"{"name":"google","issuer":"https://accounts.google.com","jwksURL":"https://example.com/keys","audiences":["c"]}"#
        #expect(failure(["PIER_AUTH_OIDC_PROVIDERS": "[\(provider)]"]) == nil)
        let cases: [(String, String)] = [
            ("PIER_AUTH_OIDC_PROVIDERS", "not json"),
            ("PIER_AUTH_OIDC_PROVIDERS", "[\(provider.replacingOccurrences(of: "google", with: "apple"))]"),
            ("PIER_AUTH_OIDC_PROVIDERS", "[\(provider.replacingOccurrences(of: #"["c"]"#, with: "[]"))]"),
            ("PIER_AUTH_OIDC_PROVIDERS", "[\(provider.replacingOccurrences(of: "https://example.com/keys", with: "keys"))]"),
            ("PIER_AUTH_OIDC_PROVIDERS", #"[{"name":"Google!","issuer":"https://a","jwksURL":"https://a","audiences":["c"]}]"#),
            ("PIER_AUTH_PUBLIC_URL", "seeds.example"),
            ("PIER_AUTH_SMTP_URL", "http://mail.example.com"),
            ("PIER_AUTH_SMTP_PASSWORD_FILE", "/nonexistent/pier-smtp-password"),
            ("PIER_AUTH_EXPORT_URLS", "feedback:8080/feedback/me/export"),
            ("PIER_AUTH_REQUIRE_VERIFIED_EMAIL", "perhaps"),
            ("PIER_AUTH_MAIL_RETRY_S", "0"),
        ]
        for (variable, value) in cases {
            let refused = failure([variable: value])
            #expect(refused?.variable == variable, "\(variable)=\(value): \(refused.map(String.init(describing:)) ?? "accepted")")
        }
    }
}
