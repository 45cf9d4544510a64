/// One numbered step of a service's schema, from a SQL file in the service's `Migrations/`.
public struct Migration: Sendable {
    /// The number in the file name; applied in increasing order.
    public let version: Int
    /// The rest of the file name, for the record.
    public let name: String
    /// The statements (several are allowed).
    public let sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}

/// Applies a service's migrations to its schema, recording them in `<schema>.schema_migrations`.
///
/// Everything runs in one transaction under an advisory lock keyed by the schema: when two
/// replicas start together, one migrates and the other waits, then finds nothing left to do.
/// A failing migration rolls back entirely.
public enum Migrator {
    /// Applies the migrations not yet recorded and returns their versions.
    @discardableResult
    public static func migrate(_ pool: PostgresPool, schema: String, migrations: [Migration]) async throws -> [Int] {
        try checkIdentifier(schema)
        let sorted = migrations.sorted { $0.version < $1.version }
        let lock = "pier.migrate." + schema
        // A session lock taken before the transaction, not a transaction lock inside it: waiting
        // for an advisory lock does not make a backend read the catalog changes committed
        // meanwhile, so after a wait `CREATE SCHEMA IF NOT EXISTS` could still trust this
        // connection's stale "no such schema" and collide with the schema the other migrator
        // made. Starting the transaction after the wait reads them.
        return try await pool.withConnection { connection in
            // Waiting for another replica's migration is not a slow statement: the wait has no
            // statement timeout (a replica gave up after 10 s while the other still migrated, on a
            // busy machine); what runs after it has the connection's again (`RESET` returns to the
            // value the connection started with).
            try await connection.execute("SET statement_timeout = 0")
            do {
                try await connection.execute("SELECT pg_advisory_lock(hashtext(\(lock)))")
            } catch {
                _ = try? await connection.execute("RESET statement_timeout")
                throw error
            }
            try await connection.execute("RESET statement_timeout")
            do {
                let done = try await migrate(schema, sorted, on: connection)
                try await connection.execute("SELECT pg_advisory_unlock(hashtext(\(lock)))")
                return done
            } catch {
                _ = try? await connection.execute("SELECT pg_advisory_unlock(hashtext(\(lock)))")
                throw error
            }
        }
    }

    private static func migrate(_ schema: String, _ sorted: [Migration], on connection: PostgresConnection) async throws
        -> [Int]
    {
        try await connection.withTransaction { connection in
            // Created only when missing: `CREATE SCHEMA IF NOT EXISTS` needs the CREATE privilege
            // on the database even when the schema exists, and a service's role in production
            // owns its schema without it.
            let found = try await connection.query("SELECT to_regnamespace(\(schema)) IS NOT NULL AS found")
            if try found.first?.decode("found", as: Bool.self) != true {
                try await connection.executeScript(unsafeSQL: "CREATE SCHEMA \(schema)")
            }
            try await connection.executeScript(
                unsafeSQL: """
                    CREATE TABLE IF NOT EXISTS \(schema).schema_migrations (
                        version integer PRIMARY KEY,
                        name text NOT NULL,
                        applied_at timestamptz NOT NULL DEFAULT now()
                    );
                    """)
            let applied = Set(
                try await connection.query("SELECT version FROM \(unsafeSQL: schema).schema_migrations")
                    .map { try $0.decode("version", as: Int.self) })
            var done: [Int] = []
            for migration in sorted where !applied.contains(migration.version) {
                do {
                    try await connection.executeScript(unsafeSQL: migration.sql)
                } catch let error as PostgresError {
                    throw PostgresError(
                        error.kind, sqlState: error.sqlState,
                        message: "migration \(migration.version) \(migration.name): \(error.message)")
                }
                try await connection.execute(
                    """
                    INSERT INTO \(unsafeSQL: schema).schema_migrations (version, name)
                    VALUES (\(migration.version), \(migration.name))
                    """)
                done.append(migration.version)
            }
            return done
        }
    }

    /// Whether the connected role may migrate `schema`: it does not exist yet (whoever creates
    /// it owns it), or the role may create in it.
    public static func mayCreate(in schema: String, pool: PostgresPool) async throws -> Bool {
        try checkIdentifier(schema)
        let row = try await pool.query(
            """
            SELECT coalesce((SELECT has_schema_privilege(current_user, oid, 'CREATE') FROM pg_namespace
                WHERE nspname = \(schema)), true) AS may
            """)[0]
        return try row.decode("may", as: Bool.self)
    }

    /// The versions in `migrations` that the database has not recorded (readiness: empty).
    public static func pending(_ pool: PostgresPool, schema: String, migrations: [Migration]) async throws -> [Int] {
        try checkIdentifier(schema)
        let applied = try await pool.withConnection { connection -> Set<Int> in
            let exists = try await connection.query("SELECT to_regclass(\(schema + ".schema_migrations")) IS NOT NULL AS found")
            guard try exists.first?.decode("found", as: Bool.self) == true else { return [] }
            let rows = try await connection.query("SELECT version FROM \(unsafeSQL: schema).schema_migrations")
            return Set(try rows.map { try $0.decode("version", as: Int.self) })
        }
        return migrations.map(\.version).filter { !applied.contains($0) }.sorted()
    }

    /// Schema names are identifiers, which cannot be bound: only `[a-z_][a-z0-9_]*` passes.
    static func checkIdentifier(_ name: String) throws {
        let valid =
            !name.isEmpty && name.utf8.count <= 63
            && name.utf8.enumerated().allSatisfy { index, c in
                (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || c == UInt8(ascii: "_")
                    || (index > 0 && c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9"))
            }
        guard valid else { throw PostgresError(.server, message: "invalid schema name \(name)") }
    }
}
