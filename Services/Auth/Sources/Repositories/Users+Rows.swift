import PierPostgres

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What the locking reads of ``Users`` answer, each read from its select list by name here.
extension Users {
    /// The account of an address: its id, its address and whether that was proven.
    struct AddressOwner: PostgresRowDecodable, Sendable {
        var id: UUID
        var email: String
        var verified: Bool

        init(row: PostgresRow) throws {
            (id, email, verified) = (try row.decode("id"), try row.decode("email"), try row.decode("verified"))
        }
    }

    /// An account asked to move to a new address: its address now (none when anonymous), whether
    /// it is anonymous, and whether another account has the new one.
    struct ChangeStanding: PostgresRowDecodable, Sendable {
        var email: String?
        var anonymous: Bool
        var taken: Bool

        init(row: PostgresRow) throws {
            (email, anonymous, taken) = (try row.decode("email"), try row.decode("anonymous"), try row.decode("taken"))
        }
    }

    /// An account asked to be verified: with how many verification mails went to it lately.
    struct VerificationStanding: PostgresRowDecodable, Sendable {
        var id: UUID
        var email: String
        var verified: Bool
        var recent: Int

        init(row: PostgresRow) throws {
            (id, email) = (try row.decode("id"), try row.decode("email"))
            (verified, recent) = (try row.decode("verified"), try row.decode("recent"))
        }
    }

    /// An account the operator makes an admin: its role and its live sessions.
    struct AdminStanding: PostgresRowDecodable, Sendable {
        var id: UUID
        var role: String
        var liveSessions: Int

        init(row: PostgresRow) throws {
            (id, role, liveSessions) = (try row.decode("id"), try row.decode("role"), try row.decode("sessions"))
        }
    }

    /// An account's ways in besides one identity: its password, its other identities.
    struct WaysIn: PostgresRowDecodable, Sendable {
        var hasPassword: Bool
        var otherIdentities: Int

        init(row: PostgresRow) throws {
            (hasPassword, otherIdentities) = (try row.decode("has_password"), try row.decode("others"))
        }
    }
}
