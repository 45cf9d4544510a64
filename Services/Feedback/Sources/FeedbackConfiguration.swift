import PierModels
import PierService

/// The feedback service's own settings, from `PIER_FEEDBACK_*`.
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `PIER_FEEDBACK_QUOTA_PER_MINUTE` | `10` | items per sender (user, or client address when anonymous) per minute |
/// | `PIER_FEEDBACK_QUOTA_PER_DAY` | `100` | items per sender per day |
/// | `PIER_FEEDBACK_QUOTA_FLUSH_MS` | `1000` | how often a replica shares its quota counts with the others (their lag) |
/// | `PIER_FEEDBACK_MODERATE_ANONYMOUS` | `false` | anonymous feedback arrives `pending`, hidden from the default view until approved |
/// | `PIER_FEEDBACK_IDEMPOTENCY_HOURS` | `48` | how long idempotency keys are kept (at least 24) |
/// | `PIER_FEEDBACK_INTAKE_LANES` | `4` | batches of new items stored at once, each on a connection of the pool; items arriving while all are busy wait and are stored together |
/// | `PIER_FEEDBACK_REPLY_STATUS` | `triaged` | where the team's first reply moves a new item (`none`: it stays new; a status a new item may move to) |
/// | `PIER_FEEDBACK_EVENT_POLL_S` | `5` | how often the event log is polled when no notification wakes the consumer |
/// | `PIER_FEEDBACK_APP_ATTEST` | `off` | anonymous feedback and App Attest: `required` takes it only with an installation token (`X-Installation-Token`, from `POST /auth/app-attest/installation-token`), `optional` checks one when sent; an attested installation's quota is its own rather than its address's |
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
