import PierHTTP
import PierJSON
import PierPostgres

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The shared, append-only log of events between services (`account.deleted`, …) in schema
/// `events`. A producer appends in the same transaction as its own change, so an event exists
/// exactly when the change does; consumers read after their own stored cursor.
public enum EventLog {
    public static let schema = "events"
    /// The channel every append notifies: followers wake on it (``ServiceContext/events``).
    public static let channel = "pier_events"

    public static let migrations = [
        Migration(
            version: 1, name: "create_events",
            sql: """
                CREATE TABLE events.events (
                    id bigserial PRIMARY KEY,
                    type text NOT NULL CHECK (type ~ '^[a-z]+(\\.[a-z_]+)+$'),
                    payload jsonb NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now()
                );
                CREATE INDEX events_type_id ON events.events (type, id);
                """),
        // Ids are taken when a transaction inserts, not when it commits, so a reader could pass
        // an id whose transaction commits later. Readers only take events whose transaction
        // is older than every transaction still running (pg_snapshot_xmin): no event is skipped.
        Migration(
            version: 2, name: "add_transaction_id",
            sql: "ALTER TABLE events.events ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id();"),
        // Feedback produces `feedback.replied`. Where each service has its own role (the
        // deployments' roles script names them), feedback's may append to the log and nothing
        // more; where one role does everything, there is nothing to grant.
        Migration(
            version: 3, name: "feedback_appends",
            sql: """
                DO $$ BEGIN
                    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pier_feedback')
                        AND NOT pg_has_role('pier_feedback', current_user, 'USAGE') THEN
                        GRANT INSERT ON events.events TO pier_feedback;
                        GRANT USAGE ON SEQUENCE events.events_id_seq TO pier_feedback;
                    END IF;
                END $$;
                """),
    ]

    /// Appends an event on `connection` (inside the producer's transaction) and wakes
    /// followers listening on ``channel``.
    @discardableResult
    public static func append(_ type: String, payload: some Encodable & Sendable, on connection: any PostgresExecutor)
        async throws
        -> Int64
    {
        let json = String(decoding: try JSON.encode(payload), as: UTF8.self)
        let rows = try await connection.query(
            """
            INSERT INTO events.events (type, payload) VALUES (\(type), \(json)::jsonb) RETURNING id
            """)
        try await connection.execute("SELECT pg_notify(\(channel), \(type))")
        return try rows[0].decode("id", as: Int64.self)
    }
}

/// The payload of `account.deleted`.
public struct AccountDeleted: Codable, Sendable, Equatable {
    public static let type = "account.deleted"
    public var userId: UUID
    public init(userId: UUID) { self.userId = userId }
}

/// The payload of `feedback.replied`: the team replied to a feedback item; auth mails the reply
/// to the signed-in sender's verified address (`userId`) or the anonymous sender's reply address
/// (`email`).
public struct FeedbackReplied: Codable, Sendable, Equatable {
    public static let type = "feedback.replied"
    public var feedbackId: UUID
    public var replyId: UUID
    public var userId: UUID?
    public var email: String?
    public var message: String
    /// The start of the sender's feedback, quoted in the mail.
    public var original: String

    public init(feedbackId: UUID, replyId: UUID, userId: UUID?, email: String?, message: String, original: String) {
        self.feedbackId = feedbackId
        self.replyId = replyId
        self.userId = userId
        self.email = email
        self.message = message
        self.original = original
    }
}

/// The payload of `session.revoked`: a session ended before its tokens expired (a logout, a
/// password change ending the other sessions, a reused refresh token). Its access tokens are
/// refused everywhere until `until`, when the last of them has expired anyway.
public struct SessionRevoked: Codable, Sendable, Equatable {
    public static let type = "session.revoked"
    public var sessionId: UUID
    public var userId: UUID
    /// Seconds since 1970 after which no access token of the session is valid.
    public var until: Int

    public init(sessionId: UUID, userId: UUID, until: Int) {
        self.sessionId = sessionId
        self.userId = userId
        self.until = until
    }
}
