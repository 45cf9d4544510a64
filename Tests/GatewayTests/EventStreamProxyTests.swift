import PierHTTP
import PierService
import PierTestSupport
import Testing

/// Server-sent events through the gateway in proxy mode: a stream lives as long as it beats.
@Suite struct EventStreamProxyTests {
    /// Twenty-one messages a second apart from the upstream (21 s in all), as `contentType`: a
    /// silence ten times shorter than the route's timeout (room for a machine so busy that a
    /// task waits seconds for a thread), a whole more than twice as long.
    static let messages = 21

    static func paced(_ contentType: String) -> Response {
        .streaming(headers: ["Content-Type": contentType]) { writer in
            for number in 1...messages {
                try await writer.write("data: \(number)\n\n")
                try await Task.sleep(for: .seconds(1))
            }
        }
    }

    @Test func anEventStreamOutlivesTheRouteTimeoutWhileItBeats() async throws {
        let router = Router<BasicRequestContext>()
        router.get("/live/events") { _, _ in Self.paced("text/event-stream; charset=utf-8") }
        router.get("/live/download") { _, _ in Self.paced("text/plain") }
        let upstream = try HTTPServer.started(router, name: "upstream")
        let gateway = try await ProxyGatewayTests.gateway(["/live=http://127.0.0.1:\(upstream.port);timeout=10000"])
        let base = "http://127.0.0.1:\(gateway.server.port)"

        // Past the route's 10-second timeout: every message, as the upstream sent it.
        let stream = try await EventStream.open(base + "/live/events")
        #expect(stream.status == 200 && stream.headers["Content-Type"] == "text/event-stream; charset=utf-8")
        var received: [String] = []
        while let message = try await stream.next() { received += message.data.map { [$0] } ?? [] }
        #expect(received == (1...Self.messages).map(String.init))

        // Any other body still ends at the route's timeout.
        let download = try await EventStream.open(base + "/live/download")
        var cut: [String] = []
        do {
            while let message = try await download.next() { cut += message.data.map { [$0] } ?? [] }
            Issue.record("a body went on past the route's timeout")
        } catch {
            #expect(cut.count < Self.messages)
        }
        await gateway.shutdown()
        await upstream.shutdown()
    }
}
