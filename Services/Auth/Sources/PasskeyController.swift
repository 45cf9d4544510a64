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
        async throws -> Response
    {
        let principal = try context.caller()
        try await reauthentication.require(principal, password: body?.password, code: body?.code, request: request)
        let user = try await caller(principal)
        try Self.requireProvenAddress(user)
        let challenge = try await flows.challenge("register", of: user.id)
        let options = PasskeyCreationOptions(
            rp: .init(id: flows.rp.id, name: flows.rp.name),
            user: .init(id: Base64.urlEncoded(user.id.bytes), name: user.email, displayName: user.displayName ?? user.email),
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
        let rp = flows.rp
        let challenge: [UInt8]
        do { challenge = try WebAuthn.clientData(clientData, .create, rp) } catch { throw Self.refusal(error, status: 422) }
        let outcome = try await flows.register(user, challenge: challenge, name: name, transports: transports) {
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
            throw Self.staleChallenge(status: 422)
        case .alreadyRegistered:
            throw HTTPError.conflict("This passkey is registered already.")
        }
    }

    /// `POST /auth/passkeys/login/options {email?}`: a challenge; with an address, the
    /// account's passkeys (an unknown address gets a credential that matches nothing, the same
    /// each time, so the answer does not say whether it has an account).
    func loginOptions(_ request: Request, _ context: ServiceRequestContext, _ body: PasskeyOptionsRequest?) async throws
        -> Response
    {
        try takeRate(request)
        var allowed: [PasskeyDescriptor] = []
        if let email = body?.email {
            let key = EmailAddress.key(email)
            guard key.utf8.count <= 320 else { throw HTTPError.invalid("email", "must be at most 320 characters") }
            let ids: [[UInt8]]
            if let user = try await useCases.users.id(emailKey: key) {
                ids = try await flows.existing(of: user)
            } else {
                ids = []
            }
            // The same shape for every address: its passkeys, or one that stands for none.
            allowed =
                (ids.isEmpty ? [Array(HMACSHA256.authenticate(Array(key.utf8), key: tokens.keys.refreshSecret).prefix(16))] : ids)
                .map { PasskeyDescriptor(id: Base64.urlEncoded($0)) }
        }
        let challenge = try await flows.challenge("login", of: nil)
        let options = PasskeyRequestOptions(
            rpId: flows.rp.id, challenge: Base64.urlEncoded(challenge), timeout: PasskeyFlows.challengeSeconds * 1000,
            userVerification: "preferred", allowCredentials: allowed)
        return try .json(options, headers: ["Cache-Control": "no-store"])
    }

    /// `POST /auth/passkeys/login`: the assertion checked, the session answered as login does.
    func login(_ request: Request, _ context: ServiceRequestContext, _ body: PasskeyAssertion) async throws
        -> AuthSessionResponse
    {
        try takeRate(request)
        var errors: [Problem.FieldError] = []
        let deviceName = SessionsController.deviceName(body.deviceName, into: &errors)
        let clientData = Self.bytes(body.response.clientDataJSON, "response.clientDataJSON", 4096, &errors)
        let authenticatorData = Self.bytes(body.response.authenticatorData, "response.authenticatorData", 4096, &errors)
        let signature = Self.bytes(body.response.signature, "response.signature", 1024, &errors)
        let id = Self.bytes(body.id, "id", 1366, &errors)
        let userHandle = body.response.userHandle.flatMap { $0.isEmpty ? nil : $0 }.map {
            Self.bytes($0, "response.userHandle", 64, &errors) ?? []
        }
        if body.type != "public-key" { errors.append(.init(field: "type", message: "must be public-key")) }
        guard errors.isEmpty, let clientData, let authenticatorData, let signature, let id else {
            throw HTTPError.invalid(errors)
        }
        let rp = flows.rp
        let challenge: [UInt8]
        do { challenge = try WebAuthn.clientData(clientData, .get, rp) } catch { throw Self.refusal(error, status: 401) }
        let refreshToken = tokens.newRefreshToken()
        let outcome = try await flows.signIn(
            credentialID: id, userHandle: userHandle, challenge: challenge, refreshToken: refreshToken,
            device: Sessions.Device(name: deviceName, address: request.clientAddress)
        ) { (publicKey: [UInt8]) throws(WebAuthn.Failure) -> WebAuthn.AuthenticatorData in
            try WebAuthn.assertion(
                authenticatorData: authenticatorData, clientDataJSON: clientData, signature: signature, publicKey: publicKey,
                rp: rp)
        }
        switch outcome {
        case .opening(let user, .opened(let session, let noticed), let device):
            if noticed { desk.queued("new-sign-in", link: nil) }
            logger.info("signed in with a passkey", [("user_id", .string(user.id.text()))])
            return AuthSessionResponse(
                value: try tokens.session(
                    user, sessionID: session, refreshToken: refreshToken, authenticatedAt: device.signedInAt, amr: device.amr))
        case .opening(_, .challenged(let token), _):
            throw HTTPError.mfaRequired(token)
        case .refused(let failure):
            logger.info("passkey refused", [("reason", .string(failure.reason))])
            throw Self.refusal(failure, status: 401)
        case .staleChallenge:
            throw Self.staleChallenge(status: 401)
        case .unknownCredential:
            throw Self.refusal(.init(field: "id", reason: "is not a passkey of this server (removed?)"), status: 401)
        case .suspended:
            throw Self.refusal(
                .init(
                    field: "id",
                    reason: "is a suspended passkey (its counter once went backwards): sign in another way and remove it"),
                status: 401)
        case .counterWentBack:
            logger.warning("passkey counter went backwards; suspended", [])
            throw Self.refusal(
                .init(field: "response.authenticatorData", reason: "has a counter that went backwards: the passkey is suspended"),
                status: 401)
        }
    }

    /// `GET /auth/passkeys`.
    func list(_ request: Request, _ context: ServiceRequestContext) async throws -> JSONResponse<ItemList<Passkey>> {
        JSONResponse(ItemList(try await flows.list(of: try context.caller().userID)))
    }

    /// `PATCH /auth/passkeys/{id} {name}`.
    func rename(_ request: Request, _ context: ServiceRequestContext, _ body: PasskeyRename) async throws
        -> JSONResponse<Passkey>
    {
        let principal = try context.caller()
        let id = try context.parameters.require("id", as: UUID.self)
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
    func remove(_ request: Request, _ context: ServiceRequestContext, _ body: ReauthenticationRequest?) async throws
        -> Response
    {
        let principal = try context.caller()
        let id = try context.parameters.require("id", as: UUID.self)
        try await reauthentication.require(principal, password: body?.password, code: body?.code, request: request)
        guard try await flows.remove(id, of: try await caller(principal)) else { throw HTTPError.notFound("No such passkey.") }
        desk.queued("passkey-removed", link: nil)
        return .noContent
    }

    // MARK: - Helpers

    /// A passkey is a way in that outlives the password: an account whose address was never
    /// proven may have been registered by someone else before its owner came, and a passkey of
    /// theirs would survive the owner's claim. Only a proven address adds one.
    static func requireProvenAddress(_ user: User) throws {
        guard user.emailVerified else {
            throw HTTPError(403, code: .emailUnverified, detail: "Confirm your email address before adding a passkey.")
        }
    }

    private func takeRate(_ request: Request) throws {
        let rate = loginRate.take(request.clientKey)
        guard rate.allowed else {
            throw HTTPError.tooManyRequests(
                retryAfter: rate.retryAfter, "Too many logins from your network; try again in \(rate.retryAfter) s.")
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

    static func refusal(_ failure: WebAuthn.Failure, status: Int) -> HTTPError {
        HTTPError(
            status, code: .invalidPasskey, detail: "The passkey was refused: \(failure.field) \(failure.reason).",
            errors: [.init(field: failure.field, message: failure.reason)])
    }

    static func staleChallenge(status: Int) -> HTTPError {
        refusal(
            .init(
                field: "response.clientDataJSON",
                reason: "carries a challenge that is unknown, used or expired: ask for new options"),
            status: status)
    }
}
