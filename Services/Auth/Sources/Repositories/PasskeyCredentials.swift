import PierCrypto
import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The statements of passkeys and of the WebAuthn challenges handed out.
struct PasskeyCredentials: Sendable {
    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    static let columns = "id, name, created_at, last_used_at, backed_up, suspended_at IS NOT NULL AS suspended"

    // MARK: - Challenges

    /// Hands out a challenge for `purpose` (of `user`, for a registration), valid `seconds`; a few
    /// expired ones are swept on the way.
    func issue(_ challenge: [UInt8], purpose: String, user: UUID?, seconds: Int) async throws {
        try await database.execute(
            """
            DELETE FROM auth.webauthn_challenges WHERE ctid IN (
                SELECT ctid FROM auth.webauthn_challenges WHERE expires_at < now() LIMIT 8)
            """)
        try await database.execute(
            """
            INSERT INTO auth.webauthn_challenges (challenge_hash, purpose, user_id, expires_at)
            VALUES (\(PostgresBytes(SHA256.hash(challenge))), \(purpose), \(user), now() + make_interval(secs => \(seconds)))
            """)
    }

    /// Spends the challenge: true when it was handed out for `purpose` (to `user`, when given),
    /// has not expired and was not spent before.
    func spend(_ challenge: [UInt8], purpose: String, user: UUID?) async throws -> Bool {
        !(try await database.query(
            """
            DELETE FROM auth.webauthn_challenges
            WHERE challenge_hash = \(PostgresBytes(SHA256.hash(challenge))) AND purpose = \(purpose)
              AND user_id IS NOT DISTINCT FROM \(user)
            RETURNING expires_at > now() AS live
            """
        ).first?.decode("live", as: Bool.self) != true)
    }

    // MARK: - Credentials

    /// The ids of the account's passkeys (only those not suspended, when `usable`).
    func credentialIDs(of user: UUID, usable: Bool = false) async throws -> [[UInt8]] {
        try await database.query(
            """
            SELECT credential_id FROM auth.passkeys
            WHERE user_id = \(user) AND (NOT \(usable) OR suspended_at IS NULL) ORDER BY created_at
            """
        )
        .map { try $0.decode("credential_id", as: PostgresBytes.self).bytes }
    }

    /// The ids of the passkeys of the account of an address (none when it has no account).
    func credentialIDs(emailKey: String) async throws -> [[UInt8]] {
        try await database.query(
            """
            SELECT p.credential_id FROM auth.passkeys p JOIN auth.users u ON u.id = p.user_id
            WHERE u.email_key = \(emailKey) ORDER BY p.created_at
            """
        ).map { try $0.decode("credential_id", as: PostgresBytes.self).bytes }
    }

    func insert(_ credential: WebAuthn.NewCredential, of user: UUID, name: String, transports: [String]) async throws
        -> Passkey
    {
        try await database.query(
            """
            INSERT INTO auth.passkeys (id, user_id, credential_id, public_key, algorithm, sign_count, backup_eligible,
                backed_up, transports, name)
            VALUES (\(UUID.random()), \(user), \(PostgresBytes(credential.id)), \(PostgresBytes(credential.publicKey)),
                \(credential.algorithm), \(Int(credential.signCount)), \(credential.backupEligible), \(credential.backedUp),
                \(PostgresTextArray(transports))::text[], \(name))
            RETURNING \(unsafeSQL: Self.columns)
            """
        )[0].decode(Passkey.self)
    }

    /// A credential as stored, its row locked.
    struct Stored: Sendable {
        let id: UUID
        let user: UUID
        let publicKey: [UInt8]
        let signCount: Int
        let suspended: Bool
    }

    func lock(credential id: [UInt8]) async throws -> Stored? {
        try await database.query(
            """
            SELECT id, user_id, public_key, sign_count, suspended_at IS NOT NULL AS suspended
            FROM auth.passkeys WHERE credential_id = \(PostgresBytes(id)) FOR UPDATE
            """
        ).first.map { row in
            Stored(
                id: try row.decode("id"), user: try row.decode("user_id"),
                publicKey: try row.decode("public_key", as: PostgresBytes.self).bytes, signCount: try row.decode("sign_count"),
                suspended: try row.decode("suspended"))
        }
    }

    func used(_ id: UUID, signCount: Int, backedUp: Bool) async throws {
        try await database.execute(
            "UPDATE auth.passkeys SET sign_count = \(signCount), backed_up = \(backedUp), last_used_at = now() WHERE id = \(id)")
    }

    /// The counter went backwards: the credential signs nobody in any more (§6.1.1's "cloned
    /// authenticator"); its owner sees it suspended and removes it.
    func suspend(_ id: UUID) async throws {
        try await database.execute("UPDATE auth.passkeys SET suspended_at = coalesce(suspended_at, now()) WHERE id = \(id)")
    }

    func list(of user: UUID) async throws -> [Passkey] {
        try await database.query(
            "SELECT \(unsafeSQL: Self.columns) FROM auth.passkeys WHERE user_id = \(user) ORDER BY created_at, id"
        ).decode(Passkey.self)
    }

    func rename(_ id: UUID, of user: UUID, to name: String) async throws -> Passkey? {
        try await database.query(
            """
            UPDATE auth.passkeys SET name = \(name) WHERE id = \(id) AND user_id = \(user)
            RETURNING \(unsafeSQL: Self.columns)
            """
        ).first?.decode(Passkey.self)
    }

    /// Removes every passkey of the account (its address claimed by its owner).
    func deleteAll(of user: UUID) async throws {
        try await database.execute("DELETE FROM auth.passkeys WHERE user_id = \(user)")
    }

    /// Removes a passkey of the account; its name, nil when it has none of that id.
    func delete(_ id: UUID, of user: UUID) async throws -> String? {
        try await database.query("DELETE FROM auth.passkeys WHERE id = \(id) AND user_id = \(user) RETURNING name")
            .first?.decode("name")
    }

    /// Whether the account has a passkey that is not suspended (one may be its second factor).
    func hasUsable(of user: UUID) async throws -> Bool {
        try await database.query(
            "SELECT EXISTS (SELECT 1 FROM auth.passkeys WHERE user_id = \(user) AND suspended_at IS NULL) AS usable"
        )[0].decode("usable")
    }
}

/// A passkey, read from ``PasskeyCredentials/columns``.
extension Passkey: PostgresRowDecodable {
    public init(row: PostgresRow) throws {
        self.init(
            id: try row.decode("id"), name: try row.decode("name"), createdAt: try row.decode("created_at"),
            lastUsedAt: try row.decode("last_used_at"), backedUp: try row.decode("backed_up"),
            suspended: try row.decode("suspended"))
    }
}
