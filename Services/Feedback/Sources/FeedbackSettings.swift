import PierService

extension FeedbackService {
    /// The settings feedback reads, declared once:
    /// docs/settings.md is made of these.
    public static let settings: [SettingDeclaration] = [
        .init(
            ["PIER_FEEDBACK_QUOTA_PER_MINUTE", "PIER_FEEDBACK_QUOTA_PER_DAY"], default: "`10` / `100`",
            #"""
            feedback attempts per sender (the user, or the client address when anonymous) per fixed
            minute / day; refused attempts count too
            """#),
        .init(
            "PIER_FEEDBACK_QUOTA_FLUSH_MS", default: "`1000`",
            #"""
            quotas are counted in each replica's memory (exact there; no request waits on a database
            lock for them) and shared through `feedback.quota` this often: across R replicas a
            sender can get up to what the other replicas admitted in one interval beyond a limit
            """#),
        .init(
            "PIER_FEEDBACK_MODERATE_ANONYMOUS", default: "`false`",
            "anonymous feedback arrives `pending`, hidden from the default admin view until approved"),
        .init(
            "PIER_FEEDBACK_APP_ATTEST", default: "`off`",
            #"""
            `required`: anonymous feedback needs `X-Installation-Token` (App Attest's word for the
            installation, from `POST /auth/app-attest/installation-token`), else 403
            `attestation_required`; `optional`: checked when sent. An attested installation's quota
            is its own instead of its address's
            """#),
        .init(
            "PIER_FEEDBACK_IDEMPOTENCY_HOURS", default: "`48`",
            "how long idempotency keys are kept (at least 24)"),
        .init(
            "PIER_FEEDBACK_INTAKE_LANES", default: "`4`",
            #"""
            batches of new feedback stored at once (each holds a pool connection); items arriving
            while all are busy are stored together
            """#),
        .init(
            "PIER_FEEDBACK_REPLY_STATUS", default: "`triaged`",
            "where the team's first reply moves a new item (`none`: it stays new)"),
        .init(
            "PIER_FEEDBACK_EVENT_POLL_S", default: "`5`",
            "event-log poll interval when no NOTIFY wakes the consumer"),
    ]
}
