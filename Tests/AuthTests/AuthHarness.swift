import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierServiceTestSupport
import PierTestSupport
import Synchronization

@testable import AuthService

/// A live auth service on an ephemeral port, on its own database, with cheap password hashing.
final class AuthHarness: Sendable {
    let server: HTTPServer
    let live: LiveService<AuthService>
    let pool: PostgresPool
    let keys: SigningKeys
    let base: String
    /// In-process (most tests); `socket` for what is about HTTP or addresses.
    let http: ServiceClient
    let socket: ServiceClient
    /// Every log line the service wrote (access log included).
    let logs: LogLines
    /// Where mails land as `.eml` files when no SMTP server is set.
    let mailDirectory: String

    static func start(database: String, settings: [String: String] = [:], migrate: Bool = true) async throws -> AuthHarness {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("pier-auth-\(UUID())").path
        var environment = [
            "PIER_LOG_LEVEL": "info", "PIER_HTTP_ACCESS_LOG": "true", "PIER_AUTH_ARGON2_MEMORY_KIB": "1024",
            "PIER_AUTH_ARGON2_ITERATIONS": "1", "PIER_AUTH_REFRESH_GRACE_S": "1",
            "PIER_AUTH_HASHES_PER_ADDRESS": "1000", "PIER_AUTH_LOGINS_PER_ADDRESS_PER_MINUTE": "1000000",
            // Development keys and mails (no SMTP) land here, not in the working copy.
            "PIER_DATA_DIR": data,
            // Staff without a second factor, for the tests of what staff do; SecondFactorTests
            // and the console's tests turn the rule on.
            "PIER_AUTH_REQUIRE_MFA_FOR_ROLES": "none",
        ]
        environment.merge(settings) { $1 }
        let logs = LogLines()
        let keys = try SigningKeys(signing: P256PrivateKey.generate())
        let live = try await LiveService<AuthService>.start(
            database: database, settings: environment, logger: Logger(service: "auth", level: .info, sink: { logs.append($0) }),
            migrate: migrate
        ) { context in
            let configuration = try AuthConfiguration(environment: context.configuration.environment, production: false)
            return try await AuthService.make(context: context, configuration: configuration, keys: keys)
        }
        return AuthHarness(live: live, keys: keys, logs: logs, mailDirectory: (environment["PIER_DATA_DIR"] ?? data) + "/mail")
    }

    private init(live: LiveService<AuthService>, keys: SigningKeys, logs: LogLines, mailDirectory: String) {
        self.logs = logs
        self.mailDirectory = mailDirectory
        self.server = live.server
        self.live = live
        self.pool = live.pool
        self.keys = keys
        self.base = live.base
        self.http = live.http
        self.socket = live.socket
    }

    /// Runs `body` against a fresh service on a fresh database, and stops it whatever happens.
    static func with(
        database: String, settings: [String: String] = [:], _ body: (AuthHarness) async throws -> Void
    ) async throws {
        let auth = try await start(database: database, settings: settings)
        do {
            try await body(auth)
        } catch {
            await auth.stop()
            throw error
        }
        await auth.stop()
    }

    /// Stops serving and the service's workers (the mail outbox).
    func stop() async { await live.stop() }

    func send(
        _ method: String, _ path: String, json: String? = nil, token: String? = nil,
        headers: HTTPHeaders = [:]
    ) async throws -> Reply {
        try await http.send(method, path, json: json, token: token, headers: headers)
    }

    /// The mails written to `address` so far (no SMTP server set: `.eml` files).
    func mails(to address: String) -> [ReceivedMail] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: mailDirectory)) ?? []
        return names.filter { $0.hasSuffix(".eml") }.compactMap { name in
            guard let data = FileManager.default.contents(atPath: mailDirectory + "/" + name) else { return nil }
            let mail = ReceivedMail(Array(data))
            return mail.headers["to"]?.contains(address) == true ? mail : nil
        }
    }

    /// The token of the one link containing `fragment` mailed to `address` that is not in
    /// `seen`, once it was written (each link carries a new token).
    func mailedToken(to address: String, containing fragment: String, seen: Set<String> = []) async throws -> String {
        var found: String? = nil
        _ = await eventually(timeout: .seconds(10)) {
            found = self.mails(to: address).compactMap { $0.link(containing: fragment) }
                .map { String($0.split(separator: "=", maxSplits: 1)[1]) }.first { !seen.contains($0) }
            return found != nil
        }
        guard let found else { throw TestFailure("no mail to \(address) with \(fragment)") }
        return found
    }

    /// The tokens of every link containing `fragment` mailed to `address` so far.
    func mailedTokens(to address: String, containing fragment: String) -> Set<String> {
        Set(
            mails(to: address).compactMap { $0.link(containing: fragment) }.map {
                String($0.split(separator: "=", maxSplits: 1)[1])
            })
    }

    /// The failures recorded against the account of `email` (nil when none).
    func recordedFailures(_ email: String) async throws -> Int? {
        try await pool.query("SELECT failures FROM auth.login_throttle WHERE key = \("email:" + email.lowercased())")
            .first?.decode("failures", as: Int.self)
    }

    /// Registers a fresh account and returns its session.
    func register(
        _ email: String = "user-\(UUID().uuidString.prefix(8))@example.com",
        password: String = "a long enough passphrase"
    ) async throws -> (AuthSession, String) {
        let reply = try await send("POST", "/auth/register", json: #"{"email":"\#(email)","password":"\#(password)"}"#)
        guard reply.status == 201 else { throw TestFailure("register answered \(reply.status): \(reply.text)") }
        return (try reply.decode(AuthSession.self), email)
    }
}

extension JSONDecoder {
    static let pier: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}

/// Log lines captured from a service.
