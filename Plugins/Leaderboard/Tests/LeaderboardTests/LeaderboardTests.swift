import Leaderboard
import LeaderboardAPI
import PierClient
import PierPluginTesting
import PierService
import PierTestBasics
import Testing

/// The leaderboard beside Pier's own plugins, driven as apps and the team drive it, with the
/// plugin kit: every part docs/plugins.md's larger example names.
@Suite(.serialized) struct LeaderboardTests {
    @Test func playersTheTeamAndTheAccountsLifecycle() async throws {
        let pier = try await TestPier.start(Plugin(LeaderboardService.self))
        let chess = GamePath(game: "chess")
        let ana = try await pier.user(name: "Ana")
        let ben = try await pier.user(name: "Ben")
        let guest = try await pier.anonymousUser()
        _ = try await ana.call(LeaderboardAPI.post, chess, body: NewScore(points: 40))
        _ = try await ben.call(LeaderboardAPI.post, chess, body: NewScore(points: 30))
        // A lower score keeps the best; an anonymous account plays too.
        let kept = try await ana.call(LeaderboardAPI.post, chess, body: NewScore(points: 10))
        #expect(kept.points == 40 && kept.name == "Ana")
        _ = try await guest.call(LeaderboardAPI.post, GamePath(game: "go"), body: NewScore(points: 7))
        // Anyone reads a game, best first, by the names the tokens carry; `/leaderboard/me` is
        // never the game "me".
        let top = try await pier.client().call(LeaderboardAPI.top, chess).items
        #expect(top.map(\.name) == ["Ana", "Ben"] && top.map(\.points) == [40, 30])
        #expect(try await ben.call(LeaderboardAPI.mine, NoParameters()).items.map(\.game) == ["chess"])
        // Two records: Ana's first score in chess, the guest's in go (Ben's 30 beat nobody).
        let records = try await pier.events(RecordBeaten.type, as: RecordBeaten.self)
        #expect(records.map(\.points) == [40, 7])

        // Refused in words, naming the field.
        await #expect { _ = try await ana.call(LeaderboardAPI.post, chess, body: NewScore(points: -1)) } throws: {
            ($0 as? PierError)?.fieldErrors.map(\.field) == ["points"]
        }
        await #expect { _ = try await ana.call(LeaderboardAPI.top, GamePath(game: "Chess!")) } throws: {
            ($0 as? PierError)?.fieldErrors.map(\.field) == ["game"]
        }
        // Support removes a score on the console page, in the audit log; a player may not.
        let benID = try #require(top.last?.userId)
        await #expect { try await ana.call(LeaderboardAPI.remove, ScorePath(game: "chess", userId: benID)) } throws: {
            ($0 as? PierError)?.status == 403
        }
        let console = try await pier.console(as: try await pier.staff(.support, name: "Sam"))
        #expect(try await console.get("/console/leaderboard?game=chess").html.contains("<td>Ben</td><td>30</td>"))
        let removed = try await console.post(
            "/console/leaderboard/remove", form: [("game", "chess"), ("user", benID.uuidString.lowercased())])
        #expect(removed.status == 303 && removed.location?.hasSuffix("removed=1") == true)
        let audit = try await pier.audit(of: LeaderboardService.self)
        #expect(audit.map(\.action.rawValue) == ["leaderboard.score_removed"] && audit.first?.subjectId == benID)
        #expect(try await pier.client().call(LeaderboardAPI.top, chess).items.map(\.name) == ["Ana"])

        // The guest merges into Ana's account: its score follows; Ana deletes hers: they go.
        let anaEmail = try #require(ana.auth.currentUser?.email)
        _ = try await guest.auth.merge { () async throws(PierError) in
            _ = try await guest.auth.login(email: anaEmail, password: TestPier.password)
        }
        #expect(
            await eventually { (try? await ana.call(LeaderboardAPI.mine, NoParameters()).items.map(\.game)) == ["chess", "go"] })
        try await ana.auth.deleteAccount(password: TestPier.password)
        #expect(await eventually { (try? await pier.client().call(LeaderboardAPI.top, chess).items.isEmpty) == true })
        await pier.stop()
    }
}
