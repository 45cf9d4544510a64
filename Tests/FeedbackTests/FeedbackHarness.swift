import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierServiceTestSupport
import PierTestSupport

@testable import FeedbackService

/// A live feedback service on an ephemeral port and its own database. Tokens are signed here
/// with a test key that the service trusts, as the auth service's would be.
final class FeedbackHarness: Sendable {
    let live: LiveService<FeedbackService>
    let server: HTTPServer
    let pool: PostgresPool
    let service: FeedbackService
    let base: String
    let port: Int
    let tokens: TestTokens
    /// In-process (most tests); `socket` for what is about HTTP or addresses.
    let http: ServiceClient
    let socket: ServiceClient

    /// Seconds added to the wall clock that quota windows are judged by.
    let clockOffset: Locked<Double>

    static func start(database: String, settings: [String: String] = [:]) async throws -> FeedbackHarness {
        let clockOffset = Locked(0.0)
        let tokens = try TestTokens()
        var environment = [
            "PIER_LOG_LEVEL": "error", "PIER_FEEDBACK_QUOTA_PER_MINUTE": "1000", "PIER_FEEDBACK_QUOTA_PER_DAY": "100000",
            "PIER_FEEDBACK_EVENT_POLL_S": "1",
        ]
        environment.merge(settings) { $1 }
        let live = try await LiveService<FeedbackService>.start(
            database: database, settings: environment, logger: Logger(service: "feedback", level: .error),
            keys: tokens.keys
        ) { context in
            FeedbackService.make(
                context: context, configuration: try FeedbackConfiguration(environment: context.configuration.environment),
                clock: { Date().timeIntervalSince1970 + clockOffset.withLock { $0 } })
        }
        return FeedbackHarness(live: live, tokens: tokens, clockOffset: clockOffset)
    }

    /// Moves the quota clock forward.
    func advanceClock(by seconds: Double) { clockOffset.withLock { $0 += seconds } }

    private init(live: LiveService<FeedbackService>, tokens: TestTokens, clockOffset: Locked<Double>) {
        self.clockOffset = clockOffset
        self.live = live
        self.server = live.server
        self.pool = live.pool
        self.service = live.service
        self.tokens = tokens
        self.port = live.port
        self.base = live.base
        self.http = live.http
        self.socket = live.socket
    }

    func stop() async { await live.stop() }

    /// An access token for `user` with `role`.
    func token(_ user: UUID, role: String = "user") throws -> String { try tokens.token(user, role: role) }

    func admin() throws -> String { try tokens.admin() }

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
            throw TestFailure("POST /feedback answered \(reply.status): \(reply.text)")
        }
        return try reply.decode(FeedbackItem.self)
    }
}

/// A JSON string literal for building bodies in tests.
func quoted(_ text: String) -> String {
    String(decoding: try! JSONEncoder().encode(text), as: UTF8.self)
}
