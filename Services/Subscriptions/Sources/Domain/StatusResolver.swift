import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One thing that may give a user access: a grant, or an App Store subscription (the deciding
/// transaction of one original transaction, with its latest renewal info).
struct AccessSource: Sendable, Equatable {
    typealias Kind = SubscriptionSource

    var kind: Kind
    var reference: String
    /// Nil when an App Store product is not mapped to any plan yet.
    var plan: PlanReference?
    var entitlements: [String]
    var periodStart: Date?
    /// Nil for a purchase that never expires.
    var periodEnd: Date?
    var revoked: Bool
    var graceUntil: Date? = nil
    var billingRetry: Bool = false
    var willRenew: Bool = false
    /// A free trial (an introductory offer whose discount is FREE_TRIAL): `trialing`.
    var trial: Bool = false
    var environment: String? = nil
    var offer: SubscriptionOffer? = nil
    var appStore = AppStoreDetails()
    /// Google's state of a Google Play purchase: what dates cannot tell (grace, hold, pause).
    var google: GoogleSubscription.State? = nil
    /// A paused Google Play purchase: when Google resumes it (`autoResumeTime`), the moment its
    /// status changes.
    var resumesAt: Date? = nil
}

/// Computes a user's status from their sources and the current time: nothing has to run in
/// the background for an expiry to show.
enum StatusResolver {
    typealias State = SubscriptionState

    static func state(of source: AccessSource, at now: Date) -> State {
        if source.revoked { return .revoked }
        switch source.google {
        // Google's grace ends in account hold: no access, payment still retried.
        case .inGracePeriod?: return source.graceUntil.map { now < $0 } == true ? .gracePeriod : .billingRetry
        case .onHold?: return .billingRetry
        case .paused?: return .paused
        default: break
        }
        if source.periodEnd.map({ now < $0 }) ?? true {
            if let start = source.periodStart, now < start { return .expired }
            return source.trial ? .trialing : .active
        }
        if let grace = source.graceUntil, now < grace { return .gracePeriod }
        if source.billingRetry { return .billingRetry }
        return .expired
    }

    /// Until when a source gives access, when it does.
    static func accessEnd(of source: AccessSource, state: State) -> Date {
        if state == .gracePeriod, let grace = source.graceUntil { return grace }
        return source.periodEnd ?? .distantFuture
    }

    static func resolve(_ sources: [AccessSource], at now: Date, recheckSeconds: Int) -> SubscriptionStatus {
        let states = sources.map { (source: $0, state: state(of: $0, at: now)) }
        let giving = states.filter(\.state.givesAccess)

        // The deciding source: the one giving access the longest, a paid (or granted) one before
        // a sandbox purchase; else one in billing retry; else the most recent to end.
        func end(_ entry: (source: AccessSource, state: State)) -> Date {
            entry.state.givesAccess ? accessEnd(of: entry.source, state: entry.state) : entry.source.periodEnd ?? .distantPast
        }
        let deciding =
            giving.filter { $0.source.environment != "sandbox" }.max { end($0) < end($1) }
            ?? giving.max { end($0) < end($1) }
            ?? states.filter { $0.state == .billingRetry }.max { end($0) < end($1) }
            ?? states.max { end($0) < end($1) }

        var expiries: [String: Date] = [:]
        for entry in giving {
            let until = accessEnd(of: entry.source, state: entry.state)
            for key in entry.source.entitlements { expiries[key] = max(expiries[key] ?? until, until) }
        }

        // The answer can change at the next boundary of any source, or after a while anyway
        // (a renewal or a refund arrives as a new fact).
        var next = now.addingTimeInterval(Double(recheckSeconds))
        for source in sources where !source.revoked {
            for boundary in [source.periodStart, source.periodEnd, source.graceUntil, source.resumesAt] {
                if let boundary, boundary > now, boundary < next { next = boundary }
            }
        }

        guard let deciding else {
            return SubscriptionStatus(
                status: .none, active: false, plan: nil, entitlements: [], currentPeriodStart: nil,
                currentPeriodEnd: nil, graceUntil: nil, willRenew: false, source: nil, environment: nil, checkAgainAt: next)
        }
        let source = deciding.source
        var status = SubscriptionStatus(
            status: deciding.state, active: deciding.state.givesAccess, plan: source.plan,
            entitlements: expiries.sorted { $0.key < $1.key }.map { Entitlement(key: $0.key, expiresAt: $0.value) },
            currentPeriodStart: source.periodStart, currentPeriodEnd: source.periodEnd,
            graceUntil: deciding.state == .gracePeriod || deciding.state == .billingRetry ? source.graceUntil : nil,
            willRenew: source.willRenew && !source.revoked && deciding.state != .expired, source: source.kind,
            environment: source.environment, offer: source.offer, checkAgainAt: next)
        source.appStore.apply(to: &status)
        return status
    }
}

/// What the deciding App Store purchase says beyond the state: what an app shows around it.
struct AppStoreDetails: Sendable, Equatable {
    var renewsTo: PlanReference?
    var expirationReason: ExpirationReason?
    var priceIncrease: PriceIncrease?
    var price: Int?
    var currency: String?
    var familyShared: Bool?
    var revocation: SubscriptionRevocation?

    init(
        renewsTo: PlanReference? = nil, expirationReason: ExpirationReason? = nil, priceIncrease: PriceIncrease? = nil,
        price: Int? = nil,
        currency: String? = nil, familyShared: Bool? = nil, revocation: SubscriptionRevocation? = nil
    ) {
        self.renewsTo = renewsTo
        self.expirationReason = expirationReason
        self.priceIncrease = priceIncrease
        self.price = price
        self.currency = currency
        self.familyShared = familyShared
        self.revocation = revocation
    }

    /// Sets the status's App Store fields (the wire type keeps them flat).
    func apply(to status: inout SubscriptionStatus) {
        status.renewsTo = renewsTo
        status.expirationReason = expirationReason
        status.priceIncrease = priceIncrease
        status.price = price
        status.currency = currency
        status.familyShared = familyShared
        status.revocation = revocation
    }
}
