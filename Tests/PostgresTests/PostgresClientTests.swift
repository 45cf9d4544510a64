import Foundation
import PierRuntime
import PierTestSupport
import Synchronization
import Testing

@testable import PierPostgres

@Suite(.serialized) struct PostgresClientTests {
    static let url: Task<String, Error> = Task { try await TestDatabase.create("pier_test_postgres") }

    func pool(size: Int = 4, acquireTimeout: Duration = .seconds(5), statementTimeout: Int = 10_000) async throws -> PostgresPool
    {
        PostgresPool(
            configuration: PostgresConfiguration(
                url: try await Self.url.value, poolSize: size, acquireTimeout: acquireTimeout,
                statementTimeoutMilliseconds: statementTimeout))
    }

    @Test func interpolationBindsEveryValue() {
        let email = "x'; DROP TABLE users; --"
        let limit = 5
        let query: PostgresQuery = "SELECT * FROM t WHERE email = \(email) AND n < \(limit) ORDER BY \(unsafeSQL: "id")"
        #expect(query.sql == "SELECT * FROM t WHERE email = $1 AND n < $2 ORDER BY id")
        #expect(query.binds == [email, "5"])
        var combined: PostgresQuery = "SELECT 1 WHERE a = \(1)"
        combined.append(" AND b = \(2) AND c = \(3)")
        #expect(combined.sql == "SELECT 1 WHERE a = $1 AND b = $2 AND c = $3")
        #expect(combined.binds == ["1", "2", "3"])
        var glued: PostgresQuery = "SELECT * FROM t"
        glued.append("WHERE a = \(1)")
        #expect(glued.sql == "SELECT * FROM t WHERE a = $1")
    }

    @Test func typesRoundTrip() async throws {
        let pool = try await pool()
        defer { pool.close() }
        let id = UUID()
        let date = Date(timeIntervalSince1970: 1_800_000_000.123456)
        let text = "héllo 🌍 مرحبا ' \" \\ ; -- $1"
        let bytes = PostgresBytes([0, 1, 255, 16])
        let row = try #require(
            try await pool.query(
                """
                SELECT \(text)::text AS t, \(Int.max)::bigint AS i, \(Int32(-7))::int AS i32, \(true)::bool AS b,
                       \(id)::uuid AS u, \(date)::timestamptz AS d, \(Decimal(string: "12.34")!)::numeric AS n,
                       \(PostgresJSON(["a": 1]))::jsonb AS j, \(bytes)::bytea AS by, \(2.5)::float8 AS f,
                       \(PostgresTextArray(["a", "b,c", "d\"e", ""]))::text[] AS arr, \(String?.none)::text AS nothing
                """
            ).first)
        #expect(try row.decode("t", as: String.self) == text)
        #expect(try row.decode("i", as: Int.self) == Int.max)
        #expect(try row.decode("i32", as: Int32.self) == -7)
        #expect(try row.decode("b", as: Bool.self) == true)
        #expect(try row.decode("u", as: UUID.self) == id)
        #expect(abs(try row.decode("d", as: Date.self).timeIntervalSince(date)) < 0.000_001)
        #expect(try row.decode("n", as: Decimal.self) == Decimal(string: "12.34"))
        #expect(try row.decode("j", as: PostgresJSON<[String: Int]>.self).value == ["a": 1])
        #expect(try row.decode("by", as: PostgresBytes.self) == bytes)
        #expect(try row.decode("f", as: Double.self) == 2.5)
        #expect(try row.decode("arr", as: PostgresTextArray.self).values == ["a", "b,c", "d\"e", ""])
        #expect(try row.decode("nothing", as: String?.self) == nil)
        #expect(throws: PostgresError.self) { try row.decode("nothing", as: String.self) }
        #expect(throws: PostgresError.self) { try row.decode("t", as: Int.self) }
        #expect(throws: PostgresError.self) { try row.decode("missing", as: Int.self) }
    }

    /// Integers and UUIDs are read from the result's bytes in place: their edges.
    @Test func integersAndUUIDsReadInPlaceKeepTheirEdges() async throws {
        let pool = try await pool()
        defer { pool.close() }
        let row = try #require(
            try await pool.query(
                """
                SELECT '9223372036854775807'::bigint AS max, '-9223372036854775808'::bigint AS min, 0 AS zero,
                       '9223372036854775808'::numeric AS over, '2147483648'::bigint AS big32, '-2147483648'::int AS min32,
                       '12a'::text AS junk, '-'::text AS sign, ''::text AS empty, 'ABCDEF01-2345-6789-abcd-ef0123456789'::text AS upper,
                       '0b89c48c-5b66-400c-8ca2-1cb0c6bc4b4'::text AS short
                """
            ).first)
        #expect(try row.decode("max", as: Int.self) == Int.max)
        #expect(try row.decode("min", as: Int64.self) == Int64.min)
        #expect(try row.decode("zero", as: Int.self) == 0)
        #expect(try row.decode("min32", as: Int32.self) == Int32.min)
        for (column, type) in [("over", Int.self), ("junk", Int.self), ("sign", Int.self), ("empty", Int.self)]
            as [(String, Int.Type)]
        {
            #expect(throws: PostgresError.self, "\(column)") { try row.decode(column, as: type) }
        }
        #expect(throws: PostgresError.self) { try row.decode("big32", as: Int32.self) }
        #expect(try row.decode("upper", as: UUID.self) == UUID(uuidString: "ABCDEF01-2345-6789-ABCD-EF0123456789"))
        #expect(throws: PostgresError.self) { try row.decode("short", as: UUID.self) }
        #expect(row.values[0] == "9223372036854775807")
    }

    @Test func datesParseEveryOffsetPostgresPrints() {
        #expect(Date(postgresText: "1970-01-01 00:00:00+00") == Date(timeIntervalSince1970: 0))
        #expect(Date(postgresText: "2000-03-01 01:30:00+01:30") == Date(timeIntervalSince1970: 951_868_800))
        #expect(Date(postgresText: "1969-12-31 23:59:59.5+00") == Date(timeIntervalSince1970: -0.5))
        #expect(Date(postgresText: "garbage") == nil)
        #expect(Date(timeIntervalSince1970: 951_868_800).postgresText == "2000-03-01T00:00:00.000000Z")
        // One parser serves the database's output and what clients send, each with its syntax.
        #expect(CivilDate.parse("2000-03-01T01:30:00+01:30") == 951_868_800)
        #expect(CivilDate.parse("2000-03-01") == 951_868_800)
        for strictlyRefused in [
            "2000-03-01 00:00:00Z", "2000-03-01T00:00:00", "2000-03-01T00:00:00+01", "2000-02-30T00:00:00Z", "0000-01-01",
        ] {
            #expect(CivilDate.parse(strictlyRefused) == nil, "\(strictlyRefused)")
        }
        #expect(Date(postgresText: "2000-03-01") == nil)
        #expect(Date(postgresText: "2000-02-30 00:00:00+00") == nil)
    }

    @Test func transactionsCommitOrRollBack() async throws {
        let pool = try await pool()
        defer { pool.close() }
        try await pool.execute("CREATE TABLE IF NOT EXISTS tx_test (id int PRIMARY KEY, note text)")
        try await pool.execute("TRUNCATE tx_test")
        struct Boom: Error {}
        await #expect(throws: Boom.self) {
            try await pool.withTransaction { connection in
                try await connection.execute("INSERT INTO tx_test VALUES (1, 'rolled back')")
                throw Boom()
            }
        }
        try await pool.withTransaction { connection in
            try await connection.execute("INSERT INTO tx_test VALUES (2, 'kept')")
        }
        let rows = try await pool.query("SELECT id FROM tx_test ORDER BY id")
        #expect(try rows.map { try $0.decode("id", as: Int.self) } == [2])
    }

    @Test func aReportReadsOneSnapshotAloneAndEndsItsSettingsWithIt() async throws {
        let pool = try await pool(size: 1)
        defer { pool.close() }
        let settings = """
            SELECT current_setting('transaction_isolation') AS isolation,
                current_setting('transaction_read_only') AS read_only, current_setting('jit') AS jit,
                current_setting('plan_cache_mode') AS plans,
                current_setting('max_parallel_workers_per_gather') AS workers
            """
        func read(_ row: PostgresRow) throws -> [String] {
            try ["isolation", "read_only", "jit", "plans", "workers"].map { try row.decode($0, as: String.self) }
        }
        let inside = try await pool.withReport { try read(try await $0.query(PostgresQuery(unsafeSQL: settings))[0]) }
        #expect(inside == ["repeatable read", "on", "off", "force_custom_plan", "0"])
        await #expect(throws: PostgresError.self) {
            try await pool.withReport { try await $0.execute("CREATE TEMPORARY TABLE written (n int)") }
        }
        // The same (only) connection afterwards: its own settings again.
        let after = try read(try await pool.query(PostgresQuery(unsafeSQL: settings))[0])
        #expect(after[0] == "read committed" && after[1] == "off" && after[3] == "auto" && after[4] != "0")
    }

    @Test func serverErrorsKeepTheirSQLState() async throws {
        let pool = try await pool()
        defer { pool.close() }
        try await pool.execute("CREATE TABLE IF NOT EXISTS unique_test (email text UNIQUE)")
        try await pool.execute("TRUNCATE unique_test")
        try await pool.execute("INSERT INTO unique_test VALUES (\("a@b.c"))")
        do {
            try await pool.execute("INSERT INTO unique_test VALUES (\("a@b.c"))")
            Issue.record("a duplicate was accepted")
        } catch let error as PostgresError {
            #expect(error.isUniqueViolation)
            #expect(error.constraint == "unique_test_email_key")
        }
        await #expect(throws: PostgresError.self) { try await pool.execute("SELEC 1") }
        // The connection that saw the error is still good.
        #expect(await pool.isReachable())
    }

    @Test func statementTimeoutCancels() async throws {
        let pool = try await pool(statementTimeout: 100)
        defer { pool.close() }
        do {
            try await pool.execute("SELECT pg_sleep(2)")
            Issue.record("the statement was not cancelled")
        } catch let error as PostgresError {
            #expect(error.isQueryCanceled)
        }
    }

    @Test func twiceMoreRequestsThanConnectionsAllCompleteWithoutStarving() async throws {
        let pool = try await pool(size: 4)
        defer { pool.close() }
        let finished = Locked(0)
        let observed = Locked<Int?>(nil)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    // Long enough that no query can be done when the observer below runs, however
                    // slow the machine: the observer only has to get a thread.
                    try await pool.execute("SELECT pg_sleep(1)")
                    finished.withLock { $0 += 1 }
                }
            }
            // While eight queries hold or wait for four connections, other async work still runs:
            // the cooperative pool is never blocked by libpq.
            group.addTask {
                try await Task.sleep(for: .milliseconds(50))
                observed.withLock { $0 = finished.withLock { $0 } }
            }
            try await group.waitForAll()
        }
        #expect(finished.withLock { $0 } == 8)
        #expect(observed.withLock { $0 } == 0)
        #expect(pool.statistics == .init(inUse: 0, idle: 4, waiting: 0))
    }

    @Test func acquireTimesOutWhenEveryConnectionIsBusy() async throws {
        let pool = try await pool(size: 1, acquireTimeout: .milliseconds(100))
        defer { pool.close() }
        async let slow: Void = { try await pool.execute("SELECT pg_sleep(1)") }()
        // The only connection is lent to the slow query before the second one asks.
        #expect(await eventually(interval: .milliseconds(5)) { pool.statistics.inUse == 1 })
        do {
            try await pool.execute("SELECT 1")
            Issue.record("no timeout")
        } catch let error as PostgresError {
            #expect(error.kind == .poolTimeout)
            #expect(error.isTransient)
        }
        try await slow
        #expect(await pool.isReachable())
    }

    /// A statement waits for its result without a thread: a backend killed while it runs ends
    /// the wait with a connection error (not a hang), and the pool replaces the connection.
    @Test func aBackendKilledMidStatementFailsItAndIsReplaced() async throws {
        let pool = try await pool(size: 2)
        defer { pool.close() }
        let pid = Locked<Int32?>(nil)
        async let victim: Result<Int, Error> = {
            do {
                return .success(
                    try await pool.withConnection { connection in
                        let me = try await connection.query("SELECT pg_backend_pid() AS pid")[0].decode("pid", as: Int32.self)
                        pid.withLock { $0 = me }
                        return try await connection.execute("SELECT pg_sleep(30)")
                    })
            } catch { return .failure(error) }
        }()
        #expect(await eventually(interval: .milliseconds(5)) { pid.withLock { $0 } != nil })
        let killed = try #require(pid.withLock { $0 })
        #expect(
            await eventually {
                (try? await pool.query("SELECT pg_terminate_backend(\(killed)) AS done").first?.decode("done", as: Bool.self))
                    == true
            })
        guard case .failure(let error as PostgresError) = await victim else {
            Issue.record("the killed statement did not fail with a PostgresError")
            return
        }
        #expect(error.kind == .connection || error.kind == .server)
        for _ in 0..<4 { #expect(await pool.isReachable()) }
        #expect(pool.statistics.inUse == 0)
    }

    /// Statements and results bigger than a socket buffer: sending waits for the socket to
    /// drain, reading waits for every part of the result.
    @Test func largeStatementsAndResultsCrossTheSocketWhole() async throws {
        let pool = try await pool(size: 2)
        defer { pool.close() }
        let text = String(repeating: "0123456789abcdef", count: 1 << 20)  // 16 MiB
        let rows = try await pool.query("SELECT length(\(text)) AS n, md5(\(text)) AS sum, repeat('x', 8 * 1024 * 1024) AS big")
        #expect(try rows[0].decode("n", as: Int.self) == text.utf8.count)
        #expect(try rows[0].decode("big", as: String.self).utf8.count == 8 * 1024 * 1024)
        let many = try await pool.query("SELECT g AS n FROM generate_series(1, 200000) AS g")
        #expect(many.count == 200_000)
        #expect(try many.last?.decode("n", as: Int.self) == 200_000)
    }

    /// A script's statements run in order; the first failure is the one reported.
    @Test func aScriptReportsItsFirstFailure() async throws {
        let pool = try await pool(size: 1)
        defer { pool.close() }
        try await pool.withConnection { connection in
            try await connection.executeScript(
                unsafeSQL:
                    "DROP TABLE IF EXISTS script_test; CREATE TABLE script_test (n int); INSERT INTO script_test VALUES (1);")
            do {
                try await connection.executeScript(
                    unsafeSQL: "INSERT INTO script_test VALUES (2); SELEC 1; INSERT INTO script_test VALUES (3);")
                Issue.record("a broken script was accepted")
            } catch let error as PostgresError {
                #expect(error.sqlState == "42601")
            }
        }
        // A script runs as one implicit transaction: the failure rolled back its first insert.
        #expect(try await pool.query("SELECT count(*)::int AS n FROM script_test")[0].decode("n", as: Int.self) == 1)
    }

    @Test func unreachableServerIsATransientError() async throws {
        let pool = PostgresPool(
            configuration: PostgresConfiguration(
                url: "postgresql://postgres@127.0.0.1:1/none",
                poolSize: 1, connectTimeoutSeconds: 1))
        defer { pool.close() }
        do {
            try await pool.execute("SELECT 1")
            Issue.record("connected to nothing")
        } catch let error as PostgresError {
            #expect(error.kind == .connection)
            #expect(error.isTransient)
        }
    }

    @Test func migrationsRunOnceUnderALock() async throws {
        let pool = try await pool()
        defer { pool.close() }
        try await pool.execute("DROP SCHEMA IF EXISTS mig_test CASCADE")
        let migrations = [
            Migration(version: 2, name: "add_column", sql: "ALTER TABLE mig_test.items ADD COLUMN note text;"),
            Migration(version: 1, name: "create", sql: "CREATE TABLE mig_test.items (id int); SELECT pg_sleep(0.2);"),
        ]
        #expect(try await Migrator.pending(pool, schema: "mig_test", migrations: migrations) == [1, 2])
        async let first = Migrator.migrate(pool, schema: "mig_test", migrations: migrations)
        async let second = Migrator.migrate(pool, schema: "mig_test", migrations: migrations)
        let results = try await [first, second]
        #expect(results.contains([1, 2]))
        #expect(results.contains([]))
        #expect(try await Migrator.pending(pool, schema: "mig_test", migrations: migrations) == [])
        let broken = migrations + [Migration(version: 3, name: "broken", sql: "CREATE TABLE mig_test.x (id int); SELEC 1;")]
        await #expect(throws: PostgresError.self) { try await Migrator.migrate(pool, schema: "mig_test", migrations: broken) }
        // Rolled back entirely: no table x, version 3 still pending.
        #expect(
            try await pool.query("SELECT to_regclass('mig_test.x') IS NULL AS gone").first?.decode("gone", as: Bool.self) == true)
        #expect(try await Migrator.pending(pool, schema: "mig_test", migrations: broken) == [3])
        await #expect(throws: PostgresError.self) { try await Migrator.migrate(pool, schema: "bad-name; --", migrations: []) }
    }

    /// A service's role owns its schema but may not create schemas (deploy/docker and the
    /// Kubernetes overlay make their roles so): migrating must not ask for that privilege once
    /// the schema exists (`CREATE SCHEMA IF NOT EXISTS` does, even then).
    @Test func aRoleThatOwnsItsSchemaMigratesWithoutCreatePrivilege() async throws {
        let url = try await TestDatabase.create("pier_test_migrate_owner")
        let admin = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 1))
        defer { admin.close() }
        try await admin.execute(
            """
            DO $$ BEGIN
                IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'pier_test_owner') THEN CREATE ROLE pier_test_owner LOGIN; END IF;
            END $$
            """)
        try await admin.execute("REVOKE CREATE ON DATABASE pier_test_migrate_owner FROM PUBLIC")
        try await admin.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        try await admin.execute("DROP SCHEMA IF EXISTS owned CASCADE")
        try await admin.execute("CREATE SCHEMA owned AUTHORIZATION pier_test_owner")
        let owner = PostgresPool(
            configuration: PostgresConfiguration(
                url: url.replacingOccurrences(of: "postgres@", with: "pier_test_owner@"), poolSize: 1))
        defer { owner.close() }
        let migrations = [Migration(version: 1, name: "create", sql: "CREATE TABLE owned.items (id int)")]
        #expect(try await Migrator.migrate(owner, schema: "owned", migrations: migrations) == [1])
        #expect(try await Migrator.migrate(owner, schema: "owned", migrations: migrations) == [])
        // A schema it does not own and may not create is still refused, by the server.
        await #expect(throws: PostgresError.self) { try await Migrator.migrate(owner, schema: "elsewhere", migrations: []) }
    }

    /// A replica that looked for the schema, then waited for the other replica's migration, sees
    /// the schema it made (a backend's stale "no such schema" once made the wait end in a
    /// duplicate-schema error).
    @Test func aMigratorThatWaitedSeesWhatTheOtherMade() async throws {
        let (first, second) = (try await pool(size: 1), try await pool(size: 1))
        defer {
            first.close()
            second.close()
        }
        let migrations = [
            Migration(version: 1, name: "create", sql: "CREATE TABLE mig_wait.items (id int); SELECT pg_sleep(1);")
        ]
        for _ in 0..<3 {
            try await first.execute("DROP SCHEMA IF EXISTS mig_wait CASCADE")
            // The second replica's only connection looks the schema up and finds none.
            #expect(try await second.query("SELECT to_regnamespace('mig_wait') IS NULL AS none")[0].decode("none") == true)
            async let migrated = Migrator.migrate(first, schema: "mig_wait", migrations: migrations)
            // The second starts once the first holds the schema's lock (or, on a machine so busy
            // that this look came late, has finished): never first, whatever the machine's pace.
            #expect(
                try await eventually {
                    try await second.query(
                        """
                        SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
                            AND objid::bigint = (hashtext('pier.migrate.mig_wait')::bigint & 4294967295))
                            OR to_regclass('mig_wait.items') IS NOT NULL AS ready
                        """)[0].decode("ready")
                })
            let waited = try await Migrator.migrate(second, schema: "mig_wait", migrations: migrations)
            #expect(try await migrated == [1])
            #expect(waited == [])
            // The wait had no statement timeout; the connection has its own again.
            let timeout: String = try await second.query("SELECT current_setting('statement_timeout') AS t")[0].decode("t")
            #expect(timeout != "0")
        }
    }
}

/// A notification that arrives while a consumer is busy (after it looked for work, before it
/// waits) is not lost: the wait returns at once instead of sleeping out its timeout.
@Suite struct PostgresListenerTests {
    /// A pool on a fresh database and a listener on `pier_test` that is known to be listening
    /// (a notification has been seen).
    static func listening(_ database: String) async throws -> (PostgresPool, PostgresListener) {
        try await TestDatabase.listening(database, channel: "pier_test")
    }

    @Test func aNotificationBeforeTheWaitIsNotMissed() async throws {
        let (pool, listener) = try await Self.listening("pier_test_listener")
        defer {
            listener.stop()
            pool.close()
        }
        let seen = listener.generation
        try await pool.execute("NOTIFY pier_test")
        #expect(await eventually { listener.generation != seen })
        // The wait starts after the notification: it must not sleep for its full minute.
        let returned = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await listener.wait(upTo: .seconds(60), since: seen)
                return true
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(20))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        #expect(returned)
    }

    /// A follower whose task is cancelled (a process shutting down) ends its wait at once,
    /// without a notification: even when the cancellation ends the wait before the waiter is
    /// registered. (Before, such a waiter registered late and waited for a notification that a
    /// stopping process never sends: its shutdown hung.)
    @Test func cancelledWaitsEndWithoutANotification() async throws {
        let listener = PostgresListener(
            configuration: PostgresConfiguration(url: "postgresql://postgres@127.0.0.1:1/nothing"), channel: "pier_test")
        let ended = Locked(0)
        // Busy threads beside the waits (threads of their own: the tasks' threads stay free),
        // so that the kernel preempts the children of a wait in any order.
        let stop = Locked(false)
        for _ in 0..<4 {
            startDetachedThread {
                while !stop.withLock({ $0 }) {}
            }
        }
        for _ in 0..<5000 {
            let task = Task {
                await listener.wait(upTo: .seconds(3600), since: listener.generation)
                ended.withLock { $0 += 1 }
            }
            task.cancel()
        }
        #expect(await eventually(timeout: .seconds(60)) { ended.withLock { $0 } == 5000 })
        stop.withLock { $0 = true }
        // Whatever is still waiting (never, when the test passes) is let go.
        listener.stop()
    }

    /// One listener serves every follower of a process: a follower's timeout ends its own wait
    /// only, and one notification wakes them all.
    @Test func followersShareOneListener() async throws {
        let (pool, listener) = try await Self.listening("pier_test_listener_shared")
        defer {
            listener.stop()
            pool.close()
        }
        let woken = Locked(0)
        let seen = listener.generation
        async let patient: Void = {
            await listener.wait(upTo: .seconds(60), since: seen)
            woken.withLock { $0 += 1 }
        }()
        async let other: Void = {
            await listener.wait(upTo: .seconds(60), since: seen)
            woken.withLock { $0 += 1 }
        }()
        // A third follower's short wait times out without waking the two.
        await listener.wait(upTo: .milliseconds(50), since: seen)
        try await Task.sleep(for: .milliseconds(200))
        #expect(woken.withLock { $0 } == 0)
        #expect(listener.generation == seen)
        try await pool.execute("NOTIFY pier_test")
        _ = await (patient, other)
        #expect(woken.withLock { $0 } == 2)
    }
}
