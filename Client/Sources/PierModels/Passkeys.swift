#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Passkeys (WebAuthn Level 3) over JSON: the options are WebAuthn's
// `PublicKeyCredentialCreationOptionsJSON` and `PublicKeyCredentialRequestOptionsJSON` (binary
// values in base64url), what `navigator.credentials.create/get` and Apple's
// `ASAuthorizationPlatformPublicKeyCredentialProvider` take; the answers are the credentials'
// JSON forms (`toJSON()` in a browser).

/// `POST /auth/passkeys/register/options`: what the authenticator is asked to create.
public struct PasskeyCreationOptions: Codable, Sendable, Equatable {
    public struct RelyingParty: Codable, Sendable, Equatable {
        public var id: String
        public var name: String
        public init(id: String, name: String) {
            self.id = id
            self.name = name
        }
    }
    public struct UserEntity: Codable, Sendable, Equatable {
        /// The account's id as 16 bytes, base64url: the credential's user handle.
        public var id: String
        public var name: String
        public var displayName: String
        public init(id: String, name: String, displayName: String) {
            self.id = id
            self.name = name
            self.displayName = displayName
        }
    }
    public struct Parameter: Codable, Sendable, Equatable {
        public var type: String
        /// COSE: -7 ES256, -8 EdDSA, -257 RS256.
        public var alg: Int
        public init(type: String, alg: Int) {
            self.type = type
            self.alg = alg
        }
    }
    public struct Selection: Codable, Sendable, Equatable {
        public var residentKey: String
        public var requireResidentKey: Bool
        public var userVerification: String
        public init(residentKey: String, requireResidentKey: Bool, userVerification: String) {
            self.residentKey = residentKey
            self.requireResidentKey = requireResidentKey
            self.userVerification = userVerification
        }
    }

    public var rp: RelyingParty
    public var user: UserEntity
    /// 32 random bytes, base64url: single use, for 5 minutes.
    public var challenge: String
    public var pubKeyCredParams: [Parameter]
    /// Milliseconds.
    public var timeout: Int
    /// The account's passkeys: an authenticator holding one makes no second.
    public var excludeCredentials: [PasskeyDescriptor]
    public var authenticatorSelection: Selection
    public var attestation: String

    public init(
        rp: RelyingParty, user: UserEntity, challenge: String, pubKeyCredParams: [Parameter], timeout: Int,
        excludeCredentials: [PasskeyDescriptor], authenticatorSelection: Selection, attestation: String
    ) {
        self.rp = rp
        self.user = user
        self.challenge = challenge
        self.pubKeyCredParams = pubKeyCredParams
        self.timeout = timeout
        self.excludeCredentials = excludeCredentials
        self.authenticatorSelection = authenticatorSelection
        self.attestation = attestation
    }
}

/// A credential named in options: its id, base64url.
public struct PasskeyDescriptor: Codable, Sendable, Equatable {
    public var type: String
    public var id: String
    public init(id: String) {
        type = "public-key"
        self.id = id
    }
}

/// `POST /auth/passkeys/login/options`: what the authenticator is asked to sign.
public struct PasskeyRequestOptions: Codable, Sendable, Equatable {
    public var rpId: String
    public var challenge: String
    public var timeout: Int
    public var userVerification: String
    /// Empty: any passkey of this site the device holds (usernameless); with an email, that
    /// account's.
    public var allowCredentials: [PasskeyDescriptor]
    public init(rpId: String, challenge: String, timeout: Int, userVerification: String, allowCredentials: [PasskeyDescriptor]) {
        self.rpId = rpId
        self.challenge = challenge
        self.timeout = timeout
        self.userVerification = userVerification
        self.allowCredentials = allowCredentials
    }
}

/// `POST /auth/passkeys/login/options` (optional body): an address, to sign in to that account.
public struct PasskeyOptionsRequest: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case email }
    public var email: String?
    public init(email: String? = nil) { self.email = email }
}

/// `POST /auth/passkeys/register`: the new credential as the authenticator made it.
public struct PasskeyRegistration: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey {
        case id, rawId, type, response, name, authenticatorAttachment, clientExtensionResults
    }
    public static let required = [["id"], ["type"], ["response"]]
    public struct Response: Codable, Sendable {
        public var clientDataJSON: String
        public var attestationObject: String
        public var transports: [String]?
        public init(clientDataJSON: String, attestationObject: String, transports: [String]? = nil) {
            self.clientDataJSON = clientDataJSON
            self.attestationObject = attestationObject
            self.transports = transports
        }
    }
    /// The credential id, base64url.
    public var id: String
    public var rawId: String?
    /// `public-key`.
    public var type: String
    public var response: Response
    /// What the list shows ("iPhone"); by default "Passkey".
    public var name: String?
    public var authenticatorAttachment: String?
    public var clientExtensionResults: JSONValue?
    public init(id: String, response: Response, name: String? = nil) {
        self.id = id
        rawId = id
        type = "public-key"
        self.response = response
        self.name = name
    }
}

/// `POST /auth/passkeys/login`: the assertion the authenticator signed.
public struct PasskeyAssertion: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey {
        case id, rawId, type, response, deviceName, authenticatorAttachment, clientExtensionResults
    }
    public static let required = [["id"], ["type"], ["response"]]
    public struct Response: Codable, Sendable {
        public var clientDataJSON: String
        public var authenticatorData: String
        public var signature: String
        /// The account's id the passkey was made for (base64url), when the authenticator says.
        public var userHandle: String?
        public init(clientDataJSON: String, authenticatorData: String, signature: String, userHandle: String? = nil) {
            self.clientDataJSON = clientDataJSON
            self.authenticatorData = authenticatorData
            self.signature = signature
            self.userHandle = userHandle
        }
    }
    public var id: String
    public var rawId: String?
    public var type: String
    public var response: Response
    public var deviceName: String?
    public var authenticatorAttachment: String?
    public var clientExtensionResults: JSONValue?
    public init(id: String, response: Response, deviceName: String? = nil) {
        self.id = id
        rawId = id
        type = "public-key"
        self.response = response
        self.deviceName = deviceName
    }
}

/// One of the account's passkeys.
public struct Passkey: Codable, Sendable, Equatable, Identifiable {
    public var id: UUID
    public var name: String
    public var createdAt: Date
    public var lastUsedAt: Date?
    /// Synced to the user's other devices (iCloud Keychain, Google Password Manager).
    public var backedUp: Bool
    /// Its signature counter went backwards once (a cloned authenticator?): it signs nobody in.
    public var suspended: Bool
    public init(id: UUID, name: String, createdAt: Date, lastUsedAt: Date?, backedUp: Bool, suspended: Bool) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.backedUp = backedUp
        self.suspended = suspended
    }
}

/// `PATCH /auth/passkeys/{id}`.
public struct PasskeyRename: Codable, Sendable, StrictDecodable {
    public enum CodingKeys: String, CodingKey { case name }
    public static let required = [["name"]]
    public var name: String
    public init(name: String) { self.name = name }
}
