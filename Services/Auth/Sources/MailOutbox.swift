import PierMail
import PierPostgres
import PierRuntime
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The transactional outbox of mails: a mail is queued in the transaction of the change that
/// causes it (so it exists exactly when the change does), then sent by a worker.
///
/// Each mail is claimed before it is sent — its attempt counted and its next attempt pushed back,
/// committed — and marked sent after. A crash between the two sends it once more when its next
/// attempt comes (at least once: losing a reset link or a security notice is worse than a second
/// copy); a claim that is never marked never sends twice at once. Failures retry with doubling
/// delays up to an hour, 8 attempts; a refusal for good (an SMTP 5xx) stops at once.
final class MailOutbox: LifecycleService {
    var lifecycleName: String { "mail outbox" }
    static let maximumAttempts = 8

    private let database: PostgresPool
    private let transport: any MailTransport
    private let sender: String
    private let retrySeconds: Int
    private let pollSeconds: Int
    private let logger: Logger
    private let wakes: AsyncStream<Void>.Continuation
    private let stream: AsyncStream<Void>
    /// Runs before each round of sending: what turns requests into mails (password resets).
    private let preparing = Mutex<(@Sendable () async -> Void)?>(nil)

    init(
        database: PostgresPool, transport: any MailTransport, sender: String, retrySeconds: Int, pollSeconds: Int,
        logger: Logger
    ) {
        self.database = database
        self.transport = transport
        self.sender = sender
        self.retrySeconds = retrySeconds
        self.pollSeconds = pollSeconds
        self.logger = logger
        (stream, wakes) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Queues `message` in the caller's transaction.
    static func enqueue(_ message: MailMessage, kind: String, on connection: PostgresConnection) async throws {
        let id = UUID()
        try await connection.execute(
            """
            INSERT INTO auth.outbox (id, kind, recipient, message)
            VALUES (\(id), \(kind), \(MailMessage.address(in: message.to)),
                \(PostgresBytes(message.rendered(messageID: id.text(), date: Date()))))
            """)
    }

    /// Sends until its task is cancelled: what is due at once, after each ``wake()``, and every
    /// `pollSeconds` (mails another replica queued, retries that came due).
    func run() async {
        let (stream, wakes, poll) = (stream, wakes, pollSeconds)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    wakes.yield()
                    try? await Task.sleep(for: .seconds(poll))
                }
            }
            for await _ in stream { await sendDue() }
            group.cancelAll()
        }
    }

    /// A mail was queued here: send it now rather than at the next poll.
    func wake() { wakes.yield() }

    /// Sets what runs before each round of sending (before it runs).
    func prepare(with work: @escaping @Sendable () async -> Void) { preparing.withLock { $0 = work } }

    /// Sends every mail that is due, one at a time; returns how many were sent.
    @discardableResult
    func sendDue() async -> Int {
        if let work = preparing.withLock({ $0 }) { await work() }
        var sent = 0
        while true {
            let claimed: PostgresRow?
            do {
                claimed = try await database.query(
                    """
                    UPDATE auth.outbox SET attempts = attempts + 1,
                        next_attempt_at = now() + make_interval(secs => least(3600, \(retrySeconds) * power(2, attempts)))
                    WHERE id = (
                        SELECT id FROM auth.outbox
                        WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now()
                        ORDER BY next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED)
                    RETURNING id, kind, recipient, message, attempts
                    """
                ).first
            } catch {
                logger.warning("mail outbox unavailable", [("error", .string("\(error)"))])
                return sent
            }
            guard let claimed else { return sent }
            do {
                let id = try claimed.decode("id", as: UUID.self)
                let kind = try claimed.decode("kind", as: String.self)
                let attempts = try claimed.decode("attempts", as: Int.self)
                let message = try claimed.decode("message", as: PostgresBytes.self).bytes
                do {
                    try await transport.send(message, from: sender, to: try claimed.decode("recipient"))
                    try await database.execute(
                        "UPDATE auth.outbox SET sent_at = now(), message = NULL, last_error = NULL WHERE id = \(id)")
                    logger.info("mail sent", [("mail_id", .string(id.text())), ("kind", .string(kind))])
                    sent += 1
                } catch let failure as MailFailure {
                    let final = failure.permanent || attempts >= Self.maximumAttempts
                    try await database.execute(
                        """
                        UPDATE auth.outbox SET last_error = \(failure.message),
                            failed_at = CASE WHEN \(final) THEN now() END, message = CASE WHEN \(final) THEN NULL ELSE message END
                        WHERE id = \(id)
                        """)
                    logger.warning(
                        final ? "mail given up" : "mail not sent; will retry",
                        [
                            ("mail_id", .string(id.text())), ("kind", .string(kind)), ("attempt", .int(attempts)),
                            ("error", .string(failure.message)),
                        ])
                }
            } catch {
                logger.warning("mail outbox unavailable", [("error", .string("\(error)"))])
                return sent
            }
        }
    }
}
