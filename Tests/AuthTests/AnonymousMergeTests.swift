import Foundation
import PierHTTP
import PierModels
import PierPostgres
import PierTestSupport
import Testing

@testable import AuthService

/// Merging an anonymous account into the account that has the address it asked for: the merge
/// token proves the anonymous side, a sign-in made after it proves the other, and every order an
/// attacker would choose is refused. Each test on a fresh database.
@Suite(.serialized) struct AnonymousMergeTests {
    typealias Anonymous = AnonymousAccountTests

    func withService(_ body: (AuthHarness) async throws -> Void) async throws {
        try await AuthHarness.with(database: "pier_test_auth_merge", settings: [:], body)
    }

    /// A permanent account with the address and the test password.
    static func registered(_ auth: AuthHarness, _ email: String) async throws -> AuthSession {
        let reply = try await auth.send(
            "POST", "/auth/register", json: #"{"email":"\#(email)","password":"\#(Anonymous.password)"}"#)
        guard reply.status == 201 else { throw TestFailure("register answered \(reply.status): \(reply.text)") }
        return try reply.decode(AuthSession.self)
    }

    static func start(_ auth: AuthHarness, _ session: AuthSession) async throws -> Reply {
        try await auth.send("POST", "/auth/anonymous/merge/start", token: session.accessToken)
    }

    static func merge(_ auth: AuthHarness, _ token: String, bearer: String) async throws -> Reply {
        try await auth.send("POST", "/auth/anonymous/merge", json: #"{"mergeToken":"\#(token)"}"#, token: bearer)
    }

    /// A sign-in of `email` made in a later second than now (`auth_time` counts in seconds).
    static func laterSignIn(_ auth: AuthHarness, _ email: String) async throws -> AuthSession {
        let second = Int(Date().timeIntervalSince1970)
        #expect(await eventually { Int(Date().timeIntervalSince1970) > second })
        return try await Anonymous.login(auth, email).decode(AuthSession.self)
    }

    static func count(_ auth: AuthHarness, _ sql: PostgresQuery) async throws -> Int {
        try await auth.pool.query(sql)[0].decode("n", as: Int.self)
    }

    @Test func theTakenAddressOffersAMergeThatMovesTheAccountOnce() async throws {
        try await withService { auth in
            let email = Anonymous.email("owner")
            let owner = try await Self.registered(auth, email)
            let anonymous = try await Anonymous.anonymous(auth)
            let taken = try await Anonymous.keep(auth, anonymous, email)
            #expect(taken.status == 409 && taken.problem?.code == .identityTaken, "\(taken.text)")
            #expect(taken.problem?.offer == ["sign_in", "merge"])

            let started = try await Self.start(auth, anonymous)
            #expect(started.status == 201, "\(started.text)")
            let ticket = try started.decode(AnonymousMergeTicket.self)
            #expect(ticket.expiresAt > Date() && ticket.expiresAt < Date().addingTimeInterval(601))
            let signedIn = try await Self.laterSignIn(auth, email)
            let merged = try await Self.merge(auth, ticket.mergeToken, bearer: signedIn.accessToken)
            #expect(merged.status == 200, "\(merged.text)")
            #expect(try merged.decode(AnonymousMergeAnswer.self) == .init(mergedUserId: anonymous.user.id, userId: owner.user.id))

            // The anonymous account is gone, its tokens refused; the event, the audit entry and the
            // figure say where it went.
            #expect(try await Self.count(auth, "SELECT count(*)::int AS n FROM auth.users WHERE id = \(anonymous.user.id)") == 0)
            #expect(
                await eventually { (try? await Anonymous.me(auth, anonymous).status) == 401 })
            let refresh = try await auth.send(
                "POST", "/auth/refresh", json: #"{"refreshToken":"\#(anonymous.refreshToken)"}"#)
            #expect(refresh.status == 401)
            let event = try await auth.pool.query(
                "SELECT payload::text AS payload FROM events.events WHERE type = 'account.merged'")
            #expect(event.count == 1)
            let payload = try JSONDecoder().decode(
                AccountMergedPayload.self, from: Data(try event[0].decode("payload", as: String.self).utf8))
            #expect(payload.userId == anonymous.user.id && payload.intoUserId == owner.user.id)
            #expect(
                try await Self.count(
                    auth,
                    "SELECT count(*)::int AS n FROM auth.audit WHERE action = 'user.merged' AND subject_id = \(owner.user.id) AND actor_id = \(owner.user.id)"
                ) == 1)
            let day = try await Self.accounts(auth).database.withConnection {
                try await Users($0).signUpsPerDay(days: 1)
            }
            #expect(day.map(\.merged) == [1] && day.map(\.anonymous) == [1] && day.map(\.signUps) == [2])

            // The token again: refused, and nothing more happens.
            let replayed = try await Self.merge(auth, ticket.mergeToken, bearer: signedIn.accessToken)
            #expect(replayed.status == 422 && replayed.problem?.code == .invalidMergeToken, "\(replayed.text)")
            #expect(try await Self.count(auth, "SELECT count(*)::int AS n FROM events.events WHERE type = 'account.merged'") == 1)
            // The owner's session and password are untouched.
            #expect(try await Anonymous.me(auth, owner).status == 200)
        }
    }

    struct AccountMergedPayload: Decodable {
        var userId: UUID
        var intoUserId: UUID
    }

    static func accounts(_ auth: AuthHarness) -> Accounts { Anonymous.accounts(auth) }

    /// The proof of the other side must be a sign-in made after the token, by a permanent account
    /// whose session still lives; the anonymous side must still be signed in and anonymous.
    @Test func eachSideMustStillProveItself() async throws {
        try await withService { auth in
            let email = Anonymous.email("owner")
            let owner = try await Self.registered(auth, email)
            let anonymous = try await Anonymous.anonymous(auth)
            let early = try await Anonymous.login(auth, email).decode(AuthSession.self)
            let second = Int(Date().timeIntervalSince1970)
            #expect(await eventually { Int(Date().timeIntervalSince1970) > second })
            let ticket = try await Self.start(auth, anonymous).decode(AnonymousMergeTicket.self)

            // A sign-in from before the token (a stolen bearer, a session left open): refused.
            for old in [owner, early] {
                let refused = try await Self.merge(auth, ticket.mergeToken, bearer: old.accessToken)
                #expect(refused.status == 401 && refused.problem?.code == .reauthenticationRequired, "\(refused.text)")
            }
            // The anonymous account itself, or another anonymous one: refused.
            let stranger = try await Anonymous.anonymous(auth)
            for bearer in [anonymous.accessToken, stranger.accessToken] {
                let refused = try await Self.merge(auth, ticket.mergeToken, bearer: bearer)
                #expect(refused.status == 409 && refused.problem?.code == .anonymousAccount, "\(refused.text)")
            }
            // Garbled or unknown tokens are named, never a 500.
            let fresh = try await Self.laterSignIn(auth, email)
            for body in [
                #"{}"#, #"{"mergeToken":""}"#, #"{"mergeToken":7}"#, #"{"mergeToken":"\#(String(repeating: "a", count: 300))"}"#,
            ] {
                let refused = try await auth.send("POST", "/auth/anonymous/merge", json: body, token: fresh.accessToken)
                #expect(
                    refused.status == 422 && refused.problem?.errors?.map(\.field) == ["mergeToken"], "\(body): \(refused.text)")
            }
            let unknown = try await Self.merge(auth, #"made-up\u0000token"#, bearer: fresh.accessToken)
            #expect(unknown.status == 422 && unknown.problem?.errors?.map(\.field) == ["mergeToken"], "\(unknown.text)")
            let madeUp = try await Self.merge(auth, "made-up-token", bearer: fresh.accessToken)
            #expect(madeUp.status == 422 && madeUp.problem?.code == .invalidMergeToken, "\(madeUp.text)")
            // Without a bearer at all: 401.
            let anyone = try await auth.send("POST", "/auth/anonymous/merge", json: #"{"mergeToken":"\#(ticket.mergeToken)"}"#)
            #expect(anyone.status == 401)
            // A permanent account cannot start one.
            let permanent = try await Self.start(auth, owner)
            #expect(permanent.status == 409 && permanent.problem?.code == .notAnonymous, "\(permanent.text)")

            // Everything refused changed nothing: the token still merges, with the fresh sign-in.
            let merged = try await Self.merge(auth, ticket.mergeToken, bearer: fresh.accessToken)
            #expect(merged.status == 200, "\(merged.text)")
        }
    }

    /// A two-step account: its password alone gives no bearer (only an `mfa_required` token),
    /// and that token is no bearer for the merge.
    @Test func mergingIntoATwoStepAccountNeedsItsSecondFactor() async throws {
        try await withService { auth in
            let email = Anonymous.email("owner")
            _ = try await Self.registered(auth, email)
            try await auth.pool.execute("UPDATE auth.users SET email_verified_at = now() WHERE email = \(email)")
            let owner = try await Anonymous.login(auth, email).decode(AuthSession.self)
            let secret = try await SecondFactorTests.turnOn(auth, owner.accessToken)
            let anonymous = try await Anonymous.anonymous(auth)
            let ticket = try await Self.start(auth, anonymous).decode(AnonymousMergeTicket.self)
            let second = Int(Date().timeIntervalSince1970)
            #expect(await eventually { Int(Date().timeIntervalSince1970) > second })
            let password = try await Anonymous.login(auth, email)
            #expect(password.status == 401 && password.problem?.code == .mfaRequired, "\(password.text)")
            let mfaToken = try #require(password.problem?.mfaToken)
            let refused = try await Self.merge(auth, ticket.mergeToken, bearer: mfaToken)
            #expect(refused.status == 401, "\(refused.text)")
            #expect(try await Self.count(auth, "SELECT count(*)::int AS n FROM auth.users WHERE id = \(anonymous.user.id)") == 1)

            let verified = try await auth.send(
                "POST", "/auth/mfa/verify",
                json: #"{"mfaToken":"\#(mfaToken)","code":"\#(SecondFactorTests.code(secret, step: 1))"}"#)
            #expect(verified.status == 200, "\(verified.text)")
            let merged = try await Self.merge(
                auth, ticket.mergeToken, bearer: try verified.decode(AuthSession.self).accessToken)
            #expect(merged.status == 200, "\(merged.text)")
        }
    }

    /// What ends a token: the anonymous side signing out everywhere, the other side signing
    /// out everywhere (its bearer), a newer token, the account kept with an address meanwhile,
    /// its ten minutes.
    @Test func aTokenEndsWithEitherSideSignedOutOrTheAccountKept() async throws {
        try await withService { auth in
            let email = Anonymous.email("owner")
            _ = try await Self.registered(auth, email)

            // The anonymous side signs out everywhere after asking.
            let first = try await Anonymous.anonymous(auth)
            let firstTicket = try await Self.start(auth, first).decode(AnonymousMergeTicket.self)
            #expect(try await auth.send("POST", "/auth/logout/all", token: first.accessToken).status == 204)
            let signedIn = try await Self.laterSignIn(auth, email)
            let afterAnonymousLeft = try await Self.merge(auth, firstTicket.mergeToken, bearer: signedIn.accessToken)
            #expect(afterAnonymousLeft.status == 422 && afterAnonymousLeft.problem?.code == .invalidMergeToken)

            // The other side signs out everywhere between its sign-in and the merge.
            let second = try await Anonymous.anonymous(auth)
            let secondTicket = try await Self.start(auth, second).decode(AnonymousMergeTicket.self)
            let other = try await Self.laterSignIn(auth, email)
            #expect(try await auth.send("POST", "/auth/logout/all", token: other.accessToken).status == 204)
            let afterOtherLeft = try await Self.merge(auth, secondTicket.mergeToken, bearer: other.accessToken)
            #expect(afterOtherLeft.status == 401, "\(afterOtherLeft.text)")

            // A newer token of the same session ends the older.
            let older = try await Self.start(auth, second).decode(AnonymousMergeTicket.self)
            let newer = try await Self.start(auth, second).decode(AnonymousMergeTicket.self)
            let fresh = try await Self.laterSignIn(auth, email)
            #expect(try await Self.merge(auth, older.mergeToken, bearer: fresh.accessToken).problem?.code == .invalidMergeToken)

            // Expired.
            try await auth.pool.execute("UPDATE auth.merge_tokens SET expires_at = now() - interval '1 second'")
            #expect(try await Self.merge(auth, newer.mergeToken, bearer: fresh.accessToken).problem?.code == .invalidMergeToken)

            // Kept with another address through its mailed link after asking: no longer anonymous.
            let third = try await Anonymous.anonymous(auth)
            let thirdTicket = try await Self.start(auth, third).decode(AnonymousMergeTicket.self)
            let address = Anonymous.email("own")
            #expect(try await Anonymous.keep(auth, third, address).status == 202)
            let link = try await auth.mailedToken(to: address, containing: Anonymous.link)
            #expect(try await Anonymous.confirm(auth, link).status == 200)
            let latest = try await Self.laterSignIn(auth, email)
            let afterKept = try await Self.merge(auth, thirdTicket.mergeToken, bearer: latest.accessToken)
            #expect(afterKept.status == 422 && afterKept.problem?.code == .invalidMergeToken, "\(afterKept.text)")
            #expect(try await Self.count(auth, "SELECT count(*)::int AS n FROM auth.merges") == 0)
        }
    }
}
