import PierCrypto
import PierHTML
import PierHTTP
import PierIdentity
import PierMail
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What the mailing flows share: the templates, the outbox, and in development the log line
/// with each mail's link (a developer clicks through without a mail server).
struct MailDesk: Sendable {
    let mails: Mails
    let outbox: MailOutbox
    let logLinks: Bool
    let logger: Logger

    static let verifyLifetime = 24 * 3600
    static let resetLifetime = 30 * 60

    /// A new verification token for `email`, with its mail.
    func verification(_ email: String) -> EmailToken {
        token(.verify, to: email, lifetime: Self.verifyLifetime, kind: "verify-email", mail: mails.verification)
    }

    /// A new password-reset token for `email`, with its mail.
    func reset(_ email: String) -> EmailToken {
        token(.reset, to: email, lifetime: Self.resetLifetime, kind: "reset-password", mail: mails.passwordReset)
    }

    /// A token for the new address `email`, with the mail that confirms it.
    func change(to email: String) -> EmailToken {
        token(.change, to: email, lifetime: Self.verifyLifetime, kind: "email-change", mail: mails.emailChange)
    }

    /// A token for the address an anonymous account asked to be kept with, and the password
    /// given with it, with the mail whose link makes the account permanent.
    func keepAccount(to email: String, passwordHash: String) -> EmailToken {
        var made = token(.change, to: email, lifetime: Self.verifyLifetime, kind: "keep-account", mail: mails.keepAccount)
        made.passwordHash = passwordHash
        return made
    }

    /// A token for the current address `email` that cancels the change to `newEmail`, with the
    /// notice that carries it.
    func cancelChange(to email: String, newEmail: String) -> EmailToken {
        token(.cancelChange, to: email, lifetime: Self.verifyLifetime, kind: "email-change-requested") { to, token in
            mails.emailChangeRequested(to: to, newEmail: newEmail, token: token)
        }
    }

    /// A token for a team member's address that approves their session's first second factor
    /// (30 minutes), with its mail.
    func enrolmentApproval(_ email: String, device: String?, address: String?) -> EmailToken {
        token(.approveEnrolment, to: email, lifetime: Self.resetLifetime, kind: "approve-enrolment") { to, token in
            mails.enrolmentApproval(to: to, token: token, device: device, address: address)
        }
    }

    /// 256 random bits, stored as their SHA-256, mailed to `email` in a link.
    private func token(
        _ purpose: EmailToken.Purpose, to email: String, lifetime: Int, kind: String,
        mail: (_ to: String, _ token: String) -> (message: MailMessage, link: String)
    ) -> EmailToken {
        let raw = TokenIssuer.randomToken()
        let (message, link) = mail(email, raw)
        return EmailToken(
            hash: PostgresBytes(SHA256.hash(raw)), purpose: purpose, email: email, lifetimeSeconds: lifetime, mail: message,
            kind: kind, link: link)
    }

    /// A mail was committed: send it now; in development, say where its link leads.
    func queued(_ kind: String, link: String?) {
        outbox.wake()
        if logLinks, let link {
            logger.info("mail queued (development: its link)", [("kind", .string(kind)), ("link", .string(link))])
        }
    }

    /// What is stored of a token a client sent back (a mailed token is 43 characters).
    static func hash(_ token: String) -> PostgresBytes? {
        guard !token.isEmpty, token.utf8.count <= 128 else { return nil }
        return PostgresBytes(SHA256.hash(token))
    }

    /// A minimal page: a title, a sentence, and optionally the form that posts the token.
    func page(
        _ title: String, _ text: String, status: Int = 200,
        form: (action: String, token: String, password: Bool, button: String)? = nil
    ) -> Response {
        var action: HTML = .empty
        if let form {
            let password: HTML =
                form.password
                ? "<p><input type=\"password\" name=\"newPassword\" autocomplete=\"new-password\" required placeholder=\"New password\"></p>\n"
                : .empty
            action = """
                <form method="post" action="\(form.action)">
                <input type="hidden" name="token" value="\(form.token)">
                \(password)<p><button type="submit">\(form.button)</button></p></form>

                """
        }
        let html: HTML = """
            <!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
            <title>\(title) · \(mails.appName)</title></head>
            <body style="font-family: system-ui, sans-serif; max-width: 32em; margin: 3em auto; padding: 0 1em">
            <h1>\(title)</h1><p>\(text)</p>
            \(action)</body></html>

            """
        return Response(
            status: status,
            headers: [
                "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
                "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
                "X-Frame-Options": "DENY",
            ], body: Array(html.text.utf8))
    }
}
