import PierEvents
import PierHTTP
import PierMail
import PierPostgres
import PierRuntime
import PierService

/// Mails the team's replies to feedback (`feedback.replied`): to the signed-in sender's address
/// when it is verified and the account enabled, or to the anonymous sender's reply address. The
/// mail is queued in the transaction that moves auth's cursor past the event: exactly once.
enum FeedbackReplyMails {
    static func consumer(
        database: PostgresPool, listener: PostgresListener, mails: Mails, outbox: MailOutbox, pollSeconds: Int,
        logger: Logger
    ) -> EventConsumer {
        EventConsumer(
            name: "auth", cursorTable: "auth.event_cursor", types: [FeedbackReplied.type], database: database,
            listener: listener, logger: logger, pollInterval: .seconds(pollSeconds), applied: { outbox.wake() }
        ) { event, connection in
            let replied = try event.decode(FeedbackReplied.self)
            let recipient: String
            if let user = replied.userId {
                guard let account = try await Users(connection).user(user), account.emailVerified,
                    account.disabledAt == nil, let email = account.email
                else { return }
                recipient = email
            } else if let address = replied.email {
                recipient = address
            } else {
                return
            }
            try await Outbox(connection).enqueue(
                mails.feedbackReply(to: recipient, message: replied.message, original: replied.original),
                kind: "feedback-reply")
        }
    }
}
