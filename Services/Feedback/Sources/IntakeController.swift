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
    let logger: Logger

    func create(_ request: Request, _ context: ServiceRequestContext, _ body: CreateFeedback) async throws
        -> EndpointReply<FeedbackItem>
    {
        let principal = context.principal
        let feedback = try ValidFeedback(body, anonymous: principal == nil)
        let key = try idempotencyKey(request, body)
        let scope = try principal.map { $0.userID.text() } ?? anonymousScope(request)
        let sender = principal.map { "user:" + $0.userID.text() } ?? "address:" + request.clientKey
        let submission = FeedbackIntake.Submission(
            id: body.id ?? UUID.random(), clientChoseID: body.id != nil, userID: principal?.userID, feedback: feedback,
            moderation: principal == nil && configuration.moderateAnonymous ? .pending : .approved,
            clientAddress: request.clientAddress,
            // The body as decoded and written again (sorted members, one spelling of each value,
            // `feedback` as `message`): two bodies that mean the same hash the same, without a
            // second parse of the bytes.
            idempotency: try key.map {
                .init(scope: scope, key: $0, requestHash: PostgresBytes(SHA256.hash(try JSON.encode(body))))
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

    /// Where an anonymous sender's idempotency keys and ids live: its installation
    /// (`X-Installation-ID`, which the client library sends) or else its address, so that two
    /// apps choosing the same key never meet.
    private func anonymousScope(_ request: Request) throws(HTTPError) -> String {
        guard let installation = try request.installationID() else { return "anonymous:address:" + request.clientKey }
        return "anonymous:installation:" + installation
    }

    /// The `Idempotency-Key` header, or the client-generated `id`.
    private func idempotencyKey(_ request: Request, _ body: CreateFeedback) throws(HTTPError) -> String? {
        if let key = request.headers["Idempotency-Key"] {
            guard !key.isEmpty, key.utf8.count <= 255, key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw .invalid("Idempotency-Key", "must be 1 to 255 visible ASCII characters")
            }
            return key
        }
        return body.id.map { "id:" + $0.text() }
    }
}
