import PierModels
import PierService

/// The feedback service's own settings, from `PIER_FEEDBACK_*`.
///
/// The variables and their defaults are declared in `FeedbackService.settings` (docs/settings.md).
public struct FeedbackConfiguration: Sendable {
    /// What anonymous feedback must show of App Attest.
    public enum AppAttest: String, Sendable, CaseIterable { case off, optional, required }
    public var quotaPerMinute: Int
    public var quotaPerDay: Int
    public var quotaFlushMilliseconds: Int
    public var moderateAnonymous: Bool
    public var idempotencyHours: Int
    public var eventPollSeconds: Int
    public var intakeLanes: Int
    /// Where a reply moves an item that is still new; nil: it stays new.
    public var replyMovesNewTo: FeedbackStatus?
    public var appAttest: AppAttest

    public init(environment: Environment) throws(Environment.Failure) {
        quotaPerMinute = try environment.int("PIER_FEEDBACK_QUOTA_PER_MINUTE", default: 10, in: 1...1_000_000)
        quotaPerDay = try environment.int("PIER_FEEDBACK_QUOTA_PER_DAY", default: 100, in: 1...100_000_000)
        quotaFlushMilliseconds = try environment.int("PIER_FEEDBACK_QUOTA_FLUSH_MS", default: 1000, in: 10...60_000)
        moderateAnonymous = try environment.bool("PIER_FEEDBACK_MODERATE_ANONYMOUS", default: false)
        idempotencyHours = try environment.int("PIER_FEEDBACK_IDEMPOTENCY_HOURS", default: 48, in: 24...8760)
        eventPollSeconds = try environment.int("PIER_FEEDBACK_EVENT_POLL_S", default: 5, in: 1...3600)
        intakeLanes = try environment.int("PIER_FEEDBACK_INTAKE_LANES", default: 4, in: 1...64)
        appAttest = try environment.choice("PIER_FEEDBACK_APP_ATTEST", default: AppAttest.off)
        let moves = FeedbackStatus.new.next.map(\.rawValue).sorted()
        switch environment.string("PIER_FEEDBACK_REPLY_STATUS", default: "triaged").lowercased() {
        case "none": replyMovesNewTo = nil
        case let wire:
            guard let status = FeedbackStatus(rawValue: wire), FeedbackStatus.new.allows(status) else {
                throw Environment.Failure(
                    variable: "PIER_FEEDBACK_REPLY_STATUS",
                    problem: "must be none or one of \(moves.joined(separator: ", ")), got \"\(wire)\"")
            }
            replyMovesNewTo = status
        }
    }
}
