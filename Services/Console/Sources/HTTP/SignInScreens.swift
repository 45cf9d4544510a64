import PierCrypto
import PierHTML
import PierHTTP
import PierModels
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Signing in and out. The sign-in form is protected against login CSRF by a double-submitted
/// value (a SameSite=Strict cookie and the same value in the form); the password goes to Pier's
/// `POST /auth/login` with the browser's address (its rate limits and lockouts apply), and only
/// an account with a team role gets a console session.
struct SignInScreens: Sendable {
    let console: Console

    func form(_ request: Request, error: String? = nil, status: Int = 200) async throws -> Response {
        if error == nil, try await console.session(request) != nil { return console.redirect(ConsolePath("inbox")) }
        let nonce = Base64.urlEncoded(SecureRandom.bytes(24))
        let next = Self.next(request.query("next") ?? (try? request.form())?["next"])
        let problem: HTML = error.map { "<p class=\"problem\" role=\"alert\">\($0)</p>" } ?? .empty
        var response = console.page(
            status: status, title: "Sign in", session: nil,
            """
            <div class="signin">
            <h1>Pier console</h1>
            \(problem)
            <form method="post" action="/console/sign-in">
            <input type="hidden" name="form" value="\(nonce)">
            <input type="hidden" name="next" value="\(next)">
            <label>Email <input type="email" name="email" autocomplete="username" required autofocus></label>
            <label>Password <input type="password" name="password" autocomplete="current-password" required></label>
            <button type="submit">Sign in</button>
            </form>
            <p class="muted">For the app's team: support and admin accounts.</p>
            </div>
            """)
        response.headers.add(
            "Set-Cookie", console.setCookie(console.preCookieName, nonce))
        return response
    }

    /// The double-submitted value of the form matches its cookie, from this origin.
    private func submitted(_ request: Request, _ form: [String: String]) -> Bool {
        guard console.sameOrigin(request), let nonce = form["form"],
            let cookie = console.cookie(console.preCookieName, in: request)
        else { return false }
        return !nonce.isEmpty && constantTimeEquals(Array(nonce.utf8), Array(cookie.utf8))
    }

    func submit(_ request: Request) async throws -> Response {
        let form = try request.form() ?? [:]
        guard submitted(request, form) else {
            return try await self.form(request, error: "The form had expired; sign in again.", status: 403)
        }
        let email = form["email"] ?? ""
        let password = form["password"] ?? ""
        let agent = (request.headers["User-Agent"] ?? "browser").prefix(60)
        let login = LoginRequest(email: email, password: password, deviceName: "Pier console (\(Self.browser(String(agent))))")
        let reply = try await console.api.send(AuthAPI.login, NoParameters(), body: login, from: request)
        if reply.problem?.code == .mfaRequired, let token = reply.problem?.mfaToken {
            return codeForm(mfaToken: token, next: Self.next(form["next"]))
        }
        guard reply.ok, let tokens = try? reply.decode(AuthSession.self) else {
            let problem = reply.problem
            let message =
                switch problem?.code {
                case .invalidCredentials?, .validationFailed?: "The email or password is not correct."
                case .rateLimited?: problem?.detail ?? "Too many attempts; try again later."
                default: problem?.detail ?? "Signing in failed; try again."
                }
            return try await self.form(request, error: message, status: [403, 429].contains(reply.status) ? reply.status : 401)
        }
        return try await signedIn(tokens, request, next: form["next"])
    }

    /// The second step of an account with two-step sign-in: a code for the MFA token the password
    /// earned (it lives 5 minutes; five wrong codes end it).
    func codeForm(mfaToken: String, next: String, error: String? = nil, status: Int = 200) -> Response {
        let nonce = Base64.urlEncoded(SecureRandom.bytes(24))
        let problem: HTML = error.map { "<p class=\"problem\" role=\"alert\">\($0)</p>" } ?? .empty
        var response = console.page(
            status: status, title: "Two-step sign-in", session: nil,
            """
            <div class="signin">
            <h1>Two-step sign-in</h1>
            \(problem)
            <form method="post" action="/console/sign-in/code">
            <input type="hidden" name="form" value="\(nonce)">
            <input type="hidden" name="next" value="\(next)">
            <input type="hidden" name="mfaToken" value="\(mfaToken)">
            <label>Code from your authenticator app, or a recovery code
            <input name="code" autocomplete="one-time-code" inputmode="numeric" required autofocus></label>
            <button type="submit">Sign in</button>
            </form>
            </div>
            """)
        response.headers.add("Set-Cookie", console.setCookie(console.preCookieName, nonce))
        return response
    }

    /// `POST /console/sign-in/code`: the code completes the sign-in through `POST /auth/mfa/verify`,
    /// from the browser's address (the same back-off as on the app).
    func submitCode(_ request: Request) async throws -> Response {
        let form = try request.form() ?? [:]
        guard submitted(request, form), let token = form["mfaToken"], !token.isEmpty else {
            return try await self.form(request, error: "The form had expired; sign in again.", status: 403)
        }
        let next = Self.next(form["next"])
        let verify = MFAVerifyRequest(mfaToken: token, code: form["code"] ?? "")
        let reply = try await console.api.send(AuthAPI.verifySecondFactor, NoParameters(), body: verify, from: request)
        guard reply.ok, let tokens = try? reply.decode(AuthSession.self) else {
            switch reply.problem?.code {
            case .invalidCode?, .validationFailed?:
                return codeForm(mfaToken: token, next: next, error: "The code is not correct, or was used already.", status: 401)
            case .rateLimited?:
                return codeForm(
                    mfaToken: token, next: next, error: reply.problem?.detail ?? "Too many attempts; try again later.",
                    status: 429)
            default:
                return try await self.form(
                    request, error: "The sign-in waited too long, or saw too many wrong codes; sign in again.", status: 401)
            }
        }
        return try await signedIn(tokens, request, next: next)
    }

    /// A console session for the Pier session Pier opened, when the account has a team role.
    private func signedIn(_ tokens: AuthSession, _ request: Request, next: String?) async throws -> Response {
        let role = tokens.user.role
        guard role.isStaff else {
            // Not one of the team: the session Pier opened is ended at once.
            _ = try? await console.api.send(
                AuthAPI.logout, NoParameters(), body: RefreshRequest(refreshToken: tokens.refreshToken), from: request)
            return try await self.form(request, error: "This account has no team role (support or admin).", status: 403)
        }
        let session = try await console.sessions.create(for: tokens, role: role)
        console.logger.info("console signed in", [("user_id", .string(session.userID.text())), ("role", .string(role.rawValue))])
        var response = console.redirect(
            ConsolePath(rawPath: Self.next(next)), cookie: console.sessionCookie(session))
        response.headers.add(
            "Set-Cookie", console.setCookie(console.preCookieName, "", maxAge: 0))
        return response
    }

    /// Ends the console session and the Pier session behind it.
    func signOut(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        _ = try? await console.api.send(
            AuthAPI.logout, NoParameters(), body: RefreshRequest(refreshToken: session.refreshToken),
            token: session.accessToken, from: request)
        try await console.sessions.delete(session)
        console.logger.info("console signed out", [("user_id", .string(session.userID.text()))])
        return console.redirect(ConsolePath("sign-in"), clearing: true)
    }

    /// Where to go after signing in: a console page only (never another site).
    static func next(_ given: String?) -> String {
        guard let given, given.hasPrefix("/console/"), !given.hasPrefix("//"), !given.contains("\\"),
            !given.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F }),
            !given.hasPrefix("/console/sign-")
        else { return "/console/inbox" }
        return given
    }

    /// The browser's family, for the session list (not the whole user agent).
    static func browser(_ agent: String) -> String {
        for name in ["Firefox", "Edg", "Chrome", "Safari"] where agent.contains(name) { return name == "Edg" ? "Edge" : name }
        return "browser"
    }
}
