import PierAudit
import PierHTTP
import PierIdentity
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `/auth/users…`: the team finds an account (by its address or the start of it, the start of
/// its display name, or its id) and helps it: its sessions and identities, ending sessions,
/// mails, disabling (staff); its role and deletion (admins, after re-authentication). Every
/// change is in the audit log (`GET /auth/audit`).
struct UsersController: Sendable {
    let useCases: AuthUseCases
    let reauthentication: Reauthentication
    let desk: MailDesk
    let logger: Logger

    /// The longest query: an address's limit.
    static let queryLimit = 254

    /// `GET /auth/users?q=…&limit=…` (limit 1–100, default 20), by address.
    func search(_ request: Request, _ context: ServiceRequestContext, _ search: UserSearch) async throws
        -> JSONResponse<UserList>
    {
        let principal = try context.caller()
        var errors: [Problem.FieldError] = []
        let query = search.query.trimmingWhitespace()
        if query.isEmpty {
            errors.append(.init(field: "q", message: "is required: an address or its start, a display name's start, or an id"))
        } else if query.count > Self.queryLimit {
            errors.append(.init(field: "q", message: "must be at most \(Self.queryLimit) characters"))
        } else if query.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            errors.append(.init(field: "q", message: "must not contain control characters"))
        }
        let limit = search.limit ?? 20
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        let found = try await useCases.users.search(query, limit: limit)
        // Who looked, and how much they saw; never what they typed (an address).
        logger.info(
            "accounts looked up", [("staff_id", .string(principal.userID.text())), ("found", .int(min(found.count, limit)))])
        return JSONResponse(UserList(items: Array(found.prefix(limit)), more: found.count > limit))
    }

    /// `GET /auth/team`: the support and admin accounts that are not disabled.
    func team(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<ItemList<User>> {
        _ = try context.caller()
        return JSONResponse(ItemList(try await useCases.users.team()))
    }

    /// `GET /auth/users/stats?days=N` (1–366, 30 by default): sign-ups each UTC day of the last
    /// N, today included (an index range of those days' accounts), and the number of accounts.
    func stats(_ request: Request, _ context: ServiceRequestContext, _ query: DaysQuery) async throws
        -> JSONResponse<SignUpStats>
    {
        _ = try context.caller()
        let days = query.days ?? 30
        let users = Users(useCases.database)
        return JSONResponse(SignUpStats(days: try await users.signUpsPerDay(days: days), total: try await users.count()))
    }

    /// `GET /auth/users/{id}`: one account as its owner sees it, with its role and whether it is
    /// disabled.
    func user(_ request: Request, _ context: ServiceRequestContext, _ path: PathID) async throws -> JSONResponse<User> {
        _ = try context.caller()
        return JSONResponse(try await existing(path.id))
    }

    /// `GET /auth/users/{id}/sessions`: its live sessions, the most recently used first.
    /// A team member's are for admins to see, as every other staff action on them is theirs.
    func sessions(_ request: Request, _ context: ServiceRequestContext, _ path: PathID) async throws
        -> JSONResponse<ItemList<SessionInfo>>
    {
        let user = try await existing(path.id)
        try await adminsForStaff { try StaffActions.mayAct(on: user, try context.auditActor()) }
        return JSONResponse(ItemList(try await useCases.sessions.list(of: user.id, current: nil)))
    }

    /// `GET /auth/users/{id}/identities`: the providers it signs in with.
    func identities(_ request: Request, _ context: ServiceRequestContext, _ path: PathID) async throws
        -> JSONResponse<ItemList<LinkedIdentity>>
    {
        let user = try await existing(path.id)
        try await adminsForStaff { try StaffActions.mayAct(on: user, try context.auditActor()) }
        return JSONResponse(ItemList(try await useCases.identities.linked(of: user.id)))
    }

    /// `GET /auth/users/{id}/mfa`: whether the account has two-step sign-in, how many recovery
    /// codes it has left (never the secret or the codes), and for a team member, the sessions
    /// that wait for approval to set up their first.
    func secondFactor(_ request: Request, _ context: ServiceRequestContext, _ path: PathID) async throws
        -> JSONResponse<MFAStatus>
    {
        let user = try await existing(path.id)
        let factors = SecondFactors(useCases.database)
        var status = try await factors.status(of: user.id)
        if user.role.isStaff { status.awaitingApproval = try await factors.asks(of: user.id) }
        return JSONResponse(status)
    }

    /// `POST /auth/users/{id}/mfa/approve {sessionId}` (admins): the team member's session that
    /// waits to set up its first second factor may, for 30 minutes (what the mailed link does).
    /// 204; 404 when that session does not wait. Audited.
    func approveSecondFactor(_ request: Request, _ context: ServiceRequestContext, _ path: PathID, _ body: EnrolmentApproval)
        async throws -> EndpointReply<NoContent>
    {
        let actor = try context.auditActor()
        let id = path.id
        let session = body.sessionId
        switch try await adminsForStaff({ try await useCases.staff.approveSecondFactor(of: id, session: session, by: actor) }) {
        case nil: throw HTTPError.notFound("No such account.")
        case false?: throw HTTPError.notFound("That session of the account does not wait to set up two-step sign-in.")
        case true?:
            logger.info("second factor set-up approved by an admin", [("user_id", .string(id.text()))])
            return .noContent()
        }
    }

    /// `GET /auth/users/{id}/passkeys`: its passkeys (names, when used, synced, suspended).
    func passkeys(_ request: Request, _ context: ServiceRequestContext, _ path: PathID) async throws
        -> JSONResponse<ItemList<Passkey>>
    {
        let user = try await existing(path.id)
        return JSONResponse(ItemList(try await useCases.passkeys.list(of: user.id)))
    }

    /// `DELETE /auth/users/{id}/sessions` (all, and its pending resets and changes of address)
    /// or `…/sessions/{session}`: ended at once, their tokens refused everywhere within the
    /// revocation bound.
    func endSessions(_ context: ServiceRequestContext, of id: UUID, only session: UUID?) async throws
        -> JSONResponse<SessionsEnded>
    {
        let actor = try context.auditActor()
        guard let ended = try await adminsForStaff({ try await useCases.staff.endSessions(of: id, only: session, by: actor) })
        else {
            throw HTTPError.notFound("No such account.")
        }
        if session != nil && ended == 0 { throw HTTPError.notFound("No such live session.") }
        logger.info("sessions ended by the team", [("user_id", .string(id.text())), ("sessions", .int(ended))])
        return JSONResponse(SessionsEnded(ended: ended))
    }

    /// `DELETE /auth/users/{id}/mfa` (staff, re-authenticated): the account's owner lost their
    /// authenticator app and recovery codes; sign-ins ask the password alone again. Audited, and
    /// the owner is mailed (someone talking the team into it still needs the password).
    func removeSecondFactor(
        _ request: Request, _ context: ServiceRequestContext, _ path: PathID, _ body: ReauthenticationRequest?
    ) async throws -> EndpointReply<NoContent> {
        let principal = try context.staff()
        let id = path.id
        try await reauthentication.require(principal, body, request: request)
        let actor = try context.auditActor()
        switch try await adminsForStaff({ try await useCases.staff.removeSecondFactor(of: id, by: actor, mails: desk.mails) }) {
        case nil: throw HTTPError.notFound("No such account.")
        case false?: throw HTTPError.notFound("The account has no second factor.")
        case true?:
            desk.queued("mfa-disabled", link: nil)
            logger.info("second factor removed by the team", [("user_id", .string(id.text()))])
            return .noContent()
        }
    }

    /// `POST /auth/users/{id}/mail {mail: "password-reset" | "verification"}` → 202.
    func mail(_ request: Request, _ context: ServiceRequestContext, _ path: PathID, _ body: StaffMailRequest) async throws
        -> EndpointReply<NoContent>
    {
        let actor = try context.auditActor()
        let id = path.id
        guard let kind = StaffMail(rawValue: body.mail) else {
            throw HTTPError.invalid("mail", "must be password-reset or verification")
        }
        switch try await useCases.staff.sendMail(kind, to: id, by: actor, desk: desk) {
        case .missing: throw HTTPError.notFound("No such account.")
        case .alreadyVerified: throw HTTPError.conflict("The account's address is verified already.")
        case .noAddress: throw HTTPError.conflict("The account has no address to mail (it is anonymous, or kept by a passkey).")
        case .tooMany(let seconds):
            throw HTTPError.tooManyRequests(
                retryAfter: seconds, "The team sent this account \(StaffActions.mailsPerHour) mails within the hour; wait.")
        case .queued:
            desk.queued(kind == .passwordReset ? "reset-password" : "verify-email", link: nil)
            logger.info("mail sent by the team", [("user_id", .string(id.text())), ("mail", .string(kind.rawValue))])
            return .empty(202)
        }
    }

    /// `POST /auth/users/{id}/disable` and `…/enable`: a disabled account's sessions end and it
    /// cannot sign in or refresh (403 `account_disabled`) until enabled.
    func setDisabled(_ disabled: Bool) -> @Sendable (Request, ServiceRequestContext, PathID) async throws -> JSONResponse<User> {
        { [useCases, logger] _, context, path in
            let actor = try context.auditActor()
            let id = path.id
            switch try await adminsForStaff({ try await useCases.staff.setDisabled(id, disabled, by: actor) }) {
            case .missing: throw HTTPError.notFound("No such account.")
            case .refused(let why): throw HTTPError.conflict(why)
            case .done(let user, let ended):
                logger.info(
                    disabled ? "account disabled" : "account enabled",
                    [("user_id", .string(id.text())), ("sessions", .int(ended))])
                return JSONResponse(user)
            }
        }
    }

    /// `PUT /auth/users/{id}/role {role, password?}` (admins; the password, or a sign-in within
    /// 5 minutes): the account's sessions end, whoever holds them.
    func setRole(_ request: Request, _ context: ServiceRequestContext, _ path: PathID, _ body: RoleChange) async throws
        -> JSONResponse<User>
    {
        let principal = try context.admin()
        let id = path.id
        guard let role = AccountRole(rawValue: body.role) else {
            throw HTTPError.invalid("role", "must be one of user, support, admin")
        }
        try await reauthentication.require(principal, body.confirmation, request: request)
        switch try await useCases.staff.setRole(of: id, to: role, by: try context.auditActor()) {
        case .missing: throw HTTPError.notFound("No such account.")
        case .unchanged(let user): return JSONResponse(user)
        case .addressUnverified:
            throw HTTPError.conflict(
                "A team role needs an account whose address is verified: send it a verification mail first.",
                code: .addressUnverified)
        case .anonymous: throw HTTPError.anonymousAccount("A team role")
        case .lastAdmin: throw HTTPError.conflict("This is the last admin account; make another admin first.", code: .lastAdmin)
        case .changed(let user, let ended):
            logger.info(
                "role changed",
                [("user_id", .string(id.text())), ("role", .string(role.rawValue)), ("sessions", .int(ended))])
            return JSONResponse(user)
        }
    }

    /// `DELETE /auth/users/{id} [{password}]` (admins, re-authenticated): the account and every
    /// service's data about it, as if its owner had deleted it.
    func delete(_ request: Request, _ context: ServiceRequestContext, _ path: PathID, _ body: ReauthenticationRequest?)
        async throws -> EndpointReply<NoContent>
    {
        let principal = try context.admin()
        let id = path.id
        try await reauthentication.require(principal, body, request: request)
        do {
            let actor = try context.auditActor()
            guard try await adminsForStaff({ try await useCases.staff.delete(id, by: actor, mails: desk.mails) }) else {
                throw HTTPError.notFound("No such account.")
            }
        } catch is StaffActions.LastAdmin {
            throw HTTPError.conflict("This is the last admin account; make another admin first.", code: .lastAdmin)
        }
        desk.queued("account-deleted", link: nil)
        logger.info("account deleted by the team", [("user_id", .string(id.text()))])
        return .noContent()
    }

    /// The account `id`, or 404.
    private func existing(_ id: UUID) async throws -> User {
        guard let user = try await useCases.users.user(id) else { throw HTTPError.notFound("No such account.") }
        return user
    }
}

/// The team's action on an account, refused (403 `forbidden`) when it is a team member's and the
/// caller is not an admin.
func adminsForStaff<T>(_ action: () async throws -> T) async throws -> T {
    do {
        return try await action()
    } catch is StaffActions.AdminsOnly {
        throw HTTPError(403, code: .forbidden, detail: "Only an admin can do this to a team member's account.")
    }
}
