import PierHTML
import PierHTTP
import PierIdentity
import PierModels

/// Two-step sign-in for the team: a member whose role needs a second factor
/// (`PIER_AUTH_REQUIRE_MFA_FOR_ROLES`) and signed in without one is brought here from any page
/// Pier refuses them (`mfa_enrolment_required`): the mailed link (or an admin) approves their
/// first one, they set up an authenticator app (its QR code), confirm its first code, note the
/// recovery codes, and go on with a session that carries it.
struct TwoStepScreens: Sendable {
    let console: Console

    /// `GET /console/two-step`: whether it is on, or the button that sets it up.
    func overview(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let status = try await console.fetch(AuthAPI.secondFactorStatus, NoParameters(), as: session, request)
        if let since = status.totpEnabledAt {
            return console.page(
                title: "Two-step sign-in", session: session,
                """
                <h1>Two-step sign-in</h1>
                <p>On since \(Layout.date(since)); \(String(status.recoveryCodesLeft)) recovery codes left.</p>
                <p class="muted">If the console still refuses you, this session began before: sign out and sign in again with a code.</p>
                """)
        }
        return startPage(session)
    }

    private func startPage(_ session: ConsoleSession, error: String? = nil, status: Int = 200) -> Response {
        let problem: HTML = error.map { "<p class=\"problem\" role=\"alert\">\($0)</p>" } ?? .empty
        return console.page(
            status: status, title: "Two-step sign-in", session: session,
            """
            <h1>Set up two-step sign-in</h1>
            <p>Your role asks for a second factor: a code from an authenticator app on your phone, at each sign-in.</p>
            \(problem)
            <form method="post" action="/console/two-step">\(Layout.csrf(session))
            <label>Your password (needed when you signed in more than 5 minutes ago)
            <input type="password" name="password" autocomplete="current-password"></label>
            <button type="submit">Set up an authenticator app</button>
            </form>
            """)
    }

    /// `POST /console/two-step`: a new secret, shown as a QR code and as text, and the form for
    /// the app's first code.
    func start(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let form = try request.form() ?? [:]
        let password = form["password"].flatMap { $0.isEmpty ? nil : $0 }
        let reply = try await console.call(
            AuthAPI.setUpAuthenticatorApp, NoParameters(), body: ReauthenticationRequest(password: password), as: session,
            request)
        guard reply.ok, let setup = try? reply.decode(TOTPEnrolment.self) else {
            if reply.problem?.code == .reauthenticationRequired {
                return startPage(session, error: "Give your password to go on.", status: 401)
            }
            if reply.problem?.code == .enrolmentApprovalRequired { return approvalPage(session) }
            return console.problem(reply, session: session)
        }
        return codePage(session, setup: setup)
    }

    /// A team account's first second factor waits for the mailed link (or an admin).
    private func approvalPage(_ session: ConsoleSession) -> Response {
        console.page(
            status: 403, title: "Two-step sign-in", session: session,
            """
            <h1>Check your mail</h1>
            <p data-approval>Your first two-step sign-in needs approval: we mailed a link to \(session.email). Open it, then come back here within 30 minutes and set it up.</p>
            <p class="muted">No mail? An admin can approve it from your page in the console. If you did not ask for this, someone has your password: reset it.</p>
            <form method="post" action="/console/two-step">\(Layout.csrf(session))
            <button type="submit">I opened the link: set up an authenticator app</button>
            </form>
            """)
    }

    private func codePage(_ session: ConsoleSession, setup: TOTPEnrolment, error: String? = nil) -> Response {
        let problem: HTML = error.map { "<p class=\"problem\" role=\"alert\">\($0)</p>" } ?? .empty
        return console.page(
            status: error == nil ? 200 : 422, title: "Two-step sign-in", session: session,
            """
            <h1>Scan this with your authenticator app</h1>
            <div class="qr">\(HTML.qrCode(setup.qrCode))</div>
            <p class="muted">Or type the key (the spaces are only to read it):</p>
            <p><code class="group-of-four" id="totp-key" data-secret="\(setup.secret)" data-value="\(setup.secret)">\(Self.grouped(setup.secret))</code>
            <button class="plain small" type="button" data-copy="totp-key" hidden>Copy the key</button></p>
            \(problem)
            <form method="post" action="/console/two-step/confirm">\(Layout.csrf(session))
            <input type="hidden" name="secret" value="\(setup.secret)">
            <input type="hidden" name="uri" value="\(setup.uri)">
            <label>The code the app shows <input name="code" autocomplete="one-time-code" inputmode="numeric" required autofocus></label>
            <button type="submit">Turn it on</button>
            </form>
            """)
    }

    /// A key as people copy it by hand: groups of four.
    static func grouped(_ secret: String) -> String {
        var groups: [String] = []
        var rest = Substring(secret)
        while !rest.isEmpty {
            groups.append(String(rest.prefix(4)))
            rest = rest.dropFirst(4)
        }
        return groups.joined(separator: " ")
    }

    /// The recovery codes' file: what they are, for whom, one per line.
    static func recoveryFile(_ codes: [String], for email: String) -> String {
        "Pier console recovery codes for \(email)\nEach signs you in once without your authenticator app.\n\n"
            + codes.joined(separator: "\n") + "\n"
    }

    /// `POST /console/two-step/confirm`: the first code turns it on; the recovery codes are shown
    /// once and the session is renewed, now carrying the second factor.
    func confirm(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let form = try request.form() ?? [:]
        let reply = try await console.call(
            AuthAPI.confirmAuthenticatorApp, NoParameters(), body: MFACodeRequest(code: form["code"] ?? ""), as: session,
            request)
        guard reply.ok, let codes = try? reply.decode(RecoveryCodes.self) else {
            if reply.problem?.code == .invalidCode || reply.problem?.code == .validationFailed,
                let secret = form["secret"], let uri = form["uri"], uri.hasPrefix("otpauth://")
            {
                // The same secret again (already scanned: its key only): the offer stands until confirmed.
                let setup = TOTPEnrolment(secret: secret, uri: uri, qrCode: "")
                return codePage(session, setup: setup, error: "That is not the app's current code; try the next one.")
            }
            return console.problem(reply, session: session)
        }
        _ = try await console.renew(session, request)
        let items = HTML.join(codes.codes.map { "<li><code>\($0)</code></li>" })
        let text = Self.recoveryFile(codes.codes, for: session.email)
        return console.page(
            title: "Two-step sign-in", session: session,
            """
            <h1>Two-step sign-in is on</h1>
            <p>Keep these recovery codes somewhere safe: each signs you in once without your phone. They are shown only now.</p>
            <ul class="codes" id="recovery-codes" data-recovery-codes data-value="\(codes.codes.joined(separator: "\n"))">\(items)</ul>
            <p><a class="button" download="pier-recovery-codes.txt" href="data:text/plain;charset=utf-8,\(PercentEncoding.component(text))">Download them as a text file</a>
            <button class="plain" type="button" data-copy="recovery-codes" hidden>Copy them</button></p>
            <p><a href="/console/inbox">Continue to the console</a></p>
            """)
    }
}
