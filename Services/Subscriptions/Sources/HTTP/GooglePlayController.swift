import PierCrypto
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

/// `/subscriptions/google`: purchases from Android apps and Google's Real-time developer
/// notifications.
struct GooglePlayController: Sendable {
    /// Nil when Google Play is not configured.
    let play: GooglePlay?
    let database: PostgresPool
    /// Checks the push's OIDC token; nil when pushes are not configured.
    let push: (verifier: IdentityTokenVerifier, serviceAccount: String)?
    let logger: Logger
    /// Purchase posts per account and per client address: each may be a call to Google, on the
    /// app's daily quota.
    let throttle: (account: TokenBuckets, address: TokenBuckets)

    init(play: GooglePlay?, database: PostgresPool, http: HTTPClient, logger: Logger) {
        self.play = play
        self.database = database
        self.logger = logger
        let perAccount = Double(play?.api.settings.postsPerAccountPerMinute ?? 10)
        let perAddress = Double(play?.api.settings.postsPerAddressPerMinute ?? 30)
        throttle = (
            TokenBuckets(rate: perAccount / 60, burst: perAccount), TokenBuckets(rate: perAddress / 60, burst: perAddress)
        )
        if let settings = play?.api.settings, let audience = settings.pushAudience, let account = settings.pushServiceAccount {
            let google = IdentityProvider(
                name: "Google", issuer: "https://accounts.google.com", jwksURL: settings.jwksURL, audiences: [audience],
                otherIssuers: ["accounts.google.com"])
            push = (IdentityTokenVerifier(provider: google, keys: IdentityKeys(url: settings.jwksURL, client: http)), account)
        } else {
            push = nil
        }
    }

    /// Not found: Google Play is not part of this server (a 404, as for any feature turned off).
    static let unconfigured = HTTPError(
        404, code: .googlePlayUnconfigured,
        detail: "Google Play is not configured here: set PIER_SUBSCRIPTIONS_GOOGLE_PACKAGE and _KEY_FILE.")

    static func failed(_ failure: GooglePlayAPI.Failure) -> HTTPError {
        HTTPError(
            503, code: .googlePlayFailed, detail: "Google Play did not answer: \(failure). Nothing changed; try again.",
            headers: ["Retry-After": String(failure.retryAfter)])
    }

    /// `POST /subscriptions/google/purchases` → the caller's status with the purchase.
    func purchase(_ request: Request, _ context: ServiceRequestContext, _ body: GooglePurchaseRequest) async throws
        -> JSONResponse<SubscriptionStatus>
    {
        let principal = try context.caller()
        guard let play else { throw Self.unconfigured }
        var errors: [Problem.FieldError] = []
        if !Self.isPurchaseToken(body.purchaseToken) {
            errors.append(.init(field: "purchaseToken", message: "must be the token the Play Billing Library gave"))
        }
        if !ValidPlan.isGoogleProduct(body.productId) || body.productId.contains(":") {
            errors.append(.init(field: "productId", message: "must be a Google Play product id"))
        }
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        for (buckets, key, limit) in [
            (throttle.account, principal.userID.text(), play.api.settings.postsPerAccountPerMinute),
            (throttle.address, request.clientKey, play.api.settings.postsPerAddressPerMinute),
        ] {
            let taken = buckets.take(key)
            guard taken.allowed else {
                throw HTTPError.rateLimited(
                    limit: limit, window: 60, retryAfter: taken.retryAfter,
                    "Too many Google Play purchases posted (\(limit) a minute); try again in \(taken.retryAfter) s.")
            }
        }
        let recorded: GooglePlay.Recorded
        do {
            recorded = try await play.purchase(body.purchaseToken, product: body.productId, by: principal.userID)
        } catch let failure as GooglePlayAPI.Failure {
            switch failure {
            case .notFound: throw HTTPError.invalid("purchaseToken", "is not a purchase Google knows")
            case .unreadable(let why):
                throw HTTPError.invalid("purchaseToken", "is a purchase Pier cannot hold: \(why)")
            default:
                logger.warning("google play purchase could not be read", [("error", .string(failure.description))])
                throw Self.failed(failure)
            }
        }
        switch recorded {
        case .recorded(let status):
            logger.info("google play purchase recorded", [("purchase", .string(GooglePlay.short(body.purchaseToken)))])
            return StatusController.response(status)
        case .ownedElsewhere:
            throw HTTPError.conflict("This Google Play purchase belongs to another account.")
        case .otherProduct(let product):
            throw HTTPError.invalid("productId", "is not the purchase's product (Google says \(product))")
        case .notOffered(let product):
            logger.warning("google play purchase of a product no plan offers", [("product", .string(product))])
            throw HTTPError(
                422, code: .productNotOffered,
                detail: "No plan here offers \(product): the purchase is kept for the team and not acknowledged, "
                    + "so Google refunds it unless a plan offers the product within three days.",
                errors: [.init(field: "productId", message: "is offered by no plan")])
        }
    }

    /// `POST /subscriptions/users/{userId}/google/refresh` (staff) → the user's status and facts
    /// after every purchase of theirs was read again from Google.
    func refresh(_ context: ServiceRequestContext, _ user: UUID) async throws -> JSONResponse<SubscriptionHistory> {
        let staff = try context.caller()
        guard let play else { throw Self.unconfigured }
        let read: Int
        do {
            read = try await play.refresh(user: user)
        } catch let failure as GooglePlayAPI.Failure {
            throw Self.failed(failure)
        }
        logger.info(
            "google play purchases refreshed",
            [("user_id", .string(user.text())), ("by", .string(staff.userID.text())), ("purchases", .int(read))])
        return JSONResponse(try await play.subscriptions.history(of: user))
    }

    /// `GET /subscriptions/google/notifications?limit=N` (staff; 1–200, 50 by default).
    func recent(_ context: ServiceRequestContext, _ query: LimitQuery) async throws -> JSONResponse<
        ItemList<GoogleNotificationEntry>
    > {
        JSONResponse(ItemList(try await GooglePurchases.recent(limit: query.limit ?? 50, on: database)))
    }

    /// Purchase tokens are long URL-safe strings: 1 to 1024 letters, digits, `.`, `-`, `_`, and
    /// never only dots (a path's `.` and `..`, which would name another path of Google's API).
    static func isPurchaseToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 1024 && !text.utf8.allSatisfy({ $0 == UInt8(ascii: ".") })
            && text.utf8.allSatisfy {
                $0.isASCIIAlphanumeric || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
            }
    }
}

extension UInt8 {
    fileprivate var isASCIIAlphanumeric: Bool {
        (0x30...0x39).contains(self) || (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self)
    }
}
