#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `POST /auth/anonymous`: an account for this installation, with no address and no password.
public struct AnonymousSignInRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case installationId, deviceName, appAttest }
    public static let required = [["installationId"]]
    /// The app installation's id (the one it sends as `X-Installation-ID`): 1 to 128 visible
    /// ASCII characters. Sign-ups are counted per installation.
    public var installationId: String
    /// What the session list shows for this session ("Anna's iPhone").
    public var deviceName: String?
    /// An App Attest assertion by a key this installation attested: required when the server
    /// says `PIER_AUTH_APP_ATTEST=required`, checked when sent with `optional`.
    public var appAttest: AppAttestAssertion?
    public init(installationId: String, deviceName: String? = nil, appAttest: AppAttestAssertion? = nil) {
        self.installationId = installationId
        self.deviceName = deviceName
        self.appAttest = appAttest
    }
}

/// `POST /auth/app-attest/challenge`'s answer: what an attestation or an assertion is made over
/// (its SHA-256 is the `clientDataHash`).
public struct AppAttestChallenge: Codable, Sendable, Equatable {
    public var challenge: String
    /// Five minutes after it was given.
    public var expiresAt: Date
    public init(challenge: String, expiresAt: Date) {
        self.challenge = challenge
        self.expiresAt = expiresAt
    }
}

/// `POST /auth/app-attest/keys`: a key this installation generated and Apple attested
/// (`DCAppAttestService.attestKey(_:clientDataHash:)` over the SHA-256 of `challenge`).
public struct AppAttestKeyRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case installationId, keyId, attestation, challenge }
    public static let required = [["installationId"], ["keyId"], ["attestation"], ["challenge"]]
    public var installationId: String
    /// The key identifier `generateKey()` gave (base64).
    public var keyId: String
    /// The attestation object (base64 CBOR).
    public var attestation: String
    public var challenge: String
    public init(installationId: String, keyId: String, attestation: String, challenge: String) {
        self.installationId = installationId
        self.keyId = keyId
        self.attestation = attestation
        self.challenge = challenge
    }
}

/// `POST /auth/app-attest/installation-token`: an assertion of this installation's attested key,
/// exchanged for a token the other services accept instead (anonymous feedback's
/// `X-Installation-Token`).
public struct InstallationTokenRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case installationId, appAttest }
    public static let required = [["installationId"], ["appAttest"]]
    public var installationId: String
    public var appAttest: AppAttestAssertion
    public init(installationId: String, appAttest: AppAttestAssertion) {
        self.installationId = installationId
        self.appAttest = appAttest
    }
}

/// `POST /auth/app-attest/installation-token`'s answer: send `token` as `X-Installation-Token`
/// (with `X-Installation-ID`) until `expiresAt`, an hour after it was made.
public struct InstallationToken: Codable, Sendable, Equatable {
    public var token: String
    public var expiresAt: Date
    public init(token: String, expiresAt: Date) {
        self.token = token
        self.expiresAt = expiresAt
    }
}

/// `POST /auth/app-attest/keys`'s answer.
public struct AppAttestKey: Codable, Sendable, Equatable {
    public var keyId: String
    public init(keyId: String) { self.keyId = keyId }
}

/// An App Attest assertion (`DCAppAttestService.generateAssertion(_:clientDataHash:)` over the
/// SHA-256 of `challenge`) by an attested key.
public struct AppAttestAssertion: Codable, Sendable, StrictDecodable, Equatable {
    public enum CodingKeys: String, CodingKey { case keyId, assertion, challenge }
    public static let required = [["keyId"], ["assertion"], ["challenge"]]
    public var keyId: String
    /// The assertion object (base64 CBOR).
    public var assertion: String
    public var challenge: String
    public init(keyId: String, assertion: String, challenge: String) {
        self.keyId = keyId
        self.assertion = assertion
        self.challenge = challenge
    }
}

/// `POST /auth/anonymous/upgrade`: the address and password an anonymous account asks to keep.
public struct AnonymousUpgradeRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case email, password }
    public static let required = [["email"], ["password"]]
    public var email: String
    public var password: String
    public init(email: String, password: String) {
        self.email = email
        self.password = password
    }
}

/// `POST /auth/anonymous/upgrade`'s answer: where the link that makes the account permanent went.
public struct AnonymousUpgradeAnswer: Codable, Sendable, Equatable {
    /// The address the link was mailed to; the account stays anonymous until it is followed.
    public var sentTo: String
    public init(sentTo: String) { self.sentTo = sentTo }
}

/// `POST /auth/anonymous/merge/start`'s answer: the proof of the anonymous side of a merge.
public struct AnonymousMergeTicket: Codable, Sendable, Equatable {
    /// Spent by `POST /auth/anonymous/merge`, signed in to the other account after it was made.
    public var mergeToken: String
    /// Ten minutes after it was made; a newer one, or the anonymous session ending, ends it too.
    public var expiresAt: Date
    public init(mergeToken: String, expiresAt: Date) {
        self.mergeToken = mergeToken
        self.expiresAt = expiresAt
    }
}

/// `POST /auth/anonymous/merge`: the merge token the anonymous session got.
public struct AnonymousMergeRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case mergeToken }
    public static let required = [["mergeToken"]]
    public var mergeToken: String
    public init(mergeToken: String) { self.mergeToken = mergeToken }
}

/// `POST /auth/anonymous/merge`'s answer.
public struct AnonymousMergeAnswer: Codable, Sendable, Equatable {
    /// The anonymous account, now gone: what it held belongs to ``userId``.
    public var mergedUserId: UUID
    /// The account it was merged into (the caller's).
    public var userId: UUID
    public init(mergedUserId: UUID, userId: UUID) {
        self.mergedUserId = mergedUserId
        self.userId = userId
    }
}

extension ProblemCode {
    /// The server requires an App Attest assertion for this (`PIER_AUTH_APP_ATTEST=required`).
    public static let attestationRequired: ProblemCode = "attestation_required"
    /// The App Attest attestation or assertion did not verify (another app, another
    /// environment, an expired challenge, a replay); the field says which part.
    public static let invalidAttestation: ProblemCode = "invalid_attestation"
    /// The merge token is unknown, used, expired, or its anonymous session or account ended (or
    /// was kept meanwhile): ask for a new one from the anonymous session.
    public static let invalidMergeToken: ProblemCode = "invalid_merge_token"
    /// The address or identity an anonymous account asked to become permanent with belongs to
    /// another account. The problem's `offer` says what the app can propose: `sign_in` (to that
    /// account instead, leaving the anonymous one) and `merge` (sign in to it and bring what
    /// the anonymous account holds: `POST /auth/anonymous/merge/start`, then
    /// `POST /auth/anonymous/merge`).
    public static let identityTaken: ProblemCode = "identity_taken"
    /// The action needs a permanent account (a password, a second factor, a team role): make
    /// the anonymous account permanent first.
    public static let anonymousAccount: ProblemCode = "anonymous_account"
    /// Only an anonymous account can be made permanent; this one is already.
    public static let notAnonymous: ProblemCode = "not_anonymous"
}

extension AuthAPI {
    static let anonymous: [EndpointDefinition] = [
        signInAnonymously.definition, upgradeAnonymous.definition, startMerge.definition, mergeAnonymous.definition,
        appAttestChallenge.definition, appAttestKey.definition, installationToken.definition,
    ]

    public static let installationToken = Endpoint<NoParameters, InstallationTokenRequest, InstallationToken>(
        "POST", "/auth/app-attest/installation-token", access: .public, operation: "installationToken",
        summary: "Exchange an App Attest assertion for an installation token",
        description:
            "Checks the assertion as `POST /auth/anonymous` does (a key this installation attested, a fresh challenge, a counter that grows) and answers a token (an hour) that other services accept as the installation's proof: anonymous `POST /feedback` takes it as `X-Installation-Token` when PIER_FEEDBACK_APP_ATTEST asks for one. 404 when App Attest is off.",
        status: 201, answers: "Token made", problems: [.validationFailed, .invalidAttestation, .notFound])

    public static let appAttestChallenge = Endpoint<NoParameters, NoBody, AppAttestChallenge>(
        "POST", "/auth/app-attest/challenge", access: .public, operation: "appAttestChallenge",
        summary: "A challenge for App Attest",
        description:
            "What an App Attest attestation or assertion is made over: the app passes SHA-256(challenge) as `clientDataHash`. Valid five minutes; nothing is stored.",
        status: 201, answers: "Challenge made", problems: [])

    public static let appAttestKey = Endpoint<NoParameters, AppAttestKeyRequest, AppAttestKey>(
        "POST", "/auth/app-attest/keys", access: .public, operation: "attestKey",
        summary: "Register a key Apple attested for this installation",
        description:
            "Checks the attestation as Apple documents it (the certificate chain to Apple's App Attest root, the nonce, the key identifier, the App ID among PIER_AUTH_APP_ATTEST_APP_IDS, a zero counter, the environment's aaguid) and keeps the key for the installation; its assertions then sign the installation's anonymous sign-ups. 422 invalid_attestation names the part at fault (a key attested before too); 429 once the client's network attested PIER_AUTH_APP_ATTEST_KEYS_PER_ADDRESS_PER_DAY keys in a day (a genuine device can make keys, and so installations, without limit: this is what bounds them); 404 when App Attest is off.",
        status: 201, answers: "Key registered", problems: [.validationFailed, .invalidAttestation, .rateLimited, .notFound])

    public static let signInAnonymously = Endpoint<NoParameters, AnonymousSignInRequest, AuthSession>(
        "POST", "/auth/anonymous", access: .public, operation: "signInAnonymously",
        summary: "Start without signing up: an anonymous account for this installation",
        description:
            "A session (`amr: [\"anon\"]`, `user.isAnonymous`) for a new account with no address and no password. Every service treats it as signed in. Limited per installation (PIER_AUTH_ANONYMOUS_PER_INSTALLATION_PER_DAY) and per client address (PIER_AUTH_ANONYMOUS_PER_ADDRESS_PER_HOUR); an account left unused for PIER_AUTH_ANONYMOUS_TTL_DAYS is deleted. It becomes permanent, with the same id, through `POST /auth/anonymous/upgrade`, Sign in with Apple or OpenID Connect sent with its bearer token, or a passkey.",
        status: 201, answers: "Signed in anonymously",
        problems: [.validationFailed, .rateLimited, .attestationRequired, .invalidAttestation])

    public static let upgradeAnonymous = Endpoint<NoParameters, AnonymousUpgradeRequest, AnonymousUpgradeAnswer>(
        "POST", "/auth/anonymous/upgrade", access: .signedIn, operation: "upgradeAnonymous",
        summary: "Keep an anonymous account with an address and a password",
        description:
            "Mails a link (24 h) to the address; when it is followed (`POST /auth/email/change/confirm`) the account takes the address (verified) and the password, keeps its id and everything it holds, and every other session of it ends. Until then nothing changes. An address another account has is 409 identity_taken.",
        status: 202, answers: "Link mailed",
        problems: [.validationFailed, .weakPassword, .identityTaken, .notAnonymous, .rateLimited, .accountDeleted])

    public static let startMerge = Endpoint<NoParameters, NoBody, AnonymousMergeTicket>(
        "POST", "/auth/anonymous/merge/start", access: .signedIn, operation: "startAnonymousMerge",
        summary: "Prove the anonymous side of a merge",
        description:
            "Sent with the anonymous account's bearer token after `identity_taken` offered `merge`: a merge token (10 minutes, single use) for this session. Then sign in to the account that has the address or identity (its password and second factor, Apple, OpenID Connect or a passkey) and send the token with that account's bearer token to `POST /auth/anonymous/merge`. A newer token, a sign-out of this session or the account becoming permanent ends it.",
        status: 201, answers: "Merge token made", problems: [.notAnonymous, .accountDeleted])

    public static let mergeAnonymous = Endpoint<NoParameters, AnonymousMergeRequest, AnonymousMergeAnswer>(
        "POST", "/auth/anonymous/merge", access: .signedIn, operation: "mergeAnonymous",
        summary: "Merge an anonymous account into the signed-in one",
        description:
            "Sent with the bearer token of a sign-in made after the merge token was: the anonymous account is deleted and everything it held (feedback and its replies, App Store purchases, grants) moves to the caller's account within seconds (`account.merged`, webhook `user.merged`, the audit log's `user.merged`). Subscriptions of both sides are kept; the better status wins. 422 invalid_merge_token: unknown, used, expired, or its session ended; 401 reauthentication_required: the sign-in is older than the token; 409 anonymous_account: the caller is anonymous.",
        answers: "Merged",
        problems: [.validationFailed, .invalidMergeToken, .reauthenticationRequired, .anonymousAccount, .sessionRevoked])
}
