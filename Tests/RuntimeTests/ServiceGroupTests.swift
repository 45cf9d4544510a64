import PierTestBasics
import Synchronization
import Testing

@testable import PierRuntime

/// The group that runs a process's parts: starts them one after the other, stops them in
/// reverse order whatever stops it (``ServiceGroup/stop()``, a part failing or ending), and
/// every part returns before it does.
@Suite struct ServiceGroupTests {
    /// Records when a part starts, runs and stops; fails on demand.
    struct Part: LifecycleService {
        let lifecycleName: String
        let journal: Locked<[String]>
        var failToStart = false
        var failAfterStart = false

        func start() async throws {
            if failToStart { throw Failure() }
            journal.withLock { $0.append("start \(lifecycleName)") }
        }

        func run() async throws {
            journal.withLock { $0.append("run \(lifecycleName)") }
            if failAfterStart { throw Failure() }
            await Lifecycle.untilCancelled()
            journal.withLock { $0.append("stop \(lifecycleName)") }
        }
    }

    struct Failure: Error {}

    let logger = Logger(service: "test", level: .error)

    @Test func partsStartInOrderAndStopInReverse() async throws {
        let journal = Locked<[String]>([])
        let parts = ["pool", "events", "server"].map { Part(lifecycleName: $0, journal: journal) }
        let group = ServiceGroup(parts, logger: logger, signals: [])
        try await group.start()
        #expect(journal.withLock { $0 } == ["start pool", "start events", "start server"])
        async let reason = group.run()
        #expect(await eventually { journal.withLock { $0.count } == 6 })
        group.stop()
        #expect(try await reason == .stopped)
        #expect(journal.withLock { Array($0.suffix(3)) } == ["stop server", "stop events", "stop pool"])
        // Started once: run did not start them again.
        #expect(journal.withLock { $0.filter { $0.hasPrefix("start") }.count } == 3)
    }

    @Test func aPartThatCannotStartStopsThoseBeforeIt() async throws {
        let journal = Locked<[String]>([])
        let parts = [
            Part(lifecycleName: "pool", journal: journal), Part(lifecycleName: "events", journal: journal),
            Part(lifecycleName: "server", journal: journal, failToStart: true),
            Part(lifecycleName: "admin", journal: journal),
        ]
        await #expect(throws: Failure.self) { try await ServiceGroup(parts, logger: self.logger, signals: []).start() }
        let entries = journal.withLock { $0 }
        #expect(entries.prefix(2) == ["start pool", "start events"])
        #expect(entries.filter { $0.hasPrefix("stop") } == ["stop events", "stop pool"])
        #expect(!entries.contains { $0.hasSuffix("admin") || $0.hasSuffix("server") })
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

    /// Cancelling the task that runs the group stops every part (at once: a task group's children
    /// are cancelled together), and the group returns once they have.
    @Test func cancellingStopsEveryPart() async throws {
        let journal = Locked<[String]>([])
        let parts = ["pool", "events", "server"].map { Part(lifecycleName: $0, journal: journal) }
        let group = Task { try await ServiceGroup(parts, logger: logger, signals: []).run() }
        #expect(await eventually { journal.withLock { $0.count } == 6 })
        group.cancel()
        #expect(try await group.value == .cancelled)
        #expect(Set(journal.withLock { $0.suffix(3) }) == ["stop server", "stop events", "stop pool"])
    }
}
