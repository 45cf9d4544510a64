/// Where a feedback item is in the team's workflow, and where it may go from there:
/// new → triaged → planned → in_progress → done; closed or duplicate from any open state;
/// closed and duplicate items can be reopened as triaged.
public enum FeedbackStatus: String, CaseIterable, Sendable {
    case new, triaged, planned
    case inProgress = "in_progress"
    case done, closed, duplicate

    /// The statuses an item in this one may move to.
    public var next: Set<FeedbackStatus> {
        switch self {
        case .new: [.triaged, .closed, .duplicate]
        case .triaged: [.planned, .closed, .duplicate]
        case .planned: [.inProgress, .closed, .duplicate]
        case .inProgress: [.done, .closed, .duplicate]
        case .done: []
        case .closed, .duplicate: [.triaged]
        }
    }

    public func allows(_ target: FeedbackStatus) -> Bool { next.contains(target) }
}

/// Whether the team lets an item be seen: anonymous feedback may wait for a look first.
public enum Moderation: String, CaseIterable, Sendable {
    case pending, approved, rejected
}

/// The words the API accepts where it takes one of a fixed set, each derived from its type
/// where there is one, with how a problem lists them.
public enum Vocabulary {
    public static let categories: Set<String> = ["bug", "idea", "praise", "question", "other"]
    public static let platforms: Set<String> = [
        "ios", "ipados", "macos", "watchos", "tvos", "visionos", "android", "web", "other",
    ]
    public static let statuses = Set(FeedbackStatus.allCases.map(\.rawValue))
    public static let moderation = Set(Moderation.allCases.map(\.rawValue))

    public static func list(_ values: Set<String>) -> String { values.sorted().joined(separator: ", ") }
}
