import PierHTML
import PierHTTP
import PierMail
import PierModels

/// The mails the auth service sends: short, plain text with an HTML twin, the app's name, the
/// link and what to do if the reader did not ask for it. No images, no tracking.
struct Mails: Sendable {
    let appName: String
    let publicURL: String
    let from: String

    /// The address mails are sent from (SMTP's `MAIL FROM`).
    var senderAddress: String { MailMessage.address(in: from) }

    func verification(to email: String, token: String) -> (message: MailMessage, link: String) {
        linkMail(
            to: email, page: AuthAPI.verifyEmailPage, token: token, subject: "Confirm your email address for \(appName)",
            line: "Confirm that this is your address for \(appName) by opening this link within 24 hours:",
            ending: "If you did not create an account with \(appName), ignore this mail.")
    }

    func passwordReset(to email: String, token: String) -> (message: MailMessage, link: String) {
        linkMail(
            to: email, page: AuthAPI.resetPasswordPage, token: token, subject: "Reset your \(appName) password",
            line: "Someone asked to reset the password of your \(appName) account. Choose a new one within 30 minutes:",
            ending: "If it was not you, ignore this mail: your password stays as it is.")
    }

    func emailChange(to newEmail: String, token: String) -> (message: MailMessage, link: String) {
        linkMail(
            to: newEmail, page: AuthAPI.confirmEmailChangePage, token: token,
            subject: "Confirm your new email address for \(appName)",
            line: "Confirm that your \(appName) account should use this address from now on, within 24 hours:",
            ending: "If you did not ask for it, ignore this mail: nothing changes.")
    }

    /// The link that makes an anonymous account permanent with this address (and the password
    /// given with it).
    func keepAccount(to email: String, token: String) -> (message: MailMessage, link: String) {
        linkMail(
            to: email, page: AuthAPI.confirmEmailChangePage, token: token,
            subject: "Keep your \(appName) account",
            line:
                "Confirm that your \(appName) account should use this address and the password you chose, within 24 hours:",
            ending: "If you did not ask for it, ignore this mail: no account gets this address.")
    }

    /// The link to `page` with `token`: `PIER_AUTH_PUBLIC_URL` + its path and query.
    func pageLink(_ page: Endpoint<TokenQuery, NoBody, HTMLPage>, _ token: String) -> String {
        publicURL + page.target(TokenQuery(token: token))
    }

    /// A mail whose point is one link: to `page`, with the token.
    private func linkMail(
        to email: String, page: Endpoint<TokenQuery, NoBody, HTMLPage>, token: String, subject: String, line: String,
        ending: String
    ) -> (message: MailMessage, link: String) {
        let link = pageLink(page, token)
        return (mail(to: email, subject: subject, lines: [line], link: link, ending: ending), link)
    }

    /// The notice to the current address; its link cancels the change and signs out the device
    /// that asked for it.
    func emailChangeRequested(to oldEmail: String, newEmail: String, token: String) -> (message: MailMessage, link: String) {
        let link = pageLink(AuthAPI.cancelEmailChangePage, token)
        let message = mail(
            to: oldEmail, subject: "Your \(appName) address is about to change",
            lines: [
                "Someone signed in to your \(appName) account asked to use \(newEmail) instead of this address. It changes only once that address confirms.",
                "If it was not you, open this link within 24 hours: the change is cancelled and the device that asked is signed out.",
            ],
            link: link, ending: "Then change your password from the app.")
        return (message, link)
    }

    func emailChanged(to oldEmail: String, newEmail: String) -> MailMessage {
        mail(
            to: oldEmail, subject: "Your \(appName) address was changed",
            lines: ["Your \(appName) account now uses \(newEmail); this address no longer signs in."],
            link: nil, ending: "If it was not you, reply to this mail or contact the app's support.")
    }

    func newSignIn(to email: String, device: String?, address: String) -> MailMessage {
        mail(
            to: email, subject: "New sign-in to your \(appName) account",
            lines: [
                "Your \(appName) account was just signed in to from \(device.map { "\"\($0)\"" } ?? "a new device") (address \(address))."
            ],
            link: nil, ending: "If it was not you, change your password and end that session from the app.")
    }

    /// To a team member whose session asks to set up a first second factor: the link approves it.
    func enrolmentApproval(to email: String, token: String, device: String?, address: String?)
        -> (message: MailMessage, link: String)
    {
        let link = pageLink(AuthAPI.approvalPage, token)
        let from = "\(device.map { "\"\($0)\"" } ?? "a device")\(address.map { " (address \($0))" } ?? "")"
        let message = mail(
            to: email, subject: "Approve two-step sign-in for your \(appName) team account",
            lines: [
                "Your \(appName) team account, signed in from \(from), asks to set up two-step sign-in. A team account's first authenticator app or passkey needs this mailbox to agree.",
                "If it is you, open this link within 30 minutes, then set it up from the same place:",
            ],
            link: link,
            ending:
                "If it was not you, do not open the link: someone has your password. Reset it at once and tell an admin.")
        return (message, link)
    }

    func accountDeleted(to email: String) -> MailMessage {
        mail(
            to: email, subject: "Your \(appName) account was deleted",
            lines: ["Your \(appName) account and what it held were deleted, as asked."],
            link: nil, ending: "If it was not you, contact the app's support.")
    }

    func passwordChanged(to email: String) -> MailMessage {
        mail(
            to: email, subject: "Your \(appName) password was changed",
            lines: ["The password of your \(appName) account was just changed, and every device was signed out."],
            link: nil, ending: "If it was not you, reset your password at once from the app.")
    }

    func secondFactorEnabled(to email: String) -> MailMessage {
        mail(
            to: email, subject: "Two-step sign-in is on for your \(appName) account",
            lines: [
                "Signing in to your \(appName) account now asks for a code from your authenticator app (or one of your recovery codes), and every other device was signed out."
            ],
            link: nil, ending: "If it was not you, reset your password at once from the app and contact the app's support.")
    }

    func secondFactorDisabled(to email: String) -> MailMessage {
        mail(
            to: email, subject: "Two-step sign-in is off for your \(appName) account",
            lines: [
                "Signing in to your \(appName) account no longer asks for a code: the authenticator app and the recovery codes were removed."
            ],
            link: nil, ending: "If it was not you, reset your password at once from the app and contact the app's support.")
    }

    func passkeyAdded(to email: String, name: String) -> MailMessage {
        mail(
            to: email, subject: "A passkey was added to your \(appName) account",
            lines: ["The passkey \"\(name)\" now signs in to your \(appName) account."],
            link: nil, ending: "If it was not you, remove it from the app, reset your password and contact the app's support.")
    }

    func passkeyRemoved(to email: String, name: String) -> MailMessage {
        mail(
            to: email, subject: "A passkey was removed from your \(appName) account",
            lines: ["The passkey \"\(name)\" no longer signs in to your \(appName) account."],
            link: nil, ending: "If it was not you, reset your password at once from the app and contact the app's support.")
    }

    func recoveryCodeUsed(to email: String, left: Int) -> MailMessage {
        mail(
            to: email, subject: "A recovery code was used for your \(appName) account",
            lines: [
                "One of your recovery codes was just used to confirm a sign-in to your \(appName) account; \(left) \(left == 1 ? "is" : "are") left. Make new ones from the app if you are running out."
            ],
            link: nil, ending: "If it was not you, reset your password at once from the app and contact the app's support.")
    }

    /// The team's reply to the reader's feedback, their words quoted under it.
    func feedbackReply(to email: String, message: String, original: String) -> MailMessage {
        mail(
            to: email, subject: "\(appName) replied to your feedback",
            lines: [message, "You wrote: “\(original)”"], link: nil,
            ending: "You can read the reply in the app too.")
    }

    private func mail(to email: String, subject: String, lines: [String], link: String?, ending: String) -> MailMessage {
        var text = lines
        if let link { text += ["", link] }
        text += ["", ending, "", "— \(appName)"]
        // A line may hold line breaks (a reply): kept in the HTML twin.
        var html = lines.map { line -> HTML in "<p>\(HTML.lines(line))</p>" }
        if let link { html.append("<p><a href=\"\(link)\">\(link)</a></p>") }
        html += ["<p>\(ending)</p>", "<p>— \(appName)</p>"]
        let page: HTML = "<!doctype html><html><body>\n\(HTML.join(html, separator: "\n"))\n</body></html>\n"
        return MailMessage(
            from: from, to: email, subject: subject, text: text.joined(separator: "\n") + "\n", html: page.text)
    }
}
