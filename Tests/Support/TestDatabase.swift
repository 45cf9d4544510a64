import Foundation
import PierPostgres
import PierTestBasics

/// A fresh database per suite on the PostgreSQL that the test script started
/// (`PIER_TEST_DATABASE_URL`, the admin URL). Tests fail, not skip, without one.
public enum TestDatabase {
    public static var adminURL: String {
        guard let url = ProcessInfo.processInfo.environment["PIER_TEST_DATABASE_URL"] else {
            fatalError("PIER_TEST_DATABASE_URL is not set: run the tests with `make test`")
        }
        return url
    }

    /// Drops and recreates database `name`, and returns its URL.
    public static func create(_ name: String) async throws -> String {
        let admin = PostgresPool(
            configuration: PostgresConfiguration(url: adminURL, poolSize: 1, statementTimeoutMilliseconds: 0))
        defer { admin.close() }
        try await admin.execute(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
        try await admin.execute(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        let base = adminURL[..<adminURL.lastIndex(of: "/")!]
        return base + "/" + name
    }
}

/// Runs a command and returns its exit status (posix_spawn + waitpid: Foundation's Process
/// waits on a run loop that async tests do not turn).
public func runCommand(_ arguments: [String]) -> Int32 {
    var pid: pid_t = 0
    let argv = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    guard posix_spawn(&pid, arguments[0], nil, nil, argv, environ) == 0 else { return -1 }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    return (status >> 8) & 0xFF
}

/// Runs a script of the repository (`scripts/postgres.sh stop`, say) and returns its status.
public func runCommandInRepository(_ arguments: [String]) -> Int32 {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path
    return runCommand(["/bin/bash", root + "/" + arguments[0]] + arguments.dropFirst())
}

/// Restarts the test PostgreSQL server (fast shutdown: every connection is cut).
public func restartTestPostgres() -> Int32 { runCommandInRepository(["scripts/postgres.sh", "restart"]) }

/// Switches for the suites that the test script runs alone, after the others: they are
/// skipped (and reported as skipped, not passed) anywhere else.
public enum TestEnvironment {
    /// `PIER_TEST_RESTART=1`: the suite may restart the shared PostgreSQL server.
    public static let mayRestartTheServer = ProcessInfo.processInfo.environment["PIER_TEST_RESTART"] == "1"
    /// `PIER_TEST_ISOLATED=1`: the suite measures this process's memory, so nothing else may run.
    public static let runsAlone = ProcessInfo.processInfo.environment["PIER_TEST_ISOLATED"] == "1"
}

extension TestDatabase {
    /// Runs setup statements (bulk inserts, say) on `url` without the request path's
    /// statement timeout: how long test data takes to write depends on the machine, and a
    /// slower one must not turn setup into a failure.
    public static func setUp(_ url: String, _ statements: [PostgresQuery]) async throws {
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 1, statementTimeoutMilliseconds: 0))
        defer { pool.close() }
        for statement in statements { try await pool.execute(statement) }
    }
}

extension TestDatabase {
    /// Runs `body` while database `name` is away: no new connection is allowed and every open
    /// one is cut (what a failover or a restart looks like to the services); it is back after,
    /// whether or not `body` threw.
    public static func away(_ name: String, while body: () async throws -> Void) async throws {
        let admin = PostgresPool(
            configuration: PostgresConfiguration(url: adminURL, poolSize: 1, statementTimeoutMilliseconds: 0))
        defer { admin.close() }
        try await admin.execute(PostgresQuery(unsafeSQL: "ALTER DATABASE \(name) ALLOW_CONNECTIONS false"))
        do {
            _ = try await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(name)")
            try await body()
        } catch {
            try await admin.execute(PostgresQuery(unsafeSQL: "ALTER DATABASE \(name) ALLOW_CONNECTIONS true"))
            throw error
        }
        try await admin.execute(PostgresQuery(unsafeSQL: "ALTER DATABASE \(name) ALLOW_CONNECTIONS true"))
    }
}

extension TestDatabase {
    /// A pool on a fresh database `name` and a started listener on `channel` that is known to be
    /// listening (a notification of its own has been seen).
    public static func listening(_ name: String, channel: String, poolSize: Int = 1) async throws -> (
        PostgresPool, PostgresListener
    ) {
        let pool = PostgresPool(configuration: PostgresConfiguration(url: try await create(name), poolSize: poolSize))
        let listener = PostgresListener(configuration: pool.configuration, channel: channel)
        listener.start()
        let listening = try await eventually {
            let before = listener.generation
            try await pool.execute(PostgresQuery(unsafeSQL: "NOTIFY \(channel)"))
            return await eventually(timeout: .seconds(1)) { listener.generation != before }
        }
        guard listening else { throw TestFailure("the listener on \(channel) never heard its own notification") }
        return (pool, listener)
    }
}
