import PierCrypto
import PierHTTP
import PierIdentity
import PierJSON
import PierLive
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `/subscriptions/me` and `/subscriptions/users/{userId}`: a user's status, entitlements and history.
struct StatusController: Sendable {
    let subscriptions: Subscriptions
    let live: LiveFeed
    /// Signs statuses for clients that ask (nil: not configured in production).
    let signer: StatusSigner?
    let logger: Logger

    /// The status with `Cache-Control` matching `checkAgainAt`: a client may keep it that long.
    static func response(_ status: SubscriptionStatus, code: Int = 200) -> JSONResponse<SubscriptionStatus> {
        JSONResponse(status, status: code, headers: cacheControl(status))
    }

    /// `Cache-Control` until the status's `checkAgainAt`, and `Vary: Authorization`: the answer is
    /// the caller's own, so an app's URL cache must not show it to the next user of the device.
    static func cacheControl(_ status: SubscriptionStatus) -> HTTPHeaders {
        [
            "Cache-Control": "private, max-age=\(max(0, Int(status.checkAgainAt.timeIntervalSinceNow.rounded(.down))))",
            "Vary": "Authorization",
        ]
    }

    /// With an `ETag`: an app checking on every launch gets 304 and no body while nothing changed.
    /// The tag leaves out `checkAgainAt` (now + the recheck interval for most users: it would
    /// change every second); the 304's `Cache-Control` gives the new time to ask again.
    ///
    /// A request with a `Pier-Status-Nonce` gets the status signed too (`Pier-Signed-Status`, on
    /// the 304 as well): bound to the caller, their `X-Installation-ID` and that nonce.
    func me(_ request: Request, _ context: ServiceRequestContext, _ asked: StatusRequest) async throws
        -> EndpointReply<SubscriptionStatus>
    {
        let principal = try context.caller()
        let nonce = asked.nonce
        if let nonce, !SignedStatusClaims.isNonce(nonce) {
            throw HTTPError.invalid(SignedStatusClaims.nonceHeader, "must be 16 to 128 base64url characters")
        }
        let installation = asked.installationID
        let status = try await subscriptions.status(of: principal.userID)
        let body = JSON.write(status)
        var headers = Self.cacheControl(status)
        if let nonce, let signer {
            headers.set(
                SignedStatusClaims.header,
                try signer.sign(body, user: principal.userID, installation: installation, nonce: nonce))
            headers.set("Vary", "Authorization, \(SignedStatusClaims.nonceHeader), X-Installation-ID")
        }
        return EndpointReply(
            promised: .conditionalJSON(body, for: request, headers: headers, validated: Self.withoutCheckAgainAt(body)))
    }

    /// `GET /subscriptions/.well-known/jwks.json`: the key that signs statuses, for an app to pin.
    func keys(_ request: Request, _ context: ServiceRequestContext) async throws -> EndpointReply<JWKSetAnswer> {
        guard let signer else { throw HTTPError.notFound("Statuses are not signed on this server.") }
        return EndpointReply(
            promised: Response(
                status: 200, headers: ["Content-Type": "application/jwk-set+json", "Cache-Control": "public, max-age=3600"],
                body: signer.jwks))
    }

    /// `GET /subscriptions/me/events`: the status as server-sent events (`event: status`), now
    /// and whenever it changes (a grant, its revocation, an App Store transaction or
    /// notification, a refund), within about a second, whichever replica or service made it.
    func events(_ request: Request, _ context: ServiceRequestContext, _ stream: EventStreamRequest) async throws
        -> EndpointReply<EventStreamAnswer>
    {
        EndpointReply(
            promised: try ServerSentEvents.response(
                request, resumingAfter: stream.lastEventID, feed: live, caller: try context.caller(), event: "status",
                fingerprint: { Self.withoutCheckAgainAt($0) }))
    }

    private static let checkAgainKey = Array(#""checkAgainAt":""#.utf8)

    /// The encoded status without the value of its top-level `checkAgainAt` (the only member of
    /// that name: nested objects have none), found in the bytes rather than encoded twice.
    static func withoutCheckAgainAt(_ body: [UInt8]) -> [UInt8] {
        let key = checkAgainKey
        guard body.count > key.count,
            let start = (0...(body.count - key.count)).first(where: { body[$0..<($0 + key.count)].elementsEqual(key) }),
            let end = body[(start + key.count)...].firstIndex(of: UInt8(ascii: "\""))
        else { return body }
        return Array(body[..<(start + key.count)] + body[end...])
    }

    func entitlement(_ context: ServiceRequestContext, _ key: String) async throws -> JSONResponse<EntitlementStatus> {
        let principal = try context.caller()
        guard ValidPlan.isSlug(key, maximum: 64, extra: ".") else {
            throw HTTPError.invalid("key", "must be 1 to 64 lowercase letters, digits, '-', '_' or '.'")
        }
        let status = try await subscriptions.status(of: principal.userID)
        let expiresAt = status.entitlements.first { $0.key == key }?.expiresAt
        return JSONResponse(
            EntitlementStatus(key: key, active: expiresAt != nil, expiresAt: expiresAt), headers: Self.cacheControl(status))
    }

    /// Turns renewal off where Pier is the one renewing: grants. App Store renewals are the
    /// user's to cancel in the App Store.
    func cancel(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<SubscriptionStatus> {
        let principal = try context.caller()
        let current = try await subscriptions.status(of: principal.userID)
        guard current.active else { throw HTTPError.conflict("There is no active subscription to cancel.") }
        if current.source == .appstore {
            throw HTTPError.conflict(
                "This subscription renews through the App Store; cancel it in the App Store (Settings › Apple ID › Subscriptions)."
            )
        }
        try await subscriptions.grants.cancelRunning(of: principal.userID)
        logger.info("subscription cancelled", [])
        return Self.response(try await subscriptions.status(of: principal.userID))
    }

    func user(_ user: UUID) async throws -> JSONResponse<SubscriptionHistory> {
        let history = try await subscriptions.history(of: user)
        return JSONResponse(history)
    }
}
