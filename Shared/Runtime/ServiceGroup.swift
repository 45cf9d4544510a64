import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A long-running part of a process (a server, a pool, a listener, a worker): `run()` does its
/// work until its task is cancelled, then stops gracefully and returns. Throwing means it
/// failed, which stops the whole group.
public protocol LifecycleService: Sendable {
    /// For the logs.
    var lifecycleName: String { get }
    func run() async throws
}

/// A part made of a start and a stop (what pools, listeners and plugins' workers offer).
public struct Lifecycle: LifecycleService {
    public let lifecycleName: String
    let start: @Sendable () async throws -> Void
    let stop: @Sendable () async -> Void

    public init(
        _ name: String, start: @escaping @Sendable () async throws -> Void = {},
        stop: @escaping @Sendable () async -> Void
    ) {
        self.lifecycleName = name
        self.start = start
        self.stop = stop
    }

    public func run() async throws {
        try await start()
        await Lifecycle.untilCancelled()
        await stop()
    }

    /// Suspends until the current task is cancelled.
    public static func untilCancelled() async {
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
    }
}

/// A part that does `work` every `interval` until its task is cancelled (the first time at
/// once, or after one interval with `waitFirst`), and whenever its ``Wakeup`` is woken, one
/// round at a time; then `last` once: a queue's worker (woken when this process queued, polling
/// for what other replicas queued and retries that came due), a sweep, a health check, a flush
/// of counters.
public struct Periodic: LifecycleService {
    public let lifecycleName: String
    let interval: Duration
    let waitFirst: Bool
    let wakeup: Wakeup?
    let work: @Sendable () async -> Void
    let last: @Sendable () async -> Void

    public init(
        _ name: String, every interval: Duration, waitFirst: Bool = false, wakeup: Wakeup? = nil,
        _ work: @escaping @Sendable () async -> Void, last: @escaping @Sendable () async -> Void = {}
    ) {
        self.lifecycleName = name
        self.interval = interval
        self.waitFirst = waitFirst
        self.wakeup = wakeup
        self.work = work
        self.last = last
    }

    public func run() async {
        if waitFirst { try? await Task.sleep(for: interval) }
        if let wakeup {
            await withDiscardingTaskGroup { group in
                group.addTask { [interval] in await wakeup.ring(every: interval) }
                for await _ in wakeup.rounds { await work() }
                group.cancelAll()
            }
        } else {
            while !Task.isCancelled {
                await work()
                try? await Task.sleep(for: interval)
            }
        }
        await last()
    }
}

/// What wakes a worker before its interval ends: wake-ups while a round runs make one more
/// round, not one each. One reader.
public struct Wakeup: Sendable {
    /// A round is due each time this yields; it ends when the reading task is cancelled.
    public let rounds: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    public init() {
        (rounds, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// A round is due now.
    public func wake() { continuation.yield() }

    /// Wakes now and every `interval` until the task is cancelled.
    public func ring(every interval: Duration) async {
        while !Task.isCancelled {
            wake()
            try? await Task.sleep(for: interval)
        }
    }
}

/// Runs the parts of one process together, whether it hosts one plugin or several: starts them
/// in order; when a signal arrives (SIGTERM, SIGINT), one part fails or returns, or the task
/// running the group is cancelled, stops them in reverse order, each once the parts started
/// after it have returned (servers finish their requests before the pools they use close).
public struct ServiceGroup: Sendable {
    public enum Reason: Sendable, Equatable {
        case signal(Int32)
        case ended(String)
        case failed(String)
        case cancelled
    }

    let services: [any LifecycleService]
    let logger: Logger
    let signals: [Int32]

    /// - Parameter signals: the signals that stop the group; none in tests.
    public init(_ services: [any LifecycleService], logger: Logger, signals: [Int32] = [SIGTERM, SIGINT]) {
        self.services = services
        self.logger = logger
        self.signals = signals
    }

    /// Runs until the group stops; returns why, after every part returned. The first error of a
    /// part that failed is rethrown.
    @discardableResult
    public func run() async throws -> Reason {
        let (reasons, reasonsIn) = AsyncStream.makeStream(of: Reason.self)
        let sources = signals.map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { reasonsIn.yield(.signal(number)) }
            source.resume()
            return source
        }
        defer { sources.forEach { $0.cancel() } }
        let firstError = FirstError()
        var tasks: [Task<Void, Never>] = []
        for service in services {
            let name = service.lifecycleName
            tasks.append(
                Task {
                    do {
                        try await service.run()
                        reasonsIn.yield(.ended(name))
                    } catch {
                        firstError.keep(error)
                        reasonsIn.yield(.failed(name))
                    }
                })
        }
        let reason = await withTaskCancellationHandler {
            for await reason in reasons { return reason }
            return .cancelled
        } onCancel: {
            reasonsIn.yield(.cancelled)
        }
        logger.info("stopping", [("reason", .string("\(reason)"))])
        for (service, task) in zip(services, tasks).reversed() {
            task.cancel()
            await task.value
            logger.debug("stopped", [("part", .string(service.lifecycleName))])
        }
        reasonsIn.finish()
        if let error = firstError.error { throw error }
        return reason
    }
}

/// The first error of the parts of a group.
private final class FirstError: Sendable {
    private let first = Mutex<(any Error)?>(nil)
    func keep(_ error: any Error) { first.withLock { if $0 == nil { $0 = error } } }
    var error: (any Error)? { first.withLock { $0 } }
}
