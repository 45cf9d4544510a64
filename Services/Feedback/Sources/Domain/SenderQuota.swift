import PierPostgres
import PierRuntime
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Per-sender quotas (a one-minute and a one-day fixed window; every attempt counts, refused
/// ones included), decided in memory and shared between replicas through `feedback.quota`.
///
/// A request never waits on the database for its quota, and one sender's requests never queue
/// on a row lock: this replica counts under its own lock (exact here), and every `interval` it
/// adds what it counted to the shared row in one statement for all senders, and takes back the
/// totals that every replica's additions made. A sender seen for the first time (or again
/// after being forgotten) is read from the row first.
///
/// How exact across replicas: a replica learns of the others' attempts at its next flush, so a
/// sender spread over R replicas can get up to what the other R − 1 replicas admitted within
/// one interval beyond a limit; in one replica, never. A replica that dies loses at most one
/// interval of counts (the items themselves are stored).
final class SenderQuota: Sendable {
    /// A fixed window: its start (seconds since 1970) and the attempts counted in it.
    struct Window {
        var start: Double
        var count: Int
        let length: Double

        /// Starts a new window at `now` when this one has ended.
        mutating func roll(_ now: Double) {
            if now >= start + length { (start, count) = (now, 0) }
        }

        func secondsLeft(_ now: Double) -> Int { max(1, Int((start + length - now).rounded(.up))) }
    }

    struct Sender {
        var minute: Window
        var day: Window
        /// Attempts counted here and not yet added to the shared row.
        var unflushed = 0
        var lastSeen: Double

        /// Nothing counted yet: both windows start `now`.
        static func fresh(at now: Double) -> Sender {
            Sender(
                minute: Window(start: now, count: 0, length: 60), day: Window(start: now, count: 0, length: 86_400), lastSeen: now
            )
        }

        /// The shared row's windows.
        static func shared(_ row: QuotaCounters.Row, at now: Double) -> Sender {
            Sender(
                minute: Window(start: row.minuteStart, count: row.minuteCount, length: 60),
                day: Window(start: row.dayStart, count: row.dayCount, length: 86_400), lastSeen: now)
        }
    }

    enum Decision: Equatable {
        case allowed
        /// Over `limit` per `window` seconds.
        case refused(retryAfter: Int, limit: Int, window: Int)
    }

    let perMinute: Int
    let perDay: Int
    let interval: Duration
    /// Senders kept in memory at most after a flush: beyond, every sender whose counts are all
    /// shared is forgotten (and read again from its row when it comes back), so a client rotating
    /// addresses cannot grow the map without bound.
    let maximumSenders: Int
    private let database: PostgresPool
    private let logger: Logger
    private let now: @Sendable () -> Double
    private let senders = Mutex<[String: Sender]>([:])

    init(
        perMinute: Int, perDay: Int, database: PostgresPool, logger: Logger, interval: Duration = .seconds(1),
        maximumSenders: Int = 100_000, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.maximumSenders = maximumSenders
        self.perMinute = perMinute
        self.perDay = perDay
        self.database = database
        self.logger = logger
        self.interval = interval
        self.now = now
    }

    /// Reads `sender`'s shared counts unless this replica knows them already.
    func prepare(_ sender: String) async throws {
        guard senders.withLock({ $0[sender] == nil }) else { return }
        let known = try await read(sender)
        senders.withLock { if $0[sender] == nil { $0[sender] = known } }
    }

    /// Senders known in memory right now.
    var knownSenders: Int { senders.withLock { $0.count } }

    /// Counts an attempt of `sender` (``prepare(_:)`` first) and says whether it is within both
    /// windows. Synchronous: it may run inside a transaction, after an idempotent replay was
    /// ruled out, so that replays never count.
    func count(_ sender: String) -> Decision {
        let now = now()
        return senders.withLock { senders in
            var entry = senders[sender] ?? .fresh(at: now)
            entry.minute.roll(now)
            entry.day.roll(now)
            entry.minute.count += 1
            entry.day.count += 1
            entry.unflushed += 1
            entry.lastSeen = now
            senders[sender] = entry
            if entry.minute.count > perMinute {
                return .refused(retryAfter: entry.minute.secondsLeft(now), limit: perMinute, window: 60)
            }
            if entry.day.count > perDay {
                return .refused(retryAfter: entry.day.secondsLeft(now), limit: perDay, window: 86_400)
            }
            return .allowed
        }
    }

    private func read(_ sender: String) async throws -> Sender {
        try await QuotaCounters(database).read([sender]).first.map { .shared($0, at: now()) } ?? .fresh(at: now())
    }

    /// Adds the attempts counted since the last flush to the shared rows and takes back the
    /// totals of every sender active in the last minute (what the other replicas counted);
    /// forgets senders idle for two minutes whose counts are all shared (all of them whose
    /// counts are shared, beyond ``maximumSenders``).
    func flush() async throws {
        let now = now()
        let (batch, active) = senders.withLock { senders -> ([(sender: String, count: Int)], [String]) in
            var batch: [(sender: String, count: Int)] = []
            var active: [String] = []
            for (sender, entry) in senders {
                if entry.unflushed > 0 {
                    batch.append((sender, entry.unflushed))
                    senders[sender]!.unflushed = 0
                } else if now - entry.lastSeen < 60 {
                    active.append(sender)
                }
            }
            return (batch, active)
        }
        let counters = QuotaCounters(database)
        var rows: [QuotaCounters.Row] = []
        if !batch.isEmpty {
            do {
                rows += try await counters.add(batch)
            } catch {
                // Not shared this time: counted again at the next flush.
                senders.withLock { senders in
                    for (sender, count) in batch { senders[sender]?.unflushed += count }
                }
                throw error
            }
        }
        if !active.isEmpty { rows += try await counters.read(active) }
        let shared = rows.map { ($0.sender, Sender.shared($0, at: now)) }
        senders.withLock { senders in
            for (sender, totals) in shared {
                guard var entry = senders[sender] else { continue }
                // The shared totals, plus what was counted here while they were being read.
                entry.minute = totals.minute
                entry.day = totals.day
                entry.minute.count += entry.unflushed
                entry.day.count += entry.unflushed
                senders[sender] = entry
            }
            senders = senders.filter { $0.value.unflushed > 0 || now - $0.value.lastSeen < 120 }
            if senders.count > maximumSenders { senders = senders.filter { $0.value.unflushed > 0 } }
        }
    }

    /// Its part, run by the host: flushes every `interval` and, when stopped, shares what is
    /// still counted here.
    var flusher: Periodic {
        Periodic("quota counts", every: interval, waitFirst: true) { [self] in
            do { try await flush() } catch {
                logger.warning("quota counts will be shared at the next flush", [("error", .string("\(error)"))])
            }
        } last: { [self] in
            try? await flush()
        }
    }
}
