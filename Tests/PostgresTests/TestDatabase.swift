import Foundation
import PierPostgres

/// A fresh database per suite on the PostgreSQL that the test script started
/// (`PIER_TEST_DATABASE_URL`, the admin URL). Tests fail, not skip, without one.
enum TestDatabase {
    static var adminURL: String {
        guard let url = ProcessInfo.processInfo.environment["PIER_TEST_DATABASE_URL"] else {
            fatalError("PIER_TEST_DATABASE_URL is not set: run the tests with `make test`")
        }
        return url
    }

    /// Drops and recreates database `name`, and returns its URL.
    static func create(_ name: String) async throws -> String {
        let admin = PostgresPool(configuration: PostgresConfiguration(url: adminURL, poolSize: 1))
        defer { admin.close() }
        try await admin.execute(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
        try await admin.execute(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        let base = adminURL[..<adminURL.lastIndex(of: "/")!]
        return base + "/" + name
    }
}
