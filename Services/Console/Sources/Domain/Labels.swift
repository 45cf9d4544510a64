import PierHTML
import PierModels

/// The console's words for the API's values, one table per language (English first): a
/// support person reads "In progress", "iPad", "every month" and "granted a plan", never
/// `in_progress`, `ipados`, `P1M` or `grant.created`. A value this version does not know is
/// shown as it came, marked as such. `LabelTests` hold every known value of every vocabulary
/// the console shows, and every audit action, to a label here.
struct Labels: Sendable {
    /// `<kind>.<wire value>` → the words.
    let words: [String: String]

    /// The words for `value`; one this version does not know, as it came ("new value: x").
    func callAsFunction<Value: Labelled>(_ value: Value) -> String {
        words[Value.labelKind + "." + value.rawValue] ?? "“\(value.rawValue)” (new)"
    }

    /// The words for an optional value; `none` when there is none.
    func callAsFunction<Value: Labelled>(_ value: Value?, none: String) -> String { value.map { self($0) } ?? none }

    /// Whether `value` has words of its own (what LabelTests check).
    func knows<Value: Labelled>(_ value: Value) -> Bool { words[Value.labelKind + "." + value.rawValue] != nil }

    /// A period as ISO 8601 spells it (`P1M`, `P1Y`, `P7D`, `P3M`), in words: "every month",
    /// "every 3 months"; as it came when it is not one.
    func period(_ iso: String) -> String {
        let units: [Character: (String, String)] = [
            "D": ("day", "days"), "W": ("week", "weeks"), "M": ("month", "months"), "Y": ("year", "years"),
        ]
        guard iso.hasPrefix("P"), let unit = iso.last, let names = units[unit], let count = Int(iso.dropFirst().dropLast()),
            count > 0
        else { return iso }
        return count == 1 ? "every \(names.0)" : "every \(count) \(names.1)"
    }

    /// A length of time as ISO 8601 spells it (a trial's `P7D`), in words: "7 days".
    func duration(_ iso: String) -> String {
        let text = period(iso)
        guard text.hasPrefix("every ") else { return text }
        let rest = text.dropFirst("every ".count)
        return rest.contains(" ") ? String(rest) : "1 " + rest
    }

    /// A subscription fact's kind in words.
    func fact(_ kind: String) -> String { words["fact." + kind] ?? kind }

    /// A Google Play notification's kind and type in words (`subscription`, 2: "renewed").
    func googleNotification(_ kind: String, _ type: Int?) -> String {
        let types = [
            1: "recovered from account hold", 2: "renewed", 3: "cancelled", 4: "purchased", 5: "on hold",
            6: "in grace period", 7: "restarted", 8: "price change confirmed", 9: "renewal deferred", 10: "paused",
            11: "pause schedule changed", 12: "revoked", 13: "expired", 17: "items changed",
            18: "cancellation scheduled", 19: "price change updated", 20: "pending purchase cancelled",
        ]
        switch kind {
        case "subscription": return "Subscription " + (type.flatMap { types[$0] } ?? type.map { "type \($0)" } ?? "")
        case "voided": return "Voided purchase (refund or chargeback)"
        case "test": return "Test notification"
        default: return "Other (one-time products)"
        }
    }

    /// Google's `subscriptionState` in words (`SUBSCRIPTION_STATE_ON_HOLD`: "on hold").
    func googleState(_ state: String) -> String {
        words["google." + state]
            ?? (state.hasPrefix("SUBSCRIPTION_STATE_") ? String(state.dropFirst("SUBSCRIPTION_STATE_".count)) : state)
            .lowercased()
    }

    /// A field's name (the API's, or a form's) in words: "billingPeriod" is "Billed"; one the
    /// console has no words for (a plugin's) as words of its own name: "rolloutPercent" is
    /// "Rollout percent".
    func field(_ name: String) -> String {
        if let known = words["field." + name] { return known }
        guard name.allSatisfy({ $0.isASCII && $0.isLetter }), let first = name.first else { return name }
        var text = String(first).uppercased()
        for character in name.dropFirst() { text += character.isUppercase ? " " + character.lowercased() : String(character) }
        return text
    }

    /// What a refused call means for the team member, in words: a heading and a sentence by the
    /// problem's code (never the code itself, a request id or a setting's name: those go to
    /// the page's details, for a bug report). Pier's own detail is shown where no words of the
    /// console's say more and it names no setting.
    func problem(_ problem: Problem?, status: Int) -> (heading: String, message: String) {
        let code = problem?.code ?? ProblemCode.of(status: status)
        let heading = words["problem." + code.rawValue] ?? (status >= 500 ? "Pier cannot do this right now" : "Refused")
        let detail = problem?.detail.flatMap { $0.contains("PIER_") ? nil : $0 }
        let message = words["problem_detail." + code.rawValue] ?? detail ?? ""
        return (heading, message)
    }

    static let english = Labels(words: [
        // Feedback
        "status.new": "New", "status.triaged": "Triaged", "status.planned": "Planned",
        "status.in_progress": "In progress", "status.done": "Done", "status.closed": "Closed",
        "status.duplicate": "Duplicate",
        "category.bug": "Bug", "category.idea": "Idea", "category.praise": "Praise", "category.question": "Question",
        "category.other": "Other",
        "platform.ios": "iPhone", "platform.ipados": "iPad", "platform.macos": "Mac", "platform.watchos": "Apple Watch",
        "platform.tvos": "Apple TV", "platform.visionos": "Apple Vision Pro", "platform.android": "Android",
        "platform.web": "Web", "platform.other": "Other",
        "moderation.pending": "Waiting for review", "moderation.approved": "Approved", "moderation.rejected": "Rejected",
        // Accounts
        "role.user": "User", "role.support": "Support", "role.admin": "Admin",
        // Subscriptions
        "subscription.active": "Active", "subscription.trialing": "On a free trial",
        "subscription.grace_period": "In the grace period (payment failing)",
        "subscription.billing_retry": "Payment failing, the store retrying", "subscription.expired": "Expired",
        "subscription.paused": "Paused by the customer",
        "subscription.revoked": "Refunded or revoked", "subscription.none": "No subscription",
        "source.appstore": "App Store", "source.googleplay": "Google Play", "source.grant": "Granted by the team",
        "offer.introductory": "Introductory offer", "offer.promotional": "Promotional offer",
        "offer.offer_code": "Offer code", "offer.win_back": "Win-back offer",
        "expiration.cancelled": "Cancelled by the customer", "expiration.billing_error": "Payment failed",
        "expiration.price_increase_declined": "Declined a price increase",
        "expiration.product_unavailable": "No longer sold", "expiration.other": "Other reason",
        "price_increase.pending": "Price increase not yet accepted", "price_increase.accepted": "Price increase accepted",
        // Webhooks
        "delivery.pending": "Waiting", "delivery.delivered": "Delivered", "delivery.failed": "Failed",
        // The audit log: what a team member did, as a sentence's verb.
        "audit.feedback.updated": "changed a feedback item", "audit.feedback.replied": "replied to a feedback item",
        "audit.grant.created": "granted a plan", "audit.grant.revoked": "ended a granted plan",
        "audit.plan.created": "created a plan", "audit.plan.updated": "changed a plan",
        "audit.plan.deleted": "removed a plan",
        "audit.user.admin_password_set": "set an admin's password on the server",
        "audit.user.created_admin": "created an admin account on the server", "audit.user.deleted": "deleted an account",
        "audit.user.disabled": "disabled an account", "audit.user.enabled": "enabled an account",
        "audit.user.exported": "downloaded an account's data", "audit.user.mail_sent": "sent a mail to an account",
        "audit.user.merged": "merged an anonymous account into theirs",
        "audit.user.role_changed": "changed an account's role",
        "audit.user.second_factor_approved": "approved a team member's two-step sign-in",
        "audit.user.second_factor_removed": "removed an account's two-step sign-in",
        "audit.user.sessions_ended": "signed an account out", "audit.webhook.replayed": "sent a webhook again",
        // Subscription facts.
        "fact.grant": "Granted by the team", "fact.appstore.transaction": "App Store purchase or renewal",
        "fact.appstore.renewal": "App Store renewal information", "fact.appstore.notification": "Notification from Apple",
        "fact.googleplay.purchase": "Google Play purchase (as Google last said)",
        "fact.googleplay.notification": "Notification from Google Play",
        "google.SUBSCRIPTION_STATE_ACTIVE": "active", "google.SUBSCRIPTION_STATE_CANCELED": "cancelled, not expired",
        "google.SUBSCRIPTION_STATE_IN_GRACE_PERIOD": "grace period", "google.SUBSCRIPTION_STATE_ON_HOLD": "on hold",
        "google.SUBSCRIPTION_STATE_PAUSED": "paused", "google.SUBSCRIPTION_STATE_EXPIRED": "expired",
        "google.SUBSCRIPTION_STATE_PENDING": "payment pending",
        "google.SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED": "pending purchase cancelled",
        // Fields, as forms and the audit log name them.
        "field.status": "Status", "field.tags": "Tags", "field.internalNote": "Internal note",
        "field.duplicateOf": "Duplicate of", "field.moderation": "Review", "field.category": "Kind", "field.role": "Role",
        "field.disabled": "Disabled", "field.reply": "Reply", "field.message": "Message", "field.delivery": "Sent by",
        "field.session": "Session", "field.ended": "Sessions ended", "field.mail": "Mail", "field.email": "Address",
        "field.name": "Name", "field.price": "Price", "field.currency": "Currency", "field.billingPeriod": "Billed",
        "field.trialPeriod": "Free trial", "field.entitlements": "Gives access to",
        "field.appStoreProductIds": "App Store products",
        "field.googleProductIds": "Google Play products", "field.active": "On sale", "field.description": "Description",
        "field.planId": "Plan", "field.startsAt": "From", "field.endsAt": "Until", "field.reason": "Reason",
        "field.revokedAt": "Ended", "field.cancelledAt": "Cancelled", "field.userId": "Account", "field.id": "Id",
        "field.grantedBy": "Granted by", "field.createdAt": "Created", "field.assignee": "Assigned to",
        "field.duration": "For", "field.password": "Your password", "field.code": "Your code",
        // Problems, as a heading (and a sentence where Pier's detail would not say it to a person).
        "problem.bad_request": "The request was not understood", "problem.validation_failed": "Check the form",
        "problem.weak_password": "Choose a stronger password", "problem.unsupported_media_type": "Not understood",
        "problem.body_too_large": "Too long", "problem.uri_too_long": "Too long", "problem.headers_too_large": "Too long",
        "problem.length_required": "Not understood", "problem.not_found": "Not found",
        "problem.method_not_allowed": "Not possible here", "problem.authentication_required": "Signed out",
        "problem.token_expired": "Signed out", "problem.token_invalid": "Signed out", "problem.session_revoked": "Signed out",
        "problem.account_deleted": "The account was deleted", "problem.invalid_credentials": "Wrong password",
        "problem.invalid_refresh_token": "Signed out", "problem.forbidden": "Not allowed for your role",
        "problem.email_taken": "That address has an account already", "problem.idempotency_key_reused": "Sent twice",
        "problem.conflict": "Changed in the meantime", "problem.rate_limited": "Too many attempts",
        "problem.too_many_streams": "Too many open pages", "problem.unavailable": "Pier cannot answer right now",
        "problem.upstream_timeout": "Pier took too long to answer", "problem.bad_gateway": "Pier cannot answer right now",
        "problem.appstore_api_unconfigured": "Pier cannot ask Apple yet",
        "problem.appstore_api_failed": "Apple did not answer", "problem.email_unverified": "The address is not verified",
        "problem.invalid_email_token": "The link expired", "problem.reauthentication_required": "Confirm it is you",
        "problem.invalid_identity_token": "Sign-in refused", "problem.account_disabled": "The account is disabled",
        "problem.address_unverified": "The address is not verified", "problem.last_admin": "The last admin",
        "problem.mfa_required": "A code is needed", "problem.invalid_mfa_token": "Sign in again",
        "problem.invalid_code": "Wrong code", "problem.mfa_enrolment_required": "Set up two-step sign-in first",
        "problem.enrolment_approval_required": "Waiting for approval", "problem.invalid_passkey": "Passkey refused",
        "problem.internal_error": "Something went wrong on the server",
        "problem.identity_taken": "That sign-in belongs to another account",
        "problem.invalid_merge_token": "The merge expired; start it again",
        "problem.attestation_required": "The app must prove it is genuine",
        "problem.invalid_attestation": "The app's proof did not verify",
        "problem.anonymous_account": "The account has no address yet",
        "problem.not_anonymous": "The account is permanent already",
        "problem.google_play_unconfigured": "Pier cannot ask Google Play yet",
        "problem.google_play_failed": "Google Play did not answer",
        "problem.product_not_offered": "No plan offers this Google Play product",
        "problem_detail.anonymous_account":
            "This account began without signing up; it has no address or password until its owner adds one in the app.",
        "problem_detail.appstore_api_unconfigured":
            "The connection to the App Store is not set up on this server. Ask an administrator to add the In-App Purchase key.",
        "problem_detail.reauthentication_required":
            "Give your password (or the code of your authenticator app, if you use one) with the change.",
        "problem_detail.invalid_credentials": "The password is not right; nothing was changed.",
        "problem_detail.invalid_code": "The code is not right or was used already; nothing was changed.",
        "problem_detail.forbidden": "Your role may not do this; an admin can.",
        "problem_detail.internal_error":
            "Nothing was changed. Try again; if it happens again, send the details below to your developers.",
        "problem_detail.validation_failed": "Some fields need another value.",
        "problem_detail.rate_limited": "Wait a minute, then try again.",
    ])
}

/// A vocabulary the console labels, and the name of its part of ``Labels``.
protocol Labelled: OpenVocabulary {
    static var labelKind: String { get }
}

extension FeedbackStatus: Labelled { static var labelKind: String { "status" } }
extension FeedbackCategory: Labelled { static var labelKind: String { "category" } }
extension Platform: Labelled { static var labelKind: String { "platform" } }
extension Moderation: Labelled { static var labelKind: String { "moderation" } }
extension AccountRole: Labelled { static var labelKind: String { "role" } }
extension SubscriptionState: Labelled { static var labelKind: String { "subscription" } }
extension SubscriptionSource: Labelled { static var labelKind: String { "source" } }
extension OfferType: Labelled { static var labelKind: String { "offer" } }
extension ExpirationReason: Labelled { static var labelKind: String { "expiration" } }
extension PriceIncrease: Labelled { static var labelKind: String { "price_increase" } }
extension WebhookDeliveryState: Labelled { static var labelKind: String { "delivery" } }
extension AuditAction: Labelled { static var labelKind: String { "audit" } }

extension HTML.Interpolation {
    /// A value in the console's words (``Labels``).
    mutating func appendInterpolation(label value: some Labelled) { appendInterpolation(Labels.english(value)) }

    /// An optional value in the console's words, or `none`.
    mutating func appendInterpolation(label value: (some Labelled)?, none: String) {
        appendInterpolation(Labels.english(value, none: none))
    }
}
