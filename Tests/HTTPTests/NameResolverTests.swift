import Glibc
import PierHTTP
import PierRuntime
import PierTestSupport
import Testing

/// A name server that the test answers by hand: each lookup waits until the test gives an
/// answer (a stalled name server, for as long as the test wants), or until it is closed.
final class HandAnsweredNameServer: @unchecked Sendable {
    private let lock = ConditionLock()
    private var asked: [String] = []
    private var answers: [NameResolver.Answer] = []
    private var closed = false

    var lookup: NameResolver.Lookup { { host, _ in self.answer(host) } }

    private func answer(_ host: String) -> NameResolver.Answer {
        lock.withLock {
            asked.append(host)
            while answers.isEmpty, !closed { lock.wait() }
            return answers.isEmpty ? .unavailable("closed") : answers.removeFirst()
        }
    }

    /// Lookups asked so far (answered or waiting).
    var questions: Int { lock.withLock { asked.count } }

    func give(_ answer: NameResolver.Answer) {
        lock.withLock {
            answers.append(answer)
            lock.broadcast()
        }
    }

    /// Every waiting and later lookup ends unanswered.
    func close() {
        lock.withLock {
            closed = true
            lock.broadcast()
        }
    }
}

/// Addresses of an IP literal, as the C resolver gives them (no name server involved).
func addresses(_ numeric: String, port: Int = 80) -> [NameResolver.Address] {
    guard case .addresses(let addresses) = NameResolver.system(numeric, port) else { return [] }
    return addresses
}

@Suite struct NameResolverTests {
    static var later: ContinuousClock.Instant { .now + .seconds(30) }

    /// A name is waited for once; after that a stalled name server delays nothing: the known
    /// addresses serve while the name server is asked again, and its answer replaces them.
    @Test func aKnownNameIsNeverWaitedOnAgain() async throws {
        let server = HandAnsweredNameServer()
        defer { server.close() }
        let resolver = NameResolver(refreshAfter: 0, lookup: server.lookup)
        let first = Task { try await resolver.addresses(of: "upstream", port: 80, by: Self.later) }
        #expect(await eventually { server.questions == 1 })
        server.give(.addresses(addresses("10.0.0.1")))
        #expect(try await first.value.map(\.numeric) == ["10.0.0.1"])

        // The name server stalls: the next uses answer at once, and one lookup is asked, not one each.
        for _ in 0..<5 {
            #expect(try await resolver.addresses(of: "upstream", port: 80, by: Self.later).map(\.numeric) == ["10.0.0.1"])
        }
        #expect(await eventually { server.questions == 2 })
        #expect(server.questions == 2)
        // It answers (the container came back at another address): the new address from then on.
        server.give(.addresses(addresses("10.0.0.2")))
        #expect(
            try await eventually {
                try await resolver.addresses(of: "upstream", port: 80, by: Self.later).map(\.numeric) == ["10.0.0.2"]
            })
    }

    /// Addresses that failed to connect are not used blindly: the next use waits for the name
    /// server. Silence keeps them (the best known); "no such name" forgets them.
    @Test func silenceKeepsAddressesAndNoSuchNameForgetsThem() async throws {
        let server = HandAnsweredNameServer()
        defer { server.close() }
        let resolver = NameResolver(refreshAfter: 3600, lookup: server.lookup)
        server.give(.addresses(addresses("10.0.0.1")))
        #expect(try await resolver.addresses(of: "upstream", port: 80, by: Self.later).map(\.numeric) == ["10.0.0.1"])

        resolver.distrust("upstream", port: 80)
        let waiting = Task { try await resolver.addresses(of: "upstream", port: 80, by: Self.later) }
        #expect(await eventually { server.questions == 2 })
        server.give(.unavailable("timeout"))
        #expect(try await waiting.value.map(\.numeric) == ["10.0.0.1"])

        resolver.distrust("upstream", port: 80)
        server.give(.unknown("Name or service not known"))
        await #expect(throws: NameResolver.Failure.self) {
            try await resolver.addresses(of: "upstream", port: 80, by: Self.later)
        }
        // Forgotten: the next use asks again, and waits.
        server.give(.addresses(addresses("10.0.0.3")))
        #expect(try await resolver.addresses(of: "upstream", port: 80, by: Self.later).map(\.numeric) == ["10.0.0.3"])
        #expect(server.questions == 4)
        // Each name and port on its own.
        server.give(.addresses(addresses("10.0.0.4")))
        #expect(try await resolver.addresses(of: "upstream", port: 8080, by: Self.later).map(\.numeric) == ["10.0.0.4"])
        #expect(try await resolver.addresses(of: "UPSTREAM", port: 80, by: Self.later).map(\.numeric) == ["10.0.0.3"])
    }

    /// A name never answered fails at the caller's deadline; the answer that comes later is kept.
    @Test func aNewNameIsWaitedForUntilTheDeadlineOnly() async throws {
        let server = HandAnsweredNameServer()
        defer { server.close() }
        let resolver = NameResolver(refreshAfter: 3600, lookup: server.lookup)
        do {
            _ = try await resolver.addresses(of: "slow", port: 80, by: .now + .milliseconds(50))
            Issue.record("a name the name server never answered resolved")
        } catch {
            #expect(error.description == "no answer from the name server for slow in time")
        }
        server.give(.addresses(addresses("10.0.0.5")))
        #expect(
            await eventually {
                (try? await resolver.addresses(of: "slow", port: 80, by: .now)).map { $0.map(\.numeric) } == ["10.0.0.5"]
            })
        #expect(server.questions == 1)
    }

    @Test func theCResolverAnswersLiteralsAndRefusesWhatCannotExist() {
        #expect(addresses("::1", port: 8080).map(\.numeric) == ["::1"])
        #expect(addresses("127.0.0.1").first?.family == AF_INET)
        #expect(NameResolver.isNumeric("::1") && NameResolver.isNumeric("10.1.2.3"))
        #expect(!NameResolver.isNumeric("gateway") && !NameResolver.isNumeric("[::1]"))
        // RFC 6761: .invalid never resolves.
        guard case .unknown = NameResolver.system("pier.invalid", 80) else {
            Issue.record("pier.invalid resolved, or the name server did not answer")
            return
        }
    }
}

/// The outbound client connects where the resolver says, and is not held up by a name server.
@Suite struct HTTPClientNameTests {
    @Test func theClientConnectsToTheResolversAddressesWithoutWaitingOnTheNameServer() async throws {
        let router = Router<BasicRequestContext>()
        router.get("/where") { request, _ in Response(status: 200, body: Array((request.headers["Host"] ?? "").utf8)) }
        let server = try HTTPServer.started(router, name: "upstream")
        let names = HandAnsweredNameServer()
        defer { names.close() }
        let resolver = NameResolver(refreshAfter: 0, lookup: names.lookup)
        let client = HTTPClient(resolver: resolver)
        // .invalid exists in no name server: only the resolver's answer can lead curl anywhere;
        // both families given (curl's rule brackets IPv6), the server listens on IPv4.
        let url = "http://upstream.invalid:\(server.port)/where"
        // Room for a busy machine: a request held up by the stalled name server would wait out
        // any timeout, so a long one still tells; the 5-s default once ran out under load.
        let patient = Duration.seconds(60)
        names.give(.addresses(addresses("::1", port: server.port) + addresses("127.0.0.1", port: server.port)))
        let response = try await client.get(url, timeout: patient)
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "upstream.invalid:\(server.port)")
        // The name server stalls from now on: requests go on, on the known addresses.
        for _ in 0..<3 { #expect(try await client.get(url, timeout: patient).status == 200) }
        #expect(await eventually { names.questions == 2 })

        // The name server answers at last: the host moved to where nothing listens (127.0.0.2;
        // the server listens on 127.0.0.1 only), and the server restarts, which ends the kept
        // connections. New connections fail there…
        let port = server.port
        await server.shutdown()
        names.give(.addresses(addresses("127.0.0.2", port: port)))
        #expect(
            await eventually {
                (try? await resolver.addresses(of: "upstream.invalid", port: port, by: .now))?.map(\.numeric) == ["127.0.0.2"]
            })
        let restarted = try HTTPServer.started(router, name: "upstream", port: port)
        do {
            _ = try await client.get(url, timeout: patient)
            Issue.record("a request reached the server at the address it moved away from")
        } catch {
            guard case .connect = error else { Issue.record("expected a connect failure, got \(error)"); return }
        }
        // …and the next one does not use that address again blindly: it waits for the name
        // server (asked already, and stalled: the request's time runs out on it, not on a refusal)…
        do {
            _ = try await client.get(url, timeout: .milliseconds(100))
            Issue.record("a request went to the address that had just failed")
        } catch {
            #expect(error == .connect("no answer from the name server for upstream.invalid in time"))
        }
        // …whose answer leads it back.
        names.give(.addresses(addresses("127.0.0.1", port: port)))
        #expect(await eventually { (try? await client.get(url, timeout: patient))?.status == 200 })
        client.close()
        await restarted.shutdown()
    }

    @Test func urlsAreSplitIntoHostAndPort() {
        let cases: [(String, String?, Int?)] = [
            ("http://gateway:8080/auth/login", "gateway", 8080),
            ("https://appleid.apple.com/auth/keys", "appleid.apple.com", 443),
            ("http://user:secret@example.com?x=1", "example.com", 80),
            ("http://[::1]:9000/", "::1", 9000),
            ("HTTPS://[2001:db8::1]", "2001:db8::1", 443),
            ("http://example.com:/", "example.com", 80),
            ("http://example.com:99999/", nil, nil),
            ("http://[::1/", nil, nil),
            ("ftp://example.com/", nil, nil),
            ("http:///path", nil, nil),
        ]
        for (url, host, port) in cases {
            let split = HTTPClient.hostAndPort(of: url)
            #expect(split?.host == host && split?.port == port, "\(url)")
        }
    }
}
