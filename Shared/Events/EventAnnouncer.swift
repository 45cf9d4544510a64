import PierPostgres
import Synchronization

/// Wakes the event log's followers (every process's) for events a hot producer appended, after
/// their transactions committed, many to one notification.
///
/// A NOTIFY sent inside the producer's transaction serializes its commit with every other
/// notifying commit of the cluster (PostgreSQL holds one lock per database from the
/// notification's queueing to the end of the commit): a request made a thousand times a second
/// would queue on it. Announced here, the first event after a quiet spell is notified at once,
/// and those that come while a notification is sent, or within ``window`` after it, together
/// in the next. The events themselves are written with their change: a notification that never
/// goes out (the process killed after the commit, the database unreachable) delays them until
/// the followers' next poll, and loses nothing.
public final class EventAnnouncer: Sendable {
    /// How long after a notification the next one waits, gathering what was announced meanwhile.
    public let window: Duration
    private let database: PostgresPool
    private let listener: PostgresListener
    /// The types announced and not notified yet, and whether a task is sending them.
    private let state = Mutex<(pending: Set<String>, sending: Bool)>(([], false))

    /// - Parameters:
    ///   - listener: the process's listener; what the notifications cost is counted in its
    ///     ``PostgresListener/notifiedWork`` (the work events set off).
    public init(database: PostgresPool, listener: PostgresListener, window: Duration = .milliseconds(10)) {
        self.database = database
        self.listener = listener
        self.window = window
    }

    /// Notifies `type` on ``EventLog/channel`` soon: call it once the transaction that appended
    /// the event committed.
    public func announce(_ type: String) {
        let start = state.withLock { state -> Bool in
            state.pending.insert(type)
            guard !state.sending else { return false }
            state.sending = true
            return true
        }
        guard start else { return }
        listener.announcing(1)
        // Detached: not the request's work (nor counted as its statements), and never waited for.
        Task.detached { [self] in await send() }
    }

    private func send() async {
        while true {
            let types = state.withLock { state -> [String] in
                let types = state.pending.sorted()
                state.pending = []
                if types.isEmpty { state.sending = false }
                return types
            }
            guard !types.isEmpty else {
                listener.announcing(-1)
                return
            }
            _ = try? await PostgresActivity.$ledger.withValue(listener.notifiedWork) {
                try await database.execute(
                    "SELECT pg_notify(\(EventLog.channel), type) FROM unnest(\(PostgresTextArray(types))::text[]) AS type")
            }
            try? await Task.sleep(for: window)
        }
    }
}
