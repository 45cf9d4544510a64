import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierTestSupport

@testable import FeedbackService

/// A live feedback service on an ephemeral port and its own database. Tokens are signed here
/// with a test key that the service trusts, as the auth service's would be.
final class FeedbackHarness: Sendable {
    let server: HTTPServer
    let pool: PostgresPool
    let service: FeedbackService
    let base: String
    let port: Int
    let signer: AccessTokenSigner
    let http: ServiceClient

    static func start(database: String, settings: [String: String] = [:]) async throws -> FeedbackHarness {
        let url = try await TestDatabase.create(database)
        var environment = [
            "PIER_DATABASE_URL": url, "PIER_PORT": "0", "PIER_HTTP_ACCESS_LOG": "false", "PIER_LOG_LEVEL": "error",
            "PIER_FEEDBACK_QUOTA_PER_MINUTE": "1000", "PIER_FEEDBACK_QUOTA_PER_DAY": "100000", "PIER_FEEDBACK_EVENT_POLL_S": "1",
        ]
        environment.merge(settings) { $1 }
        let configuration = try ServiceConfiguration(
            environment: Environment(environment), defaultPort: 0, applicationName: "feedback-tests")
        let logger = Logger(service: "feedback", level: .error)
        let pool = PostgresPool(configuration: configuration.database)
        try await ServiceRunner.migrate(FeedbackService.self, pool: pool, logger: logger)
        let key = try P256PrivateKey.generate()
        let signer = AccessTokenSigner(key: key, kid: "test")
        let authenticator = Authenticator(
            verifier: AccessTokenVerifier(
                keys: StaticKeyProvider(keys: ["test": try key.publicKey]), issuer: "pier", audience: "pier"))
        let context = ServiceContext(configuration: configuration, database: pool, logger: logger, authenticator: authenticator)
        let service = FeedbackService.make(
            context: context, configuration: try FeedbackConfiguration(environment: configuration.environment))
        let host = ServiceHost(
            mounted: [
                .init(
                    name: "feedback", schema: "feedback", migrations: FeedbackService.migrations,
                    database: pool, service: service)
            ], metricsName: "feedback")
        let server = try ServiceRunner.makeServer(
            router: host.router(), metrics: host.metrics, configuration: context.configuration, logger: context.logger)
        try server.start()
        return FeedbackHarness(server: server, pool: pool, service: service, signer: signer, port: server.port)
    }

    private init(server: HTTPServer, pool: PostgresPool, service: FeedbackService, signer: AccessTokenSigner, port: Int) {
        self.server = server
        self.pool = pool
        self.service = service
        self.signer = signer
        self.port = port
        self.base = "http://127.0.0.1:\(port)"
        self.http = ServiceClient(base: base)
    }

    func stop() async {
        await server.shutdown()
        await service.shutdown()
    }

    /// An access token for `user` with `role`.
    func token(_ user: UUID, role: String = "user") throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        return try signer.sign(
            AccessClaims(
                iss: "pier", sub: user.uuidString, aud: "pier", iat: now, nbf: now,
                exp: now + 600, jti: UUID().uuidString, sid: nil, role: role))
    }

    func admin() throws -> String { try token(UUID(), role: "admin") }

    func send(
        _ method: String, _ path: String, json: String? = nil, token: String? = nil,
        headers: HTTPHeaders = [:]
    ) async throws -> Reply {
        try await http.send(method, path, json: json, token: token, headers: headers)
    }

    /// Posts feedback and returns the stored item (201 expected).
    @discardableResult
    func post(_ json: String, token: String? = nil, headers: HTTPHeaders = [:]) async throws -> FeedbackItem {
        let reply = try await send("POST", "/feedback", json: json, token: token, headers: headers)
        guard reply.status == 201 else {
            throw HTTPClient.Failure(message: "POST /feedback answered \(reply.status): \(reply.text)")
        }
        return try reply.decode(FeedbackItem.self)
    }
}

/// A JSON string literal for building bodies in tests.
func quoted(_ text: String) -> String {
    String(decoding: try! JSONEncoder().encode(text), as: UTF8.self)
}
