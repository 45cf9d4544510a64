// Today's way to PostgreSQL against libpq's asynchronous API on one event loop, measured from
// Swift tasks as a service calls it: `concurrency` tasks each run `SELECT 1` in a loop for
// `seconds`, through
//   threads   PierPostgres's pool: blocking libpq calls on one dedicated thread per connection
//   loop      one thread owning every connection in non-blocking mode (PQsendQuery, poll(2),
//             PQconsumeInput), resuming the waiting task when its result is complete
// Prints queries per second and the process's CPU time per query for each.
// Usage: pier-pq-bench <database url> [concurrency 32] [seconds 5]
import CPostgres
import Dispatch
import Glibc
import PierPostgres
import PierRuntime
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count > 1 else {
    print("usage: pier-pq-bench <database url> [concurrency] [seconds]")
    exit(2)
}
let url = arguments[1]
let concurrency = arguments.count > 2 ? Int(arguments[2]) ?? 32 : 32
let seconds = arguments.count > 3 ? Double(arguments[3]) ?? 5 : 5

/// The prototype: one thread, every connection non-blocking, submissions woken through an eventfd.
final class EventLoopClient: @unchecked Sendable {
    private struct Work {
        let sql: String
        let done: CheckedContinuation<Void, any Error>
    }
    struct Failure: Error { let message: String }

    private let connections: [OpaquePointer]
    /// A pipe that wakes the loop when work is queued.
    private let wake: (read: Int32, write: Int32) = {
        var ends: [Int32] = [0, 0]
        _ = pipe(&ends)
        for end in ends { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK) }
        return (ends[0], ends[1])
    }()
    private let lock = ConditionLock()
    private var queue: [Work] = []

    init(url: String, count: Int) throws {
        var opened: [OpaquePointer] = []
        for _ in 0..<count {
            guard let connection = PQconnectdb(url), PQstatus(connection) == CONNECTION_OK else {
                throw Failure(message: "cannot connect")
            }
            PQsetnonblocking(connection, 1)
            opened.append(connection)
        }
        connections = opened
        startDetachedThread { [self] in loop() }
    }

    func run(_ sql: String) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            lock.withLock { queue.append(Work(sql: sql, done: continuation)) }
            var one: UInt8 = 1
            _ = write(wake.write, &one, 1)
        }
    }

    private func loop() {
        var idle = Array(connections.indices)
        var busy: [Int: Work] = [:]
        while true {
            var descriptors = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            let order = Array(busy.keys)
            for index in order { descriptors.append(pollfd(fd: PQsocket(connections[index]), events: Int16(POLLIN), revents: 0)) }
            _ = poll(&descriptors, nfds_t(descriptors.count), -1)
            if descriptors[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 4096)
                _ = read(wake.read, &drain, drain.count)
            }
            for (slot, index) in order.enumerated() where descriptors[slot + 1].revents != 0 {
                let connection = connections[index]
                PQconsumeInput(connection)
                guard PQisBusy(connection) == 0 else { continue }
                var failed = false
                while let result = PQgetResult(connection) {
                    if PQresultStatus(result) != PGRES_TUPLES_OK { failed = true }
                    PQclear(result)
                }
                let work = busy.removeValue(forKey: index)!
                idle.append(index)
                if failed { work.done.resume(throwing: Failure(message: "query failed")) } else { work.done.resume() }
            }
            let taken: [Work] = lock.withLock {
                let count = min(idle.count, queue.count)
                defer { queue.removeFirst(count) }
                return Array(queue.prefix(count))
            }
            for work in taken {
                let index = idle.removeLast()
                PQsendQuery(connections[index], work.sql)
                PQflush(connections[index])
                busy[index] = work
            }
        }
    }
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// Runs `concurrency` loops of `query` for `seconds`; queries per second and CPU µs per query.
func measure(_ name: String, _ query: @escaping @Sendable () async throws -> Void) async throws {
    final class Counter: Sendable { let value = Atomic<Int>(0) }
    let count = Counter()
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    let cpu = cpuSeconds()
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<concurrency {
            group.addTask {
                while ContinuousClock.now < deadline {
                    try await query()
                    count.value.add(1, ordering: .relaxed)
                }
            }
        }
        try await group.waitForAll()
    }
    let done = count.value.load(ordering: .relaxed)
    let used = cpuSeconds() - cpu
    print(
        "\(name)\(String(repeating: " ", count: max(1, 9 - name.count)))\(Int(Double(done) / seconds)) queries/s   "
            + "\(Int(used / Double(max(done, 1)) * 1e6)) µs CPU per query in this process")
}

let pool = PostgresPool(
    configuration: PostgresConfiguration(url: url, poolSize: concurrency, applicationName: "pier-pq-bench"))
try await measure("threads") { _ = try await pool.query("SELECT 1") }
pool.close()
let loop = try EventLoopClient(url: url, count: concurrency)
try await measure("loop") { try await loop.run("SELECT 1") }
