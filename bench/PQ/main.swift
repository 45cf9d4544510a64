// PierPostgres's pool (statements sent and read by the task, libpq non-blocking, the waits on
// one epoll thread) against the design it replaced, a dedicated thread per connection blocking
// in libpq, measured from Swift tasks as a service calls it: `concurrency` tasks each run
// `SELECT 1` in a loop for `seconds`, through
//   pool      PierPostgres's PostgresPool
//   threads   one thread per connection (PQexec), jobs handed over through a continuation
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

/// The replaced design: each connection owned by one thread that blocks in libpq.
final class ThreadedClient: @unchecked Sendable {
    struct Failure: Error { let message: String }
    private let threads: BlockingPool
    private let lock = ConditionLock()
    private var idle: [OpaquePointer]

    init(url: String, count: Int) throws {
        var opened: [OpaquePointer] = []
        for _ in 0..<count {
            guard let connection = PQconnectdb(url), PQstatus(connection) == CONNECTION_OK else {
                throw Failure(message: "cannot connect")
            }
            opened.append(connection)
        }
        idle = opened
        threads = BlockingPool(name: "threads", threads: count)
    }

    func run(_ sql: String) async throws {
        try await threads.run { [self] in
            let connection = lock.withLock { idle.removeLast() }
            defer { lock.withLock { idle.append(connection) } }
            let result = PQexec(connection, sql)
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_TUPLES_OK else { throw Failure(message: "query failed") }
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
try await measure("pool") { _ = try await pool.query("SELECT 1") }
pool.close()
let threads = try ThreadedClient(url: url, count: concurrency)
try await measure("threads") { try await threads.run("SELECT 1") }
