/// Where a feedback item is in the team's workflow, and where it may go from there:
/// new → triaged → planned → in_progress → done; closed or duplicate from any open state;
/// closed and duplicate items can be reopened as triaged.
public enum FeedbackStatus: OpenVocabulary {
    case new, triaged, planned, inProgress, done, closed, duplicate
    /// A status a newer server has (never one it accepts from this version).
    case unknown(String)

    public static let allCases: [Self] = [.new, .triaged, .planned, .inProgress, .done, .closed, .duplicate]

    public var rawValue: String {
        switch self {
        case .new: "new"
        case .triaged: "triaged"
        case .planned: "planned"
        case .inProgress: "in_progress"
        case .done: "done"
        case .closed: "closed"
        case .duplicate: "duplicate"
        case .unknown(let value): value
        }
    }

    /// The statuses an item in this one may move to.
    public var next: Set<FeedbackStatus> {
        switch self {
        case .new: [.triaged, .closed, .duplicate]
        case .triaged: [.planned, .closed, .duplicate]
        case .planned: [.inProgress, .closed, .duplicate]
        case .inProgress: [.done, .closed, .duplicate]
        case .done, .unknown: []
        case .closed, .duplicate: [.triaged]
        }
    }

    public func allows(_ target: FeedbackStatus) -> Bool { next.contains(target) }
}

/// Whether the team lets an item be seen: anonymous feedback may wait for a look first.
public enum Moderation: OpenVocabulary {
    case pending, approved, rejected
    case unknown(String)

    public static let allCases: [Self] = [.pending, .approved, .rejected]

    public var rawValue: String {
        switch self {
        case .pending: "pending"
        case .approved: "approved"
        case .rejected: "rejected"
        case .unknown(let value): value
        }
    }
}

/// The words the API accepts where it takes one of a fixed set, each derived from its type
/// where there is one, with how a problem lists them.
public enum Vocabulary {
    public static let categories = Set(FeedbackCategory.allCases.map(\.rawValue))
    public static let platforms = Set(Platform.allCases.map(\.rawValue))
    public static let statuses = Set(FeedbackStatus.allCases.map(\.rawValue))
    public static let moderation = Set(Moderation.allCases.map(\.rawValue))

    public static func list(_ values: Set<String>) -> String { values.sorted().joined(separator: ", ") }
}
