import PierCrypto
import PierEvents
import PierHTTP
import PierPostgres
import PierRuntime
import PierService
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Webhooks' settings beside the endpoints (`PIER_WEBHOOK_*`).
public struct WebhookOptions: Sendable {
    public var endpoints: [WebhookEndpointSetting]
    /// The first retry's delay; the later ones grow from it (``Webhooks/schedule``).
    public var firstRetryMilliseconds: Int
    /// Attempts before a message is given up (14: retried for about four days).
    public var attempts: Int
    /// Attempts in flight at once, per process.
    public var concurrency: Int
    public var timeoutSeconds: Int
    /// Deliveries that ended are forgotten after this many days.
    public var retentionDays: Int
    public var pollMilliseconds: Int
    /// The events endpoints may subscribe to: Pier's and the executable's plugins'.
    public var known: WebhookEvents

    init(_ environment: Environment, known: WebhookEvents) throws(Environment.Failure) {
        self.known = known
        endpoints = try WebhookEndpointSetting.all(environment, known: known)
        firstRetryMilliseconds = try environment.int("PIER_WEBHOOK_RETRY_MS", default: 5000, in: 10...3_600_000)
        attempts = try environment.int("PIER_WEBHOOK_ATTEMPTS", default: 14, in: 1...Webhooks.schedule.count + 1)
        concurrency = try environment.int("PIER_WEBHOOK_CONCURRENCY", default: 16, in: 1...256)
        timeoutSeconds = try environment.int("PIER_WEBHOOK_TIMEOUT_S", default: 15, in: 1...60)
        retentionDays = try environment.int("PIER_WEBHOOK_RETENTION_DAYS", default: 30, in: 1...3650)
        pollMilliseconds = try environment.int("PIER_WEBHOOK_POLL_MS", default: 1000, in: 10...60_000)
    }
}

/// Webhooks to the app's own backend, as Standard Webhooks describes them: each event of the
/// shared log that an endpoint subscribes to becomes a message queued in the transaction that
/// moves the "webhooks" cursor past it (exactly once), then POSTed with `webhook-id`,
/// `webhook-timestamp` and `webhook-signature` until the receiver answers 2xx (at least once), in
/// order per subject, retried on the ``schedule`` and given up after the last attempt (an admin
/// may replay it).
final class Webhooks: LifecycleService {
    var lifecycleName: String { "webhooks" }

    /// The delays after each failed attempt, for a first retry of 5 s: then 30 s, 2 min, 10 min,
    /// 30 min, 1 h, 2 h, 4 h, 8 h, 12 h and 24 h three times (about four days in all).
    static let schedule: [Double] = [5, 30, 120, 600, 1800, 3600, 7200, 14_400, 28_800, 43_200, 86_400, 86_400, 86_400]

    let options: WebhookOptions
    let endpoints: [String: WebhookEndpointSetting]
    let consumer: EventConsumer
    private let database: PostgresPool
    private let http: HTTPClient
    private let logger: Logger
    private let wakeup: Wakeup
    private let inFlight = Atomic<Int>(0)

    init(options: WebhookOptions, database: PostgresPool, listener: PostgresListener, http: HTTPClient, logger: Logger) {
        self.options = options
        self.database = database
        self.http = http
        self.logger = logger
        let endpoints = Dictionary(uniqueKeysWithValues: options.endpoints.map { ($0.name, $0) })
        self.endpoints = endpoints
        let wakeup = Wakeup()
        self.wakeup = wakeup
        consumer = EventConsumer(
            name: "webhooks", cursorTable: "auth.event_cursor", types: Array(options.known.logTypes.keys).sorted(),
            database: database, listener: listener, logger: logger,
            pollInterval: .milliseconds(options.pollMilliseconds), applied: { wakeup.wake() },
            // Woken by the events some endpoint subscribes to; the others are passed at the poll.
            wakingOn: options.known.logTypes.filter { _, type in options.endpoints.contains { $0.events.contains(type) } }
                .keys.sorted()
        ) { event, connection in
            guard let type = options.known.logTypes[event.type] else { return }
            let subscribed = options.endpoints.filter { $0.events.contains(type) }.map(\.name)
            guard !subscribed.isEmpty else { return }
            try await WebhookDeliveries(connection).enqueue(
                messageID: "msg_" + hexString(SecureRandom.bytes(16)), eventID: event.id, type: type,
                subject: try options.known.subject(of: event.payload, type: type),
                body: Self.body(type: type, at: event.createdAt, data: event.payload), to: subscribed)
        }
    }

    /// The message's body: its type, when the event happened and its data.
    static func body(type: String, at date: Date, data: String) -> String {
        let timestamp = CivilDate.iso8601(secondsSince1970: date.timeIntervalSince1970)
        return #"{"type":"\#(type)","timestamp":"\#(timestamp)","data":\#(data)}"#
    }

    /// The delay after `attempts` failed attempts, or nil when the message is given up.
    func retryDelay(after attempts: Int) -> Double? {
        guard attempts < options.attempts else { return nil }
        let scale = Double(options.firstRetryMilliseconds) / 5000
        return Self.schedule[min(attempts - 1, Self.schedule.count - 1)] * scale
    }

    /// A message was queued here: attempt it now rather than at the next poll.
    func wake() { wakeup.wake() }

    /// Sends until its task is cancelled: on each wake-up, every `pollMilliseconds` (messages
    /// another replica queued, retries that came due), and each time an attempt ends (the next
    /// message of its subject). Ended deliveries are swept hourly.
    func run() async {
        // A part that returns ends the process's group: with nothing to send, it waits.
        guard !endpoints.isEmpty else { return await Lifecycle.untilCancelled() }
        let (wakeup, poll) = (wakeup, options.pollMilliseconds)
        let names = endpoints.keys.sorted()
        await withDiscardingTaskGroup { group in
            group.addTask { await wakeup.ring(every: .milliseconds(poll)) }
            group.addTask { [self] in
                await Periodic("webhook sweep", every: .seconds(3600)) { [self] in
                    do {
                        let swept = try await WebhookDeliveries(database).sweep(olderThanDays: options.retentionDays)
                        if swept > 0 { logger.info("webhook deliveries forgotten", [("deliveries", .int(swept))]) }
                    } catch {
                        logger.warning("webhook sweep will retry", [("error", .string("\(error)"))])
                    }
                }.run()
            }
            for await _ in wakeup.rounds {
                while !Task.isCancelled {
                    let free = options.concurrency - inFlight.load(ordering: .relaxed)
                    guard free > 0 else { break }
                    let claimed: [WebhookDeliveries.Claimed]
                    do {
                        claimed = try await WebhookDeliveries(database).claim(
                            limit: free, endpoints: names, leaseSeconds: options.timeoutSeconds + 5)
                    } catch {
                        logger.warning("webhook deliveries unavailable", [("error", .string("\(error)"))])
                        break
                    }
                    if claimed.isEmpty { break }
                    inFlight.add(claimed.count, ordering: .relaxed)
                    for delivery in claimed {
                        group.addTask { [self] in
                            await attempt(delivery)
                            inFlight.subtract(1, ordering: .relaxed)
                            wakeup.wake()
                        }
                    }
                }
            }
            group.cancelAll()
        }
    }

    /// One attempt of `delivery`, and its outcome recorded.
    func attempt(_ delivery: WebhookDeliveries.Claimed) async {
        guard let endpoint = endpoints[delivery.endpoint] else { return }
        let timestamp = Int(Date().timeIntervalSince1970)
        let request = HTTPClient.Request(
            method: "POST", url: endpoint.url,
            headers: [
                "Content-Type": "application/json",
                "User-Agent": "Pier-Webhooks/\(PierVersion.current)",
                "webhook-id": delivery.messageID,
                "webhook-timestamp": String(timestamp),
                "webhook-signature": WebhookSignature.header(
                    id: delivery.messageID, timestamp: timestamp, body: delivery.body, keys: endpoint.keys),
            ],
            body: delivery.body, connectTimeoutMilliseconds: min(5000, options.timeoutSeconds * 1000),
            timeoutMilliseconds: options.timeoutSeconds * 1000)
        let outcome: (status: Int?, error: String?)
        do {
            let response = try await http.send(request, limit: 64 << 10)
            outcome =
                (200...299).contains(response.status) ? (response.status, nil) : (response.status, "answered \(response.status)")
        } catch HTTPClient.Failure.closed {
            return  // shutting down: its lease ends and another attempt follows
        } catch HTTPClient.Failure.tooLarge {
            outcome = (nil, "the answer was larger than 64 KiB")
        } catch {
            outcome = (nil, "\(error)")
        }
        let fields: [(String, Logger.Value)] = [
            ("delivery_id", .int(delivery.id)), ("endpoint", .string(delivery.endpoint)), ("type", .string(delivery.type)),
            ("attempt", .int(delivery.attempts)),
        ]
        do {
            let deliveries = WebhookDeliveries(database)
            if let error = outcome.error {
                let delay = retryDelay(after: delivery.attempts)
                try await deliveries.failed(delivery.id, status: outcome.status, error: error, retrySeconds: delay)
                logger.warning(
                    delay == nil ? "webhook given up" : "webhook not delivered; will retry",
                    fields + [("error", .string(error))] + (delay.map { [("retry_s", .double($0))] } ?? []))
            } else {
                try await deliveries.delivered(delivery.id, status: outcome.status ?? 200)
                logger.debug("webhook delivered", fields)
            }
        } catch {
            logger.warning("webhook outcome not recorded; tried again later", fields + [("error", .string("\(error)"))])
        }
    }
}
