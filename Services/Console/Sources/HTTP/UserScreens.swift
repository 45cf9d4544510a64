import PierHTML
import PierHTTP
import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Finding an account (by address or its start, a display name's start, or id) and its page:
/// profile, verified address, identities, sessions, subscription with its facts and grants,
/// feedback, and the actions support and admins take on it. Admin-only actions are not shown to
/// support (and Pier refuses them anyway).
struct UserScreens: Sendable {
    let console: Console

    func search(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let query = (request.query("q") ?? "").trimmingWhitespace()
        var results: HTML = .empty
        if !query.isEmpty {
            let found = try await console.fetch(AuthAPI.users, UserSearch(query, limit: 50), as: session, request)
            let rows = HTML.join(
                found.items.map { user in
                    let path = ConsolePath("users", user.id.uuidString.lowercased())
                    return """
                        <tr data-href="\(path)"><td><a href="\(path)">\(user.handle)</a></td><td>\(user.displayName ?? "")</td>
                        <td><span class="badge">\(label: user.role)</span>\(user.disabledAt == nil ? HTML.empty : " <span class=\"badge bad\">disabled</span>")</td>
                        <td>\(user.emailVerified ? "verified" : "unverified")</td><td class="muted when">\(Layout.date(user.createdAt))</td></tr>
                        """
                })
            results = """
                <table><thead><tr><th>Email</th><th>Name</th><th>Role</th><th>Address</th><th>Since</th></tr></thead>
                <tbody>\(rows)</tbody></table>
                \(found.items.isEmpty ? "<p class=\"muted\">No account matches.</p>" : HTML.empty)
                \(found.more ? "<p class=\"muted\">More accounts match: type more of the address.</p>" : HTML.empty)
                """
        }
        return console.page(
            title: "Users", session: session,
            """
            <h1>Users</h1>
            <form class="filters" method="get" action="/console/users">
            <label>Email, its start, a name's start, or an id <input type="search" name="q" value="\(query)" autofocus></label>
            <button type="submit">Find</button>
            </form>
            \(results)
            """)
    }

    func user(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        guard let id = parameters["id"].flatMap(UUID.init(uuidString:)) else {
            return console.page(status: 404, title: "Not found", session: session, "<h1>No such account</h1>")
        }
        let page = try await UserPage.load(id, console: console, as: session, request)
        let notice: HTML =
            request.query("done").flatMap(Self.notices.first(where:)).map {
                "<p class=\"notice\" role=\"status\">\($0.1)</p>"
            } ?? .empty
        return console.page(title: page.user.handle, session: session, page.body(notice: notice))
    }

    /// The messages a page may show after an action, by key (nothing the request says is shown).
    static let notices: [(String, String)] = [
        ("sessions", "Sessions ended."), ("mail", "Mail queued."), ("disabled", "The account is disabled."),
        ("enabled", "The account is enabled."), ("granted", "Access granted."), ("revoked", "Grant revoked."),
        ("role", "Role changed; the account's sessions ended."), ("refreshed", "Read again from Apple."),
        ("google", "Read again from Google Play."),
        ("mfa", "Two-step sign-in removed; the owner was mailed."),
        ("approved", "Approved: they may set up two-step sign-in in the next 30 minutes."),
    ]

    /// `GET /console/users/{id}/export`: the account's data, as a download.
    func export(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        guard let id = parameters["id"].flatMap(UUID.init(uuidString:)) else {
            return console.page(status: 404, title: "Not found", session: session, "<h1>No such account</h1>")
        }
        let reply = try await console.call(AuthAPI.exportUser, PathID(id), as: session, request)
        guard reply.ok else { return console.problem(reply, session: session) }
        var headers = Console.securityHeaders
        headers.set("Content-Type", "application/json")
        headers.set("Content-Disposition", "attachment; filename=\"pier-export-\(id.uuidString.lowercased()).json\"")
        return Response(status: 200, headers: headers, body: reply.body)
    }

    /// `POST /console/users/{id}/{action}`: one of the account's actions, through Pier's API.
    func act(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        guard let id = parameters["id"].flatMap(UUID.init(uuidString:)), let action = parameters["action"] else {
            return console.page(status: 404, title: "Not found", session: session, "<h1>No such account</h1>")
        }
        let user = PathID(id)
        let form = try request.form() ?? [:]
        let api = console.api
        let planned: Planned
        switch action {
        case "end-sessions": planned = Planned(AuthAPI.endUserSessions, user, done: "sessions")
        case "end-session":
            guard let one = form["session"].flatMap(UUID.init(uuidString:)) else { return missing("session") }
            planned = Planned(AuthAPI.endUserSession, UserSessionID(user: id, session: one), done: "sessions")
        case "mail":
            let mail = StaffMailRequest(mail: form["mail"] ?? "")
            planned = Planned(AuthAPI.mailUser, user, body: try api.json(mail), done: "mail")
        case "disable": planned = Planned(AuthAPI.disableUser, user, done: "disabled")
        case "enable": planned = Planned(AuthAPI.enableUser, user, done: "enabled")
        case "grant":
            let grant = CreateGrant(
                userId: id, planId: form["plan"] ?? "", duration: form["duration"] ?? "P1M", reason: form["reason"] ?? "")
            planned = Planned(SubscriptionsAPI.grant, NoParameters(), body: try api.json(grant), done: "granted")
        case "appstore-refresh": planned = Planned(SubscriptionsAPI.refresh, UserID(id), done: "refreshed")
        case "google-refresh": planned = Planned(SubscriptionsAPI.googleRefresh, UserID(id), done: "google")
        case "revoke-grant":
            guard let grant = form["grant"].flatMap(UUID.init(uuidString:)) else { return missing("grant") }
            planned = Planned(SubscriptionsAPI.revokeGrant, PathID(grant), done: "revoked")
        case "role":
            // A value the form never offers is refused, never read as "user".
            guard let role = form["role"].flatMap(AccountRole.init(rawValue:)) else {
                return console.page(
                    status: 422, title: "Unknown role", session: session,
                    "<h1>Choose user, support or admin</h1><p>The role sent is not one of them; nothing was changed.</p>")
            }
            let change = RoleChange(role: role, password: Self.filled(form, "password"), code: Self.filled(form, "code"))
            planned = Planned(AuthAPI.setRole, user, body: try api.json(change), done: "role")
        case "approve-mfa":
            guard let one = form["session"].flatMap(UUID.init(uuidString:)) else { return missing("session") }
            let approval = EnrolmentApproval(sessionId: one)
            planned = Planned(AuthAPI.approveUserEnrolment, user, body: try api.json(approval), done: "approved")
        case "remove-mfa":
            let confirmation = Self.confirmation(form)
            planned = Planned(AuthAPI.removeUserSecondFactor, user, body: try api.json(confirmation), done: "mfa")
        case "delete":
            let confirmation = Self.confirmation(form)
            let reply = try await console.call(AuthAPI.deleteUser, user, body: confirmation, as: session, request)
            guard reply.ok else { return try await refused(reply, id, request, session) }
            return console.redirect(ConsolePath("users"))
        default:
            return console.page(status: 404, title: "Not found", session: session, "<h1>No such action</h1>")
        }
        let reply = try await console.call(planned.method, planned.target, json: planned.body, as: session, request)
        guard reply.ok else { return try await refused(reply, id, request, session) }
        // Acting on one's own account (ending one's sessions, one's role) may end this session too.
        if id == session.userID, try await console.session(request) == nil {
            return console.redirect(ConsolePath("sign-in"), clearing: true)
        }
        return console.redirect(ConsolePath("users", id.uuidString.lowercased(), query: [("done", planned.done)]))

        func missing(_ field: String) -> Response {
            console.page(status: 422, title: "Missing", session: session, "<h1>Missing \(field)</h1>")
        }
    }

    /// An action Pier refused: the account's page again, what went wrong above it in words (a
    /// failure of the server's, or an account gone, as its own page).
    func refused(_ reply: PierAPI.Reply, _ id: UUID, _ request: Request, _ session: ConsoleSession) async throws
        -> Response
    {
        guard (400..<500).contains(reply.status), reply.status != 404,
            reply.problem?.code != .mfaEnrolmentRequired
        else { return console.problem(reply, session: session) }
        let words = Labels.english.problem(reply.problem, status: reply.status)
        let fields = (reply.problem?.errors ?? []).map {
            FormState.sentence(Labels.english.field($0.field) + " " + $0.message)
        }
        let message = ([words.heading + ":", words.message] + fields).joined(separator: " ")
        let page = try await UserPage.load(id, console: console, as: session, request)
        return console.page(
            status: reply.status, title: page.user.handle, session: session,
            page.body(notice: "<p class=\"form-error\" role=\"alert\" data-refused>\(message)</p>"))
    }

    /// One action's call: its endpoint's method and target, its body, and the notice the page
    /// shows after it.
    struct Planned {
        let method: String
        let target: String
        let body: [UInt8]?
        let done: String

        init<Parameters, Body, Answer>(
            _ endpoint: Endpoint<Parameters, Body, Answer>, _ parameters: Parameters, body: [UInt8]? = nil, done: String
        ) {
            method = endpoint.method
            target = endpoint.target(parameters)
            self.body = body
            self.done = done
        }
    }

    /// A form's field, nil when absent or empty.
    static func filled(_ form: [String: String], _ name: String) -> String? {
        guard let value = form[name], !value.isEmpty else { return nil }
        return value
    }

    /// What a form that confirms a sensitive action sent: the team member's password, or their
    /// code when they have two-step sign-in.
    static func confirmation(_ form: [String: String]) -> ReauthenticationRequest {
        ReauthenticationRequest(password: filled(form, "password"), code: filled(form, "code"))
    }

    /// The field that confirms a sensitive action: a code from the authenticator app for a team
    /// member who has one (Pier refuses their password alone), else the password.
    static func confirmation(own status: MFAStatus) -> HTML {
        status.totpEnabledAt == nil
            ? "<label>Your password <input type=\"password\" name=\"password\" autocomplete=\"current-password\"></label>"
            : """
            <label>A code from your authenticator app <input name="code" inputmode="numeric" autocomplete="one-time-code"></label>
            """
    }
}

extension Array where Element == (String, String) {
    fileprivate func first(where key: String) -> (String, String)? { first { $0.0 == key } }
}
