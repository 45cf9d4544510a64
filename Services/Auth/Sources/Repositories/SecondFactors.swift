import PierModels
import PierPostgres
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The statements of second factors: an account's authenticator app (its sealed secret), its
/// recovery codes (hashed), and the MFA challenges a first factor opens.
struct SecondFactors: Sendable {
    let database: any PostgresExecutor

    init(_ database: any PostgresExecutor) { self.database = database }

    /// An account's authenticator app, its row locked.
    struct TOTPFactor: Sendable {
        let sealedSecret: [UInt8]
        let confirmed: Bool
        /// The last time step a code was accepted for: codes of that step or before are refused.
        let lastStep: Int?
    }

    func lockTOTP(of user: UUID) async throws -> TOTPFactor? {
        try await database.query(
            "SELECT sealed_secret, confirmed_at IS NOT NULL AS confirmed, last_step FROM auth.totp_factors WHERE user_id = \(user) FOR UPDATE"
        ).first.map { row in
            TOTPFactor(
                sealedSecret: try row.decode("sealed_secret", as: PostgresBytes.self).bytes,
                confirmed: try row.decode("confirmed"), lastStep: try row.decode("last_step"))
        }
    }

    /// Whether the account has a confirmed second factor (sign-ins then ask for a code).
    func isEnrolled(_ user: UUID) async throws -> Bool {
        try await database.query(
            "SELECT EXISTS (SELECT 1 FROM auth.totp_factors WHERE user_id = \(user) AND confirmed_at IS NOT NULL) AS enrolled"
        )[0].decode("enrolled")
    }

    /// Offers a new secret, replacing one offered before and never confirmed.
    func offer(_ sealed: [UInt8], to user: UUID) async throws {
        try await database.execute(
            """
            INSERT INTO auth.totp_factors (user_id, sealed_secret) VALUES (\(user), \(PostgresBytes(sealed)))
            ON CONFLICT (user_id) DO UPDATE SET sealed_secret = excluded.sealed_secret, created_at = now(), last_step = NULL
            WHERE auth.totp_factors.confirmed_at IS NULL
            """)
    }

    /// Records that a code of `step` was accepted (and, the first time, that enrolment is confirmed).
    func accepted(step: Int, of user: UUID) async throws {
        try await database.execute(
            """
            UPDATE auth.totp_factors SET last_step = \(step), confirmed_at = coalesce(confirmed_at, now())
            WHERE user_id = \(user)
            """)
    }

    /// Removes every second factor of the account: the app, the recovery codes, open challenges.
    /// True when there was a confirmed one.
    @discardableResult
    func removeAll(of user: UUID) async throws -> Bool {
        let removed = try await database.query(
            "DELETE FROM auth.totp_factors WHERE user_id = \(user) RETURNING confirmed_at IS NOT NULL AS confirmed")
        try await database.execute("DELETE FROM auth.recovery_codes WHERE user_id = \(user)")
        try await database.execute("DELETE FROM auth.mfa_challenges WHERE user_id = \(user)")
        return try removed.first?.decode("confirmed", as: Bool.self) ?? false
    }

    /// Replaces the account's recovery codes with these hashes.
    func replaceRecoveryCodes(of user: UUID, with hashes: [[UInt8]]) async throws {
        try await database.execute("DELETE FROM auth.recovery_codes WHERE user_id = \(user)")
        for hash in hashes {
            try await database.execute(
                "INSERT INTO auth.recovery_codes (user_id, code_hash) VALUES (\(user), \(PostgresBytes(hash)))")
        }
    }

    /// Spends the recovery code of `hash`: true when it was the account's and unused.
    func spendRecoveryCode(of user: UUID, hash: [UInt8]) async throws -> Bool {
        !(try await database.query(
            """
            UPDATE auth.recovery_codes SET used_at = now()
            WHERE user_id = \(user) AND code_hash = \(PostgresBytes(hash)) AND used_at IS NULL
            RETURNING 1
            """
        ).isEmpty)
    }

    /// The account's second factors as `GET /auth/mfa` answers them.
    func status(of user: UUID) async throws -> MFAStatus {
        let row = try await database.query(
            """
            SELECT (SELECT confirmed_at FROM auth.totp_factors WHERE user_id = \(user)) AS totp,
                   (SELECT count(*)::int FROM auth.recovery_codes WHERE user_id = \(user) AND used_at IS NULL) AS left
            """)[0]
        return MFAStatus(totpEnabledAt: try row.decode("totp"), recoveryCodesLeft: try row.decode("left"))
    }

    // MARK: - Challenges

    /// A first factor passed, waiting for the second.
    struct Challenge: Sendable {
        let user: UUID
        let amr: [String]
        let deviceName: String?
        let signedInAt: Date
        let live: Bool
        let failures: Int
    }

    /// Opens a challenge of `user` for the MFA token of `hash`, valid `seconds`; a few expired
    /// ones are swept on the way.
    func openChallenge(_ hash: [UInt8], of user: UUID, device: Sessions.Device, seconds: Int) async throws {
        try await database.execute(
            """
            DELETE FROM auth.mfa_challenges WHERE ctid IN (
                SELECT ctid FROM auth.mfa_challenges WHERE expires_at < now() LIMIT 8)
            """)
        try await database.execute(
            """
            INSERT INTO auth.mfa_challenges (token_hash, user_id, amr, device_name, signed_in_at, expires_at)
            VALUES (\(PostgresBytes(hash)), \(user), \(PostgresTextArray(device.amr))::text[], \(device.name),
                \(device.signedInAt), now() + make_interval(secs => \(seconds)))
            """)
    }

    func lockChallenge(_ hash: [UInt8]) async throws -> Challenge? {
        try await database.query(
            """
            SELECT user_id, amr, device_name, signed_in_at, expires_at > now() AS live, failures
            FROM auth.mfa_challenges WHERE token_hash = \(PostgresBytes(hash)) FOR UPDATE
            """
        ).first.map { row in
            Challenge(
                user: try row.decode("user_id"), amr: try row.decode("amr", as: PostgresTextArray.self).values,
                deviceName: try row.decode("device_name"), signedInAt: try row.decode("signed_in_at"),
                live: try row.decode("live"), failures: try row.decode("failures"))
        }
    }

    /// Counts a wrong code against the challenge; it ends at `limit`.
    func challengeFailed(_ hash: [UInt8], limit: Int) async throws {
        try await database.execute(
            "UPDATE auth.mfa_challenges SET failures = failures + 1 WHERE token_hash = \(PostgresBytes(hash))")
        try await database.execute(
            "DELETE FROM auth.mfa_challenges WHERE token_hash = \(PostgresBytes(hash)) AND failures >= \(limit)")
    }

    func endChallenge(_ hash: [UInt8]) async throws {
        try await database.execute("DELETE FROM auth.mfa_challenges WHERE token_hash = \(PostgresBytes(hash))")
    }

    /// Ends every open challenge of the account (its password changed, its sessions ended).
    func endChallenges(of user: UUID) async throws {
        try await database.execute("DELETE FROM auth.mfa_challenges WHERE user_id = \(user)")
    }
}

// MARK: - Approvals

extension SecondFactors {
    /// Where a session's ask to set up a team member's first second factor stands.
    enum Approval: Sendable, Equatable {
        case none
        /// Asked, not approved yet; the ask was made (and its link mailed) this long ago.
        case asked(secondsAgo: Int)
        case approved
    }

    /// The live session `session` of `user`: whether a second factor proved it, and where it
    /// signed in from (for the approval mail). Nil when it is not live.
    struct AskingSession: PostgresRowDecodable, Sendable {
        var secondFactor: Bool
        var device: String?
        var address: String?

        init(row: PostgresRow) throws {
            secondFactor = try row.decode("second_factor")
            (device, address) = (try row.decode("device_name"), try row.decode("client_address"))
        }
    }

    /// The session asking, nil when it is not `user`'s live one.
    func askingSession(_ session: UUID, of user: UUID) async throws -> AskingSession? {
        try await database.query(
            """
            SELECT 'mfa' = ANY(amr) AS second_factor, device_name, client_address FROM auth.sessions
            WHERE id = \(session) AND user_id = \(user) AND revoked_at IS NULL AND expires_at > now()
            """
        ).first?.decode(AskingSession.self)
    }

    func lockApproval(of session: UUID) async throws -> Approval {
        guard
            let row = try await database.query(
                """
                SELECT approved_at IS NOT NULL AS approved, expires_at > now() AS live,
                    extract(epoch FROM now() - asked_at)::int AS ago
                FROM auth.enrolment_approvals WHERE session_id = \(session) FOR UPDATE
                """
            ).first, try row.decode("live", as: Bool.self)
        else { return .none }
        return try row.decode("approved", as: Bool.self) ? .approved : .asked(secondsAgo: try row.decode("ago"))
    }

    /// Records (again) that `session` asks to set up a first second factor, for `seconds`.
    func ask(_ session: UUID, of user: UUID, seconds: Int) async throws {
        try await database.execute(
            """
            INSERT INTO auth.enrolment_approvals (session_id, user_id, expires_at)
            VALUES (\(session), \(user), now() + make_interval(secs => \(seconds)))
            ON CONFLICT (session_id) DO UPDATE SET asked_at = now(), approved_at = NULL, approved_by = NULL,
                expires_at = excluded.expires_at
            """)
    }

    /// Approves the live ask of `session` (of `user`, the session live too) for `seconds`; by
    /// `admin`, or by the mailed link when nil. False when no such ask waits.
    func approve(of user: UUID, session: UUID, by admin: UUID?, seconds: Int) async throws -> Bool {
        !(try await database.query(
            """
            UPDATE auth.enrolment_approvals SET approved_at = now(), approved_by = \(admin),
                expires_at = now() + make_interval(secs => \(seconds))
            WHERE user_id = \(user) AND session_id = \(session) AND approved_at IS NULL AND expires_at > now()
                AND EXISTS (SELECT 1 FROM auth.sessions s
                    WHERE s.id = session_id AND s.revoked_at IS NULL AND s.expires_at > now())
            RETURNING 1
            """
        ).isEmpty)
    }

    /// The live asks of `user` that wait for approval, oldest first: for an admin to approve.
    func asks(of user: UUID) async throws -> [EnrolmentAsk] {
        try await database.query(
            """
            SELECT a.session_id, a.asked_at, s.device_name, s.client_address FROM auth.enrolment_approvals a
            JOIN auth.sessions s ON s.id = a.session_id
            WHERE a.user_id = \(user) AND a.approved_at IS NULL AND a.expires_at > now()
                AND s.revoked_at IS NULL AND s.expires_at > now()
            ORDER BY a.asked_at
            """
        ).map {
            EnrolmentAsk(
                sessionId: try $0.decode("session_id"), askedAt: try $0.decode("asked_at"),
                deviceName: try $0.decode("device_name"),
                address: try $0.decode("client_address"))
        }
    }
}
