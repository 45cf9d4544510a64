import PierCrypto
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

/// `/auth/passkeys…`: passkeys as a first factor, usernameless or by address, and the caller's
/// list of them. Adding one is a sensitive action (``Reauthentication``); options and sign-ins
/// count against the client's login rate.
struct PasskeyController: Sendable {
    let useCases: AuthUseCases
    let flows: PasskeyFlows
    let tokens: TokenIssuer
    let reauthentication: Reauthentication
    let devices: DeviceTokens
    let loginRate: TokenBuckets
    let desk: MailDesk
    let logger: Logger

    /// The COSE algorithms offered, in order of preference: ES256, EdDSA, RS256.
    static let algorithms = [-7, -8, -257]

    /// `POST /auth/passkeys/register/options`.
    func registrationOptions(_ request: Request, _ context: ServiceRequestContext, _ body: ReauthenticationRequest?)
        async throws -> EndpointReply<PasskeyCreationOptions>
    {
        let principal = try context.caller()
        try await reauthentication.require(principal, body, request: request)
        let user = try await caller(principal)
        try Self.requireProvenAddress(user)
        try await SecondFactorController.requireApproval(
            user, principal, useCases.secondFactors, desk: desk, logger: logger)
        let challenge = try await flows.challenge(.register, of: user.id)
        let options = PasskeyCreationOptions(
            rp: .init(id: flows.rp.id, name: flows.rp.name),
            user: .init(id: Base64.urlEncoded(user.id.bytes), name: user.handle, displayName: user.displayName ?? user.handle),
            challenge: Base64.urlEncoded(challenge),
            pubKeyCredParams: Self.algorithms.map { .init(type: "public-key", alg: $0) },
            timeout: PasskeyFlows.challengeSeconds * 1000,
            excludeCredentials: try await flows.existing(of: user.id).map { PasskeyDescriptor(id: Base64.urlEncoded($0)) },
            authenticatorSelection: .init(residentKey: "required", requireResidentKey: true, userVerification: "preferred"),
            attestation: "none")
        return try .json(options, headers: ["Cache-Control": "no-store"])
    }

    /// `POST /auth/passkeys/register`: the new passkey, checked and kept (201).
    func register(_ request: Request, _ context: ServiceRequestContext, _ body: PasskeyRegistration) async throws
        -> JSONResponse<Passkey>
    {
        let principal = try context.caller()
        var errors: [Problem.FieldError] = []
        let name = Names.clean(body.name, field: "name", into: &errors).flatMap { $0.isEmpty ? nil : $0 } ?? "Passkey"
        let clientData = Self.bytes(body.response.clientDataJSON, "response.clientDataJSON", 4096, &errors)
        let attestation = Self.bytes(body.response.attestationObject, "response.attestationObject", 16384, &errors)
        let id = Self.bytes(body.id, "id", 1366, &errors)
        if body.type != "public-key" { errors.append(.init(field: "type", message: "must be public-key")) }
        let transports = (body.response.transports ?? []).prefix(8).map { String($0.prefix(32)) }
        guard errors.isEmpty, let clientData, let attestation, let id else { throw HTTPError.invalid(errors) }
        let user = try await caller(principal)
        try Self.requireProvenAddress(user)
        try await SecondFactorController.requireApproval(
            user, principal, useCases.secondFactors, desk: desk, logger: logger)
        let rp = flows.rp
        let challenge: [UInt8]
        do { challenge = try WebAuthn.clientData(clientData, .create, rp) } catch { throw Self.refusal(error, status: 422) }
        let outcome = try await flows.register(
            user, session: principal.sessionID, challenge: challenge, name: name, transports: transports
        ) {
            () throws(WebAuthn.Failure) -> WebAuthn.NewCredential in
            let credential = try WebAuthn.registration(attestationObject: attestation, clientDataJSON: clientData, rp: rp)
            guard credential.id == id else { throw WebAuthn.Failure(field: "id", reason: "is not the attested credential's id") }
            return credential
        }
        switch outcome {
        case .added(let passkey):
            desk.queued("passkey-added", link: nil)
            logger.info("passkey added", [("user_id", .string(user.id.text())), ("passkey_id", .string(passkey.id.text()))])
            return JSONResponse(passkey, status: 201)
        case .refused(let failure):
            throw Self.refusal(failure, status: 422)
        case .staleChallenge:
            throw Self.refusal(
                .init(
                    field: "response.clientDataJSON",
                    reason: "carries a challenge that is unknown, used or expired: ask for new options"),
                status: 422)
        case .alreadyRegistered:
            throw HTTPError.conflict("This passkey is registered already.")
        }
    }

    /// `POST /auth/passkeys/login/options {email?}`: a challenge; with an address, the
    /// account's passkeys (an unknown address gets a credential that matches nothing, the same
    /// each time, so the answer does not say whether it has an account).
    func loginOptions(_ request: Request, _ context: ServiceRequestContext, _ body: PasskeyOptionsRequest?) async throws
        -> EndpointReply<PasskeyRequestOptions>
    {
        try loginRate.takeLogin(request)
        var allowed: [[UInt8]] = []
        if let email = body?.email {
            let key = EmailAddress.key(email)
            guard key.utf8.count <= 320 else { throw HTTPError.invalid("email", "must be at most 320 characters") }
            // One statement whether or not the address has an account, and the same shape for
            // every address: its passkeys, or one that stands for none.
            allowed = try await PasskeyCredentials(flows.database).credentialIDs(emailKey: key)
            if allowed.isEmpty {
                allowed = [Array(HMACSHA256.authenticate(Array(key.utf8), key: tokens.keys.refreshSecret).prefix(16))]
            }
        }
        return try Self.requestOptions(try await flows.challenge(.login, of: nil), allowed, rp: flows.rp)
    }

    /// `POST /auth/passkeys/login`: the assertion checked, the session answered as login does.
    func login(_ request: Request, _ context: ServiceRequestContext, _ body: PasskeyAssertion) async throws
        -> AuthSessionResponse
    {
        try loginRate.takeLogin(request)
        var errors: [Problem.FieldError] = []
        let deviceName = SessionsController.deviceName(body.deviceName, into: &errors)
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        let proof = try Self.proof(body, rp: flows.rp)
        let refreshToken = tokens.newRefreshToken()
        switch try await flows.signIn(
            proof, refreshToken: refreshToken, device: Sessions.Device(name: deviceName, address: request.clientAddress))
        {
        case .opening(let user, .opened(let session, let noticed), let device):
            if noticed { desk.queued("new-sign-in", link: nil) }
            logger.info("signed in with a passkey", [("user_id", .string(user.id.text()))])
            return AuthSessionResponse(
                value: try tokens.session(
                    user, sessionID: session, refreshToken: refreshToken, authenticatedAt: device.signedInAt, amr: device.amr))
        case .opening(_, .challenged(let challenge), _):
            throw HTTPError.mfaRequired(challenge)
        case .failed(let failure):
            throw Self.refusal(failure, logger: logger)
        }
    }

    /// `POST /auth/reauthenticate/passkey-options`: a challenge for a passkey of the caller's, to
    /// confirm a sensitive action with (the assertion goes in the action's `passkey` member).
    func reauthenticationOptions(_ request: Request, _ context: ServiceRequestContext) async throws -> EndpointReply<
        PasskeyRequestOptions
    > {
        let user = try context.caller().userID
        let credentials = try await PasskeyCredentials(flows.database).credentialIDs(of: user, usable: true)
        guard !credentials.isEmpty else { throw HTTPError.conflict("The account has no passkey: confirm another way.") }
        return try Self.requestOptions(try await flows.challenge(.reauthenticate, of: user), credentials, rp: flows.rp)
    }

    /// `GET /auth/passkeys`.
    func list(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<ItemList<Passkey>> {
        JSONResponse(ItemList(try await flows.list(of: try context.caller().userID)))
    }

    /// `PATCH /auth/passkeys/{id} {name}`.
    func rename(_ request: Request, _ context: ServiceRequestContext, _ path: PathID, _ body: PasskeyRename) async throws
        -> JSONResponse<Passkey>
    {
        let principal = try context.caller()
        let id = path.id
        var errors: [Problem.FieldError] = []
        guard let name = Names.clean(body.name, field: "name", into: &errors), !name.isEmpty, errors.isEmpty else {
            throw HTTPError.invalid(errors.isEmpty ? [.init(field: "name", message: "must not be empty")] : errors)
        }
        guard let passkey = try await flows.rename(id, of: principal.userID, to: name) else {
            throw HTTPError.notFound("No such passkey.")
        }
        return JSONResponse(passkey)
    }

    /// `DELETE /auth/passkeys/{id}`: a sensitive action.
    func remove(_ request: Request, _ context: ServiceRequestContext, _ path: PathID, _ body: ReauthenticationRequest?)
        async throws -> EndpointReply<NoContent>
    {
        let principal = try context.caller()
        let id = path.id
        try await reauthentication.require(principal, body, request: request)
        guard try await flows.remove(id, of: try await caller(principal)) else { throw HTTPError.notFound("No such passkey.") }
        desk.queued("passkey-removed", link: nil)
        return .noContent()
    }

    // MARK: - Helpers

    /// A passkey is a way in that outlives the password: an account whose address was never
    /// proven may have been registered by someone else before its owner came, and a passkey of
    /// theirs would survive the owner's claim. Only a proven address adds one, or an account
    /// without an address (anonymous, or kept by a passkey): nobody can claim it by one.
    static func requireProvenAddress(_ user: User) throws {
        guard user.emailVerified || user.email == nil else {
            throw HTTPError(403, code: .emailUnverified, detail: "Confirm your email address before adding a passkey.")
        }
    }

    private func caller(_ principal: Principal) async throws -> User {
        guard let user = try await useCases.users.user(principal.userID) else {
            throw HTTPError.unauthorized("The account no longer exists.", code: .accountDeleted)
        }
        return user
    }

    /// A base64url member, decoded; a field error when it is not, or longer than `limit` bytes.
    static func bytes(_ text: String, _ field: String, _ limit: Int, _ errors: inout [Problem.FieldError]) -> [UInt8]? {
        guard text.utf8.count <= limit * 4 / 3 + 4, let bytes = Base64.urlDecoded(text), !bytes.isEmpty, bytes.count <= limit
        else {
            errors.append(.init(field: field, message: "must be base64url, at most \(limit) bytes"))
            return nil
        }
        return bytes
    }

    /// Request options for `challenge`, naming the passkeys that may answer it.
    static func requestOptions(_ challenge: [UInt8], _ credentials: [[UInt8]], rp: WebAuthn.RelyingParty) throws
        -> EndpointReply<PasskeyRequestOptions>
    {
        try .json(
            PasskeyRequestOptions(
                rpId: rp.id, challenge: Base64.urlEncoded(challenge), timeout: PasskeyFlows.challengeSeconds * 1000,
                userVerification: "preferred", allowCredentials: credentials.map { PasskeyDescriptor(id: Base64.urlEncoded($0)) }),
            headers: ["Cache-Control": "no-store"])
    }

    /// The assertion's members decoded and its client data read (type, origin, challenge); 422
    /// naming the member (under `prefix`, when it is nested) when one is malformed, 401 when the
    /// client data is not a sign-in's for this relying party.
    static func proof(_ body: PasskeyAssertion, rp: WebAuthn.RelyingParty, prefix: String = "") throws -> PasskeyProof {
        var errors: [Problem.FieldError] = []
        let clientData = bytes(body.response.clientDataJSON, prefix + "response.clientDataJSON", 4096, &errors)
        let authenticatorData = bytes(body.response.authenticatorData, prefix + "response.authenticatorData", 4096, &errors)
        let signature = bytes(body.response.signature, prefix + "response.signature", 1024, &errors)
        let id = bytes(body.id, prefix + "id", 1366, &errors)
        let userHandle = body.response.userHandle.flatMap { $0.isEmpty ? nil : $0 }.map {
            bytes($0, prefix + "response.userHandle", 64, &errors) ?? []
        }
        if body.type != "public-key" { errors.append(.init(field: prefix + "type", message: "must be public-key")) }
        guard errors.isEmpty, let clientData, let authenticatorData, let signature, let id else {
            throw HTTPError.invalid(errors)
        }
        let challenge: [UInt8]
        do { challenge = try WebAuthn.clientData(clientData, .get, rp) } catch {
            throw refusal(.refused(error), prefix: prefix)
        }
        return PasskeyProof(
            credentialID: id, userHandle: userHandle, clientData: clientData, authenticatorData: authenticatorData,
            signature: signature, challenge: challenge, rp: rp)
    }

    /// 401 `invalid_passkey` naming the member (under `prefix`) that made the assertion fail.
    static func refusal(_ failure: PasskeyProof.Failure, prefix: String = "", logger: Logger? = nil) -> HTTPError {
        let refused: WebAuthn.Failure
        switch failure {
        case .refused(let reason):
            logger?.info("passkey refused", [("reason", .string(reason.reason))])
            refused = reason
        case .staleChallenge:
            refused = .init(
                field: "response.clientDataJSON",
                reason: "carries a challenge that is unknown, used or expired: ask for new options")
        case .unknownCredential:
            refused = .init(field: "id", reason: "is not a passkey of this server (removed?) or of this account")
        case .suspended:
            refused = .init(
                field: "id", reason: "is a suspended passkey (its counter once went backwards): sign in another way and remove it"
            )
        case .counterWentBack:
            logger?.warning("passkey counter went backwards; suspended", [])
            refused = .init(
                field: "response.authenticatorData", reason: "has a counter that went backwards: the passkey is suspended")
        }
        return refusal(refused, status: 401, prefix: prefix)
    }

    static func refusal(_ failure: WebAuthn.Failure, status: Int, prefix: String = "") -> HTTPError {
        HTTPError(
            status, code: .invalidPasskey, detail: "The passkey was refused: \(prefix + failure.field) \(failure.reason).",
            errors: [.init(field: prefix + failure.field, message: failure.reason)])
    }
}
