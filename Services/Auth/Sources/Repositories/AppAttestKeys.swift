import PierPostgres

/// The keys App Attest attested, per installation (`auth.app_attest_keys`): what
/// ``AppAttestGate`` keeps of an attestation and spends of an assertion.
struct AppAttestKeys: Sendable {
    let database: PostgresPool

    /// What ``insert(_:limit:)`` did.
    enum Insertion: Sendable, Equatable {
        case inserted
        /// The key was attested before (a replayed attestation).
        case known
        /// The network attested `limit` keys in the last day.
        case limited
    }

    /// A key to keep: its id, the installation it was attested for, its public key, the app it
    /// belongs to, Apple's receipt, and the client's network (its address, an IPv6 /64).
    struct NewKey: Sendable {
        var id: [UInt8]
        var installation: String
        var publicKey: [UInt8]
        var appID: String
        var receipt: [UInt8]
        var address: String
    }

    /// Keeps `key` unless its network attested `limit` keys in the last day (counted under the
    /// network's lock, so a burst makes no more).
    func insert(_ key: NewKey, limit: Int) async throws -> Insertion {
        try await database.withTransaction { connection in
            // Locked first, counted in the next statement: its snapshot sees what the holders before committed.
            try await connection.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended('pier.app_attest.address:' || \(key.address), 0))")
            let recent = try await connection.query(
                """
                SELECT count(*)::int AS n FROM auth.app_attest_keys
                WHERE address = \(key.address) AND created_at > now() - interval '1 day'
                """)[0]
            if try recent.decode("n", as: Int.self) >= limit { return .limited }
            let inserted = try await connection.query(
                """
                INSERT INTO auth.app_attest_keys (key_id, installation, public_key, app_id, receipt, address)
                VALUES (\(PostgresBytes(key.id)), \(key.installation), \(PostgresBytes(key.publicKey)),
                    \(key.appID), \(PostgresBytes(key.receipt)), \(key.address))
                ON CONFLICT (key_id) DO NOTHING RETURNING 1 AS n
                """)
            return inserted.isEmpty ? .known : .inserted
        }
    }

    /// A kept key: its public key and the last counter an assertion spent.
    struct Kept: PostgresRowDecodable, Sendable {
        var publicKey: [UInt8]
        var counter: Int64

        init(row: PostgresRow) throws {
            publicKey = try row.decode("public_key", as: PostgresBytes.self).bytes
            counter = try row.decode("counter")
        }
    }

    /// The key `id` attested for `installation`, if any.
    func key(_ id: [UInt8], installation: String) async throws -> Kept? {
        try await database.query(
            """
            SELECT public_key, counter FROM auth.app_attest_keys
            WHERE key_id = \(PostgresBytes(id)) AND installation = \(installation)
            """
        ).first.map(Kept.init(row:))
    }

    /// Moves the key's counter to `counter`; false when it was not below (a replay, or a
    /// concurrent assertion that spent it first).
    func advance(_ id: [UInt8], to counter: Int64) async throws -> Bool {
        try await !database.query(
            """
            UPDATE auth.app_attest_keys SET counter = \(counter), used_at = now()
            WHERE key_id = \(PostgresBytes(id)) AND counter < \(counter) RETURNING 1 AS n
            """
        ).isEmpty
    }
}
