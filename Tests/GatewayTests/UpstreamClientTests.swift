import Glibc
import PierHTTP
import PierRuntime
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
        let client = UpstreamClient()
        defer { client.close() }
        do {
            _ = try await client.send(Self.request("http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/"))
            Issue.record("a connection that never completed answered")
        } catch {
            guard case .connect = error else { Issue.record("expected a connect failure, got \(error)"); return }
        }
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

/// Active health: one failed `/readyz` check (a slow answer on a busy machine) keeps a healthy
/// upstream in; two in a row take it out; one that passes brings it back at once.
@Suite struct UpstreamHealthTests {
    @Test func twoFailedChecksInARowTakeAnUpstreamOut() {
        let upstream = Upstream(base: "http://127.0.0.1:9", route: "/svc")
        let now = MonotonicClock.seconds()
        #expect(upstream.checked(passed: false) && upstream.isAvailable(at: now))
        #expect(upstream.checked(passed: true))
        #expect(upstream.checked(passed: false) && upstream.isAvailable(at: now))
        #expect(!upstream.checked(passed: false) && !upstream.isAvailable(at: now))
        #expect(upstream.checked(passed: true) && upstream.isAvailable(at: now))
    }
}
