import PierHTTP
import PierService
import PierTestSupport
import Synchronization
import Testing

/// The outside audit's flood: accounts opened from a handful of addresses held every one of
/// the gateway's exchange slots with idle live streams, and every other client got 503 until
/// well after they left. Streams have a budget of their own, a cap per client address, and end
/// as soon as their client hangs up.
@Suite struct StreamFloodTests {
    /// Streams the upstream is producing now.
    final class Producers: Sendable {
        let alive = Atomic<Int>(0)
    }

    /// An upstream whose streams say nothing after their head (idle, as a user's state that does
    /// not change), and a plain route.
    static func upstream(_ producers: Producers) throws -> HTTPServer {
        let router = Router<BasicRequestContext>()
        router.get("/live/events") { _, _ in
            Response.streaming(headers: ["Content-Type": "text/event-stream; charset=utf-8"]) { writer in
                producers.alive.add(1, ordering: .relaxed)
                defer { producers.alive.subtract(1, ordering: .relaxed) }
                try await writer.write("retry: 3000\n\n")
                try await Task.sleep(for: .seconds(600))
            }
        }
        router.get("/live/ping") { _, _ in Response.text("pong") }
        return try HTTPServer.started(router, name: "upstream")
    }

    /// Opens a stream from `source`: the status of the answer's head.
    static func open(_ port: Int, from source: String) async throws -> (RawClient, Int) {
        let client = try RawClient(port: port, from: source)
        client.send("GET /live/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
        let head = await client.receive { $0.contains("\r\n\r\n") }
        let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return (client, status)
    }

    @Test func aStreamFloodFromManyAddressesLeavesRequestsAnswered() async throws {
        let producers = Producers()
        let upstream = try Self.upstream(producers)
        // Eight exchange slots: the old gateway gave one to each stream, so eight streams
        // answered everyone else 503. An idle stream is cut by the route after 120 s: what ends
        // them here within the test's wait can only be their clients leaving.
        let gateway = try await ProxyGatewayTests.gateway(
            ["/live=http://127.0.0.1:\(upstream.port);timeout=120000"],
            settings: [
                "PIER_GATEWAY_MAX_IN_FLIGHT": "8", "PIER_GATEWAY_MAX_STREAMS": "40", "PIER_GATEWAY_STREAMS_PER_CLIENT": "4",
                "PIER_GATEWAY_RATE_LIMIT": "0",
            ])
        let port = gateway.server.port

        // 12 addresses, 6 streams each: 4 per address at most (10 addresses fill the 40), then
        // the gateway is full for the last two.
        var held: [RawClient] = []
        var statuses: [Int: Int] = [:]
        for host in 2...13 {
            for _ in 0..<6 {
                let (client, status) = try await Self.open(port, from: "127.0.0.\(host)")
                statuses[status, default: 0] += 1
                if status == 200 { held.append(client) }
            }
        }
        #expect(statuses == [200: 40, 429: 20, 503: 12], "\(statuses)")
        #expect(await eventually(timeout: .seconds(20)) { producers.alive.load(ordering: .relaxed) == 40 })

        // Every other client is answered meanwhile (before, each got 503).
        for _ in 0..<20 {
            let client = try RawClient(port: port)
            client.send("GET /live/ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let status = await client.responses(1).first?.status
            #expect(status == 200, "a plain request during the flood: \(status.map(String.init) ?? "no answer")")
        }

        // The attacker leaves: the gateway and the upstream notice at once, not at a heartbeat.
        // The upstream's producers end first; the gateway gives the address's streams back when
        // its relays have ended, a moment later: waited for, as a client would try again.
        held.removeAll()
        #expect(await eventually(timeout: .seconds(20)) { producers.alive.load(ordering: .relaxed) == 0 })
        var again: [RawClient] = []
        #expect(
            await eventually(timeout: .seconds(20)) {
                guard let (client, status) = try? await Self.open(port, from: "127.0.0.2") else { return false }
                again.append(client)
                return status == 200
            })
        withExtendedLifetime(again) {}
        await gateway.shutdown()
        await upstream.shutdown()
    }
}
