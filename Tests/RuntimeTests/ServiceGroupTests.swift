import PierTestBasics
import Synchronization
import Testing

@testable import PierRuntime

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
}
