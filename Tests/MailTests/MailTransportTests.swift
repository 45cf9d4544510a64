import Foundation
import PierTestBasics
import Testing

@testable import PierMail

/// Mails as a reader's client sees them, handed to a real SMTP server (Debian's aiosmtpd) or
/// written as files; each failure says whether trying again can help.
@Suite struct MailTransportTests {
    static let message = MailMessage(
        from: "Pier Seeds <no-reply@seeds.example>", to: "Zoë Ünal <zoe@example.com>",
        subject: "Confirm your address — Seeds", text: "Open https://seeds.example/confirm?t=abc to confirm.\n",
        html: "<p>Open <a href=\"https://seeds.example/confirm?t=abc\">the link</a>.</p>")

    static func rendered() -> [UInt8] {
        message.rendered(messageID: "m-\(UUID().uuidString)", date: Date(timeIntervalSince1970: 1_764_547_200))
    }

    @Test func aMailReachesTheServerAsItsReaderSeesIt() async throws {
        let smtp = try await SMTPTestServer.start(user: "pier", password: "mail-secret")
        defer { smtp.stop() }
        let transport = SMTPTransport(url: smtp.url, user: "pier", password: "mail-secret")
        try await transport.send(Self.rendered(), from: Self.message.senderAddress, to: "zoe@example.com")
        let mails = await smtp.waitForMails(1)
        #expect(mails.count == 1)
        let mail = try #require(mails.first)
        #expect(mail.headers["subject"]?.hasPrefix("=?utf-8?B?") == true)
        #expect(mail.headers["to"]?.hasSuffix("<zoe@example.com>") == true)
        #expect(mail.headers["date"] == "Mon, 1 Dec 2025 00:00:00 +0000")
        #expect(mail.link(containing: "/confirm") == "https://seeds.example/confirm?t=abc")
        #expect(mail.html.contains("<a href=\"https://seeds.example/confirm?t=abc\">"))
    }

    /// Why `transport` refused a mail to `recipient`, or nil when it sent it.
    static func refusal(_ transport: some MailTransport, to recipient: String = "zoe@example.com") async -> MailFailure? {
        do {
            try await transport.send(rendered(), from: "no-reply@seeds.example", to: recipient)
            return nil
        } catch {
            return error
        }
    }

    @Test func failuresSayWhetherTryingAgainCanHelp() async throws {
        let smtp = try await SMTPTestServer.start(user: "pier", password: "mail-secret", reject: ["gone@example.com"])
        // A recipient the server refuses for good (550): permanent.
        let gone = await Self.refusal(
            SMTPTransport(url: smtp.url, user: "pier", password: "mail-secret"), to: "gone@example.com")
        #expect(gone?.permanent == true, "\(String(describing: gone))")
        // Credentials the server refuses (535): permanent until someone fixes them.
        let refused = await Self.refusal(SMTPTransport(url: smtp.url, user: "pier", password: "wrong"))
        #expect(refused?.permanent == true, "\(String(describing: refused))")
        #expect(smtp.mails().isEmpty)
        // No server at all: temporary, the outbox tries again later.
        smtp.stop()
        let down = await Self.refusal(SMTPTransport(url: smtp.url, user: "pier", password: "mail-secret", timeoutSeconds: 5))
        #expect(down?.permanent == false, "\(String(describing: down))")
    }

    /// Credentials never cross in clear to a host other than the loopback.
    @Test func credentialsNeedTLSBeyondTheLoopback() {
        #expect(SMTPTransport(url: "smtp://127.0.0.1:25", user: "u", password: "p").isLoopback)
        #expect(SMTPTransport(url: "smtp://localhost:25", user: "u", password: "p").isLoopback)
        #expect(SMTPTransport(url: "smtp://[::1]:25", user: "u", password: "p").isLoopback)
        #expect(!SMTPTransport(url: "smtp://mail.example.com:587", user: "u", password: "p").isLoopback)
        #expect(SMTPTransport(url: "smtp://127.9.8.7", user: "u", password: "p").isLoopback)
        for other in [
            "smtp://127.0.0.1.evil.example:25", "smtp://localhost.evil.example", "smtps://[::1].evil.example",
            "smtp://127.0.0.1@mail.example.com", "smtp://128.0.0.1", "smtp://127.0.0", "smtp://[::2]:25", "127.0.0.1",
        ] {
            #expect(!SMTPTransport(url: other, user: "u", password: "p").isLoopback, "\(other)")
        }
    }

    @Test func aDirectoryKeepsEachMailAsAFileAMailClientOpens() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pier-mail-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let directory = MailDirectory(path: path + "/nested")
        try await directory.send(Self.rendered(), from: "no-reply@seeds.example", to: "zoe@example.com")
        try await directory.send(Self.rendered(), from: "no-reply@seeds.example", to: "zoe@example.com")
        let files = try FileManager.default.contentsOfDirectory(atPath: path + "/nested").filter { $0.hasSuffix(".eml") }
        #expect(files.count == 2)
        // The names say what and to whom (the subject decoded from its encoded words).
        let subject = MailDirectory.slug(Self.message.subject)
        #expect(subject.count > 3 && files.allSatisfy { $0.contains("-\(subject)-to-zoe-example-com-") }, "\(files)")
        #expect(MailDirectory.slug("Réinitialiser: votre mot de passe!") == "r-initialiser-votre-mot-de-passe")
        let mail = ReceivedMail(Array(try Data(contentsOf: URL(fileURLWithPath: path + "/nested/" + files[0]))))
        #expect(mail.link(containing: "/confirm") == "https://seeds.example/confirm?t=abc")
        // A directory that cannot be made is a temporary failure, not a crash.
        #expect(await Self.refusal(MailDirectory(path: "/proc/pier-cannot-write-here"))?.permanent == false)
    }
}
