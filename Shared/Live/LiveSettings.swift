/// `PIER_LIVE_*`: live streams' heartbeat and bounds (read by `ServiceConfiguration`).
public struct LiveSettings: Sendable {
    public var heartbeat: Duration
    public var limit: Int
    public var limitPerUser: Int

    public init(heartbeat: Duration, limit: Int, limitPerUser: Int) {
        (self.heartbeat, self.limit, self.limitPerUser) = (heartbeat, limit, limitPerUser)
    }
}
