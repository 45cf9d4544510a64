import PierHTTP
import PierJSON
import PierModels
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
        // Ids are taken when a transaction inserts, not when it commits, so a reader going by
        // id could pass an id whose transaction commits later. Readers go by transaction, then
        // id, and only take events whose transaction is older than every transaction still
        // running (pg_snapshot_xmin): that set is final, so no event is skipped.
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
        // Subscriptions produces `subscription.updated` (webhooks): the same grant as feedback's.
        Migration(
            version: 4, name: "subscriptions_append",
            sql: """
                DO $$ BEGIN
                    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pier_subscriptions')
                        AND NOT pg_has_role('pier_subscriptions', current_user, 'USAGE') THEN
                        GRANT INSERT ON events.events TO pier_subscriptions;
                        GRANT USAGE ON SEQUENCE events.events_id_seq TO pier_subscriptions;
                    END IF;
                END $$;
                """),
        // Readers go by (txid, id) (migration 2): an id order skipped an event whose id was
        // taken before an older transaction's (1 in 10,000 at 500 events/s).
        Migration(version: 5, name: "read_by_transaction", sql: "CREATE INDEX events_txid ON events.events (txid, id);"),
        // Every producer since (remote config's `config.published`, a team's plugin) joins one
        // group role where the deployment has it (the roles script's pier_event_writers): the
        // grant is made once, for the group.
        Migration(
            version: 6, name: "writers_append",
            sql: """
                DO $$ BEGIN
                    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pier_event_writers') THEN
                        GRANT INSERT ON events.events TO pier_event_writers;
                        GRANT USAGE ON SEQUENCE events.events_id_seq TO pier_event_writers;
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
        // The notification is part of the statement: sent when the transaction commits.
        let rows = try await connection.query(
            """
            INSERT INTO events.events (type, payload) VALUES (\(type), \(json)::jsonb)
            RETURNING id, pg_notify(\(channel), \(type))::text AS notified
            """)
        return try rows[0].decode("id", as: Int64.self)
    }
}

/// The payload of `account.deleted`.
public struct AccountDeleted: Codable, Sendable, Equatable {
    public static let type = "account.deleted"
    public var userId: UUID
    public init(userId: UUID) { self.userId = userId }
}

/// The payload of `account.merged`: an anonymous account (`userId`) was merged into a permanent
/// one (`intoUserId`) and is gone. Its tokens are refused like a deleted account's; each service
/// moves what it kept of it to `intoUserId`, in one transaction with its cursor.
public struct AccountMerged: Codable, Sendable, Equatable {
    public static let type = "account.merged"
    public var userId: UUID
    public var intoUserId: UUID
    public init(userId: UUID, intoUserId: UUID) {
        self.userId = userId
        self.intoUserId = intoUserId
    }
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

/// The payload of `user.created`: an account was made (a registration, a first sign-in with a
/// provider, an admin made by the command line).
public struct UserCreated: Codable, Sendable, Equatable {
    public static let type = "user.created"
    public var userId: UUID
    /// None for an anonymous account.
    public var email: String?
    public var emailVerified: Bool
    public var displayName: String?
    public var role: String
    public var createdAt: Date
    /// Made for an installation, without an address or a password (`POST /auth/anonymous`).
    public var isAnonymous: Bool?

    public init(
        userId: UUID, email: String?, emailVerified: Bool, displayName: String?, role: String, createdAt: Date,
        isAnonymous: Bool? = nil
    ) {
        self.isAnonymous = isAnonymous
        self.userId = userId
        self.email = email
        self.emailVerified = emailVerified
        self.displayName = displayName
        self.role = role
        self.createdAt = createdAt
    }
}

/// The payload of `user.updated`: what the account's owner sees of it changed (address, name,
/// role, verification, language, disabling). Appended by a trigger on `auth.users`, so every
/// flow that changes an account tells it.
public struct UserUpdated: Codable, Sendable, Equatable {
    public static let type = "user.updated"
    public var userId: UUID
    /// The account's role after the change (absent from events written before it was told).
    public var role: String?
    public init(userId: UUID, role: String? = nil) {
        self.userId = userId
        self.role = role
    }
}

/// The payload of `feedback.created` (written by feedback's intake statement itself, in SQL).
public enum FeedbackCreated {
    public static let type = "feedback.created"
}

/// The payload of `feedback.updated`: the team changed an item; `changes` names each field
/// with its value before and after.
public struct FeedbackUpdated: Codable, Sendable, Equatable {
    public static let type = "feedback.updated"
    public var feedbackId: UUID
    public var userId: UUID?
    public var changes: [String: FeedbackChange.FieldChange]
    public var updatedAt: Date

    public init(feedbackId: UUID, userId: UUID?, changes: [String: FeedbackChange.FieldChange], updatedAt: Date) {
        self.feedbackId = feedbackId
        self.userId = userId
        self.changes = changes
        self.updatedAt = updatedAt
    }
}

/// The payload of `subscription.updated`: what an account's access rests on changed (a grant
/// made or revoked, an App Store transaction or notification recorded); `status` is the status
/// it makes at that moment.
public struct SubscriptionUpdated: Codable, Sendable, Equatable {
    public static let type = "subscription.updated"
    public var userId: UUID
    /// `grant`, `grant_revoked`, `app_store`.
    public var reason: String
    public var status: SubscriptionStatus

    public init(userId: UUID, reason: String, status: SubscriptionStatus) {
        self.userId = userId
        self.reason = reason
        self.status = status
    }
}
