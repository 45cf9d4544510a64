import Foundation
import PierModels

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Plans, the user's subscription status (cached as the server allows) and App Store purchases.
public final class PierSubscriptions: Sendable {
    let authorized: Authorized
    let staleLimit: TimeInterval
    let cache = Locked<CachedStatus?>(nil)
    /// Why the last status was refused (``PierError/Kind/untrusted``), until one is trusted again.
    let refusal = Locked<PierError?>(nil)
    let signing: StatusSigning?
    let installationID: String

    init(_ authorized: Authorized, staleLimit: TimeInterval, signing: StatusSigning?, installationID: String) {
        self.authorized = authorized
        self.staleLimit = staleLimit
        self.signing = signing
        self.installationID = installationID
    }

    /// The signed-in user's status: from the cache while the server's `max-age` lasts (never
    /// past `checkAgainAt`), else from the server. When the server cannot be reached, a cached
    /// status younger than ``PierClient/Options/staleStatusLimit`` is served with `isStale`.
    ///
    /// The last answer is kept in the session store too (a file, the Keychain): after a launch
    /// without network the status is the one the server gave before, stale, and
    /// ``isEntitled(_:)`` still ends each entitlement at its own `expiresAt` (grace included).
    ///
    /// With ``PierClient/Options/statusSigning``, every status comes from a signed answer, and
    /// one that is not (changed on the way, replayed, another user's) throws ``PierError/Kind/untrusted``;
    /// a kept status is served stale only while its signature is unexpired.
    public func status() async throws(PierError) -> CachedStatus {
        let user = authorized.sessions.snapshot.withLock { $0?.id }
        guard let user else { throw .signedOut() }
        var keptRefusal: PierError? = nil
        let cached = (cache.withLock { $0 } ?? stored(for: user, refusal: &keptRefusal)).flatMap { $0.userId == user ? $0 : nil }
        if let cached, cached.freshUntil > Date() { return cached }
        do {
            // Revalidated with the ETag: 304, no body, while nothing changed.
            let nonce = signing.map { _ in StatusSigning.nonce() }
            let call = Call(
                SubscriptionsAPI.me,
                StatusRequest(
                    ifNoneMatch: cached?.etag, nonce: nonce, installationID: nonce == nil ? nil : installationID))
            let (data, response) = try await authorized.send(call)
            let fetched = Date()
            let maxAge = Self.maxAge(response.value(forHTTPHeaderField: "Cache-Control")) ?? 0
            var status: SubscriptionStatus
            var signed: (jws: String, until: Date)?
            if let signing {
                // The signed claims, never the body: the body is what a proxy could change.
                let jws = response.value(forHTTPHeaderField: SignedStatusClaims.header)
                let claims = try signing.claims(jws, user: user, installation: installationID, nonce: nonce)
                status = claims.status
                signed = (jws ?? "", Date(timeIntervalSince1970: Double(claims.exp)))
            } else if response.statusCode == 304, let cached {
                // Unchanged; the time to ask again is the 304's.
                status = cached.value
                status.checkAgainAt = fetched.addingTimeInterval(maxAge)
            } else {
                status = try Transport.decode(
                    SubscriptionStatus.self, data, requestID: response.value(forHTTPHeaderField: "X-Request-ID"))
            }
            let fresh = CachedStatus(
                value: status, userId: user, fetchedAt: fetched,
                freshUntil: min(fetched.addingTimeInterval(maxAge), status.checkAgainAt), isStale: false,
                etag: response.value(forHTTPHeaderField: "ETag") ?? cached?.etag, signed: signed?.jws,
                signedUntil: signed?.until)
            keep(fresh)
            refusal.withLock { $0 = nil }
            return fresh
        } catch {
            if error.isTransient, var cached, -cached.fetchedAt.timeIntervalSinceNow < staleLimit,
                signing == nil || (cached.signedUntil ?? .distantPast) > Date()
            {
                cached.isStale = true
                return cached
            }
            // Offline with a kept status that failed its check (edited, copied): that is the
            // answer, not the network's.
            let failure = error.isTransient ? keptRefusal ?? error : error
            if failure.kind == .untrusted { refusal.withLock { $0 = failure } }
            throw failure
        }
    }

    /// Why the last status was refused (``PierError/Kind/untrusted``: changed on the way, edited
    /// in the store, another user's or installation's), while no trusted one came since; nil
    /// otherwise. What an app reads when ``updates`` yields a status without access.
    public var lastRefusal: PierError? { refusal.withLock { $0 } }

    /// The signed-in user's status as it changes, pushed by the server
    /// (`GET /subscriptions/me/events`): the status now first, then each change (a grant, its
    /// revocation, a purchase, a renewal, a refund) within about a second of it. The cache
    /// follows, so ``status()`` and ``isEntitled(_:)`` answer with the new status at once.
    ///
    /// The stream reconnects by itself after a network failure or a server restart (waiting
    /// 1 s, doubling up to a minute, with jitter), with a fresh access token when the one it
    /// used expires, and resumes where it was (the status is sent again only if it changed).
    /// It ends when the user signs out, and when the task reading it is cancelled:
    ///
    /// ```swift
    /// .task { for await status in pier.subscriptions.updates { isPro = status.entitlements.contains { $0.key == "pro" } } }
    /// ```
    ///
    /// With ``PierClient/Options/statusSigning``, each change pushed is read again as a signed
    /// status (one `GET /subscriptions/me`), and what is yielded and kept is that.
    public var updates: AsyncStream<SubscriptionStatus> {
        authorized.live(SubscriptionsAPI.events.path(EventStreamRequest()), event: "status", as: SubscriptionStatus.self) {
            [self] status, user in
            guard signing == nil else {
                invalidate()
                do {
                    return try await self.status().value
                } catch let error as PierError where error.kind == .untrusted {
                    // A change that fails its check gives no access, and says so (``lastRefusal``).
                    cache.withLock { $0 = nil }
                    return SubscriptionStatus(
                        status: .none, active: false, plan: nil, entitlements: [], currentPeriodStart: nil,
                        currentPeriodEnd: nil, graceUntil: nil, willRenew: false, source: nil, environment: nil,
                        checkAgainAt: Date())
                } catch {
                    return nil
                }
            }
            keep(
                CachedStatus(
                    value: status, userId: user, fetchedAt: Date(), freshUntil: status.checkAgainAt, isStale: false, etag: nil))
            return status
        }
    }

    /// True when the signed-in user's status unlocks `key` now; false when it does not, when
    /// nobody is signed in, or when no status can be had (the cache included).
    public func isEntitled(_ key: String) async -> Bool {
        guard let status = try? await status() else { return false }
        let now = Date()
        return status.value.entitlements.contains { (entitlement: Entitlement) in
            entitlement.key == key && entitlement.expiresAt > now
        }
    }

    /// The plans on sale.
    public func plans() async throws(PierError) -> [Plan] {
        try await authorized.call(SubscriptionsAPI.plans, PlansQuery(), signedIn: false).items
    }

    /// Sends a StoreKit 2 transaction (`Transaction.jwsRepresentation`) for the signed-in user
    /// and returns the status it gives. Safe to repeat: the server knows each transaction once.
    @discardableResult
    public func submit(signedTransaction: String) async throws(PierError) -> SubscriptionStatus {
        let status = try await authorized.call(
            SubscriptionsAPI.transaction, NoParameters(),
            body: AppStoreTransactionRequest(signedTransaction: signedTransaction))
        invalidate()
        return status
    }

    /// Sends a Google Play purchase (the Play Billing Library's `Purchase.purchaseToken` and its
    /// product; the purchase made with `obfuscatedAccountId` set to the user's id) for the
    /// signed-in user; the server reads it from Google and returns the status it gives. Safe to
    /// repeat. Throws `conflict` (409) when the purchase is another account's.
    @discardableResult
    public func submit(googlePurchaseToken token: String, productId: String) async throws(PierError) -> SubscriptionStatus {
        let status = try await authorized.call(
            SubscriptionsAPI.googlePurchase, NoParameters(),
            body: GooglePurchaseRequest(purchaseToken: token, productId: productId))
        invalidate()
        return status
    }

    /// Makes the next ``status()`` ask the server. The status kept is still served, stale, when
    /// the server cannot be reached.
    public func invalidate() {
        var refused: PierError? = nil
        guard let user = authorized.sessions.snapshot.withLock({ $0?.id }),
            var kept = cache.withLock({ $0 }) ?? stored(for: user, refusal: &refused)
        else { return }
        kept.freshUntil = .distantPast
        keep(kept)
    }

    /// `status` in memory and in the session store, unless its user has signed out meanwhile.
    private func keep(_ status: CachedStatus) {
        guard authorized.sessions.snapshot.withLock({ $0?.id }) == status.userId else { return }
        cache.withLock { $0 = status }
        if let data = try? Self.storage.encode(status) { authorized.sessions.store.saveStatus(data) }
    }

    /// The status the session store kept (by an earlier launch, or another process sharing the
    /// store) for `user`; nil when none can be read. Never fresh: asked for again when the server
    /// can be reached (a grant made meanwhile shows at once), served stale when it cannot. With
    /// ``StatusSigning``, only a kept signature that still verifies, for this user and
    /// installation and unexpired, gives a status, and the status is the signed one: one edited
    /// in the store is dropped.
    private func stored(for user: UUID, refusal: inout PierError?) -> CachedStatus? {
        guard let data = authorized.sessions.store.loadStatus(),
            var status = try? Self.reading.decode(CachedStatus.self, from: data)
        else { return nil }
        if let signing {
            do {
                let claims = try signing.claims(status.signed, user: user, installation: installationID, nonce: nil)
                guard claims.status == status.value else {
                    refusal = PierError(
                        kind: .untrusted,
                        detail: "The subscription status kept on the device was edited: it differs from its signature.")
                    return nil
                }
            } catch {
                refusal = error
                return nil
            }
        }
        status.freshUntil = .distantPast
        return status
    }

    /// Dates kept to the sub-second (the wire's are whole seconds): a status reads back as it was.
    private static let storage: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()
    private static let reading = JSONDecoder()

    static func maxAge(_ cacheControl: String?) -> TimeInterval? {
        guard let cacheControl else { return nil }
        for directive in cacheControl.split(separator: ",") {
            let parts = directive.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "max-age", let seconds = TimeInterval(parts[1]) { return seconds }
        }
        return nil
    }
}

/// A subscription status with where it came from; read its fields directly
/// (`try await pier.subscriptions.status().active`).
@dynamicMemberLookup
public struct CachedStatus: Sendable, Equatable, Codable {
    public let value: SubscriptionStatus
    let userId: UUID
    /// When the server answered it.
    public let fetchedAt: Date
    /// Until when it is served without asking the server.
    public internal(set) var freshUntil: Date
    /// True when the server could not be reached and this is an older answer.
    public internal(set) var isStale: Bool
    /// The server's `ETag` for it, sent back as `If-None-Match` when it is checked again.
    var etag: String?
    /// With ``StatusSigning``: the signed status it was read from.
    var signed: String? = nil
    /// With ``StatusSigning``: until when the signature it was read from is trusted (offline too).
    public internal(set) var signedUntil: Date? = nil

    public subscript<T>(dynamicMember keyPath: KeyPath<SubscriptionStatus, T>) -> T { value[keyPath: keyPath] }
}
