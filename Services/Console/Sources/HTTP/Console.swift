import PierCrypto
import PierHTML
import PierHTTP
import PierIdentity
import PierJSON
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The console's request handling: the session cookie, the CSRF check of every form, the
/// security headers of every page, and the calls to Pier's API as the signed-in staff member.
struct Console: Sendable {
    let sessions: ConsoleSessions
    /// Saved views and replies, and who has which item open.
    let helpDesk: HelpDesk
    let api: PierAPI
    let authenticator: Authenticator
    let secureCookies: Bool
    /// The console's public origin, when a proxy in front changes `Host` (`PIER_CONSOLE_ORIGIN`).
    let origin: String?
    /// The other plugins' pages, audit logs and events.
    let additions: ConsoleAdditions
    let logger: Logger

    var cookieName: String { secureCookies ? "__Host-pier_console" : "pier_console" }
    var preCookieName: String { secureCookies ? "__Host-pier_console_form" : "pier_console_form" }

    /// Every console response's headers: no script but the console's own file, no framing, no
    /// caching of private pages, no referrer leaving the console.
    static let securityHeaders: HTTPHeaders = [
        "Content-Security-Policy":
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; "
            + "frame-ancestors 'none'; base-uri 'none'",
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
        "Cache-Control": "no-store",
        "Cross-Origin-Opener-Policy": "same-origin",
    ]

    // MARK: - Signed-in staff

    /// Why a request is answered with the sign-in page instead.
    struct SignedOut: Error {}

    /// The request's session, its access token fresh; nil when there is none (or it ended: timed
    /// out, signed out elsewhere, the account's sessions revoked, its role taken away).
    func session(_ request: Request) async throws -> ConsoleSession? {
        guard let value = cookie(cookieName, in: request), let secret = Base64.urlDecoded(value), secret.count == 32,
            var session = try await sessions.find(secret)
        else { return nil }
        if session.accessExpiresAt.timeIntervalSinceNow < 60 {
            guard let refreshed = try await refresh(session, request) else { return nil }
            session = refreshed
        } else {
            // The revocation list knows within seconds when Pier ended the session (disabled,
            // role changed, signed out everywhere): the console signs out with it.
            if try await !isAccepted(session.accessToken) {
                try await sessions.delete(session)
                return nil
            }
        }
        try await sessions.touch(session)
        return session
    }

    /// Whether Pier would accept the access token now (a 503 while the revocation list cannot
    /// tell is thrown: it says nothing of this session).
    private func isAccepted(_ token: String) async throws -> Bool {
        let probe = Request(method: "GET", path: "/", headers: ["Authorization": "Bearer " + token])
        do {
            _ = try await authenticator.principal(probe)
            return true
        } catch {
            if error.status == 401 { return false }
            throw error
        }
    }

    /// Renews the session's tokens now (its sign-in just changed: a second factor was set up).
    func renew(_ session: ConsoleSession, _ request: Request) async throws -> ConsoleSession? {
        try await refresh(session, request, now: true)
    }

    /// Exchanges the refresh token under the row's lock (one refresh per session, however many
    /// tabs ask at once); nil, and the session gone, when Pier refuses it.
    private func refresh(_ stale: ConsoleSession, _ request: Request, now: Bool = false) async throws -> ConsoleSession? {
        try await sessions.renewing(stale.secret) { current in
            guard now || current.accessExpiresAt.timeIntervalSinceNow < 60 else { return .keep }
            let reply = try await api.send(
                AuthAPI.refresh, NoParameters(), body: RefreshRequest(refreshToken: current.refreshToken), from: request)
            guard reply.ok, let tokens = try? reply.decode(AuthSession.self), tokens.user.role == current.role else {
                if reply.status == 401 || reply.ok { return .end }
                throw HTTPError.unavailable(retryAfter: 2, "Pier could not renew the session right now.")
            }
            return .store(tokens)
        }
    }

    /// Calls Pier's API as `session`'s staff member; a 401 ends the console session.
    func call(
        _ method: String, _ target: String, json body: [UInt8]? = nil, as session: ConsoleSession, _ request: Request
    ) async throws -> PierAPI.Reply {
        let reply = try await api.send(method, target, json: body, token: session.accessToken, from: request)
        if reply.status == 401 && reply.problem?.code != .reauthenticationRequired {
            try await sessions.delete(session)
            throw SignedOut()
        }
        return reply
    }

    /// The answer of `endpoint`, which must succeed (a page's data); its problem otherwise.
    func fetch<Parameters, Answer: Decodable>(
        _ endpoint: Endpoint<Parameters, NoBody, Answer>, _ parameters: Parameters, as session: ConsoleSession,
        _ request: Request
    ) async throws -> Answer {
        let reply = try await call(endpoint.method, endpoint.target(parameters), as: session, request)
        guard reply.ok else { throw Failed(reply: reply) }
        return try reply.decode(Answer.self)
    }

    /// `endpoint`, which takes no body: its reply as it came (a form shows the problem beside it).
    func call<Parameters, Answer>(
        _ endpoint: Endpoint<Parameters, NoBody, Answer>, _ parameters: Parameters, as session: ConsoleSession,
        _ request: Request
    ) async throws -> PierAPI.Reply {
        try await call(endpoint.method, endpoint.target(parameters), as: session, request)
    }

    /// `endpoint` with `body`: its reply as it came (a form shows the problem beside it).
    func call<Parameters, Body: Encodable, Answer>(
        _ endpoint: Endpoint<Parameters, Body, Answer>, _ parameters: Parameters, body: Body, as session: ConsoleSession,
        _ request: Request
    ) async throws -> PierAPI.Reply {
        try await call(endpoint.method, endpoint.target(parameters), json: try api.json(body), as: session, request)
    }

    /// The names of the accounts `ids` (display name, else address), read at once; an account
    /// that cannot be read (deleted) is left out, and shown by its id.
    func names(_ ids: Set<UUID>, as session: ConsoleSession, _ request: Request) async -> [UUID: String] {
        await AccountLookup.names(ids) { try await self.fetch(AuthAPI.user, PathID($0), as: session, request) }
    }

    /// A call Pier refused: the page says why.
    struct Failed: Error {
        let reply: PierAPI.Reply
    }

    // MARK: - Routes

    typealias Screen = @Sendable (Request, ConsoleSession, Parameters) async throws -> Response

    /// A page or form for signed-in staff: without a session, the sign-in page (a GET) or 401;
    /// every POST must carry the session's CSRF token and come from the console's own origin
    /// (403 otherwise).
    func staff(_ screen: @escaping Screen) -> @Sendable (Request, ServiceRequestContext) async throws -> Response {
        // The page's menu marks where it is, refusals included (``Layout/drawing``).
        { request, context in
            try await Layout.$drawing.withValue(request.path) { try await staffScreen(screen, request, context) }
        }
    }

    private func staffScreen(_ screen: Screen, _ request: Request, _ context: ServiceRequestContext) async throws -> Response {
        var signedIn: ConsoleSession?
        do {
            guard let session = try await session(request) else { throw SignedOut() }
            signedIn = session
            if request.method == "POST" {
                let form = try request.form() ?? [:]
                guard sameOrigin(request), let token = form["csrf"],
                    constantTimeEquals(Array(token.utf8), Array(session.csrf.utf8))
                else {
                    logger.warning("console form refused: no valid CSRF token", [("user_id", .string(session.userID.text()))])
                    return page(
                        status: 403, title: "Refused", session: nil,
                        "<h1>Refused</h1><p>This form was not sent from the console. Open the page again and retry.</p>")
                }
            }
            return try await screen(request, session, context.parameters)
        } catch is SignedOut {
            if request.method == "GET" {
                return redirect(ConsolePath("sign-in", query: [("next", request.target)]), clearing: true)
            }
            return page(
                status: 401, title: "Signed out", session: nil,
                "<h1>Signed out</h1><p>Your console session ended. <a href=\"/console/sign-in\">Sign in again</a>.</p>")
        } catch let failed as Failed {
            return problem(failed.reply, session: signedIn)
        } catch {
            return failure(error, request: request, session: signedIn)
        }
    }

    /// Any other failure (the database or Pier's API away) as a page with the console's headers,
    /// never a bare JSON problem: its status and what may be said of it.
    func failure(_ error: any Error, request: Request, session: ConsoleSession?) -> Response {
        let known = (error as? HTTPError) ?? (ErrorMapping.map(error) as? HTTPError)
        let status = known?.status ?? 500
        if known == nil {
            logger.error(
                "console request failed", [("request_id", .string(request.requestID)), ("error", .string("\(error)"))])
        }
        var problem = known?.problem ?? Problem(code: .internalError, title: "Internal error", status: 500)
        problem.requestId = problem.requestId ?? request.requestID
        var response = refusal(problem, status: status, session: session)
        if let retry = known?.headers["Retry-After"] { response.headers.set("Retry-After", retry) }
        return response
    }

    /// A public page (the sign-in form): its failures as pages too.
    func open(_ screen: @escaping @Sendable (Request) async throws -> Response)
        -> @Sendable (Request, ServiceRequestContext) async throws -> Response
    {
        { request, _ in
            do { return try await screen(request) } catch { return failure(error, request: request, session: nil) }
        }
    }

    /// The page of a refused call: its status, and what Pier said.
    func problem(_ reply: PierAPI.Reply, session: ConsoleSession?) -> Response {
        // The role needs a second factor this session did not use: set one up first.
        if reply.problem?.code == .mfaEnrolmentRequired { return redirect(ConsolePath("two-step")) }
        let status = (400..<600).contains(reply.status) ? reply.status : 502
        return refusal(reply.problem, status: status, session: session)
    }

    /// A refusal as staff read it: what happened in words and the way back; the code, request
    /// id and Pier's own detail folded under "Details", for a bug report.
    func refusal(_ problem: Problem?, status: Int, session: ConsoleSession?) -> Response {
        let words = Labels.english.problem(problem, status: status)
        let fields = HTML.join(
            (problem?.errors ?? []).map { error in
                "<li>\(Labels.english.field(error.field)): \(FormState.sentence(error.message))</li>"
            })
        return page(
            status: status, title: words.heading, session: session,
            """
            <h1>\(words.heading)</h1>
            <p class="problem">\(words.message)</p>
            <ul>\(fields)</ul>
            <p><a href="/console/">Back to the console</a></p>
            \(Self.details(problem, status: status))
            """)
    }

    /// What a developer needs to find a refusal in the logs, folded away.
    static func details(_ problem: Problem?, status: Int) -> HTML {
        """
        <details class="muted"><summary>Details for a bug report</summary>
        <p>Status \(status), code <code>\(problem?.code?.rawValue ?? "-")</code>, request <code>\(problem?.requestId ?? "-")</code></p>
        <p>\(problem?.detail ?? "")</p></details>
        """
    }

    /// Whether a form was posted from the console's own pages (`Origin`, when the browser sends
    /// it, names the scheme and host the browser asked for — behind the gateway, the
    /// `X-Forwarded-Proto` and `X-Forwarded-Host` it sets — or `PIER_CONSOLE_ORIGIN` when it is
    /// set). `https://host` is another origin than `http://host`: a page served over TLS is not
    /// the console a plain-HTTP browser talks to.
    func sameOrigin(_ request: Request) -> Bool {
        guard let sent = request.headers["Origin"] else { return true }
        if let origin { return sent == origin }
        guard let host = request.host else { return false }
        return sent == request.scheme + "://" + host
    }

    // MARK: - Responses

    func page(status: Int = 200, title: String, session: ConsoleSession?, _ content: HTML) -> Response {
        var headers = Self.securityHeaders
        headers.set("Content-Type", "text/html; charset=utf-8")
        let body = Layout.page(
            title: title, session: session, menu: session.map { additions.menu(for: $0) } ?? [], content: content)
        return Response(status: status, headers: headers, body: Array(body.text.utf8))
    }

    /// 303 to `path` (after a form, or to sign in), optionally ending the session cookie.
    func redirect(_ path: ConsolePath, clearing: Bool = false, cookie: String? = nil) -> Response {
        var headers = Self.securityHeaders
        headers.set("Location", path.value)
        if clearing { headers.add("Set-Cookie", setCookie(cookieName, "", maxAge: 0)) }
        if let cookie { headers.add("Set-Cookie", cookie) }
        return Response(status: 303, headers: headers)
    }

    var secureFlag: String { secureCookies ? "; Secure" : "" }

    func sessionCookie(_ session: ConsoleSession) -> String {
        setCookie(cookieName, Base64.urlEncoded(session.secret))
    }

    /// A `Set-Cookie` of the console: HttpOnly, SameSite=Strict, `Path=/` and, with secure
    /// cookies, `Secure` — what a `__Host-` name requires (a browser drops such a cookie
    /// otherwise, and signing in could never succeed). `maxAge: 0` ends it.
    func setCookie(_ name: String, _ value: String, maxAge: Int? = nil) -> String {
        "\(name)=\(value); Path=/; \(maxAge.map { "Max-Age=\($0); " } ?? "")HttpOnly; SameSite=Strict\(secureFlag)"
    }

    /// The value of cookie `name`.
    func cookie(_ name: String, in request: Request) -> String? {
        for header in request.headers.values("Cookie") {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingWhitespace() == name { return String(parts[1].trimmingWhitespace()) }
            }
        }
        return nil
    }

    func routes(into routes: inout Routes) {
        let router = Router<ServiceRequestContext>()
        let signIn = SignInScreens(console: self)
        let feedback = FeedbackScreens(console: self)
        let inbox = InboxScreens(console: self)
        let saved = SavedReplyScreens(console: self)
        let users = UserScreens(console: self)
        let audit = AuditScreens(console: self)
        let webhooks = WebhookScreens(console: self)
        let plans = PlanScreens(console: self)
        let dashboard = DashboardScreens(console: self)
        let twoStep = TwoStepScreens(console: self)
        let profile = ProfileScreens(console: self)
        PluginScreens(console: self).routes(into: router)
        // The front door, `/console/` as the README prints it and `/console` alike (one route).
        router.get("/console/") { request, context in
            try await staff { _, _, _ in redirect(ConsolePath("inbox")) }(request, context)
        }
        router.get("/console/sign-in", open { try await signIn.form($0) })
        router.post("/console/sign-in", open { try await signIn.submit($0) })
        router.post("/console/sign-in/code", open { try await signIn.submitCode($0) })
        router.post("/console/sign-out") { request, context in try await staff(signIn.signOut)(request, context) }
        router.get("/console/me") { try await staff(profile.form)($0, $1) }
        router.post("/console/me") { try await staff(profile.save)($0, $1) }
        router.get("/console/two-step") { try await staff(twoStep.overview)($0, $1) }
        router.post("/console/two-step") { try await staff(twoStep.start)($0, $1) }
        router.post("/console/two-step/confirm") { try await staff(twoStep.confirm)($0, $1) }
        router.get("/console/inbox") { try await staff(inbox.inbox)($0, $1) }
        router.post("/console/inbox") { try await staff(inbox.bulk)($0, $1) }
        router.post("/console/inbox/views") { try await staff(inbox.saveView)($0, $1) }
        router.post("/console/inbox/views/{id}/delete") { try await staff(inbox.deleteView)($0, $1) }
        router.get("/console/replies") { try await staff(saved.list)($0, $1) }
        router.post("/console/replies") { try await staff(saved.save)($0, $1) }
        router.post("/console/replies/{id}/delete") { try await staff(saved.delete)($0, $1) }
        router.post("/console/feedback/{id}/presence") { try await staff(saved.presence)($0, $1) }
        router.get("/console/feedback/{id}") { try await staff(feedback.item)($0, $1) }
        router.post("/console/feedback/{id}") { try await staff(feedback.triage)($0, $1) }
        router.post("/console/feedback/{id}/reply") { try await staff(feedback.reply)($0, $1) }
        router.get("/console/users") { try await staff(users.search)($0, $1) }
        router.get("/console/users/{id}") { try await staff(users.user)($0, $1) }
        router.get("/console/users/{id}/export") { try await staff(users.export)($0, $1) }
        router.post("/console/users/{id}/{action}") { try await staff(users.act)($0, $1) }
        router.get("/console/audit") { try await staff(audit.list)($0, $1) }
        router.get("/console/webhooks") { try await staff(webhooks.list)($0, $1) }
        router.get("/console/webhooks/{id}") { try await staff(webhooks.delivery)($0, $1) }
        router.post("/console/webhooks/{id}/replay") { try await staff(webhooks.replay)($0, $1) }
        router.get("/console/dashboard") { try await staff(dashboard.dashboard)($0, $1) }
        router.get("/console/plans") { try await staff(plans.list)($0, $1) }
        router.post("/console/plans") { try await staff(plans.create)($0, $1) }
        router.get("/console/plans/{id}") { try await staff(plans.plan)($0, $1) }
        router.post("/console/plans/{id}") { try await staff(plans.update)($0, $1) }
        router.post("/console/plans/{id}/active") { try await staff(plans.setActive)($0, $1) }
        router.get("/console/static/console.css") { _, _ in Assets.response(Assets.css, type: "text/css; charset=utf-8") }
        router.get("/console/static/favicon.svg") { _, _ in Assets.response(Assets.icon, type: "image/svg+xml") }
        router.get("/console/static/console.js") { _, _ in
            Assets.response(Assets.script, type: "text/javascript; charset=utf-8")
        }
        routes.merge(router.routes)
    }
}

extension Request {
    /// A form's fields in order, repeated names kept (bulk actions' checkboxes).
    func formPairs() throws(HTTPError) -> [(name: String, value: String)] {
        guard isForm else { return [] }
        return try URLTarget.pairs(String(decoding: body, as: UTF8.self)[...], what: "form")
    }
}
