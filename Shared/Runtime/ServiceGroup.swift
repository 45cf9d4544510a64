import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A long-running part of a process (a server, a pool, a listener, a worker): `start()` does
/// what the parts after it depend on (binding a port, opening a listener), then `run()` does its
/// work until its task is cancelled, stops gracefully and returns. Throwing means it failed,
/// which stops the whole group.
public protocol LifecycleService: Sendable {
    /// For the logs.
    var lifecycleName: String { get }
    /// Called once, in order, before any part runs; nothing by default.
    func start() async throws
    func run() async throws
}

extension LifecycleService {
    public func start() async throws {}
}

/// A part made of a start and a stop (what pools, listeners and plugins' workers offer).
public struct Lifecycle: LifecycleService {
    public let lifecycleName: String
    let starting: @Sendable () async throws -> Void
    let stop: @Sendable () async -> Void

    public init(
        _ name: String, start: @escaping @Sendable () async throws -> Void = {},
        stop: @escaping @Sendable () async -> Void
    ) {
        self.lifecycleName = name
        self.starting = start
        self.stop = stop
    }

    public func start() async throws { try await starting() }

    public func run() async throws {
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

/// Runs the parts of one process together, whether it hosts one plugin or several, in one task
/// group: ``start()`` starts them one after the other (a server listens once what it stands on
/// is there); ``run()`` runs them until a signal arrives (SIGTERM, SIGINT), a part fails or
/// returns, or ``stop()`` is called, then stops them in reverse order, each once the parts
/// started after it have returned (servers finish their requests before the pools they use
/// close). Cancelling the task that runs the group stops every part at once.
public final class ServiceGroup: Sendable {
    public enum Reason: Sendable, Equatable {
        case signal(Int32)
        case ended(String)
        case failed(String)
        /// ``stop()`` was called.
        case stopped
        case cancelled
    }

    let services: [any LifecycleService]
    let logger: Logger
    let signals: [Int32]
    private let reasons: AsyncStream<Reason>
    private let reasonsIn: AsyncStream<Reason>.Continuation
    /// How many parts have started.
    private let started = Mutex(0)

    /// - Parameter signals: the signals that stop the group; none in tests.
    public init(_ services: [any LifecycleService], logger: Logger, signals: [Int32] = [SIGTERM, SIGINT]) {
        self.services = services
        self.logger = logger
        self.signals = signals
        (reasons, reasonsIn) = AsyncStream.makeStream(of: Reason.self)
    }

    /// Starts the parts not yet started, in order. When one fails, those it follows are stopped
    /// (in reverse order) and its error is thrown.
    public func start() async throws {
        while true {
            let next = started.withLock { $0 }
            guard next < services.count else { return }
            do {
                try await services[next].start()
            } catch {
                logger.error(
                    "a part failed to start",
                    [("part", .string(services[next].lifecycleName)), ("error", .string("\(error)"))])
                for service in services[..<next].reversed() {
                    await withDiscardingTaskGroup { group in
                        group.addTask { try? await service.run() }
                        group.cancelAll()
                    }
                }
                started.withLock { $0 = services.count }
                throw error
            }
            started.withLock { $0 = next + 1 }
        }
    }

    /// Ends ``run()``: its parts stop in reverse order.
    public func stop() { reasonsIn.yield(.stopped) }

    /// Starts what is not started, then runs until the group stops (once); returns why, after
    /// every part returned. The first error of a part that failed is rethrown.
    @discardableResult
    public func run() async throws -> Reason {
        let sources = signals.map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [reasonsIn] in reasonsIn.yield(.signal(number)) }
            source.resume()
            return source
        }
        defer { sources.forEach { $0.cancel() } }
        try await start()
        let firstError = FirstError()
        let stopping = services.map { _ in Latch() }
        let stopped = services.map { _ in Latch() }
        let reason = await withDiscardingTaskGroup { group -> Reason in
            for (index, service) in services.enumerated() {
                group.addTask { [reasonsIn] in
                    // The part runs beside a wait for its turn to stop: whichever ends first
                    // ends the other.
                    await withDiscardingTaskGroup { part in
                        part.addTask {
                            do {
                                try await service.run()
                                reasonsIn.yield(.ended(service.lifecycleName))
                            } catch {
                                firstError.keep(error)
                                reasonsIn.yield(.failed(service.lifecycleName))
                            }
                        }
                        await stopping[index].wait()
                        part.cancelAll()
                    }
                    stopped[index].open()
                }
            }
            let reason = await withTaskCancellationHandler {
                for await reason in reasons { return reason }
                return .cancelled
            } onCancel: { [reasonsIn] in
                reasonsIn.yield(.cancelled)
            }
            logger.info("stopping", [("reason", .string("\(reason)"))])
            for (index, service) in services.enumerated().reversed() {
                stopping[index].open()
                await stopped[index].wait()
                logger.debug("stopped", [("part", .string(service.lifecycleName))])
            }
            return reason
        }
        reasonsIn.finish()
        if let error = firstError.error { throw error }
        return reason
    }
}

/// Opened once; ``wait()`` returns once it is open, or when the waiting task is cancelled.
private struct Latch: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() { (stream, continuation) = AsyncStream.makeStream(of: Void.self) }

    func open() { continuation.finish() }

    func wait() async { for await _ in stream {} }
}

/// The first error of the parts of a group.
private final class FirstError: Sendable {
    private let first = Mutex<(any Error)?>(nil)
    func keep(_ error: any Error) { first.withLock { if $0 == nil { $0 = error } } }
    var error: (any Error)? { first.withLock { $0 } }
}
