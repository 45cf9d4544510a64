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

/// `POST /feedback`: feedback from apps, anonymous or signed in, safe to retry, within quota.
struct IntakeController: Sendable {
    let intake: FeedbackIntake
    let configuration: FeedbackConfiguration
    /// Verifies installation tokens (`X-Installation-Token`) with the access tokens' keys.
    let installations: AccessTokenVerifier
    let logger: Logger

    func create(_ request: Request, _ context: ServiceRequestContext, _ headers: FeedbackSender, _ body: CreateFeedback)
        async throws -> EndpointReply<FeedbackItem>
    {
        let principal = context.principal
        // An anonymous account's feedback is anonymous feedback: moderated, attested and counted
        // against its installation or address as if no one had signed in (six accounts made from
        // one address share that address's quota). It stays the account's own (`/feedback/mine`).
        let anonymous = principal?.isAnonymous ?? true
        let feedback = try ValidFeedback(body, anonymous: anonymous)
        let key = try idempotencyKey(headers.idempotencyKey, body)
        let installation = anonymous ? try await anonymousInstallation(headers) : nil
        let scope =
            principal.map { $0.userID.text() }
            ?? installation.map { "anonymous:installation:" + $0.id } ?? "anonymous:address:" + request.clientKey
        let sender =
            principal.flatMap { $0.isAnonymous ? nil : "user:" + $0.userID.text() }
            ?? installation.flatMap { $0.attested ? "installation:" + $0.id : nil } ?? "address:" + request.clientKey
        let submission = FeedbackIntake.Submission(
            id: body.id ?? UUID.random(), clientChoseID: body.id != nil, userID: principal?.userID, feedback: feedback,
            moderation: anonymous && configuration.moderateAnonymous ? .pending : .approved,
            clientAddress: request.clientAddress,
            // The body as decoded, every property of CreateFeedback in one spelling (read from its
            // declaration, ``CanonicalForm``): two bodies that mean the same hash the same, two that
            // differ in any field differ, without a second parse of the bytes.
            idempotency: key.map {
                .init(scope: scope, key: $0, requestHash: PostgresBytes(SHA256.hash(CanonicalForm.bytes(of: body))))
            }, sender: sender)
        let outcome = try await intake.submit(submission)
        switch outcome {
        case .created(let body, let id):
            logger.info("feedback received", [("feedback_id", .string(id.text()))])
            return created(body, id: id, replayed: false)
        case .replayed(let body, let id):
            return created(body, id: id, replayed: true)
        case .keyReused:
            throw HTTPError.invalid(
                "Idempotency-Key", "was already used with a different request body", code: .idempotencyKeyReused)
        case .overQuota(let seconds, let limit, let window):
            throw HTTPError.rateLimited(
                limit: limit, window: window, retryAfter: seconds,
                "Too much feedback from one sender (\(limit) per \(window == 60 ? "minute" : "day")); try again in \(max(1, seconds)) s."
            )
        }
    }

    private func created(_ body: [UInt8], id: UUID, replayed: Bool) -> EndpointReply<FeedbackItem> {
        var headers: HTTPHeaders = ["Location": FeedbackAPI.item.path(PathID(id))]
        if replayed { headers.set("Idempotent-Replayed", "true") }
        return EndpointReply(writtenJSON: body, status: 201, headers: headers)
    }

    /// An anonymous sender's installation: `X-Installation-ID` (which the client library sends),
    /// where its idempotency keys and ids live so that two apps choosing the same key never meet,
    /// and whether App Attest vouches for it (`X-Installation-Token`, as
    /// `PIER_FEEDBACK_APP_ATTEST` asks): then its quota is its own, not its address's.
    private func anonymousInstallation(_ headers: FeedbackSender) async throws(HTTPError) -> (id: String, attested: Bool)? {
        let named = headers.installationID
        guard configuration.appAttest != .off else { return named.map { ($0, false) } }
        guard let token = headers.installationToken else {
            guard configuration.appAttest == .required else { return named.map { ($0, false) } }
            throw HTTPError(
                403, code: .attestationRequired,
                detail: "This server takes anonymous feedback only from genuine installations of the app: "
                    + "send X-Installation-Token (POST /auth/app-attest/installation-token), or sign in.")
        }
        let claims: InstallationClaims
        do { claims = try await installations.verifyInstallation(token) } catch {
            logger.info("installation token refused", [("reason", .string(error.description))])
            if error == .keysUnavailable {
                throw .unavailable(retryAfter: 5, "The keys that check installation tokens cannot be read.")
            }
            throw .invalid("X-Installation-Token", "is not a valid installation token: \(error)", code: .invalidAttestation)
        }
        if let named, named != claims.sub {
            throw .invalid("X-Installation-Token", "was made for another installation", code: .invalidAttestation)
        }
        return (claims.sub, true)
    }

    /// The `Idempotency-Key` header, or the client-generated `id`.
    private func idempotencyKey(_ header: String?, _ body: CreateFeedback) throws(HTTPError) -> String? {
        if let key = header {
            guard key.utf8.count <= 255, key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw .invalid("Idempotency-Key", "must be 1 to 255 visible ASCII characters")
            }
            return key
        }
        return body.id.map { "id:" + $0.text() }
    }
}
