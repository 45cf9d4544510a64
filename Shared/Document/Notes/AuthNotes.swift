import PierModels

extension Notes {
    /// The notes of the auth types, by component name.
    static let auth: [String: SchemaNotes] = [
        "Problem": SchemaNotes(
            alwaysSent: ["code"],
            members: [
                "code": [
                    "description":
                        "Stable identifier of the problem for programs (detail is for people and may change). Known codes: bad_request, validation_failed, weak_password, unsupported_media_type, body_too_large, uri_too_long, headers_too_large, length_required, not_found, method_not_allowed, authentication_required, token_expired, token_invalid, session_revoked, account_deleted, invalid_credentials, invalid_refresh_token, forbidden, email_taken, idempotency_key_reused, conflict, rate_limited, too_many_streams, unavailable, upstream_timeout, bad_gateway, appstore_api_unconfigured, appstore_api_failed, email_unverified, invalid_email_token, reauthentication_required, invalid_identity_token, last_sign_in_method, mfa_required, invalid_mfa_token, invalid_code, mfa_enrolment_required, enrolment_approval_required, invalid_passkey, identity_taken, invalid_merge_token, attestation_required, invalid_attestation, anonymous_account, not_anonymous, schema_not_migrated, internal_error. New codes may be added; treat an unknown one by its status."
                ],
                "mfaToken": [
                    "description":
                        "`mfa_required`: the token `POST /auth/mfa/verify` completes the sign-in with (5 minutes, single use)."
                ],
                "offer": [
                    "items": ["type": "string", "enum": ["sign_in"]],
                    "description":
                        "`identity_taken`: what the app can offer instead; `sign_in`: the identity belongs to an existing account, sign in to it; `merge`: sign in to it and merge the anonymous account into it (`POST /auth/anonymous/merge/start`, then `POST /auth/anonymous/merge`).",
                ],
                "factors": [
                    "items": ["type": "string", "enum": ["totp", "recovery_code"]],
                    "description": "`mfa_required`: the second factors the account can complete the sign-in with.",
                ],
            ]),
        "User": SchemaNotes(
            members: [
                "emailVerified": ["description": "The owner of the address opened a link Pier mailed to it."],
                "locale": ["description": "BCP 47 language tag, as the app set it."],
                "disabledAt": ["description": "When the team disabled the account (absent while enabled): it cannot sign in."],
                "email": [
                    "format": "email", "description": "Absent while the account is anonymous (it began without signing up).",
                ],
                "isAnonymous": [
                    "description":
                        "The account began without signing up and has no address, password, passkey or linked identity yet."
                ],
                "anonymousAt": ["description": "When the account began without signing up (absent for accounts that signed up)."],
                "permanentAt": [
                    "description":
                        "When an anonymous account became permanent (an address confirmed, an identity or a passkey added)."
                ],
            ]),
        "AuthSession": SchemaNotes(
            alwaysSent: ["refreshExpiresAt"],
            members: [
                "tokenType": ["enum": ["Bearer"]],
                "refreshExpiresAt": ["description": "When the session ends unless refreshed before; each refresh moves it on."],
                "deviceToken": [
                    "description":
                        "After a password sign-in (register, login): proof that this device signed in to this account. Keep it across sign-outs and send it with the next login of the same address (LoginRequest.deviceToken): that device's attempts then count against it, not against its network address."
                ],
                "verificationSentTo": [
                    "format": "email",
                    "description":
                        "After registering: the address a link to verify it was mailed to (the account works meanwhile; what needs a proven address says so).",
                ],
            ]),
        "RegisterRequest": SchemaNotes(
            members: [
                "email": ["maxLength": 254],
                "password": ["minLength": 8, "maxLength": 128],
                "displayName": ["maxLength": 100],
                "deviceName": [
                    "maxLength": 100, "description": "What the session list shows for this session (\"Anna's iPhone\").",
                ],
            ]),
        "LoginRequest": SchemaNotes(
            members: [
                "deviceName": [
                    "maxLength": 100, "description": "What the session list shows for this session (\"Anna's iPhone\").",
                ],
                "deviceToken": ["description": "The deviceToken of this device's last password sign-in to this address, if any."],
            ]),
        "EmailTokenRequest": SchemaNotes(
            members: [
                "token": ["description": "The `token` of the mailed link."]
            ]),
        "SessionInfo": SchemaNotes(
            members: [
                "lastUsedAt": ["description": "When its refresh token was last used."],
                "clientAddress": ["description": "The address it signed in or last refreshed from."],
                "current": ["description": "The session of the access token that asked."],
            ]),
        "ProfileChange": SchemaNotes(
            summary: "Only the fields sent change; an empty string clears one.",
            members: [
                "displayName": ["maxLength": 100],
                "locale": ["maxLength": 35, "description": "BCP 47; an empty string clears it."],
            ]),
        "EmailChangeRequest": SchemaNotes(
            members: [
                "password": ["description": "The current password; not needed within 5 minutes of a sign-in."],
                "code": ["maxLength": 64, "description": "On an account with a second factor: a code instead of the password."],
                "passkey": [
                    "description":
                        "An assertion by one of the account's passkeys over the challenge of `POST /auth/reauthenticate/passkey-options` (instead of the password or a code); refused: 401 `invalid_passkey` naming the member under `passkey.`."
                ],
            ]),
        "ReauthenticationRequest": SchemaNotes(
            summary:
                "The current password, a passkey's assertion, or on an account with a second factor a code (or a passkey); none is needed when the caller signed in (with a second factor, if the account has one) within the last 5 minutes.",
            members: [
                "code": [
                    "maxLength": 64,
                    "description":
                        "On an account with a second factor (where the password is not accepted): a code from the authenticator app or a recovery code.",
                ],
                "passkey": [
                    "description":
                        "An assertion by one of the account's passkeys over the challenge of `POST /auth/reauthenticate/passkey-options` (instead of the password or a code); refused: 401 `invalid_passkey` naming the member under `passkey.`."
                ],
            ]),
        "IdentitySignInRequest": SchemaNotes(
            members: [
                "identityToken": ["description": "The ID token the provider gave the app (a JWT)."],
                "nonce": [
                    "description":
                        "The raw nonce the authorization request was bound to (Apple: its SHA-256, hex, went to Apple; other providers: the nonce itself)."
                ],
                "fullName": [
                    "maxLength": 100,
                    "description": "Apple gives the user's name to the app on the first authorization only: send it then.",
                ],
                "deviceName": ["maxLength": 100],
                "authorizationCode": [
                    "maxLength": 1024,
                    "description":
                        "Sign in with Apple only: the credential's authorization code. With the Sign in with Apple key configured, exchanged for Apple's refresh token, revoked when the account is deleted or Apple unlinked.",
                ],
            ]),
        "AppleNotificationRequest": SchemaNotes(
            members: [
                "payload": ["description": "The JWT Apple signed; its `events` claim holds {type, sub, …}."]
            ]),
        "DataExport": SchemaNotes(
            members: [
                "services": [
                    "description":
                        "Each service's part by name: `auth` (user, sessions, identities), `feedback` (items), `subscriptions` (status and facts).",
                    "additionalProperties": ["type": "object"],
                ]
            ]),
        "LinkedIdentity": SchemaNotes(
            members: [
                "id": ["description": "What DELETE /auth/identities/{id} unlinks it by."],
                "provider": ["description": "apple, or the name of an OpenID Connect provider"],
                "email": ["description": "The address the provider gave last."],
            ]),
        "UserList": SchemaNotes(
            members: [
                "more": ["description": "More accounts match than were returned: a longer query narrows them down."]
            ]),
        "RoleChange": SchemaNotes(
            members: [
                "role": ["enum": ["user", "support", "admin"]],
                "password": ["description": "The admin's own password, unless they signed in within 5 minutes."],
                "code": ["maxLength": 64, "description": "On an account with a second factor: a code instead of the password."],
                "passkey": [
                    "description":
                        "An assertion by one of the account's passkeys over the challenge of `POST /auth/reauthenticate/passkey-options` (instead of the password or a code); refused: 401 `invalid_passkey` naming the member under `passkey.`."
                ],
            ]),
        "StaffMailRequest": SchemaNotes(
            members: [
                "mail": ["enum": ["password-reset", "verification"]]
            ]),
        "SessionsEnded": SchemaNotes(
            members: [
                "ended": ["minimum": 0]
            ]),
        "AuditEntry": SchemaNotes(
            members: [
                "actorId": ["description": "The staff account; absent for an operator command on the server."],
                "actorRole": ["description": "admin, support, or operator"],
                "action": ["description": "noun.verb: user.role_changed, user.disabled, feedback.updated, grant.created, ..."],
                "subjectId": ["description": "The account the action concerns, when there is one."],
            ]),
        "AuditList": SchemaNotes(
            members: [
                "next": ["description": "The `before` of the next page; absent on the last."]
            ]),
        "StepUpToken": SchemaNotes(
            members: [
                "tokenType": ["enum": ["Bearer"]]
            ]),
        "SignUpStatsDay": SchemaNotes(
            members: [
                "day": ["format": "date"]
            ]),
        "WebhookEndpoint": SchemaNotes(
            members: [
                "secrets": ["description": "1, or 2 while a secret is rotated"]
            ]),
        "WebhookDelivery": SchemaNotes(
            members: [
                "messageId": ["description": "The webhook-id header: the same on every attempt and replay"],
                "state": ["description": "pending, delivered or failed (an older client may meet a newer value)"],
                "payload": [
                    "type": "object", "description": "The body sent: {type, timestamp, data} (one delivery's detail only)",
                ],
            ]),
        "MFAVerifyRequest": SchemaNotes(
            summary: "Exactly one of `code` and `passkey`.",
            members: [
                "mfaToken": ["description": "The `mfaToken` of the `mfa_required` problem."],
                "code": [
                    "description":
                        "Six digits from the authenticator app, or a recovery code (`xxxx-xxxx-xxxx`, dashes, spaces and case ignored)."
                ],
                "passkey": [
                    "description":
                        "An assertion by one of the account's passkeys over the challenge of `POST /auth/mfa/passkey-options` (when the problem's `factors` names `passkey`); the authenticator need not verify the user."
                ],
            ]),
        "MFACodeRequest": SchemaNotes(
            members: [
                "code": ["description": "The authenticator app's current code (six digits)."]
            ]),
        "TOTPEnrolment": SchemaNotes(
            members: [
                "secret": ["description": "The shared secret, Base32 (RFC 4648), for typing into the app."],
                "uri": ["description": "`otpauth://totp/Issuer:account?secret=…&issuer=…&algorithm=SHA1&digits=6&period=30`"],
                "qrCode": ["description": "The URI as a QR code: an SVG document."],
            ]),
        "RecoveryCodes": SchemaNotes(
            members: [
                "codes": [
                    "minItems": 10, "maxItems": 10,
                    "description":
                        "Ten single-use codes (`xxxx-xxxx-xxxx`), shown this once: each completes one sign-in, or one re-authentication, without the app.",
                ]
            ]),
        "MFAStatus": SchemaNotes(
            members: [
                "totpEnabledAt": ["description": "When the authenticator app was confirmed; absent without one."],
                "recoveryCodesLeft": ["minimum": 0],
                "awaitingApproval": [
                    "description":
                        "To the team (`GET /auth/users/{id}/mfa`), for a team member: the sessions that wait for approval to set up their first second factor."
                ],
            ]),
        "MFATokenRequest": SchemaNotes(
            members: [
                "mfaToken": ["description": "The `mfaToken` of the `mfa_required` problem."]
            ]),
        "EnrolmentAsk": SchemaNotes(
            summary: "A team member's session that asked to set up a first second factor and waits for approval.",
            members: [
                "sessionId": ["description": "The session that asked (what an admin approves)."],
                "deviceName": ["description": "The device the session signed in from, as its app named it."],
                "address": ["description": "The client address the session signed in from."],
            ]),
        "EnrolmentApproval": SchemaNotes(
            members: [
                "sessionId": ["description": "One of the member's `awaitingApproval` sessions."]
            ]),
    ]
}
