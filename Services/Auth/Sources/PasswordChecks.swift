import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Password checks and hashing under every guard (failed-attempt back-off, a share of the
/// hashing threads per client): what login and the password change share.
struct PasswordChecks: Sendable {
    let hasher: BoundedPasswordHasher
    let throttle: LoginThrottle
    /// Password hashes in flight per client address.
    let hashSlots: InFlightLimiter
    /// A hash of a random password with the current parameters: unknown emails are checked
    /// against it, so they take as long as a wrong password.
    let dummyHash: String

    enum PasswordCheck: Sendable {
        /// The account or the address is backing off, or the account has its share of
        /// attempts in flight: nothing was checked.
        case wait(Int)
        case wrong
        case right(User, String)
    }

    /// Checks `password` against the account of `emailKey` under the failed-attempt guards
    /// (``LoginThrottle``): a place among the attempts in flight, then the account and the
    /// back-off read in one round trip, the hash, and the failure recorded before the place is
    /// given back. An unknown email is checked against a dummy hash: same work, same time, same
    /// answer.
    ///
    /// A password longer than any the policy accepts is refused before anything is hashed
    /// (422 naming `field`): no account can have it, and hashing a megabyte costs a third of a
    /// second.
    ///
    /// Who answers for a failure: `device`, the throttle key of a device that proved it signed
    /// in to this account before (``DeviceTokens``), for its own; every other client for the
    /// account's. So failures at one account never hold another account (not even one signed
    /// in from the same network), and the failures of others at an account never hold the
    /// devices its owner signed in on. Guessing from one network across many accounts is
    /// bounded by each account's back-off, the client's share of the hashing threads and the
    /// login rate per client address (`PIER_AUTH_LOGINS_PER_ADDRESS_PER_MINUTE`).
    func check(_ password: String, field: String, emailKey: String, device: String? = nil) async throws
        -> PasswordCheck
    {
        guard password.utf8.count <= 4 * PasswordPolicy.maximumLength, password.count <= PasswordPolicy.maximumLength else {
            throw HTTPError.invalid(field, "must be at most \(PasswordPolicy.maximumLength) characters")
        }
        let key = device ?? LoginThrottle.accountKey(emailKey)
        let checked = try await throttle.reserving(key) { () async throws -> PasswordCheck in
            let standing = try await throttle.lookUp(emailKey: emailKey, key: key)
            if let wait = standing.retry { return .wait(wait) }
            let failures = standing.failures
            guard throttle.admits(failures: failures, inFlight: standing.inFlight) else { return .wait(1) }
            // No account, or one without a password (signed up with Apple): the dummy hash. The
            // hash runs before anything else is decided, so every path costs one hash.
            let stored = standing.account
            let matches = try await hasher.verify(password, against: stored?.1 ?? dummyHash)
            guard matches, let (user, hash) = stored else {
                try await throttle.recordFailure(key)
                return .wrong
            }
            if failures > 0 { try await throttle.reset(key) }
            return .right(user, hash)
        }
        return checked ?? .wait(1)
    }

    /// Runs password hashing for `client` while it has fewer than its share of hashes in flight
    /// (`PIER_AUTH_HASHES_PER_ADDRESS`); beyond, 429 at once: one client flooding logins, even
    /// with its own valid password, cannot fill the hashing queue that everyone shares.
    func hashing<T: Sendable>(_ client: String, _ body: () async throws -> T) async throws -> T {
        guard let result = try await hashSlots.run(client, body) else {
            throw HTTPError.tooManyRequests(
                retryAfter: 1, "Too many password checks in progress from your network; try again in a second.")
        }
        return result
    }
}
