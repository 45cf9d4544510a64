import PierRuntime
import PierTestSupport
import Synchronization
import Testing

@testable import PierHTTP

/// The group that runs a process's parts: stops them in reverse order of starting, whatever
/// stops it (cancellation, a part failing or ending), and every part returns before it does.
@Suite struct ServiceGroupTests {
    /// Records when a part starts and stops; fails or ends on demand.
    struct Part: LifecycleService {
        let lifecycleName: String
        let journal: Locked<[String]>
        var failAfterStart = false

        func run() async throws {
            journal.withLock { $0.append("start \(lifecycleName)") }
            if failAfterStart { throw Failure() }
            await Lifecycle.untilCancelled()
            journal.withLock { $0.append("stop \(lifecycleName)") }
        }
    }

    struct Failure: Error {}

    let logger = Logger(service: "test", level: .error)

    @Test func cancellingStopsPartsInReverseOrder() async throws {
        let journal = Locked<[String]>([])
        let parts = ["pool", "events", "server"].map { Part(lifecycleName: $0, journal: journal) }
        let group = Task { try await ServiceGroup(parts, logger: logger, signals: []).run() }
        #expect(await eventually { journal.withLock { $0.count } == 3 })
        group.cancel()
        #expect(try await group.value == .cancelled)
        #expect(journal.withLock { Array($0.suffix(3)) } == ["stop server", "stop events", "stop pool"])
    }

    @Test func aFailingPartStopsTheOthersAndItsErrorIsThrown() async throws {
        let journal = Locked<[String]>([])
        let parts = [
            Part(lifecycleName: "pool", journal: journal), Part(lifecycleName: "worker", journal: journal, failAfterStart: true),
            Part(lifecycleName: "server", journal: journal),
        ]
        await #expect(throws: Failure.self) { try await ServiceGroup(parts, logger: self.logger, signals: []).run() }
        let stops = journal.withLock { $0.filter { $0.hasPrefix("stop") } }
        #expect(stops == ["stop server", "stop pool"])
    }

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
        try server.start()
        let port = server.port
        let group = Task { try await ServiceGroup([server], logger: logger, signals: []).run() }
        let client = HTTPClient(threads: 1, timeoutSeconds: 5)
        #expect(try await client.send("GET", "http://127.0.0.1:\(port)/ping", headers: [:], body: nil).status == 200)
        group.cancel()
        _ = try await group.value
        await #expect(throws: (any Error).self) {
            try await client.send("GET", "http://127.0.0.1:\(port)/ping", headers: [:], body: nil)
        }
    }
}
