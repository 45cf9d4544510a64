import PierHTML
import PierHTTP
import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// An account's page: what Pier says of it (read at once, in parallel), rendered section by
/// section. A team member's account is acted on by admins only (the server refuses support):
/// no button for what would be refused.
struct UserPage {
    let user: User
    let sessions: [SessionInfo]
    let identities: [LinkedIdentity]
    let subscription: SubscriptionHistory
    let grants: [Grant]
    let plans: [Plan]
    let feedback: [FeedbackItem]
    let factor: MFAStatus
    let passkeys: [Passkey]
    /// The fields that confirm an admin's action (a password, or a code with a second factor).
    let confirm: HTML
    let isAdmin: Bool
    let csrf: HTML

    static func load(_ id: UUID, console: Console, as session: ConsoleSession, _ request: Request) async throws -> UserPage {
        let user = try await console.fetch(AuthAPI.user, PathID(id), as: session, request)
        // A team member's sessions and identities are for admins alone (the API answers 403).
        let sees = session.isAdmin || !user.role.isStaff
        async let sessionsList =
            sees ? console.fetch(AuthAPI.userSessions, PathID(id), as: session, request) : ItemList<SessionInfo>([])
        async let identityList =
            sees ? console.fetch(AuthAPI.userIdentities, PathID(id), as: session, request) : ItemList<LinkedIdentity>([])
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
        let (factor, passkeys, confirm) = try await (
            twoStep, passkeyList.items, UserScreens.confirmation(own: ownTwoStep)
        )
        return UserPage(
            user: user, sessions: sessions, identities: identities, subscription: subscription, grants: grants,
            plans: plans, feedback: (try? await feedbackList)?.items ?? [], factor: factor, passkeys: passkeys,
            confirm: confirm, isAdmin: session.isAdmin, csrf: Layout.csrf(session))
    }

    var text: String { user.id.uuidString.lowercased() }
    func action(_ name: String) -> ConsolePath { ConsolePath("users", text, name) }
    var mayAct: Bool { isAdmin || !user.role.isStaff }

    /// How the account began: anonymous (and since when it is permanent), or with an address or
    /// an identity.
    var began: HTML {
        guard let anonymousAt = user.anonymousAt else { return "signed up" }
        guard let permanentAt = user.permanentAt else {
            return "anonymous, on <span class=\"when\">\(Layout.date(anonymousAt))</span>: no address, password or passkey yet"
        }
        return
            "anonymous, on <span class=\"when\">\(Layout.date(anonymousAt))</span>; kept on <span class=\"when\">\(Layout.date(permanentAt))</span>"
    }

    func body(notice: HTML) -> HTML {
        """
        <p><a href="/console/users">← Users</a></p>
        \(notice)
        <h1 data-email>\(user.handle) <span class="badge">\(label: user.role)</span>\(user.disabledAt == nil ? HTML.empty : " <span class=\"badge bad\">disabled</span>")</h1>
        <div class="columns">
        <div>
        <dl class="facts">
        <dt>Name</dt><dd>\(user.displayName ?? "-")</dd>
        <dt>Address</dt><dd>\(user.email == nil ? "none" : user.emailVerified ? "verified" : "not verified")</dd>
        <dt>Began</dt><dd data-began>\(began)</dd>
        <dt>Language</dt><dd>\(user.locale ?? "-")</dd>
        <dt>Since</dt><dd class="when">\(Layout.date(user.createdAt))</dd>
        \(user.disabledAt.map { "<dt>Disabled</dt><dd class=\"when\">\(Layout.date($0))</dd>" } ?? HTML.empty)
        <dt>Id</dt><dd><details><summary>for developers</summary><code data-id>\(user.id)</code></details></dd>
        </dl>
        \(subscriptionSection)
        <h2>Feedback</h2>
        <table><tbody data-empty="No feedback from this account.">\(feedbackRows)</tbody></table>
        </div>
        <div>
        \(accessCard)
        \(helpCard)
        \(adminCard)
        </div>
        </div>
        """
    }

    /// The status, the grants (with the form that grants), and the facts behind them.
    var subscriptionSection: HTML {
        let status = subscription.subscription
        let grantRows = HTML.join(
            grants.map { grant in
                let live = grant.revokedAt == nil && grant.endsAt > Date()
                let revoke: HTML =
                    live
                    ? """
                    <form class="inline" method="post" action="\(action("revoke-grant"))">\(csrf)
                    <input type="hidden" name="grant" value="\(grant.id)"><button class="plain" type="submit">Revoke</button></form>
                    """ : HTML.empty
                let plan = plans.first { $0.id == grant.planId }?.name ?? grant.planId
                return """
                    <tr><td>\(plan)</td><td class="when">\(Layout.date(grant.startsAt))</td><td class="when">\(Layout.date(grant.endsAt))</td>
                    <td>\(grant.reason)</td><td>\(grant.revokedAt == nil ? "" : "revoked \(Layout.date(grant.revokedAt))")</td><td>\(revoke)</td></tr>
                    """
            })
        let planOptions = HTML.join(
            plans.map { "<option value=\"\($0.id)\">\($0.name), \(Labels.english.period($0.billingPeriod))</option>" })
        let facts = HTML.join(
            subscription.facts.map { fact in
                // Apple's transaction ids and Google's order ids are what the stores' support
                // asks for; other references (a grant's, a notification's) are ids for
                // developers, folded away.
                let reference: HTML =
                    fact.reference.allSatisfy(\.isNumber) || fact.reference.hasPrefix("GPA.")
                    ? "\(fact.reference)" : "<details><summary>reference</summary><code>\(fact.reference)</code></details>"
                // A Google Play purchase says its state as Google last described it, and what
                // keeps it from giving anything: a product no plan offers, an answer Pier
                // cannot hold.
                var state: HTML =
                    fact.details["state"]?.stringValue.map {
                        " <span class=\"badge\">\(Labels.english.googleState($0))</span>"
                    } ?? HTML.empty
                if fact.details["offered"] == .bool(false) {
                    state =
                        "\(state) <span class=\"badge\" data-not-offered>a product no plan offers: not acknowledged, so Google refunds it</span>"
                }
                if let why = fact.details["unreadable"]?.stringValue {
                    state = "\(state) <span class=\"badge\" data-unreadable>Pier cannot read it: \(why)</span>"
                }
                return
                    "<tr><td class=\"when\">\(Layout.date(fact.at))</td><td>\(Labels.english.fact(fact.kind))\(state)</td><td>\(reference)</td></tr>"
            })
        return """
            <h2>Subscription</h2>
            <dl class="facts" data-subscription>
            <dt>Status</dt><dd><span class="badge">\(label: status.status)</span></dd>
            <dt>Plan</dt><dd>\(status.plan?.name ?? "none")</dd>
            <dt>Gives access to</dt><dd>\(status.entitlements.map(\.key).joined(separator: ", "))</dd>
            <dt>Until</dt><dd>\(Layout.date(status.currentPeriodEnd))</dd>
            <dt>From</dt><dd>\(label: status.source, none: "none")</dd>
            <dt>Paid</dt><dd>\(status.paid?.description ?? "nothing recorded")</dd>
            </dl>
            <h2>Grants</h2>
            <table><thead><tr><th>Plan</th><th>From</th><th>Until</th><th>Reason</th><th></th><th></th></tr></thead><tbody data-empty="No grants: access given by the team shows here.">\(grantRows)</tbody></table>
            <form class="actions" method="post" action="\(action("grant"))">\(csrf)
            <label>Plan <select name="plan">\(planOptions)</select></label>
            <label>For <select name="duration"><option value="P7D">7 days</option><option value="P1M" selected>1 month</option><option value="P3M">3 months</option><option value="P1Y">1 year</option></select></label>
            <label>Reason <input name="reason" required placeholder="goodwill after an outage"></label>
            <button type="submit">Grant access</button>
            </form>
            <form class="inline" method="post" action="\(action("appstore-refresh"))">\(csrf)<button class="plain" type="submit">Read the App Store subscriptions again from Apple</button></form>
            <form class="inline" method="post" action="\(action("google-refresh"))">\(csrf)<button class="plain" type="submit">Read the Google Play purchases again from Google</button></form>
            <h2>Facts</h2>
            <table><thead><tr><th>At</th><th>What</th><th>The store's reference</th></tr></thead><tbody data-empty="No purchases or grants yet.">\(facts)</tbody></table>
            """
    }

    var feedbackRows: HTML {
        HTML.join(
            feedback.map { item in
                let link = ConsolePath("feedback", item.id.uuidString.lowercased())
                return
                    "<tr data-href=\"\(link)\"><td><a href=\"\(link)\">\(FeedbackScreens.excerpt(item.message))</a></td><td>\(label: item.status)</td><td class=\"muted\">\(Layout.date(item.createdAt))</td></tr>"
            })
    }

    /// How the account signs in: its sessions, identities, second factors and passkeys.
    var accessCard: HTML {
        let sessionRows = HTML.join(
            sessions.map { item in
                """
                <tr><td>\(item.deviceName ?? "")</td><td>\(item.clientAddress ?? "")</td><td class="when">\(Layout.date(item.createdAt))</td>
                <td class="when">\(Layout.date(item.lastUsedAt))</td>
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
        let adminsAct: HTML =
            "<p class=\"muted\" data-team-member>A team member's account: only an admin sees its sessions and identities, ends its sessions, disables it or removes its second factor.</p>"
        return """
            <div class="card">
            <h2>Sessions</h2>
            \(mayAct ? """
            <table><thead><tr><th>Device</th><th>Address</th><th>Since</th><th>Used</th><th></th></tr></thead><tbody data-empty="Not signed in anywhere.">\(sessionRows)</tbody></table>
            <form class="inline" method="post" action="\(action("end-sessions"))">\(csrf)<button class="plain" type="submit">End every session</button></form>
            <h2>Identities</h2>
            <ul>\(identityRows)</ul>
            """ : adminsAct)
            <h2>Second factors</h2>
            \(secondFactor)
            \(approval)
            <ul data-passkeys>\(passkeys.isEmpty ? "<li class=\"muted\">No passkey</li>" : passkeyRows)</ul>
            </div>
            """
    }

    var secondFactor: HTML {
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
    }

    /// A team member's first second factor waits for the mailed link, or an admin.
    var approval: HTML {
        let asks = factor.awaitingApproval ?? []
        guard !asks.isEmpty else { return .empty }
        return """
            <p data-approval-asked>Asks to set up two-step sign-in (approve only when they asked you themselves):</p>
            <ul data-approval-asks>\(HTML.join(asks.map { ask in
                """
                <li>\(ask.deviceName ?? "A device") <span class="muted">\(ask.address ?? "") at \(Layout.date(ask.askedAt))</span>
                \(isAdmin ? """
                <form class="inline" method="post" action="\(action("approve-mfa"))">\(csrf)
                <input type="hidden" name="session" value="\(ask.sessionId)"><button class="plain" type="submit">Approve</button></form>
                """ : HTML.empty)</li>
                """
            }))</ul>
            """
    }

    /// Mails, the data export, the audit log, and disabling.
    var helpCard: HTML {
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
        let mails: HTML =
            user.email == nil
            ? "<p class=\"muted\">No address to mail.</p>"
            : """
            <form class="inline" method="post" action="\(action("mail"))">\(csrf)<input type="hidden" name="mail" value="password-reset"><button class="plain" type="submit">Mail a password reset</button></form>
            \(user.emailVerified ? HTML.empty : """
            <form class="inline" method="post" action="\(action("mail"))">\(csrf)<input type="hidden" name="mail" value="verification"><button class="plain" type="submit">Mail the verification link</button></form>
            """)
            """
        return """
            <div class="card">
            <h2>Help</h2>
            \(mails)
            <p><a href="\(ConsolePath("users", text, "export"))">Download the account's data</a> · <a href="\(ConsolePath("audit", query: [("subject", text)]))">What the team did</a></p>
            \(disable)
            </div>
            """
    }

    /// The role and deletion, for admins.
    var adminCard: HTML {
        guard isAdmin else { return .empty }
        return """
            <div class="card" data-admin-only>
            <h2>Admin</h2>
            <form class="actions" method="post" action="\(action("role"))" data-confirm="Change this account's role? Its sessions end.">\(csrf)
            <label>Role <select name="role"><option value="user">User</option><option value="support">Support</option><option value="admin">Admin</option></select></label>
            \(confirm)
            <button type="submit">Change the role</button>
            </form>
            <form class="actions" method="post" action="\(action("delete"))" data-confirm="Delete this account and all its data? This cannot be undone.">\(csrf)
            \(confirm)
            <button class="danger" type="submit">Delete the account</button>
            </form>
            </div>
            """
    }
}
