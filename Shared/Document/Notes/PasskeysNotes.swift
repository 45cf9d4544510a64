import PierModels

extension Notes {
    /// The notes of the passkeys types, by component name.
    static let passkeys: [String: SchemaNotes] = [
        "PasskeyDescriptor": SchemaNotes(
            members: [
                "type": ["enum": ["public-key"]],
                "id": ["description": "base64url"],
            ]),
        "PasskeyCreationOptions": SchemaNotes(
            summary: "WebAuthn's PublicKeyCredentialCreationOptionsJSON",
            members: [
                "challenge": ["description": "base64url"],
                "attestation": ["enum": ["none"]],
            ]),
        "PasskeyCreationOptionsUserEntity": SchemaNotes(
            members: [
                "id": ["description": "base64url"]
            ]),
        "PasskeyCreationOptionsParameter": SchemaNotes(
            members: [
                "alg": ["enum": [-7, -8, -257]]
            ]),
        "PasskeyRequestOptions": SchemaNotes(
            summary: "WebAuthn's PublicKeyCredentialRequestOptionsJSON",
            members: [
                "challenge": ["description": "base64url"]
            ]),
        "PasskeyOptionsRequest": SchemaNotes(
            members: [
                "email": ["maxLength": 320]
            ]),
        "PasskeyRegistration": SchemaNotes(
            summary: "The RegistrationResponseJSON of the new credential (toJSON() in a browser)",
            members: [
                "id": ["description": "base64url"],
                "rawId": ["description": "base64url"],
                "type": ["enum": ["public-key"]],
                "name": ["maxLength": 100],
                "clientExtensionResults": ["type": "object"],
            ]),
        "PasskeyRegistrationResponse": SchemaNotes(
            members: [
                "clientDataJSON": ["description": "base64url"],
                "attestationObject": ["description": "base64url"],
            ]),
        "PasskeyAssertion": SchemaNotes(
            summary: "The AuthenticationResponseJSON of the assertion",
            members: [
                "id": ["description": "base64url"],
                "rawId": ["description": "base64url"],
                "type": ["enum": ["public-key"]],
                "deviceName": ["maxLength": 100],
                "clientExtensionResults": ["type": "object"],
            ]),
        "PasskeyAssertionResponse": SchemaNotes(
            members: [
                "clientDataJSON": ["description": "base64url"],
                "authenticatorData": ["description": "base64url"],
                "signature": ["description": "base64url"],
                "userHandle": ["description": "base64url"],
            ]),
        "Passkey": SchemaNotes(
            members: [
                "suspended": [
                    "description": "Its signature counter once went backwards (a cloned authenticator?): it signs nobody in."
                ]
            ]),
        "PasskeyRename": SchemaNotes(
            members: [
                "name": ["maxLength": 100]
            ]),
    ]
}
