import PierJSON
import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The statements of webhook deliveries (`auth.webhook_deliveries`): one row per message and
/// endpoint. A pending row is due at `next_attempt_at`, and only when no earlier row of its
/// endpoint and subject is still pending: that keeps the order per subject, across replicas.
/// The due times of the rows queued behind one are kept at or after its own, so the scan for
/// due rows seldom meets a row it has to pass over.
struct WebhookDeliveries: Sendable {
    /// A delivery claimed for an attempt.
    struct Claimed: Sendable {
        let id: Int
        let messageID: String
        let endpoint: String
        let type: String
        let body: [UInt8]
        let attempts: Int
    }

    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    /// Queues one message to each of `endpoints` (inside the transaction that moves the cursor
    /// past its event).
    func enqueue(messageID: String, eventID: Int64, type: String, subject: String, body: String, to endpoints: [String])
        async throws
    {
        try await database.execute(
            """
            INSERT INTO auth.webhook_deliveries (message_id, endpoint, event_id, type, subject, body, next_attempt_at)
            SELECT \(messageID), e.name, \(eventID), \(type), \(subject), \(body),
                greatest(now(), (SELECT max(p.next_attempt_at) FROM auth.webhook_deliveries p
                                 WHERE p.state = 'pending' AND p.endpoint = e.name AND p.subject = \(subject)))
            FROM unnest(\(PostgresTextArray(endpoints))::text[]) AS e (name)
            """)
    }

    /// Up to `limit` due deliveries to `endpoints`, the first pending of their subject each,
    /// their attempt counted and their next attempt pushed `leaseSeconds` away (a process that
    /// dies mid-attempt leaves them to be tried again then).
    func claim(limit: Int, endpoints: [String], leaseSeconds: Int) async throws -> [Claimed] {
        try await database.query(
            """
            UPDATE auth.webhook_deliveries d SET attempts = d.attempts + 1, last_attempt_at = now(),
                next_attempt_at = now() + make_interval(secs => \(leaseSeconds))
            WHERE d.id IN (
                SELECT p.id FROM auth.webhook_deliveries p
                WHERE p.state = 'pending' AND p.next_attempt_at <= now()
                    AND p.endpoint = ANY(\(PostgresTextArray(endpoints))::text[])
                    AND NOT EXISTS (
                        SELECT 1 FROM auth.webhook_deliveries e
                        WHERE e.state = 'pending' AND e.endpoint = p.endpoint AND e.subject = p.subject AND e.id < p.id)
                ORDER BY p.next_attempt_at, p.id LIMIT \(limit)
                FOR UPDATE SKIP LOCKED)
            RETURNING d.id, d.message_id, d.endpoint, d.type, d.body, d.attempts
            """
        ).map { row in
            Claimed(
                id: try row.decode("id"), messageID: try row.decode("message_id"),
                endpoint: try row.decode("endpoint"), type: try row.decode("type"),
                body: Array(try row.decode("body", as: String.self).utf8), attempts: try row.decode("attempts"))
        }
    }

    /// The receiver took it; the next message of its subject is due at once.
    func delivered(_ id: Int, status: Int) async throws {
        try await database.execute(
            """
            WITH done AS (
                UPDATE auth.webhook_deliveries SET state = 'delivered', delivered_at = now(), last_status = \(status),
                    last_error = NULL, next_attempt_at = now()
                WHERE id = \(id) AND state = 'pending'
                RETURNING id, endpoint, subject)
            UPDATE auth.webhook_deliveries f SET next_attempt_at = now() FROM done
            WHERE f.state = 'pending' AND f.endpoint = done.endpoint AND f.subject = done.subject AND f.id > done.id
                AND f.next_attempt_at > now()
            """)
    }

    /// An attempt failed: tried again in `retrySeconds`, the messages behind it waiting as long;
    /// or, with nil, given up (and those behind it due at once).
    func failed(_ id: Int, status: Int?, error: String, retrySeconds: Double?) async throws {
        try await database.execute(
            """
            WITH failed AS (
                UPDATE auth.webhook_deliveries SET last_status = \(status), last_error = \(error),
                    state = CASE WHEN \(retrySeconds == nil) THEN 'failed' ELSE 'pending' END,
                    next_attempt_at = now() + make_interval(secs => \(retrySeconds ?? 0))
                WHERE id = \(id) AND state = 'pending'
                RETURNING id, endpoint, subject, state, next_attempt_at)
            UPDATE auth.webhook_deliveries f SET next_attempt_at =
                CASE WHEN failed.state = 'failed' THEN now() ELSE failed.next_attempt_at END
            FROM failed
            WHERE f.state = 'pending' AND f.endpoint = failed.endpoint AND f.subject = failed.subject AND f.id > failed.id
            """)
    }

    /// The message of delivery `id` queued again to its endpoint, after what is pending for its
    /// subject: the new delivery, or nil when there is no such delivery.
    func replay(_ id: Int) async throws -> WebhookDelivery? {
        try await database.query(
            """
            INSERT INTO auth.webhook_deliveries (message_id, endpoint, event_id, type, subject, body, replay_of, next_attempt_at)
            SELECT o.message_id, o.endpoint, o.event_id, o.type, o.subject, o.body, o.id,
                greatest(now(), (SELECT max(p.next_attempt_at) FROM auth.webhook_deliveries p
                                 WHERE p.state = 'pending' AND p.endpoint = o.endpoint AND p.subject = o.subject))
            FROM auth.webhook_deliveries o WHERE o.id = \(id)
            RETURNING \(unsafeSQL: Self.columns)
            """
        ).first.map { try Self.delivery($0, payload: false) }
    }

    /// The endpoint of delivery `id`, if there is one.
    func endpoint(of id: Int) async throws -> String? {
        try await database.query("SELECT endpoint FROM auth.webhook_deliveries WHERE id = \(id)").first?.decode("endpoint")
    }

    /// Deliveries newest first, after `before` (an id), filtered; one more than `limit` tells
    /// that a next page exists.
    func list(endpoint: String?, state: String?, type: String?, subject: String?, before: Int?, limit: Int)
        async throws -> [WebhookDelivery]
    {
        try await database.query(
            """
            SELECT \(unsafeSQL: Self.columns) FROM auth.webhook_deliveries
            WHERE (\(endpoint)::text IS NULL OR endpoint = \(endpoint)) AND (\(state)::text IS NULL OR state = \(state))
                AND (\(type)::text IS NULL OR type = \(type)) AND (\(subject)::text IS NULL OR subject = \(subject))
                AND (\(before)::bigint IS NULL OR id < \(before))
            ORDER BY id DESC LIMIT \(limit + 1)
            """
        ).map { try Self.delivery($0, payload: false) }
    }

    /// One delivery with the body it sends.
    func delivery(_ id: Int) async throws -> WebhookDelivery? {
        try await database.query(
            "SELECT \(unsafeSQL: Self.columns), body FROM auth.webhook_deliveries WHERE id = \(id)"
        ).first.map { try Self.delivery($0, payload: true) }
    }

    /// Per endpoint: pending and failed deliveries, and the last one delivered.
    func summaries() async throws -> [String: (pending: Int, failed: Int, lastDeliveredAt: Date?)] {
        var summaries: [String: (pending: Int, failed: Int, lastDeliveredAt: Date?)] = [:]
        for row in try await database.query(
            """
            SELECT endpoint, count(*) FILTER (WHERE state = 'pending')::int AS pending,
                count(*) FILTER (WHERE state = 'failed')::int AS failed, max(delivered_at) AS last_delivered_at
            FROM auth.webhook_deliveries GROUP BY endpoint
            """)
        {
            summaries[try row.decode("endpoint")] = (
                try row.decode("pending"), try row.decode("failed"), try row.decode("last_delivered_at", as: Date?.self)
            )
        }
        return summaries
    }

    /// Forgets deliveries that ended (delivered or given up) more than `days` ago.
    func sweep(olderThanDays days: Int) async throws -> Int {
        try await database.query(
            """
            WITH gone AS (
                DELETE FROM auth.webhook_deliveries
                WHERE state <> 'pending' AND coalesce(delivered_at, last_attempt_at, created_at) < now() - make_interval(days => \(days))
                RETURNING 1)
            SELECT count(*)::int AS n FROM gone
            """
        )[0].decode("n")
    }

    static let columns = """
        id, message_id, endpoint, type, subject, state, attempts, next_attempt_at, last_attempt_at, last_status,
        last_error, created_at, delivered_at, replay_of
        """

    static func delivery(_ row: PostgresRow, payload: Bool) throws -> WebhookDelivery {
        let state = WebhookDeliveryState(wire: try row.decode("state"))
        return WebhookDelivery(
            id: try row.decode("id"), messageId: try row.decode("message_id"),
            endpoint: try row.decode("endpoint"), type: try row.decode("type"), subject: try row.decode("subject"),
            state: state, attempts: try row.decode("attempts"),
            nextAttemptAt: state == .pending ? try row.decode("next_attempt_at", as: Date.self) : nil,
            lastAttemptAt: try row.decode("last_attempt_at", as: Date?.self),
            lastStatus: try row.decode("last_status", as: Int?.self), lastError: try row.decode("last_error", as: String?.self),
            createdAt: try row.decode("created_at"), deliveredAt: try row.decode("delivered_at", as: Date?.self),
            replayOf: try row.decode("replay_of", as: Int?.self),
            payload: payload
                ? try WireDecoder.decode(JSONValue.self, from: Array(try row.decode("body", as: String.self).utf8)) : nil)
    }
}
