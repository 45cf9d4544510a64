import PierIdentity
import PierMail
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A single-use token to mail: what is stored of it (its SHA-256) and the mail that carries it.
struct EmailToken: Sendable {
    enum Purpose: String, Sendable {
        case verify, reset, change
        case cancelChange = "cancel-change"
        /// Approves the first second factor of a team member's session (``SecondFactorFlows``).
        case approveEnrolment = "approve-enrolment"
    }
    var hash: PostgresBytes
    var purpose: Purpose
    /// The address it was sent to (and, for `verify`, the one it proves).
    var email: String
    var lifetimeSeconds: Int
    /// The password an anonymous account asked for with the address (a change of address that
    /// makes it permanent): it counts once the link is followed.
    var passwordHash: String? = nil
    var mail: MailMessage
    var kind: String
    /// The link the mail carries (for the development log line); never stored.
    var link: String
}

/// The statements of mailed single-use tokens (`auth.email_tokens`).
struct EmailTokens: Sendable {
    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    /// How many verification mails went to the account in the last 10 minutes.
    func recentVerifications(of user: UUID) async throws -> Int {
        try await database.query(
            """
            SELECT count(*)::int AS n FROM auth.email_tokens
            WHERE user_id = \(user) AND purpose = 'verify' AND created_at > now() - interval '10 minutes'
            """
        )[0].decode("n")
    }

    /// Stores the token and queues its mail. A change of address (and its cancel link), and an
    /// approval, belong to the session that asked for them.
    func issue(_ token: EmailToken, to user: UUID, session: UUID? = nil) async throws {
        try await database.execute(
            """
            INSERT INTO auth.email_tokens (token_hash, user_id, purpose, email, expires_at, session_id, password_hash)
            VALUES (\(token.hash), \(user), \(token.purpose.rawValue), \(token.email),
                now() + make_interval(secs => \(token.lifetimeSeconds)), \(session), \(token.passwordHash))
            """)
        try await Outbox(database).enqueue(token.mail, kind: token.kind)
    }

    /// Voids `user`'s live tokens of these purposes.
    func void(of user: UUID, _ purposes: [EmailToken.Purpose]) async throws {
        try await database.execute(
            """
            UPDATE auth.email_tokens SET used_at = now()
            WHERE user_id = \(user) AND used_at IS NULL AND purpose = ANY(string_to_array(\(purposes.map(\.rawValue).joined(separator: ",")), ','))
            """)
    }

    /// A token spent: its account, the address it was mailed to, the session that asked for it
    /// and the password an anonymous account asked for with the address.
    struct Spent: PostgresRowDecodable, Sendable {
        var user: UUID
        var email: String
        var session: UUID?
        var passwordHash: String?

        init(row: PostgresRow) throws {
            (user, email) = (try row.decode("user_id"), try row.decode("email"))
            (session, passwordHash) = (try row.decode("session_id"), try row.decode("password_hash"))
        }
    }

    /// Marks a live token of `purpose` used; what it was for, or nil. A change of address is live
    /// only while the session that asked for it is.
    func consume(_ hash: PostgresBytes, _ purpose: EmailToken.Purpose) async throws -> Spent? {
        try await spend(hash, purpose)
    }

    /// ``consume(_:_:)`` (the name the flows that read the session and password use).
    func spend(_ hash: PostgresBytes, _ purpose: EmailToken.Purpose) async throws -> Spent? {
        try await database.query(
            """
            UPDATE auth.email_tokens t SET used_at = now()
            WHERE token_hash = \(hash) AND purpose = \(purpose.rawValue) AND used_at IS NULL AND expires_at > now()
                AND (purpose <> 'change' OR EXISTS (SELECT 1 FROM auth.sessions s
                    WHERE s.id = t.session_id AND s.revoked_at IS NULL AND s.expires_at > now()))
            RETURNING user_id, email, session_id, password_hash
            """
        ).first?.decode(Spent.self)
    }

    /// Marks a live approval link used, while the session that asked is live and the account
    /// still has the address it was mailed to; that account and session.
    func consumeApproval(_ hash: PostgresBytes) async throws -> Spent? {
        try await database.query(
            """
            UPDATE auth.email_tokens t SET used_at = now()
            WHERE token_hash = \(hash) AND purpose = 'approve-enrolment' AND used_at IS NULL AND expires_at > now()
                AND EXISTS (SELECT 1 FROM auth.sessions s
                    WHERE s.id = t.session_id AND s.revoked_at IS NULL AND s.expires_at > now())
                AND EXISTS (SELECT 1 FROM auth.users u WHERE u.id = t.user_id AND u.email = t.email)
            RETURNING user_id, email, session_id, password_hash
            """
        ).first?.decode(Spent.self)
    }

    /// Marks a live cancel link used; its user and the session that asked for the change.
    func consumeCancel(_ hash: PostgresBytes) async throws -> Spent? {
        try await database.query(
            """
            UPDATE auth.email_tokens SET used_at = now()
            WHERE token_hash = \(hash) AND purpose = 'cancel-change' AND used_at IS NULL AND expires_at > now()
            RETURNING user_id, email, session_id, password_hash
            """
        ).first?.decode(Spent.self)
    }

    /// The account a live reset token is for, while the token was mailed to the address the
    /// account still has.
    func resetTarget(_ hash: PostgresBytes) async throws -> User? {
        try await database.query(
            """
            SELECT \(unsafeSQL: Users.columns("u")) FROM auth.email_tokens t JOIN auth.users u ON u.id = t.user_id
            WHERE t.token_hash = \(hash) AND t.purpose = 'reset' AND t.used_at IS NULL AND t.expires_at > now()
                AND t.email = u.email
            """
        ).first?.decode(User.self)
    }
}

/// Password resets asked for and not yet handled (`auth.reset_requests`): one insert per ask,
/// the same whether or not an account has the address.
struct ResetRequests: Sendable {
    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    func add(_ email: EmailAddress) async throws {
        try await database.execute("INSERT INTO auth.reset_requests (email_key) VALUES (\(email.key))")
    }

    /// Takes the oldest request no other worker holds; its address key, or nil when none is left.
    func take() async throws -> String? {
        try await database.query(
            """
            DELETE FROM auth.reset_requests WHERE id = (
                SELECT id FROM auth.reset_requests ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
            RETURNING email_key
            """
        ).first?.decode("email_key")
    }
}
