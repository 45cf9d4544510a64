import Foundation
import PierTestSupport
import Testing

@testable import PierPostgres

/// Restarts the shared test server, so the test script runs this suite on its own, after the
/// others (`swift test --filter RestartTests`).
@Suite(.enabled(if: TestEnvironment.mayRestartTheServer, "restarts the shared server: scripts/test.sh runs it alone"))
struct RestartTests {
    @Test func poolRecoversAfterAServerRestart() async throws {
        let url = try await TestDatabase.create("pier_test_restart")
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 3))
        defer { pool.close() }
        // Open every connection, so each one meets the restart.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<3 { group.addTask { try await pool.execute("SELECT pg_sleep(0.1)") } }
            try await group.waitForAll()
        }
        #expect(pool.statistics.idle == 3)
        #expect(restartTestPostgres() == 0)
        // Every idle connection was closed by the restart; each is replaced when lent.
        for _ in 0..<6 {
            let rows = try await pool.query("SELECT 1 AS one")
            #expect(try rows.first?.decode("one", as: Int.self) == 1)
        }
    }
}
