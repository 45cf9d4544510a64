import Foundation
import PierModels

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The team's calls (feedback triage, plans, grants, finding and helping an account, a user's
/// subscription, the audit log), for an account with a team role: `support` may do all but
/// plans, roles and deletion, which are the `admin`'s; anyone else gets `forbidden` (403). What
/// `pier admin …` stands on: an app never needs them.
public final class PierAdmin: Sendable {
    let authorized: Authorized

    init(_ authorized: Authorized) { self.authorized = authorized }

    /// Which feedback ``feedback(_:)`` lists: every field that is set narrows it.
    public typealias FeedbackFilter = FeedbackQuery

    // MARK: - Feedback

    /// Everyone's feedback, newest first; pass a page's `nextCursor` for the next.
    public func feedback(_ filter: FeedbackFilter = FeedbackFilter()) async throws(PierError) -> FeedbackPage {
        try await authorized.call(FeedbackAPI.list, filter)
    }

    /// One feedback, with its triage fields.
    public func feedbackItem(_ id: UUID) async throws(PierError) -> FeedbackItem {
        try await authorized.call(FeedbackAPI.item, PathID(id))
    }

    /// Changes its status, tags, note or moderation (only the fields set).
    @discardableResult
    public func updateFeedback(_ id: UUID, _ change: UpdateFeedback) async throws(PierError) -> FeedbackItem {
        try await authorized.call(FeedbackAPI.update, PathID(id), body: change)
    }

    /// Replies to the sender of feedback `id`: shown with the item in their app and mailed to
    /// them (a signed-in sender's verified address, an anonymous sender's reply address). The
    /// reply's `replyID` makes a retry store and mail nothing more.
    @discardableResult
    public func reply(to id: UUID, _ message: String, replyID: UUID = UUID()) async throws(PierError) -> FeedbackReply {
        try await authorized.call(FeedbackAPI.reply, PathID(id), body: CreateFeedbackReply(id: replyID, message: message))
    }

    /// Counts by status, category and platform, and ratings by app version.
    public func feedbackStats(_ query: FeedbackStatsQuery = FeedbackStatsQuery()) async throws(PierError) -> FeedbackStats {
        try await authorized.call(FeedbackAPI.stats, query)
    }

    /// What came in each UTC day of the last `days`, and the backlog now.
    public func feedbackDaily(_ query: FeedbackDailyQuery = FeedbackDailyQuery()) async throws(PierError) -> FeedbackDaily {
        try await authorized.call(FeedbackAPI.daily, query)
    }

    /// The request of the feedback export (`csv` or `ndjson`), signed in: read its answer as a
    /// stream, it can be large.
    public func feedbackExportRequest(format: String, filter: FeedbackFilter = FeedbackFilter()) async throws(PierError)
        -> URLRequest
    {
        let base = authorized.transport.baseURL
        let target = FeedbackAPI.export.target(FeedbackExportQuery(format: format, filter: filter))
        guard
            let url = URL(
                string: (base.absoluteString.hasSuffix("/") ? String(base.absoluteString.dropLast()) : base.absoluteString)
                    + target)
        else {
            throw PierError(kind: .network, detail: "\(target) does not make a URL with \(base)")
        }
        var request = URLRequest(url: url)
        request.setValue("Bearer \(try await authorized.sessions.accessToken())", forHTTPHeaderField: "Authorization")
        return request
    }

    // MARK: - Plans, grants, a user's subscription

    @discardableResult
    public func createPlan(_ plan: CreatePlan) async throws(PierError) -> Plan {
        try await authorized.call(SubscriptionsAPI.createPlan, NoParameters(), body: plan)
    }

    /// Changes the fields set; `active: false` takes the plan off sale.
    @discardableResult
    public func updatePlan(_ id: String, _ change: UpdatePlan) async throws(PierError) -> Plan {
        try await authorized.call(SubscriptionsAPI.updatePlan, PlanID(id), body: change)
    }

    /// Gives a user a plan for a while (support's goodwill, a tester), with the reason kept.
    @discardableResult
    public func grant(_ grant: CreateGrant) async throws(PierError) -> Grant {
        try await authorized.call(SubscriptionsAPI.grant, NoParameters(), body: grant)
    }

    /// A user's status and the facts it is made of (grants, App Store transactions).
    public func subscription(of user: UUID) async throws(PierError) -> SubscriptionHistory {
        try await authorized.call(SubscriptionsAPI.user, UserID(user))
    }

    /// The same, after reading every App Store subscription of the user again from Apple.
    public func refreshFromAppStore(_ user: UUID) async throws(PierError) -> SubscriptionHistory {
        try await authorized.call(SubscriptionsAPI.refresh, UserID(user))
    }

    /// Reads the user's Google Play purchases again from Google; answers the status and facts.
    public func refreshFromGooglePlay(_ user: UUID) async throws(PierError) -> SubscriptionHistory {
        try await authorized.call(SubscriptionsAPI.googleRefresh, UserID(user))
    }

    // MARK: - Accounts

    /// Accounts found by `query`: an address or its start, a display name's start (case aside),
    /// or an account's id; by address, `limit` at most (1–100, 20 unless said), `more` when a
    /// longer query would narrow them down.
    public func users(matching query: String, limit: Int? = nil) async throws(PierError) -> UserList {
        try await authorized.call(AuthAPI.users, UserSearch(query, limit: limit))
    }

    /// One account, with its role.
    public func user(_ id: UUID) async throws(PierError) -> User {
        try await authorized.call(AuthAPI.user, PathID(id))
    }

    /// The account `text` names: its id, or its whole address (case aside). When no account
    /// has it, the error is the server's 404 (`not_found`), as for an unknown id.
    public func user(named text: String) async throws(PierError) -> User {
        if let id = UUID(uuidString: text) { return try await user(id) }
        let key = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard let user = try await users(matching: key, limit: 100).items.first(where: { $0.email?.lowercased() == key }) else {
            throw PierError(kind: .server, status: 404, code: .notFound, detail: "No account has the address \(key).")
        }
        return user
    }

    /// The account's live sessions (devices), the most recently used first.
    public func sessions(of user: UUID) async throws(PierError) -> [SessionInfo] {
        try await authorized.call(AuthAPI.userSessions, PathID(user)).items
    }

    /// Ends one session of the account, or all of them (and its pending resets and changes of
    /// address); answers how many were live.
    @discardableResult
    public func endSessions(of user: UUID, only session: UUID? = nil) async throws(PierError) -> Int {
        if let session {
            return try await authorized.call(AuthAPI.endUserSession, UserSessionID(user: user, session: session)).ended
        }
        return try await authorized.call(AuthAPI.endUserSessions, PathID(user)).ended
    }

    /// The providers (Apple, OpenID Connect) the account signs in with.
    public func identities(of user: UUID) async throws(PierError) -> [LinkedIdentity] {
        try await authorized.call(AuthAPI.userIdentities, PathID(user)).items
    }

    /// The mails the team can send an account.
    public enum AccountMail: String, Sendable {
        case passwordReset = "password-reset"
        case verification
    }

    /// Mails the account a password-reset link or a new verification link.
    public func send(_ mail: AccountMail, to user: UUID) async throws(PierError) {
        try await authorized.perform(AuthAPI.mailUser, PathID(user), body: StaffMailRequest(mail: mail.rawValue))
    }

    /// Disables the account (its sessions end; it cannot sign in until enabled) or enables it.
    @discardableResult
    public func setDisabled(_ user: UUID, _ disabled: Bool) async throws(PierError) -> User {
        try await authorized.call(disabled ? AuthAPI.disableUser : AuthAPI.enableUser, PathID(user))
    }

    /// Gives the account a role (admins): every session of it ends. Needs `password` (the
    /// caller's own) unless the caller signed in within 5 minutes.
    @discardableResult
    public func setRole(_ role: AccountRole, of user: UUID, password: String? = nil) async throws(PierError) -> User {
        try await authorized.call(AuthAPI.setRole, PathID(user), body: RoleChange(role: role, password: password))
    }

    /// Deletes the account and every service's data about it (admins), confirmed as ``setRole(_:of:password:)``.
    public func deleteAccount(_ user: UUID, password: String? = nil) async throws(PierError) {
        try await authorized.perform(AuthAPI.deleteUser, PathID(user), body: ReauthenticationRequest(password: password))
    }

    /// Everything every service holds about the account, as its owner's "download my data" has it.
    public func exportData(of user: UUID) async throws(PierError) -> Data {
        try await authorized.bytes(AuthAPI.exportUser, PathID(user))
    }

    /// The account's grants, the newest first.
    public func grants(of user: UUID) async throws(PierError) -> [Grant] {
        try await authorized.call(SubscriptionsAPI.grants, GrantsQuery(userID: user)).items
    }

    /// Ends a grant at once (it stays in the history).
    @discardableResult
    public func revokeGrant(_ id: UUID) async throws(PierError) -> Grant {
        try await authorized.call(SubscriptionsAPI.revokeGrant, PathID(id))
    }

    /// Which audit entries ``audit(_:_:)`` lists: every field that is set narrows it.
    public typealias AuditFilter = AuditQuery

    /// What the team did in one service (`auth`, `feedback`, `subscriptions`), newest first.
    public func audit(_ service: String, _ filter: AuditFilter = AuditFilter()) async throws(PierError) -> AuditList {
        try await authorized.call(AuditAPI.log(of: service), filter)
    }

    // MARK: - Webhooks (admins)

    /// The endpoints the server sends webhooks to (its `PIER_WEBHOOKS`), with how their
    /// deliveries stand.
    public func webhookEndpoints() async throws(PierError) -> [WebhookEndpoint] {
        try await authorized.call(AuthAPI.webhookEndpoints, NoParameters()).items
    }

    /// Which deliveries ``webhookDeliveries(_:)`` lists: every field that is set narrows it.
    public typealias WebhookFilter = WebhookDeliveryQuery

    /// Webhook deliveries, newest first.
    public func webhookDeliveries(_ filter: WebhookFilter = WebhookFilter()) async throws(PierError) -> WebhookDeliveryPage {
        try await authorized.call(AuthAPI.webhookDeliveries, filter)
    }

    /// One delivery, with the body it sends.
    public func webhookDelivery(_ id: Int) async throws(PierError) -> WebhookDelivery {
        try await authorized.call(AuthAPI.webhookDelivery, DeliveryID(id))
    }

    /// Sends a delivery's message again (the same `webhook-id`): the new delivery.
    @discardableResult
    public func replayWebhook(_ id: Int) async throws(PierError) -> WebhookDelivery {
        try await authorized.call(AuthAPI.replayWebhook, DeliveryID(id))
    }
}
