import Foundation
import PierModels
import PierService
import Testing

/// Accounts as the team types them, and numbers as people read them: what the console's pages
/// and plugins' pages share.
@Suite struct AccountLookupTests {
    static let people = ["sam@example.com", "samantha@example.com", "robin@example.com"].map {
        User(id: UUID(), email: $0, displayName: nil, role: .user, createdAt: Date(), emailVerified: true)
    }

    /// auth's search as it answers: addresses starting with the text (case aside).
    func search(_ query: UserSearch) async throws -> UserList {
        UserList(items: Self.people.filter { ($0.email ?? "").hasPrefix(query.query.lowercased()) }, more: false)
    }

    @Test func anAccountIsFoundByIdAddressOrAUniqueStart() async throws {
        let (sam, _, robin) = (Self.people[0], Self.people[1], Self.people[2])
        #expect(try await AccountLookup.find(robin.id.uuidString, search: search) == .account(robin.id))
        // An address that starts another is still that account.
        #expect(try await AccountLookup.find("SAM@example.com", search: search) == .account(sam.id))
        #expect(try await AccountLookup.find("rob", search: search) == .account(robin.id))
        #expect(
            try await AccountLookup.find("sa", search: search)
                == .nobody("Several accounts match “sa”: type more of the address."))
        #expect(try await AccountLookup.find("kim", search: search) == .nobody("No account matches “kim”."))
        // Exactly: a start is not enough (a rule must not target whoever "rob" is).
        #expect(try await AccountLookup.find("rob", exactly: true, search: search) == .nobody("No account has the address rob."))
        #expect(try await AccountLookup.find("robin@example.com", exactly: true, search: search) == .account(robin.id))
    }

    @Test func accountsThatCannotBeReadAreLeftOut() async {
        struct Gone: Error {}
        let known = Dictionary(uniqueKeysWithValues: Self.people.map { ($0.id, $0) })
        let ids = Set(Self.people.map(\.id) + [UUID()])
        let names = await AccountLookup.names(ids) { id in
            guard let user = known[id] else { throw Gone() }
            return user
        }
        #expect(names == Dictionary(uniqueKeysWithValues: Self.people.map { ($0.id, $0.email) }))
    }

    @Test func numbersReadAsPeopleWriteThem() {
        #expect(JSONValue.text(of: 3) == "3")
        #expect(JSONValue.text(of: -0.0) == "0")
        #expect(JSONValue.text(of: 2.5) == "2.5")
        // Too large for a whole number of 15 digits: as Swift prints it, never a trap.
        #expect(JSONValue.text(of: 1e20) == "1e+20")
        #expect(JSONValue.text(of: -9.5e18) == "-9.5e+18")
        #expect(JSONValue.text(of: .infinity) == "inf")
    }
}
