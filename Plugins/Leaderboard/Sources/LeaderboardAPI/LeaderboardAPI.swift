import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// The leaderboard's wire: its endpoints as values and the types they carry, in a module of their
// own on PierModels alone, so that an app links them beside PierClient (`pier.call(LeaderboardAPI.post, …)`)
// and the plugin registers its routes from the same values.

/// One player's best score in a game, with the name they had when they set it.
public struct Score: Codable, Sendable, Equatable {
    public var game: String
    public var userId: UUID
    public var name: String?
    public var points: Int
    public init(game: String, userId: UUID, name: String?, points: Int) {
        (self.game, self.userId, self.name, self.points) = (game, userId, name, points)
    }
}

/// `POST /leaderboard/{game}`: a score the caller made.
public struct NewScore: Codable, Sendable {
    public var points: Int
    public init(points: Int) { self.points = points }
}

/// `{game}`: a game's name.
public struct GamePath: EndpointParameters {
    public static let declared: [Parameter] = [.path("game", .string, "The game: 1 to 40 lowercase letters, digits and `-`.")]
    public var game: String
    public init(game: String) { self.game = game }
}

/// `{game}/{userId}`: one player's score in a game.
public struct ScorePath: EndpointParameters {
    public static let declared: [Parameter] = [
        .path("game", .string, "The game."), .path("userId", .uuid, "The player's account."),
    ]
    public var game: String
    public var userId: UUID
    public init(game: String, userId: UUID) { (self.game, self.userId) = (game, userId) }
}

/// The payload of `leaderboard.record`: a game's best score was beaten.
public struct RecordBeaten: Codable, Sendable, Equatable {
    public static let type = "leaderboard.record"
    public var game: String
    public var userId: UUID
    public var points: Int
    public init(game: String, userId: UUID, points: Int) { (self.game, self.userId, self.points) = (game, userId, points) }
}

public enum LeaderboardAPI {
    public static let top = Endpoint<GamePath, NoBody, ItemList<Score>>(
        "GET", "/leaderboard/{game}", access: .anyone, operation: "topScores", summary: "A game's ten best scores",
        answers: "The scores, best first", problems: [.validationFailed])
    /// A literal segment wins over a parameter: `/leaderboard/me` is never the game "me".
    public static let mine = Endpoint<NoParameters, NoBody, ItemList<Score>>(
        "GET", "/leaderboard/me", access: .signedIn, operation: "myScores", summary: "The caller's best score in each game",
        answers: "The caller's scores")
    public static let post = Endpoint<GamePath, NewScore, Score>(
        "POST", "/leaderboard/{game}", access: .signedIn, operation: "postScore",
        summary: "Record the caller's score (kept when it is their best)",
        description: "Anonymous accounts play too; their scores follow them when they keep the account or merge it.",
        status: 201, answers: "The caller's best score now", problems: [.validationFailed])
    public static let remove = Endpoint<ScorePath, NoBody, NoContent>(
        "DELETE", "/leaderboard/{game}/{userId}", access: .staff, operation: "removeScore",
        summary: "Remove a player's score (the team; audited)", status: 204, answers: "Removed",
        problems: [.validationFailed, .notFound])

    public static let all = [top.definition, mine.definition, post.definition, remove.definition]
}
