import Foundation
import PierModels
import PierPostgres
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import AuthService

/// Where a newer feature met the team's rules, as the outside found them: the last admin leaving
/// by deleting itself, support reading an admin's data, an anonymous account asked to confirm
/// what it cannot, and anonymous keep requests holding an address off its owner.
@Suite(.serialized) struct TeamBoundaryTests {
    /// Small pools: these run beside every other suite.
    static let settings = ["PIER_DB_POOL_SIZE": "3"]

    let staff = StaffTests()
    static let password = TakeoverTests.password

    @Test func theLastAdminCannotDeleteItself() async throws {
        try await AuthHarness.with(database: "pier_test_auth_last_admin", settings: Self.settings) { auth in
            let (admin, _) = try await staff.member(auth, .admin, "admin")
            let body = #"{"password":"\#(Self.password)"}"#
            let refused = try await auth.send("DELETE", "/auth/me", json: body, token: admin.accessToken)
            #expect(refused.status == 409 && refused.problem?.code == .lastAdmin, "\(refused.text)")
            #expect(try await auth.send("GET", "/auth/me", token: admin.accessToken).status == 200)
            // With another admin, it may go.
            _ = try await staff.member(auth, .admin, "second")
            #expect(try await auth.send("DELETE", "/auth/me", json: body, token: admin.accessToken).status == 204)
        }
    }

    /// A team member's export, sessions and identities are for admins, as every other staff
    /// action on a team member is; support still helps users.
    @Test func supportReadsNoTeamMembersData() async throws {
        try await AuthHarness.with(database: "pier_test_auth_support_reads", settings: Self.settings) { auth in
            let (admin, _) = try await staff.member(auth, .admin, "admin")
            let (support, _) = try await staff.member(auth, .support)
            let (user, _) = try await auth.register()
            for path in ["export", "sessions", "identities"] {
                let refused = try await auth.send("GET", "/auth/users/\(admin.user.id)/\(path)", token: support.accessToken)
                #expect(refused.status == 403 && refused.problem?.code == .forbidden, "\(path): \(refused.text)")
                let own = try await auth.send("GET", "/auth/users/\(user.user.id)/\(path)", token: support.accessToken)
                #expect(own.status == 200, "\(path): \(own.text)")
                let byAdmin = try await auth.send("GET", "/auth/users/\(support.user.id)/\(path)", token: admin.accessToken)
                #expect(byAdmin.status == 200, "\(path): \(byAdmin.text)")
            }
            // Refused before anything was recorded: the audit log shows no export of the admin.
            let exports = try await auth.pool.query(
                "SELECT count(*)::int AS n FROM auth.audit WHERE action = 'user.exported' AND target_id = \(admin.user.id.text())"
            )
            #expect(try exports[0].decode("n", as: Int.self) == 0)
        }
    }

    /// An anonymous account asked to confirm with a password is told it has none and needs none:
    /// never an answer that reads as its session having ended (PierClient would sign it out).
    @Test func anAnonymousAccountIsToldWhatReauthenticationNeeds() async throws {
        try await AuthHarness.with(database: "pier_test_auth_anonymous_reauth", settings: Self.settings) { auth in
            let session = try await AnonymousAccountTests.anonymous(auth)
            let reply = try await auth.send(
                "POST", "/auth/reauthenticate", json: #"{"password":"anything at all"}"#, token: session.accessToken)
            #expect(reply.status == 409 && reply.problem?.code == .anonymousAccount, "\(reply.text)")
            #expect(reply.problem?.detail?.contains("needs none") == true)
            #expect(try await AnonymousAccountTests.me(auth, session).status == 200)
        }
    }

    /// Anonymous accounts asking to be kept with an address, refused ones included, do not hold
    /// its owner's change of address to it.
    @Test func keepRequestsDoNotHoldAnAddressOffItsOwner() async throws {
        try await AuthHarness.with(database: "pier_test_auth_keep_hold", settings: Self.settings) { auth in
            let target = TakeoverTests.email("wanted")
            for _ in 0..<2 {
                let squatter = try await AnonymousAccountTests.anonymous(auth)
                for _ in 0..<4 { _ = try await AnonymousAccountTests.keep(auth, squatter, target) }
            }
            let (owner, _) = try await auth.register()
            let change = try await auth.send(
                "POST", "/auth/email/change", json: #"{"newEmail":"\#(target)"}"#, token: owner.accessToken)
            #expect(change.status == 202, "\(change.text)")
        }
    }
}
