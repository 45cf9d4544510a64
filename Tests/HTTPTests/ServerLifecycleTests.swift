import PierRuntime
import PierTestSupport
import Testing

@testable import PierHTTP

/// A server is a part of a process's group like any other.
@Suite struct ServerLifecycleTests {
    let logger = Logger(service: "test", level: .error)

    /// A server in a group answers until the group stops, then no longer listens.
    @Test func aServerIsAPart() async throws {
        let router = Router<BasicRequestContext>()
        router.get("/ping") { _, _ in Response.text("pong") }
        // Nothing else may answer on this port once the server stops (see PortHolder).
        let held = try PortHolder()
        defer { withExtendedLifetime(held) {} }
        let server = HTTPServer(
            configuration: HTTPServer.Configuration(port: held.port, threads: 1, accessLog: false), routes: router.routes,
            logger: logger)
        let group = ServiceGroup([server], logger: logger, signals: [])
        try await group.start()
        let port = server.port
        async let reason = group.run()
        let client = TestHTTP.client
        #expect(try await client.send("GET", "http://127.0.0.1:\(port)/ping", headers: [:], body: nil).status == 200)
        group.stop()
        #expect(try await reason == .stopped)
        await #expect(throws: (any Error).self) {
            try await client.send("GET", "http://127.0.0.1:\(port)/ping", headers: [:], body: nil)
        }
    }
}
