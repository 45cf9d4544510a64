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
                        <tr data-href="\(path)"><td><a href="\(path)">\(user.email)</a></td><td>\(user.displayName ?? "")</td>
                        <td><span class="badge">\(user.role)</span>\(user.disabledAt == nil ? HTML.empty : " <span class=\"badge bad\">disabled</span>")</td>
                        <td>\(user.emailVerified ? "verified" : "unverified")</td><td class="muted">\(Layout.date(user.createdAt))</td></tr>
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
        let text = id.uuidString.lowercased()
        let user = try await console.fetch(AuthAPI.user, PathID(id), as: session, request)
        async let sessionsList = console.fetch(AuthAPI.userSessions, PathID(id), as: session, request)
        async let identityList = console.fetch(AuthAPI.userIdentities, PathID(id), as: session, request)
        async let history = console.fetch(SubscriptionsAPI.user, UserID(id), as: session, request)
        async let grantList = console.fetch(SubscriptionsAPI.grants, GrantsQuery(userID: id), as: session, request)
        async let plansList = console.fetch(SubscriptionsAPI.plans, PlansQuery(), as: session, request)
        async let feedbackList = console.fetch(
            FeedbackAPI.list, FeedbackQuery(userID: id, moderation: "all", limit: 20), as: session, request)
        async let twoStep = console.fetch(AuthAPI.userSecondFactor, PathID(id), as: session, request)
        async let passkeyList = console.fetch(AuthAPI.userPasskeys, PathID(id), as: session, request)
        async let ownTwoStep = console.fetch(AuthAPI.secondFactorStatus, NoParameters(), as: session, request)
        let (sessions, identities, subscription, grants, plans) = try await (
            sessionsList.items, identityList.items, history, grantList.items, plansList.items
        )
        let (factor, passkeys, confirm) = try await (twoStep, passkeyList.items, Self.confirmation(own: ownTwoStep))
        let feedback = (try? await feedbackList)?.items ?? []
        func action(_ name: String) -> ConsolePath { ConsolePath("users", text, name) }
        let csrf = Layout.csrf(session)
        // A team member's account is acted on by admins only (the server refuses support): no
        // button for what would be refused.
        let mayAct = session.isAdmin || !user.role.isStaff
        let adminsAct: HTML =
            mayAct
            ? .empty
            : "<p class=\"muted\" data-team-member>A team member's account: only an admin can end its sessions, disable it or remove its second factor.</p>"

        let sessionRows = HTML.join(
            sessions.map { item in
                """
                <tr><td>\(item.deviceName ?? "")</td><td>\(item.clientAddress ?? "")</td><td>\(Layout.date(item.createdAt))</td>
                <td>\(Layout.date(item.lastUsedAt))</td>
                <td>\(mayAct ? """
                <form class="inline" method="post" action="\(action("end-session"))">\(csrf)
                <input type="hidden" name="session" value="\(item.id)"><button class="plain" type="submit">End</button></form>
                """ : HTML.empty)</td></tr>
                """
            })
        let identityRows = HTML.join(
            identities.map {
                "<li>\($0.provider) \($0.email ?? "") <span class=\"muted\">since \(Layout.date($0.linkedAt))</span></li>"
            }
        )
        let passkeyRows = HTML.join(
            passkeys.map { passkey in
                let synced: HTML = passkey.backedUp ? " <span class=\"badge\">synced</span>" : HTML.empty
                let suspended: HTML = passkey.suspended ? " <span class=\"badge bad\">suspended</span>" : HTML.empty
                return """
                    <li>\(passkey.name)\(synced)\(suspended) <span class="muted">since \(Layout.date(passkey.createdAt)), used \(Layout.date(passkey.lastUsedAt))</span></li>
                    """
            })
        let secondFactor: HTML =
            factor.totpEnabledAt.map { since in
                let status: HTML = """
                    <p data-two-step>Two-step sign-in: <span class="badge">on</span> <span class="muted">since \(Layout.date(since)), \(factor.recoveryCodesLeft) recovery codes left</span></p>
                    """
                guard mayAct else { return status }
                return """
                    \(status)
                    <form class="actions" method="post" action="\(action("remove-mfa"))" data-confirm="Remove this account's two-step sign-in? Its owner is mailed; the password alone signs in again.">\(csrf)
                    \(confirm)
                    <button class="danger" type="submit">Remove two-step sign-in (authenticator app lost)</button>
                    </form>
                    """
            } ?? "<p data-two-step>Two-step sign-in: off</p>"
        // A team member's first second factor waits for the mailed link, or an admin.
        let asks = factor.awaitingApproval ?? []
        let approval: HTML =
            asks.isEmpty
            ? .empty
            : """
            <p data-approval-asked>Asks to set up two-step sign-in (approve only when they asked you themselves):</p>
            <ul data-approval-asks>\(HTML.join(asks.map { ask in
                """
                <li>\(ask.deviceName ?? "A device") <span class="muted">\(ask.address ?? "") at \(Layout.date(ask.askedAt))</span>
                \(session.isAdmin ? """
                <form class="inline" method="post" action="\(action("approve-mfa"))">\(csrf)
                <input type="hidden" name="session" value="\(ask.sessionId)"><button class="plain" type="submit">Approve</button></form>
                """ : HTML.empty)</li>
                """
            }))</ul>
            """
        let grantRows = HTML.join(
            grants.map { grant in
                let live = grant.revokedAt == nil && grant.endsAt > Date()
                let revoke: HTML =
                    live
                    ? """
                    <form class="inline" method="post" action="\(action("revoke-grant"))">\(csrf)
                    <input type="hidden" name="grant" value="\(grant.id)"><button class="plain" type="submit">Revoke</button></form>
                    """ : HTML.empty
                return """
                    <tr><td>\(grant.planId)</td><td>\(Layout.date(grant.startsAt))</td><td>\(Layout.date(grant.endsAt))</td>
                    <td>\(grant.reason)</td><td>\(grant.revokedAt == nil ? "" : "revoked \(Layout.date(grant.revokedAt))")</td><td>\(revoke)</td></tr>
                    """
            })
        let planOptions = HTML.join(plans.map { "<option value=\"\($0.id)\">\($0.name) (\($0.id))</option>" })
        let feedbackRows = HTML.join(
            feedback.map { item in
                let link = ConsolePath("feedback", item.id.uuidString.lowercased())
                return
                    "<tr data-href=\"\(link)\"><td><a href=\"\(link)\">\(FeedbackScreens.excerpt(item.message))</a></td><td>\(item.status)</td><td class=\"muted\">\(Layout.date(item.createdAt))</td></tr>"
            })
        let facts = HTML.join(
            subscription.facts.map { "<tr><td>\(Layout.date($0.at))</td><td>\($0.kind)</td><td>\($0.reference)</td></tr>" })
        let status = subscription.subscription
        let disable: HTML =
            !mayAct
            ? .empty
            : user.disabledAt == nil
                ? """
                <form class="inline" method="post" action="\(action("disable"))" data-confirm="Disable this account? Its sessions end at once.">\(csrf)
                <button class="danger" type="submit">Disable the account</button></form>
                """
                : """
                <form class="inline" method="post" action="\(action("enable"))">\(csrf)<button type="submit">Enable the account</button></form>
                """
        let adminOnly: HTML =
            session.isAdmin
            ? """
            <div class="card" data-admin-only>
            <h2>Admin</h2>
            <form class="actions" method="post" action="\(action("role"))" data-confirm="Change this account's role? Its sessions end.">\(csrf)
            <label>Role <select name="role"><option value="user">user</option><option value="support">support</option><option value="admin">admin</option></select></label>
            \(confirm)
            <button type="submit">Change the role</button>
            </form>
            <form class="actions" method="post" action="\(action("delete"))" data-confirm="Delete this account and all its data? This cannot be undone.">\(csrf)
            \(confirm)
            <button class="danger" type="submit">Delete the account</button>
            </form>
            </div>
            """ : HTML.empty
        let notice: HTML =
            request.query("done").flatMap(Self.notices.first(where:)).map {
                "<p class=\"notice\" role=\"status\">\($0.1)</p>"
            } ?? .empty
        return console.page(
            title: user.email, session: session,
            """
            <p><a href="/console/users">← Users</a></p>
            \(notice)
            <h1 data-email>\(user.email) <span class="badge">\(user.role)</span>\(user.disabledAt == nil ? HTML.empty : " <span class=\"badge bad\">disabled</span>")</h1>
            <div class="columns">
            <div>
            <dl class="facts">
            <dt>id</dt><dd>\(user.id)</dd>
            <dt>name</dt><dd>\(user.displayName ?? "-")</dd>
            <dt>address</dt><dd>\(user.emailVerified ? "verified" : "not verified")</dd>
            <dt>locale</dt><dd>\(user.locale ?? "-")</dd>
            <dt>since</dt><dd>\(Layout.date(user.createdAt))</dd>
            \(user.disabledAt.map { "<dt>disabled</dt><dd>\(Layout.date($0))</dd>" } ?? HTML.empty)
            </dl>
            <h2>Subscription</h2>
            <dl class="facts" data-subscription>
            <dt>status</dt><dd><span class="badge">\(status.status)</span></dd>
            <dt>plan</dt><dd>\(status.plan?.name ?? "-")</dd>
            <dt>entitlements</dt><dd>\(status.entitlements.map(\.key).joined(separator: ", "))</dd>
            <dt>until</dt><dd>\(Layout.date(status.currentPeriodEnd))</dd>
            <dt>source</dt><dd>\(status.source?.rawValue ?? "-")</dd>
            </dl>
            <h2>Grants</h2>
            <table><thead><tr><th>Plan</th><th>From</th><th>Until</th><th>Reason</th><th></th><th></th></tr></thead><tbody>\(grantRows)</tbody></table>
            <form class="actions" method="post" action="\(action("grant"))">\(csrf)
            <label>Plan <select name="plan">\(planOptions)</select></label>
            <label>For <select name="duration"><option value="P7D">7 days</option><option value="P1M" selected>1 month</option><option value="P3M">3 months</option><option value="P1Y">1 year</option></select></label>
            <label>Reason <input name="reason" required placeholder="goodwill after an outage"></label>
            <button type="submit">Grant access</button>
            </form>
            <form class="inline" method="post" action="\(action("appstore-refresh"))">\(csrf)<button class="plain" type="submit">Read the App Store subscriptions again from Apple</button></form>
            <h2>Facts</h2>
            <table><thead><tr><th>At</th><th>Kind</th><th>Reference</th></tr></thead><tbody>\(facts)</tbody></table>
            <h2>Feedback</h2>
            <table><tbody>\(feedbackRows)</tbody></table>
            </div>
            <div>
            <div class="card">
            <h2>Sessions</h2>
            <table><thead><tr><th>Device</th><th>Address</th><th>Since</th><th>Used</th><th></th></tr></thead><tbody>\(sessionRows)</tbody></table>
            \(mayAct ? """
            <form class="inline" method="post" action="\(action("end-sessions"))">\(csrf)<button class="plain" type="submit">End every session</button></form>
            """ : adminsAct)
            <h2>Identities</h2>
            <ul>\(identityRows)</ul>
            <h2>Second factors</h2>
            \(secondFactor)
            \(approval)
            <ul data-passkeys>\(passkeys.isEmpty ? "<li class=\"muted\">No passkey</li>" : passkeyRows)</ul>
            </div>
            <div class="card">
            <h2>Help</h2>
            <form class="inline" method="post" action="\(action("mail"))">\(csrf)<input type="hidden" name="mail" value="password-reset"><button class="plain" type="submit">Mail a password reset</button></form>
            \(user.emailVerified ? HTML.empty : "<form class=\"inline\" method=\"post\" action=\"\(action("mail"))\">\(csrf)<input type=\"hidden\" name=\"mail\" value=\"verification\"><button class=\"plain\" type=\"submit\">Mail the verification link</button></form>")
            <p><a href="\(ConsolePath("users", text, "export"))">Download the account's data</a> · <a href="\(ConsolePath("audit", query: [("subject", text)]))">What the team did</a></p>
            \(disable)
            </div>
            \(adminOnly)
            </div>
            </div>
            """
        )
    }

    /// The messages a page may show after an action, by key (nothing the request says is shown).
    static let notices: [(String, String)] = [
        ("sessions", "Sessions ended."), ("mail", "Mail queued."), ("disabled", "The account is disabled."),
        ("enabled", "The account is enabled."), ("granted", "Access granted."), ("revoked", "Grant revoked."),
        ("role", "Role changed; the account's sessions ended."), ("refreshed", "Read again from Apple."),
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
        let (method, target, body, done): (String, String, [UInt8]?, String)
        switch action {
        case "end-sessions":
            (method, target, body, done) = (
                AuthAPI.endUserSessions.method, AuthAPI.endUserSessions.target(user), nil, "sessions"
            )
        case "end-session":
            guard let one = form["session"].flatMap(UUID.init(uuidString:)) else { return missing("session") }
            let both = UserSessionID(user: id, session: one)
            (method, target, body, done) = (AuthAPI.endUserSession.method, AuthAPI.endUserSession.target(both), nil, "sessions")
        case "mail":
            (method, target, body, done) = (
                AuthAPI.mailUser.method, AuthAPI.mailUser.target(user),
                try api.json(StaffMailRequest(mail: form["mail"] ?? "")), "mail"
            )
        case "disable":
            (method, target, body, done) = (AuthAPI.disableUser.method, AuthAPI.disableUser.target(user), nil, "disabled")
        case "enable":
            (method, target, body, done) = (AuthAPI.enableUser.method, AuthAPI.enableUser.target(user), nil, "enabled")
        case "grant":
            let grant = CreateGrant(
                userId: id, planId: form["plan"] ?? "", duration: form["duration"] ?? "P1M", reason: form["reason"] ?? "")
            (method, target, body, done) = (
                SubscriptionsAPI.grant.method, SubscriptionsAPI.grant.path, try api.json(grant), "granted"
            )
        case "appstore-refresh":
            (method, target, body, done) = (
                SubscriptionsAPI.refresh.method, SubscriptionsAPI.refresh.target(UserID(id)), nil, "refreshed"
            )
        case "revoke-grant":
            guard let grant = form["grant"].flatMap(UUID.init(uuidString:)) else { return missing("grant") }
            (method, target, body, done) = (
                SubscriptionsAPI.revokeGrant.method, SubscriptionsAPI.revokeGrant.target(PathID(grant)), nil, "revoked"
            )
        case "role":
            // A value the form never offers is refused, never read as "user".
            guard let role = form["role"].flatMap(AccountRole.init(rawValue:)) else {
                return console.page(
                    status: 422, title: "Unknown role", session: session,
                    "<h1>Choose user, support or admin</h1><p>The role sent is not one of them; nothing was changed.</p>")
            }
            let change = RoleChange(role: role, password: Self.filled(form, "password"), code: Self.filled(form, "code"))
            (method, target, body, done) = (AuthAPI.setRole.method, AuthAPI.setRole.target(user), try api.json(change), "role")
        case "approve-mfa":
            guard let one = form["session"].flatMap(UUID.init(uuidString:)) else { return missing("session") }
            (method, target, body, done) = (
                AuthAPI.approveUserEnrolment.method, AuthAPI.approveUserEnrolment.target(user),
                try api.json(EnrolmentApproval(sessionId: one)), "approved"
            )
        case "remove-mfa":
            (method, target, body, done) = (
                AuthAPI.removeUserSecondFactor.method, AuthAPI.removeUserSecondFactor.target(user),
                try api.json(Self.confirmation(form)), "mfa"
            )
        case "delete":
            let confirmation = Self.confirmation(form)
            let reply = try await console.call(AuthAPI.deleteUser, user, body: confirmation, as: session, request)
            guard reply.ok else { return console.problem(reply, session: session) }
            return console.redirect(ConsolePath("users"))
        default:
            return console.page(status: 404, title: "Not found", session: session, "<h1>No such action</h1>")
        }
        let reply = try await console.call(method, target, json: body, as: session, request)
        guard reply.ok else { return console.problem(reply, session: session) }
        // Acting on one's own account (ending one's sessions, one's role) may end this session too.
        if id == session.userID, try await console.session(request) == nil {
            return console.redirect(ConsolePath("sign-in"), clearing: true)
        }
        return console.redirect(ConsolePath("users", id.uuidString.lowercased(), query: [("done", done)]))

        func missing(_ field: String) -> Response {
            console.page(status: 422, title: "Missing", session: session, "<h1>Missing \(field)</h1>")
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
