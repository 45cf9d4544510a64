import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierService
import Testing

@testable import AuthService

@Suite struct ServiceLayerTests {
    @Test func configurationNamesTheVariableThatIsWrong() throws {
        let cases: [([String: String], String)] = [
            (["PIER_PORT": "eighty"], "PIER_PORT"),
            (["PIER_PORT": "70000"], "PIER_PORT"),
            (["PIER_DB_POOL_SIZE": "0"], "PIER_DB_POOL_SIZE"),
            (["PIER_LOG_LEVEL": "loud"], "PIER_LOG_LEVEL"),
            (["PIER_HTTP_ACCESS_LOG": "maybe"], "PIER_HTTP_ACCESS_LOG"),
            (["PIER_ENV": "staging"], "PIER_ENV"),
            (["PIER_ENV": "production"], "PIER_DATABASE_URL"),
        ]
        for (values, variable) in cases {
            #expect {
                _ = try ServiceConfiguration(environment: Environment(values), defaultPort: 8081, applicationName: "t")
            } throws: { ($0 as? Environment.Failure)?.variable == variable }
        }
        #expect {
            _ = try AuthConfiguration(environment: Environment(["PIER_DATABASE_URL": "x"]), production: true)
        } throws: { ($0 as? Environment.Failure)?.variable == "PIER_AUTH_SIGNING_KEY_FILE" }
        #expect {
            _ = try AuthConfiguration(environment: Environment(["PIER_AUTH_PASSWORD_MIN_LENGTH": "4"]), production: false)
        } throws: { ($0 as? Environment.Failure)?.variable == "PIER_AUTH_PASSWORD_MIN_LENGTH" }
        let defaults = try ServiceConfiguration(environment: Environment([:]), defaultPort: 8081, applicationName: "t")
        #expect(defaults.http.port == 8081 && defaults.database.poolSize == 10 && !defaults.production)
    }

    @Test func everyMigrationFileIsListedInOrder() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Services/Auth/Migrations").standardized
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(files.count == AuthService.migrations.count)
        for (file, migration) in zip(files, AuthService.migrations) {
            #expect(file == String(format: "%04d_%@.sql", migration.version, migration.name))
            #expect(try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8) == migration.sql)
        }
    }

    @Test func theBlocklistIsLoaded() {
        #expect(PasswordPolicy.common.count > 10_000)
        #expect(PasswordPolicy.common.contains("password"))
        #expect(PasswordPolicy.common.allSatisfy { $0.count >= 8 })
    }

    @Test func emailAddresses() {
        #expect(EmailAddress(" Ada@Example.COM ")?.key == "ada@example.com")
        #expect(EmailAddress(" Ada@Example.COM ")?.address == "Ada@Example.COM")
        for bad in [
            "", "ada", "@example.com", "ada@", "ada@example", "ada@.com", "ada@example.com.", "a da@example.com",
            "ada@@example.com", String(repeating: "a", count: 65) + "@example.com", "ada\u{0}@example.com",
        ] {
            #expect(EmailAddress(bad) == nil, "\(bad)")
        }
    }
}

@Suite struct TokenDistributionTests {
    @Test func servicesVerifyTokensWithKeysFetchedFromTheJWKS() async throws {
        let auth = try await AuthEndpointTests.harness.value
        let (session, _) = try await auth.register()
        let provider = JWKSKeyProvider(
            url: auth.base + "/auth/.well-known/jwks.json", client: HTTPClient(), refreshInterval: .seconds(60))
        let verifier = AccessTokenVerifier(keys: provider, issuer: "pier", audience: "pier")
        let claims = try await verifier.verify(session.accessToken)
        #expect(UUID(uuidString: claims.sub) == session.user.id)
        // Requests arriving together before the first fetch all wait for it: none is refused.
        let fresh = AccessTokenVerifier(
            keys: JWKSKeyProvider(url: auth.base + "/auth/.well-known/jwks.json", client: HTTPClient()),
            issuer: "pier", audience: "pier")
        let verified = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<20 { group.addTask { (try? await fresh.verify(session.accessToken)) != nil } }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(verified.count == 20 && verified.allSatisfy { $0 })
        // An unknown kid triggers one refetch, then is refused without fetching again.
        #expect(try await provider.key(for: "unknown-kid") == nil)
        let unreachable = JWKSKeyProvider(url: "http://127.0.0.1:1/jwks.json", client: HTTPClient(timeoutSeconds: 1))
        await #expect(throws: TokenError.keysUnavailable) {
            try await AccessTokenVerifier(keys: unreachable, issuer: "pier", audience: "pier").verify(session.accessToken)
        }
    }

    @Test func logsNeverCarrySecrets() async throws {
        let auth = try await AuthEndpointTests.harness.value
        let password = "secret-passphrase-\(UUID())"
        let (session, email) = try await auth.register(password: password)
        let login = try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"\#(password)"}"#)
        let refreshed = try await auth.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#)
        _ = try await auth.send("POST", "/auth/login", json: #"{"email":"\#(email)","password":"wrong \#(password)"}"#)
        _ = try await auth.send("GET", "/auth/me", token: session.accessToken)
        let secrets = [
            password, session.accessToken, session.refreshToken,
            try login.decode(AuthSession.self).refreshToken, try refreshed.decode(AuthSession.self).refreshToken, "$argon2id$",
        ]
        let lines = auth.logs.all
        #expect(lines.contains { $0.contains("/auth/login") })
        for secret in secrets {
            #expect(!lines.contains { $0.contains(secret) })
        }
    }
}
