import PierCrypto
import PierHTTP
import PierModels
import PierPostgres

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A signed-in browser: who, their Pier tokens, and the token every form must carry.
struct ConsoleSession: Sendable {
    /// The cookie's secret (never stored: the row is found by its hash).
    let secret: [UInt8]
    let userID: UUID
    let email: String
    let role: AccountRole
    var accessToken: String
    var refreshToken: String
    var accessExpiresAt: Date
    let csrf: String
    let createdAt: Date
    var lastSeenAt: Date

    var id: [UInt8] { SHA256.hash(secret) }
    var isAdmin: Bool { role == .admin }
}

/// The console's sessions in `console.sessions`: created at sign-in, found by the cookie's
/// secret, ended by sign-out, by the idle and absolute timeouts, and by the account's own
/// revocation (a refresh Pier refuses). The tokens are sealed with keys derived from the
/// cookie's secret (``Seal``), anew at each write.
struct ConsoleSessions: Sendable {
    let database: PostgresPool
    let idleSeconds: Int
    let absoluteSeconds: Int

    func create(for session: AuthSession, role: AccountRole) async throws -> ConsoleSession {
        let secret = SecureRandom.bytes(32)
        let csrf = Base64.urlEncoded(SecureRandom.bytes(32))
        let expires = Date().addingTimeInterval(Double(session.expiresIn))
        let rows = try await database.query(
            """
            INSERT INTO console.sessions
                (id, user_id, email, role, access_token, refresh_token, seal_counter, access_expires_at, csrf)
            VALUES (\(PostgresBytes(SHA256.hash(secret))), \(session.user.id), \(session.user.handle), \(role.rawValue),
                    \(PostgresBytes(Seal.seal(session.accessToken, secret: secret, label: "access", counter: 0))),
                    \(PostgresBytes(Seal.seal(session.refreshToken, secret: secret, label: "refresh", counter: 0))),
                    0, \(expires), \(csrf))
            RETURNING created_at, last_seen_at
            """)
        return ConsoleSession(
            secret: secret, userID: session.user.id, email: session.user.handle, role: role,
            accessToken: session.accessToken, refreshToken: session.refreshToken, accessExpiresAt: expires, csrf: csrf,
            createdAt: try rows[0].decode("created_at"), lastSeenAt: try rows[0].decode("last_seen_at"))
    }

    /// The live session of `secret`; nil when there is none or it timed out (then it is gone).
    func find(_ secret: [UInt8], on executor: (any PostgresExecutor)? = nil, locking: Bool = false) async throws
        -> ConsoleSession?
    {
        let id = PostgresBytes(SHA256.hash(secret))
        let rows = try await (executor ?? database).query(
            """
            SELECT user_id, email, role, access_token, refresh_token, seal_counter, access_expires_at, csrf, created_at,
                   last_seen_at,
                   last_seen_at > now() - make_interval(secs => \(idleSeconds))
                       AND created_at > now() - make_interval(secs => \(absoluteSeconds)) AS live
            FROM console.sessions WHERE id = \(id) \(unsafeSQL: locking ? "FOR UPDATE" : "")
            """)
        guard let row = rows.first else { return nil }
        guard try row.decode("live", as: Bool.self), let role = AccountRole(rawValue: try row.decode("role")) else {
            try await (executor ?? database).execute("DELETE FROM console.sessions WHERE id = \(id)")
            return nil
        }
        let counter = try row.decode("seal_counter", as: Int64.self)
        guard
            let access = Seal.open(
                try row.decode("access_token", as: PostgresBytes.self).bytes, secret: secret, label: "access", counter: counter),
            let refresh = Seal.open(
                try row.decode("refresh_token", as: PostgresBytes.self).bytes, secret: secret, label: "refresh",
                counter: counter)
        else { return nil }
        return ConsoleSession(
            secret: secret, userID: try row.decode("user_id"), email: try row.decode("email"), role: role,
            accessToken: access, refreshToken: refresh, accessExpiresAt: try row.decode("access_expires_at"),
            csrf: try row.decode("csrf"), createdAt: try row.decode("created_at"), lastSeenAt: try row.decode("last_seen_at"))
    }

    /// Marks the session used now (at most once a minute: a page view is not a write).
    func touch(_ session: ConsoleSession) async throws {
        guard Date().timeIntervalSince(session.lastSeenAt) > 60 else { return }
        try await database.execute(
            "UPDATE console.sessions SET last_seen_at = now() WHERE id = \(PostgresBytes(session.id))")
    }

    /// Stores the tokens a refresh gave, sealed anew.
    func store(_ tokens: AuthSession, in session: ConsoleSession, on executor: any PostgresExecutor) async throws
        -> ConsoleSession
    {
        var session = session
        let rows = try await executor.query(
            "UPDATE console.sessions SET seal_counter = seal_counter + 1 WHERE id = \(PostgresBytes(session.id)) RETURNING seal_counter"
        )
        guard let counter = try rows.first?.decode("seal_counter", as: Int64.self) else { return session }
        session.accessToken = tokens.accessToken
        session.refreshToken = tokens.refreshToken
        session.accessExpiresAt = Date().addingTimeInterval(Double(tokens.expiresIn))
        try await executor.execute(
            """
            UPDATE console.sessions SET
                access_token = \(PostgresBytes(Seal.seal(tokens.accessToken, secret: session.secret, label: "access", counter: counter))),
                refresh_token = \(PostgresBytes(Seal.seal(tokens.refreshToken, secret: session.secret, label: "refresh", counter: counter))),
                access_expires_at = \(session.accessExpiresAt), last_seen_at = now()
            WHERE id = \(PostgresBytes(session.id))
            """)
        return session
    }

    func delete(_ session: ConsoleSession, on executor: (any PostgresExecutor)? = nil) async throws {
        try await (executor ?? database).execute("DELETE FROM console.sessions WHERE id = \(PostgresBytes(session.id))")
    }

    /// What a renewal does with the session it holds locked.
    enum Renewal {
        /// Keeps it as it is (another tab renewed it already).
        case keep
        /// Stores the tokens a refresh gave.
        case store(AuthSession)
        /// Ends it (Pier refused the refresh token, or the role changed).
        case end
    }

    /// Renews the session of `secret` under its row's lock, in one transaction, so that one tab
    /// refreshes and the others read the result: `decide` sees the current session and says
    /// what to do. Nil when the session is gone or ended.
    func renewing(_ secret: [UInt8], _ decide: (ConsoleSession) async throws -> Renewal) async throws -> ConsoleSession? {
        try await database.withTransaction { connection in
            guard let current = try await find(secret, on: connection, locking: true) else { return nil }
            switch try await decide(current) {
            case .keep: return current
            case .store(let tokens): return try await store(tokens, in: current, on: connection)
            case .end:
                try await delete(current, on: connection)
                return nil
            }
        }
    }

    /// Forgets sessions past their timeouts (the sweep; a stale one is refused when read anyway).
    func sweep() async throws -> Int {
        try await database.query(
            """
            DELETE FROM console.sessions
            WHERE last_seen_at < now() - make_interval(secs => \(idleSeconds))
               OR created_at < now() - make_interval(secs => \(absoluteSeconds))
            RETURNING 1
            """
        ).count
    }
}

/// Tokens sealed for storage: XORed with a keystream of HMAC-SHA256 blocks keyed by the cookie's
/// secret over (label, counter, block), a counter used once per write. Without the cookie a row
/// holds nothing usable.
enum Seal {
    static func seal(_ token: String, secret: [UInt8], label: String, counter: Int64) -> [UInt8] {
        xor(Array(token.utf8), secret: secret, label: label, counter: counter)
    }

    static func open(_ sealed: [UInt8], secret: [UInt8], label: String, counter: Int64) -> String? {
        String(validating: xor(sealed, secret: secret, label: label, counter: counter), as: UTF8.self)
    }

    private static func xor(_ bytes: [UInt8], secret: [UInt8], label: String, counter: Int64) -> [UInt8] {
        var out = bytes
        var block: UInt32 = 0
        var offset = 0
        while offset < out.count {
            let stream = HMACSHA256.authenticate(Array("pier-console \(label) \(counter) \(block)".utf8), key: secret)
            for index in 0..<min(stream.count, out.count - offset) { out[offset + index] ^= stream[index] }
            offset += stream.count
            block += 1
        }
        return out
    }
}
