import LeaderboardAPI
import PierPlugin

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `/console/leaderboard`: a game's best scores, by the players' names, and a button that
/// removes one (through `DELETE /leaderboard/{game}/{userId}` as the team member: the endpoint's
/// role and audit apply).
enum LeaderboardPage {
    static let page = ConsolePage(path: "leaderboard", title: "Leaderboard") { request in
        let game = request.value("game")?.trimmingWhitespace() ?? ""
        if request.request.method == "POST", request.segments == ["remove"] {
            guard let user = request.value("user").flatMap(UUID.init(uuidString:)) else {
                throw HTTPError.invalid("user", "must be a player's account id")
            }
            let reply = try await request.call(LeaderboardAPI.remove, ScorePath(game: game, userId: user))
            guard reply.ok else { throw ConsoleRefusal(reply) }
            return .redirect("/console/leaderboard?game=\(PercentEncoding.component(game))&removed=1")
        }
        guard request.segments.isEmpty else { throw HTTPError.notFound("No such leaderboard page.") }
        var rows: HTML = .empty
        if !game.isEmpty {
            let scores = try await request.fetch(LeaderboardAPI.top, GamePath(game: game)).items
            rows = HTML.join(
                scores.map { score in
                    """
                    <tr><td>\(score.name ?? "a player")</td><td>\(score.points)</td><td>
                    <form method="post" action="/console/leaderboard/remove" data-confirm="Remove this score?">\(request.csrfField)
                    <input type="hidden" name="game" value="\(game)"><input type="hidden" name="user" value="\(score.userId.uuidString.lowercased())">
                    <button class="danger">Remove</button></form></td></tr>
                    """
                })
        }
        let removed: HTML =
            request.value("removed") == "1" ? "<p class=\"notice\" role=\"status\">The score was removed.</p>" : .empty
        return .page(
            title: "Leaderboard",
            content: """
                <h1>Leaderboard</h1>
                \(removed)
                <form class="filters" method="get" action="/console/leaderboard"><label>Game <input name="game" value="\(game)"></label>
                <button>Show</button></form>
                <table><thead><tr><th>Player</th><th>Points</th><th></th></tr></thead>
                <tbody data-empty="No score in this game yet.">\(rows)</tbody></table>
                """)
    }
}
