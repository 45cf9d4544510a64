import PierHTTP
import PierIdentity
import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Who did a staff action, as the audit log records it: a staff account in a request, or an
/// operator's command on the server (no account).
public struct AuditActor: Sendable, Equatable {
    public let id: UUID?
    public let role: String
    public let requestID: String?

    public init(id: UUID?, role: String, requestID: String?) {
        self.id = id
        self.role = role
        self.requestID = requestID
    }

    /// A command run on the server (`pier-auth set-role …`): whoever could run it.
    public static let commandLine = AuditActor(id: nil, role: "operator", requestID: nil)
}

extension AuthenticatedContext {
    /// The signed-in caller as the audit log records them.
    public func auditActor() throws(HTTPError) -> AuditActor {
        let principal = try caller()
        return AuditActor(id: principal.userID, role: principal.role, requestID: requestID)
    }
}

/// Every staff action, kept by the service that did it in its own schema (`<schema>.audit`),
/// appended in the same transaction as the change: an entry exists exactly when the change
/// does. The table refuses UPDATE, DELETE and TRUNCATE by trigger, whoever asks (its owner too):
/// entries are only ever added. Entries outlive the accounts they name (no foreign keys).
public enum AuditLog {
    /// The migration that creates `schema`'s audit table, as version `version` of that schema.
    public static func migration(schema: String, version: Int) -> Migration {
        Migration(
            version: version, name: "audit_log",
            sql: """
                CREATE TABLE \(schema).audit (
                    id bigserial PRIMARY KEY,
                    at timestamptz NOT NULL DEFAULT now(),
                    actor_id uuid,
                    actor_role text NOT NULL,
                    action text NOT NULL CHECK (action ~ '^[a-z_]+\\.[a-z_]+$'),
                    target_type text NOT NULL,
                    target_id text NOT NULL,
                    subject_id uuid,
                    before jsonb,
                    after jsonb,
                    request_id text
                );
                CREATE INDEX audit_subject ON \(schema).audit (subject_id, id) WHERE subject_id IS NOT NULL;
                CREATE INDEX audit_actor ON \(schema).audit (actor_id, id) WHERE actor_id IS NOT NULL;
                CREATE INDEX audit_target ON \(schema).audit (target_id, id);
                CREATE FUNCTION \(schema).audit_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    RAISE EXCEPTION 'the audit log is append-only' USING ERRCODE = 'insufficient_privilege';
                END $$;
                CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON \(schema).audit
                    FOR EACH ROW EXECUTE FUNCTION \(schema).audit_is_append_only();
                CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON \(schema).audit
                    FOR EACH STATEMENT EXECUTE FUNCTION \(schema).audit_is_append_only();
                """)
    }

    /// One change, as the log stores it.
    public struct Record: Sendable {
        public var action: AuditAction
        public var targetType: String
        public var targetID: String
        public var subject: UUID?
        public var before: JSONValue?
        public var after: JSONValue?

        public init(
            _ action: AuditAction, target: (type: String, id: String), subject: UUID?, before: JSONValue? = nil,
            after: JSONValue? = nil
        ) {
            self.action = action
            self.targetType = target.type
            self.targetID = target.id
            self.subject = subject
            self.before = before
            self.after = after
        }
    }

    /// Appends `record` by `actor` to `schema`'s log on `connection` (the change's transaction).
    public static func append(_ record: Record, by actor: AuditActor, schema: String, on connection: any PostgresExecutor)
        async throws
    {
        try await connection.execute(
            """
            INSERT INTO \(unsafeSQL: schema).audit
                (actor_id, actor_role, action, target_type, target_id, subject_id, before, after, request_id)
            VALUES (\(actor.id), \(actor.role), \(record.action.rawValue), \(record.targetType), \(record.targetID),
                    \(record.subject), \(record.before.map(PostgresJSON.init))::jsonb,
                    \(record.after.map(PostgresJSON.init))::jsonb, \(actor.requestID))
            """)
    }

    /// What to list: entries about an account, by an actor, on a target; older than `before`.
    public struct Filter: Sendable, Equatable {
        public var subject: UUID?
        public var actor: UUID?
        public var target: String?
        /// An action's wire name.
        public var action: String?
        public var since: Date?
        public var until: Date?
        public var before: Int64?
        public var limit: Int

        public init(subject: UUID? = nil, actor: UUID? = nil, target: String? = nil, before: Int64? = nil, limit: Int = 50) {
            self.subject = subject
            self.actor = actor
            self.target = target
            self.before = before
            self.limit = limit
        }
    }

    /// `schema`'s entries that match, newest first, and the cursor of the next page.
    public static func list(_ filter: Filter, service: String, schema: String, on database: any PostgresExecutor)
        async throws -> AuditList
    {
        let rows = try await database.query(
            """
            SELECT id, at, actor_id, actor_role, action, target_type, target_id, subject_id,
                   before::text AS before, after::text AS after, request_id
            FROM \(unsafeSQL: schema).audit
            WHERE (\(filter.subject)::uuid IS NULL OR subject_id = \(filter.subject))
              AND (\(filter.actor)::uuid IS NULL OR actor_id = \(filter.actor))
              AND (\(filter.target)::text IS NULL OR target_id = \(filter.target))
              AND (\(filter.action)::text IS NULL OR action = \(filter.action))
              AND (\(filter.since)::timestamptz IS NULL OR at >= \(filter.since))
              AND (\(filter.until)::timestamptz IS NULL OR at < \(filter.until))
              AND (\(filter.before)::bigint IS NULL OR id < \(filter.before))
            ORDER BY id DESC LIMIT \(filter.limit + 1)
            """)
        let items = try rows.prefix(filter.limit).map { row in
            AuditEntry(
                id: try row.decode("id"), service: service, at: try row.decode("at"), actorId: try row.decode("actor_id"),
                actorRole: try row.decode("actor_role"), action: AuditAction(wire: try row.decode("action")),
                targetType: try row.decode("target_type"), targetId: try row.decode("target_id"),
                subjectId: try row.decode("subject_id"),
                before: try row.decode("before", as: PostgresJSON<JSONValue>?.self)?.value,
                after: try row.decode("after", as: PostgresJSON<JSONValue>?.self)?.value,
                requestId: try row.decode("request_id"))
        }
        return AuditList(items: items, next: rows.count > filter.limit ? items.last?.id : nil)
    }

    /// Every entry of `schema`'s log about the account (its data export), oldest first.
    public static func about(_ user: UUID, service: String, schema: String, on database: any PostgresExecutor) async throws
        -> [AuditEntry]
    {
        var entries: [AuditEntry] = []
        var filter = Filter(subject: user, limit: 1000)
        while true {
            let page = try await list(filter, service: service, schema: schema, on: database)
            entries += page.items
            guard let next = page.next else { break }
            filter.before = next
        }
        return entries.reversed()
    }

    /// `GET /<prefix>/audit?subject=&actor=&target=&action=&before=&limit=` (staff): the service's
    /// log, newest first, `limit` 1–200 (default 50); `action` one of Pier's or of `actions` (a
    /// plugin's own, ``AuditLogDeclaration``).
    public static func routes(
        service: String, prefix: String, schema: String, database: PostgresPool, authenticator: Authenticator,
        actions: [String] = []
    )
        -> Routes
    {
        let router = Router<ServiceRequestContext>()
        let known = Set(AuditAction.allCases.map(\.rawValue) + actions)
        EndpointRouter(router, authenticator: authenticator).on(AuditAPI.log(of: String(prefix.dropFirst()))) { _, _, query in
            var errors: [Problem.FieldError] = []
            var filter = Filter()
            filter.subject = query.subject
            filter.actor = query.actor
            // An id in any casing finds the entries (ids are stored as they are written).
            filter.target = query.target.map { UUID(uuidString: $0)?.text() ?? $0 }
            if let action = query.action, !known.contains(action) {
                errors.append(.init(field: "action", message: "must be one of \(Vocabulary.list(known))"))
            }
            filter.action = query.action
            filter.since = date("since", query.since, &errors)
            filter.until = date("until", query.until, &errors)
            filter.before = query.before
            filter.limit = query.limit ?? 50
            guard errors.isEmpty else { throw HTTPError.invalid(errors) }
            return JSONResponse(try await list(filter, service: service, schema: schema, on: database))
        }
        return router.routes
    }

    private static func date(_ name: String, _ text: String?, _ errors: inout [Problem.FieldError]) -> Date? {
        guard let text else { return nil }
        guard let seconds = CivilDate.parse(text) else {
            errors.append(.init(field: name, message: "must be an ISO 8601 date or date-time"))
            return nil
        }
        return Date(timeIntervalSince1970: seconds)
    }
}
