import LeaderboardAPI
import PierPlugin

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A leaderboard, as a team writes a plugin (docs/plugins.md, "A larger example"): endpoints
/// declared as values in a module apps link, a migration, an event (`leaderboard.record`), a
/// staff action in the audit log, a console page, and what it does when an account is deleted
/// or an anonymous one merged. Players are shown by the name their token carries.
public struct LeaderboardService: Service {
    public static let name = "leaderboard"
    public static let prefix = "/leaderboard"
    public static let schema = "leaderboard"
    public static let defaultPort = 8091
    public static let migrations = [
        Migration(version: 1, name: "scores", sql: String(decoding: PackageResources._001_scores_sql, as: UTF8.self)),
        AuditLog.migration(schema: schema, version: 2),
    ]
    public static var endpoints: [EndpointDefinition] { LeaderboardAPI.all }
    public static var events: [EventDeclaration] {
        [EventDeclaration(RecordBeaten.type, summary: "A game's best score was beaten: the game, the player, the points")]
    }
    public static var auditLog: AuditLogDeclaration? {
        AuditLogDeclaration(
            title: "Leaderboard", actions: [("leaderboard.score_removed", "removed a score")],
            targets: [("score", "score", nil)])
    }
    public static var consolePages: [ConsolePage] { [LeaderboardPage.page] }

    let database: PostgresPool
    let authenticator: Authenticator
    let accounts: EventConsumer

    public static func make(context: ServiceContext) async throws -> LeaderboardService {
        // A deleted account's scores go; a merged anonymous account's join the account it went into.
        let accounts = context.eventConsumer(name: "accounts", schema: schema, types: [AccountDeleted.type, AccountMerged.type]) {
            event, connection in
            if event.type == AccountDeleted.type {
                let gone = try event.decode(AccountDeleted.self).userId
                try await connection.execute("DELETE FROM leaderboard.scores WHERE user_id = \(gone)")
                return
            }
            let merged = try event.decode(AccountMerged.self)
            try await connection.execute(
                """
                INSERT INTO leaderboard.scores (game, user_id, name, points, at)
                SELECT game, \(merged.intoUserId), name, points, at FROM leaderboard.scores WHERE user_id = \(merged.userId)
                ON CONFLICT (game, user_id) DO UPDATE SET points = excluded.points, at = excluded.at
                    WHERE scores.points < excluded.points
                """)
            try await connection.execute("DELETE FROM leaderboard.scores WHERE user_id = \(merged.userId)")
        }
        return LeaderboardService(database: context.database, authenticator: context.authenticator, accounts: accounts)
    }

    public var background: [any LifecycleService] { [accounts] }

    public func routes(into routes: inout Routes) {
        let router = Router<ServiceRequestContext>()
        let endpoints = EndpointRouter(router, authenticator: authenticator)
        endpoints.on(LeaderboardAPI.top) { _, _, path in
            let game = try Self.game(path.game)
            let rows = try await database.query(
                "SELECT game, user_id, name, points FROM leaderboard.scores WHERE game = \(game) ORDER BY points DESC, at LIMIT 10"
            )
            return JSONResponse(ItemList(try rows.map(Self.score)))
        }
        endpoints.on(LeaderboardAPI.mine) { _, context in
            let user = try context.caller().userID
            let rows = try await database.query(
                "SELECT game, user_id, name, points FROM leaderboard.scores WHERE user_id = \(user) ORDER BY game")
            return JSONResponse(ItemList(try rows.map(Self.score)))
        }
        endpoints.on(LeaderboardAPI.post) { _, context, path, body in
            let (caller, game) = (try context.caller(), try Self.game(path.game))
            guard (0...1_000_000_000).contains(body.points) else {
                throw HTTPError.invalid("points", "must be 0 to 1000000000")
            }
            return JSONResponse(try await record(body.points, by: caller, in: game), status: 201)
        }
        endpoints.on(LeaderboardAPI.remove) { _, context, path in
            let (actor, game, user) = (try context.auditActor(), try Self.game(path.game), path.userId)
            try await database.withTransaction { connection in
                let removed = try await connection.query(
                    "DELETE FROM leaderboard.scores WHERE game = \(game) AND user_id = \(user) RETURNING points")
                guard let points = try removed.first?.decode("points", as: Int.self) else {
                    throw HTTPError.notFound("That player has no score in \(game).")
                }
                try await AuditLog.append(
                    .init(
                        AuditAction(wire: "leaderboard.score_removed"), target: ("score", "\(game)/\(user.text())"),
                        subject: user,
                        before: .object(["points": .number(Double(points))])),
                    by: actor, schema: Self.schema, on: connection)
            }
            return EndpointReply.noContent()
        }
        routes.merge(router.routes)
        routes.merge(
            AuditLog.routes(
                service: Self.name, prefix: Self.prefix, schema: Self.schema, database: database, authenticator: authenticator,
                actions: ["leaderboard.score_removed"]))
    }

    /// Keeps `points` when it is the caller's best in `game`, and tells the log when it beats
    /// the game's record (the game's lock orders two records made at once).
    func record(_ points: Int, by caller: Principal, in game: String) async throws -> Score {
        try await database.withTransaction { connection in
            try await connection.execute("SELECT pg_advisory_xact_lock(hashtextextended('leaderboard:' || \(game), 0))")
            let record = try await connection.query("SELECT max(points) AS best FROM leaderboard.scores WHERE game = \(game)")[0]
                .decode("best", as: Int?.self)
            try await connection.execute(
                """
                INSERT INTO leaderboard.scores (game, user_id, name, points) VALUES (\(game), \(caller.userID), \(caller.name), \(points))
                ON CONFLICT (game, user_id) DO UPDATE SET points = excluded.points, name = excluded.name, at = now()
                    WHERE scores.points < excluded.points
                """)
            if points > record ?? -1 {
                try await EventLog.append(
                    RecordBeaten.type, payload: RecordBeaten(game: game, userId: caller.userID, points: points), on: connection)
            }
            let rows = try await connection.query(
                "SELECT game, user_id, name, points FROM leaderboard.scores WHERE game = \(game) AND user_id = \(caller.userID)")
            return try Self.score(rows[0])
        }
    }

    static func score(_ row: PostgresRow) throws -> Score {
        Score(
            game: try row.decode("game"), userId: try row.decode("user_id"), name: try row.decode("name"),
            points: try row.decode("points"))
    }

    /// The `{game}` of the path: 1 to 40 lowercase letters, digits and `-`.
    static func game(_ game: String) throws -> String {
        guard (1...40).contains(game.count), game.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") })
        else { throw HTTPError.invalid("game", "must be 1 to 40 lowercase letters, digits and -") }
        return game
    }
}
