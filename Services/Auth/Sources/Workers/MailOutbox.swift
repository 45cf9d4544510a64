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
    private let wakeup = Wakeup()
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
    }

    /// Sends until its task is cancelled: what is due at once, after each ``wake()``, and every
    /// `pollSeconds` (mails another replica queued, retries that came due).
    func run() async {
        await Periodic(lifecycleName, every: .seconds(pollSeconds), wakeup: wakeup) { [self] in await sendDue() }.run()
    }

    /// A mail was queued here: send it now rather than at the next poll.
    func wake() { wakeup.wake() }

    /// Sets what runs before each round of sending (before it runs).
    func prepare(with work: @escaping @Sendable () async -> Void) { preparing.withLock { $0 = work } }

    /// Sends every mail that is due, one at a time; returns how many were sent.
    @discardableResult
    func sendDue() async -> Int {
        if let work = preparing.withLock({ $0 }) { await work() }
        var sent = 0
        let outbox = Outbox(database)
        while true {
            let claimed: Outbox.Claimed?
            do {
                claimed = try await outbox.claim(retrySeconds: retrySeconds)
            } catch {
                logger.warning("mail outbox unavailable", [("error", .string("\(error)"))])
                return sent
            }
            guard let claimed else { return sent }
            do {
                do {
                    try await transport.send(claimed.message, from: sender, to: claimed.recipient)
                    try await outbox.markSent(claimed.id)
                    logger.info("mail sent", [("mail_id", .string(claimed.id.text())), ("kind", .string(claimed.kind))])
                    sent += 1
                } catch let failure as MailFailure {
                    let final = failure.permanent || claimed.attempts >= Self.maximumAttempts
                    try await outbox.markFailed(claimed.id, error: failure.message, final: final)
                    logger.warning(
                        final ? "mail given up" : "mail not sent; will retry",
                        [
                            ("mail_id", .string(claimed.id.text())), ("kind", .string(claimed.kind)),
                            ("attempt", .int(claimed.attempts)), ("error", .string(failure.message)),
                        ])
                }
            } catch {
                logger.warning("mail outbox unavailable", [("error", .string("\(error)"))])
                return sent
            }
        }
    }
}
