import PierHTTP
import Testing

@testable import Gateway

@Suite struct UpstreamClientTests {
    static func request(_ url: String) -> UpstreamClient.Request {
        UpstreamClient.Request(
            method: "GET", url: url, headers: [:], body: [], connectTimeoutMilliseconds: 500, timeoutMilliseconds: 1000)
    }

    @Test func failuresBeforeAnyResponseAreTold() async throws {
        let client = UpstreamClient()
        // Nothing listens on the discard port here: refused, so the request never arrived.
        do {
            _ = try await client.send(Self.request("http://127.0.0.1:9/"))
            Issue.record("a refused connection answered")
        } catch {
            guard case .connect = error else { Issue.record("expected a connect failure, got \(error)"); return }
        }
        client.close()
    }

    @Test func aClosedClientFailsInsteadOfHanging() async throws {
        let client = UpstreamClient()
        client.close()
        // Whether the transfer thread has taken the stop yet or not, the request fails as closed.
        do {
            _ = try await client.send(Self.request("http://127.0.0.1:9/"))
            Issue.record("a closed client sent a request")
        } catch {
            #expect(error == .closed)
        }
        #expect(client.inFlight == 0)
    }
}
