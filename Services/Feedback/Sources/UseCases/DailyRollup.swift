import PierPostgres

/// The worker's round of the reports' daily counts: batches of days rolled up, each in its own
/// transaction, until none is left (a first run on a year of feedback takes a few).
struct DailyRollup: Sendable {
    let database: PostgresPool

    /// Rolls up every day that ended or was triaged since; the batches it took.
    @discardableResult
    func run() async throws -> Int {
        var batches = 0
        while try await database.withTransaction({ try await FeedbackRollup($0).rollUp() }) > 0 { batches += 1 }
        return batches
    }
}
