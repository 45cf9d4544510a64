import Glibc
import PierHTTP
import PierRuntime
import PierTestSupport
import Testing

@Suite struct HTTPClientTests {
    static func request(_ url: String) -> HTTPClient.Request {
        HTTPClient.Request(
            method: "GET", url: url, headers: [:], body: [], connectTimeoutMilliseconds: 500, timeoutMilliseconds: 1000)
    }

    @Test func failuresBeforeAnyResponseAreTold() async throws {
        let client = HTTPClient()
        // Nothing listens on the discard port here: refused, so the request never arrived.
        do {
            _ = try await client.stream(Self.request("http://127.0.0.1:9/"))
            Issue.record("a refused connection answered")
        } catch {
            guard case .connect = error else { Issue.record("expected a connect failure, got \(error)"); return }
        }
        client.close()
    }

    /// An address where no connection completes (a stopped container's, whose SYNs go
    /// unanswered) is a connect failure once the connect timeout passes, not a slow upstream:
    /// the request was never sent, so the gateway answers 503 and may retry elsewhere.
    @Test func aConnectionThatNeverCompletesIsAConnectFailure() async throws {
        // A listener whose accept queue is full: the kernel drops further SYNs unanswered.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 0) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        #expect(bound)
        let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(filler) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, length) == 0 }
        }
        #expect(connected)
        let client = HTTPClient()
        defer { client.close() }
        do {
            _ = try await client.stream(Self.request("http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/"))
            Issue.record("a connection that never completed answered")
        } catch {
            guard case .connect = error else { Issue.record("expected a connect failure, got \(error)"); return }
        }
    }

    @Test func aClosedClientFailsInsteadOfHanging() async throws {
        let client = HTTPClient()
        client.close()
        // Whether the transfer thread has taken the stop yet or not, the request fails as closed.
        do {
            _ = try await client.stream(Self.request("http://127.0.0.1:9/"))
            Issue.record("a closed client sent a request")
        } catch {
            #expect(error == .closed)
        }
        #expect(client.inFlight == 0)
    }
}

/// The whole-answer calls: each use caps the body it reads and says which status it needs.
@Suite struct HTTPClientUseTests {
    /// A server with a small and a large body, and a 404.
    final class Upstream: Sendable {
        let server: HTTPServer

        init() throws {
            let router = Router<BasicRequestContext>()
            router.get("/small") { _, _ in Response(status: 200, body: [UInt8](repeating: 0x61, count: 4 << 10)) }
            // Beyond the size read whole before the head: it streams.
            router.get("/large") { _, _ in
                Response(status: 200, body: [UInt8](repeating: 0x62, count: HTTPClient.wholeBodyLimit * 3))
            }
            server = try HTTPServer.started(router, name: "upstream")
        }

        var base: String { "http://127.0.0.1:\(server.port)" }
    }

    @Test func bodiesAreReadWholeUpToTheLimitOfTheUse() async throws {
        let upstream = try Upstream()
        let client = TestHTTP.client
        // Room for a busy machine: what is asserted is the body read, not how fast.
        let patient = Duration.seconds(60)
        #expect(try await client.get(upstream.base + "/small", timeout: patient).body.count == 4 << 10)
        #expect(try await client.get(upstream.base + "/large", timeout: patient).body.count == HTTPClient.wholeBodyLimit * 3)
        // Over the limit, whether the body came with the head or streams after it.
        for path in ["/small", "/large"] {
            do {
                _ = try await client.get(upstream.base + path, timeout: patient, limit: 1 << 10)
                Issue.record("\(path) was read beyond its limit")
            } catch {
                #expect(error == .tooLarge(1 << 10))
            }
        }
        // The connection the refused stream ran on is not left half-read for the next exchange.
        #expect(try await client.get(upstream.base + "/small", timeout: patient).status == 200)
        await upstream.server.shutdown()
    }

    @Test func anUnexpectedStatusIsAnError() async throws {
        let upstream = try Upstream()
        let response = try await TestHTTP.client.get(upstream.base + "/missing", timeout: .seconds(60))
        #expect(response.status == 404)
        #expect(throws: HTTPClient.UnexpectedStatus(status: 404, expected: 200)) { try response.expecting(200) }
        #expect(try response.expecting(404).status == 404)
        await upstream.server.shutdown()
    }
}
