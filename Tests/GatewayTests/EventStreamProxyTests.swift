import PierHTTP
import PierService
import PierTestSupport
import Testing

/// Server-sent events through the gateway in proxy mode: a stream lives as long as it beats.
@Suite struct EventStreamProxyTests {
    /// Twenty-five messages a second apart from the upstream (25 s in all), as `contentType`,
    /// the instant of each write kept: a silence twenty times shorter than the route's 20-second
    /// timeout, a whole longer than it.
    static let messages = 25
    static let timeout = Duration.seconds(20)

    static func paced(_ contentType: String, _ written: Locked<[ContinuousClock.Instant]>) -> Response {
        .streaming(headers: ["Content-Type": contentType]) { writer in
            for number in 1...messages {
                try await writer.write("data: \(number)\n\n")
                written.withLock { $0.append(.now) }
                try await Task.sleep(for: .seconds(1))
            }
        }
    }

    @Test func anEventStreamOutlivesTheRouteTimeoutWhileItBeats() async throws {
        let events = Locked<[ContinuousClock.Instant]>([]), download = Locked<[ContinuousClock.Instant]>([])
        let router = Router<BasicRequestContext>()
        router.get("/live/events") { _, _ in Self.paced("text/event-stream; charset=utf-8", events) }
        router.get("/live/download") { _, _ in Self.paced("text/plain", download) }
        let upstream = try HTTPServer.started(router, name: "upstream")
        let gateway = try await ProxyGatewayTests.gateway(["/live=http://127.0.0.1:\(upstream.port);timeout=20000"])
        let base = "http://127.0.0.1:\(gateway.server.port)"

        // Past the route's timeout: every message, as the upstream sent it.
        let stream = try await EventStream.open(base + "/live/events")
        #expect(stream.status == 200 && stream.headers["Content-Type"] == "text/event-stream; charset=utf-8")
        var received: [String] = []
        do {
            while let message = try await stream.next() { received += message.data.map { [$0] } ?? [] }
            #expect(received == (1...Self.messages).map(String.init))
        } catch {
            // Cut: right only when the upstream itself fell silent for the route's timeout (a
            // machine so busy that its writer waited that long for a thread), after the
            // messages written before that silence.
            let written = events.withLock { $0 }
            let gaps = zip(written.dropFirst(), written).map { $0 - $1 }
            let silence = zip(gaps.indices, gaps).first { $0.1 >= Self.timeout - .seconds(1) }
            #expect(silence != nil, "the stream was cut (\(error)) though the upstream wrote every second: \(gaps)")
            if let silence { #expect(received.count <= silence.0 + 1, "\(received.count) messages before the cut") }
        }

        // Any other body still ends at the route's timeout.
        let cut = try await EventStream.open(base + "/live/download")
        var partial: [String] = []
        do {
            while let message = try await cut.next() { partial += message.data.map { [$0] } ?? [] }
            Issue.record("a body went on past the route's timeout")
        } catch {
            #expect(partial.count < Self.messages)
        }
        await gateway.shutdown()
        await upstream.shutdown()
    }
}
