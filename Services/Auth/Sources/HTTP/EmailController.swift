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

/// `/auth/email/verify…` and `/auth/password/forgot|reset`: the flows that go through a mailed
/// single-use link. Each link also opens in a browser: a GET shows a small page whose form POSTs
/// the token (so a mail scanner that prefetches links spends nothing), and the POST accepts that
/// form as well as JSON from an app (which opens the link as a universal link).
struct EmailController: Sendable {
    let links: MailedLinks
    let desk: MailDesk
    let passwords: PasswordChecks
    let policy: PasswordPolicy
    /// Password-reset requests per client address.
    let forgotRate: TokenBuckets
    let reauthentication: Reauthentication
    let appName: String
    let logger: Logger

    // MARK: - Verification

    /// `POST /auth/email/verify/resend`: for the caller, or for `{email}` without a token. 202
    /// either way (whether an account exists is said to nobody).
    func resend(_ request: Request, _ context: ServiceRequestContext, _ body: EmailRequest?) async throws
        -> EndpointReply<NoContent>
    {
        var emailKey: String? = nil
        if context.principal == nil {
            guard let body else { throw HTTPError.badRequest("The request body is empty; a JSON object is expected.") }
            guard let email = EmailAddress(body.email) else {
                throw HTTPError.invalid("email", "must be an email address such as name@example.com")
            }
            emailKey = email.key
        }
        let desk = desk
        let issued = try await links.resendVerification(of: context.principal?.userID, emailKey: emailKey)
        if case .queued(let link) = issued { desk.queued("verify-email", link: link) }
        if case .throttled(let retryAfter) = issued, context.principal != nil {
            throw HTTPError.tooManyRequests(
                retryAfter: retryAfter, "Three mails went out in the last 10 minutes; check your inbox.")
        }
        return .empty(202)
    }

    /// `POST /auth/email/verify {token}` (JSON → the user; a form → a page).
    func verify(_ request: Request, _ context: ServiceRequestContext, _ body: EmailTokenRequest) async throws -> EndpointReply<
        User
    > {
        let (form, token) = (request.isForm, body.token)
        let user = try await MailDesk.hash(token).asyncMap { try await links.verifyEmail($0) } ?? nil
        guard let user else {
            if form {
                return .page(
                    desk.page(
                        "This link no longer works", "It was used already or is older than a day. Ask the app for a new one.",
                        status: 410))
            }
            throw HTTPError(
                422, code: .invalidEmailToken, detail: "The link was used already or has expired; ask for a new mail.",
                errors: [.init(field: "token", message: "is not a live verification token")])
        }
        logger.info("email verified", [("user_id", .string(user.id.text()))])
        if form { return .page(desk.page("Address confirmed", "Your address is confirmed. You can go back to \(appName).")) }
        return try .json(user)
    }

    /// `GET /auth/email/verify?token=…`: the page behind the mailed link.
    func verifyPage(_ request: Request, _ context: ServiceRequestContext, _ link: TokenQuery) async throws
        -> EndpointReply<HTMLPage>
    {
        let token = link.token ?? ""
        return .page(
            desk.page(
                "Confirm your address", "Confirm that this address is yours for \(appName).",
                form: (action: AuthAPI.verifyEmail.path, token: token, password: false, button: "Confirm")))
    }

    // MARK: - Password reset

    /// `POST /auth/password/forgot {email}`: 202 whether or not an account has the address,
    /// after one and the same insert either way; the mail worker then makes the token and the
    /// mail when an account has the address. Throttled per client address (429) and per address
    /// asked for (silently, by the worker).
    func forgot(_ request: Request, _ context: ServiceRequestContext, _ body: EmailRequest) async throws -> EndpointReply<
        NoContent
    > {
        guard let email = EmailAddress(body.email) else {
            throw HTTPError.invalid("email", "must be an email address such as name@example.com")
        }
        let rate = forgotRate.take(request.clientKey)
        guard rate.allowed else {
            throw HTTPError.tooManyRequests(retryAfter: rate.retryAfter, "Too many reset requests; try again later.")
        }
        try await links.requestReset(email: email)
        desk.outbox.wake()
        logger.info("password reset requested", [])
        return .empty(202)
    }

    /// The reset requests turned into tokens and mails (run by the mail worker before it sends).
    func issueRequestedResets() async {
        let desk = desk
        do {
            for link in try await links.issueRequestedResets() {
                desk.queued("reset-password", link: link)
            }
        } catch {
            logger.warning("reset requests not handled now", [("error", .string("\(error)"))])
        }
    }

    /// `POST /auth/password/reset {token, newPassword}` (JSON → 204; a form → a page).
    func reset(_ request: Request, _ context: ServiceRequestContext, _ body: ResetPasswordRequest) async throws -> EndpointReply<
        NoContent
    > {
        let form = request.isForm
        let refused = HTTPError(
            422, code: .invalidEmailToken, detail: "The link was used already or has expired; ask for a new mail.",
            errors: [.init(field: "token", message: "is not a live password-reset token")])
        guard let hash = MailDesk.hash(body.token), let target = try await links.resetTarget(hash) else {
            if form {
                return .page(desk.page("This link no longer works", "Ask the app for a new password-reset mail.", status: 410))
            }
            throw refused
        }
        let problems = policy.problems(body.newPassword, field: "newPassword", email: target.email)
        guard problems.isEmpty else {
            if form {
                return .page(
                    desk.page(
                        "Choose another password", problems.map { "The new password \($0.message)." }.joined(separator: " "),
                        status: 422, form: (action: AuthAPI.resetPassword.path, token: body.token, password: true, button: "Save")
                    ))
            }
            throw HTTPError.invalid(problems, code: .weakPassword)
        }
        let passwordHash = try await passwords.hashing(request.clientKey) { try await passwords.hasher.hash(body.newPassword) }
        guard let user = try await links.resetPassword(hash, to: passwordHash) else {
            if form {
                return .page(desk.page("This link no longer works", "Ask the app for a new password-reset mail.", status: 410))
            }
            throw refused
        }
        desk.queued("password-changed", link: nil)
        logger.info("password reset; every session ended", [("user_id", .string(user.id.text()))])
        if form { return .page(desk.page("Password changed", "Your new password is set. Sign in to \(appName) with it.")) }
        return .noContent()
    }

    /// `GET /auth/password/reset?token=…`: the page behind the mailed link.
    func resetPage(_ request: Request, _ context: ServiceRequestContext, _ link: TokenQuery) async throws
        -> EndpointReply<HTMLPage>
    {
        .page(
            desk.page(
                "Choose a new password", "Choose a new password for your \(appName) account.",
                form: (action: AuthAPI.resetPassword.path, token: link.token ?? "", password: true, button: "Save")))
    }

    // MARK: - Change of address

    /// `POST /auth/email/change {newEmail, password?}`: needs the password or a recent sign-in;
    /// mails a confirmation link to the new address and a notice to the current one. 202; the
    /// address changes only when the link is followed. A team member moves the account's
    /// mailbox only from a session a second factor proved: with the password alone, whoever
    /// holds it would move the mailbox to theirs, then approve their own first second factor.
    func change(_ request: Request, _ context: ServiceRequestContext, _ body: EmailChangeRequest) async throws -> EndpointReply<
        NoContent
    > {
        let principal = try context.caller()
        guard !principal.isStaff || principal.usedSecondFactor else {
            throw HTTPError(
                403, code: .mfaEnrolmentRequired,
                detail:
                    "A team account changes its address from a session two-step sign-in proved: set up two-step sign-in, sign in with it, then try again."
            )
        }
        guard let newEmail = EmailAddress(body.newEmail) else {
            throw HTTPError.invalid("newEmail", "must be an email address such as name@example.com")
        }
        try await reauthentication.require(principal, body.confirmation, request: request)
        switch try await links.requestEmailChange(of: principal.userID, session: principal.sessionID, to: newEmail) {
        case .queued(let link):
            desk.queued("email-change", link: link)
            return .empty(202)
        case .taken:
            throw HTTPError.conflict("An account with this email already exists.", code: .emailTaken)
        case .throttled(let retryAfter):
            throw HTTPError.tooManyRequests(
                retryAfter: retryAfter, "Enough changes of address were asked for lately; try again later.")
        case .anonymous:
            throw HTTPError.anonymousAccount("A change of address (keep it with POST /auth/anonymous/upgrade instead)")
        case .invalid, .changed:
            throw HTTPError.unauthorized("The account no longer exists.", code: .accountDeleted)
        }
    }

    /// `POST /auth/email/change/confirm {token}` (JSON → the user; a form → a page).
    func confirmChange(_ request: Request, _ context: ServiceRequestContext, _ body: EmailTokenRequest) async throws
        -> EndpointReply<User>
    {
        let (form, token) = (request.isForm, body.token)
        let outcome =
            try await MailDesk.hash(token).asyncMap {
                try await links.confirmEmailChange($0)
            } ?? .invalid
        switch outcome {
        case .changed(let user):
            desk.queued("email-changed", link: nil)
            logger.info("email changed", [("user_id", .string(user.id.text()))])
            if form { return .page(desk.page("Address changed", "Your \(appName) account now uses \(user.handle).")) }
            return try .json(user)
        case .taken:
            if form { return .page(desk.page("Address taken", "Another account uses this address now.", status: 409)) }
            throw HTTPError.conflict("An account with this email already exists.", code: .emailTaken)
        case .invalid, .queued, .throttled, .anonymous:
            if form {
                return .page(desk.page("This link no longer works", "Ask for the change again from the app.", status: 410))
            }
            throw HTTPError(
                422, code: .invalidEmailToken, detail: "The link was used already or has expired; ask for a new mail.",
                errors: [.init(field: "token", message: "is not a live address-change token")])
        }
    }

    /// `GET /auth/email/change/confirm?token=…`: the page behind the mailed link.
    func confirmChangePage(_ request: Request, _ context: ServiceRequestContext, _ link: TokenQuery) async throws
        -> EndpointReply<HTMLPage>
    {
        .page(
            desk.page(
                "Confirm your new address", "Confirm that your \(appName) account should use this address.",
                form: (
                    action: AuthAPI.confirmEmailChange.path, token: link.token ?? "", password: false,
                    button: "Confirm"
                )))
    }

    /// `POST /auth/email/change/cancel {token}` (JSON → the user; a form → a page): the link in
    /// the notice to the old address. The pending change is void and the session that asked for
    /// it ended.
    func cancelChange(_ request: Request, _ context: ServiceRequestContext, _ body: EmailTokenRequest) async throws
        -> EndpointReply<User>
    {
        let (form, token) = (request.isForm, body.token)
        guard let user = try await MailDesk.hash(token).asyncMap({ try await links.cancelEmailChange($0) }) ?? nil else {
            if form {
                return .page(
                    desk.page("This link no longer works", "The change was confirmed, cancelled or has expired.", status: 410))
            }
            throw HTTPError(
                422, code: .invalidEmailToken, detail: "The link was used already or has expired.",
                errors: [.init(field: "token", message: "is not a live cancel link")])
        }
        logger.info("change of address cancelled", [("user_id", .string(user.id.text()))])
        if form {
            return .page(
                desk.page(
                    "Change cancelled",
                    "Your \(appName) account keeps \(user.handle), and the device that asked was signed out. Change your password from the app."
                ))
        }
        return try .json(user)
    }

    /// `GET /auth/email/change/cancel?token=…`: the page behind the link in the notice.
    func cancelChangePage(_ request: Request, _ context: ServiceRequestContext, _ link: TokenQuery) async throws
        -> EndpointReply<HTMLPage>
    {
        .page(
            desk.page(
                "Cancel the change of address",
                "Keep the address your \(appName) account has, and sign out the device that asked.",
                form: (
                    action: AuthAPI.cancelEmailChange.path, token: link.token ?? "", password: false,
                    button: "Cancel the change"
                )))
    }

}

extension Optional {
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
