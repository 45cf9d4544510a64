import PierService

extension AuthService {
    /// The settings auth reads, declared once:
    /// docs/settings.md is made of these.
    public static let settings: [SettingDeclaration] = [
        .init(
            "PIER_AUTH_SIGNING_KEY_FILE", default: "generated in development",
            #"""
            PEM P-256 private key that signs access tokens (`openssl ecparam -name prime256v1
            -genkey -noout | openssl pkcs8 -topk8 -nocrypt`)
            """#),
        .init(
            "PIER_AUTH_PREVIOUS_KEY_FILES", default: "none",
            "comma-separated PEM keys still published and accepted (rotation without downtime)"),
        .init(
            "PIER_AUTH_ACCESS_TTL_S", default: "`900`",
            #"""
            access token lifetime; every service accepts a token up to 30 s past its `exp` (and 30 s
            before its `nbf`), the clock-skew leeway between the server that issued it and the one
            that checks it
            """#),
        .init(
            "PIER_AUTH_REFRESH_TTL_DAYS", default: "`30`",
            "refresh token / session lifetime (sliding)"),
        .init(
            "PIER_AUTH_REFRESH_GRACE_S", default: "`30`",
            "window in which a resent refresh token returns the same pair"),
        .init(
            "PIER_AUTH_PASSWORD_MIN_LENGTH", default: "`8`",
            "minimum password length"),
        .init(
            ["PIER_AUTH_ARGON2_MEMORY_KIB", "PIER_AUTH_ARGON2_ITERATIONS", "PIER_AUTH_ARGON2_PARALLELISM"],
            default: "`19456` / `2` / `1`",
            "Argon2id cost"),
        .init(
            "PIER_AUTH_HASH_THREADS", default: "cores",
            "password hashes computed at once"),
        .init(
            "PIER_AUTH_HASH_QUEUE", default: "`64`",
            "hashes waiting; beyond → 503 + `Retry-After`"),
        .init(
            "PIER_AUTH_THROTTLE_ACCOUNT", default: "`5`",
            #"""
            failed logins per account before exponential back-off (1 s doubling, at most 15 min); a
            device that signed in to the account before (its `deviceToken`) counts its own failures
            instead, so others' guesses at the account do not hold it; failures are never counted
            against a client address, so failures at one account lock out no other account behind
            the same network (guessing across accounts from one network is bounded by each account's
            back-off, `PIER_AUTH_HASHES_PER_ADDRESS` and `PIER_AUTH_LOGINS_PER_ADDRESS_PER_MINUTE`);
            an attempt takes a place among its key's attempts in flight before its password is
            checked, and goes ahead only while those and the recorded failures fit the limit:
            concurrent guesses cannot pass it (at most the limit per replica; a successful login
            writes nothing for it)
            """#),
        .init(
            "PIER_AUTH_HASHES_PER_ADDRESS", default: "`2`",
            #"""
            password hashes (login, register, password change) in flight per client address, per
            replica; beyond, 429 at once, so one client cannot fill the hashing queue everyone
            shares
            """#),
        .init(
            "PIER_AUTH_LOGINS_PER_ADDRESS_PER_MINUTE", default: "`60`",
            #"""
            logins per client address, successful or not, per replica (bursts of as many); beyond,
            429 with `Retry-After`
            """#),
        .init(
            "PIER_APP_NAME", default: "`Pier`",
            "the app's name, in mails and the pages of mailed links"),
        .init(
            "PIER_AUTH_PUBLIC_URL",
            default: "the address the process serves, `http://PIER_HOST:PIER_PORT` (the loopback for a wildcard host)",
            "the base of links in mails: Pier's public address, or the app's universal-link domain"),
        .init(
            "PIER_AUTH_SMTP_URL", default: "none",
            #"""
            `smtp://host:587` (STARTTLS when offered, required when credentials go to a host other
            than the loopback) or `smtps://host:465`; without it mails are written as `.eml` files
            under `PIER_DATA_DIR/mail`, named by time, subject and recipient
            (`…-verify-your-address-to-zoe-example-com-….eml`), and, in development, one log line
            gives each link
            """#),
        .init(
            ["PIER_AUTH_SMTP_USER", "PIER_AUTH_SMTP_PASSWORD_FILE"], default: "none",
            "SMTP AUTH credentials (the password from a file)"),
        .init(
            "PIER_AUTH_SMTP_CA_FILE", default: "the system's",
            "PEM certificates to trust for the SMTP server's TLS (a relay with a private CA)"),
        .init(
            "PIER_AUTH_MAIL_FROM", default: "`PIER_APP_NAME <no-reply@localhost>`",
            "the sender of mails"),
        .init(
            "PIER_AUTH_REQUIRE_VERIFIED_EMAIL", default: "`false`",
            "refuse password logins until the address is verified (403 `email_unverified`)"),
        .init(
            "PIER_AUTH_MAIL_RETRY_S", default: "`30`",
            #"""
            first retry delay of a mail the server did not take (doubling up to an hour, 8 attempts;
            a 5xx refusal is final)
            """#),
        .init(
            "PIER_AUTH_MAIL_POLL_S", default: "`5`",
            "how often the outbox looks for mails queued by another replica or due for a retry"),
        .init(
            "PIER_AUTH_ANONYMOUS_PER_INSTALLATION_PER_DAY", default: "`5`",
            "anonymous sign-ups one installation may make in a day; beyond, 429"),
        .init(
            "PIER_AUTH_ANONYMOUS_PER_ADDRESS_PER_HOUR", default: "`30`",
            #"""
            anonymous sign-ups one client network (an IPv4 address, an IPv6 /64) may make in an
            hour; beyond, 429
            """#),
        .init(
            "PIER_AUTH_APP_ATTEST", default: "`off`",
            #"""
            `required`: an anonymous sign-up needs `appAttest`, an assertion by a key the
            installation attested; `optional`: checked when sent
            """#),
        .init(
            "PIER_AUTH_APP_ATTEST_APP_IDS", default: "—",
            "the apps' App IDs, `TEAMID.bundle.id`, comma-separated (required unless off)"),
        .init(
            "PIER_AUTH_APP_ATTEST_KEYS_PER_ADDRESS_PER_DAY", default: "`20`",
            #"""
            App Attest keys one client network (an IPv4 address, an IPv6 /64) may attest in a day;
            beyond, 429. A genuine device can make keys, and so installations, without limit, and no
            two keys of one device can be told apart: this, not the per-installation limit, bounds
            the anonymous accounts one person makes (at most this ×
            `PIER_AUTH_ANONYMOUS_PER_INSTALLATION_PER_DAY` a day from one network)
            """#),
        .init(
            "PIER_AUTH_APP_ATTEST_ENVIRONMENT", default: "`production`",
            "`development` for keys made by development builds (their `aaguid`)"),
        .init(
            "PIER_AUTH_APP_ATTEST_ROOTS", default: "Apple App Attestation Root CA (bundled)",
            #"""
            comma-separated PEM files of the trusted roots
            (`Services/Auth/Resources/AppleAppAttestationRootCA.pem` ships, SHA-256
            `1C:B9:82:3B:A2:8B:A6:AD:2D:33:A0:06:94:1D:E2:AE:4F:51:3E:F1:D4:E8:31:B9:F7:E0:FA:7B:62:42:C9:32`)
            """#),
        .init(
            "PIER_AUTH_ANONYMOUS_TTL_DAYS", default: "`90`",
            #"""
            anonymous accounts no session used for this many days are deleted (hourly), each with
            its `user.deleted`; their feedback stays without them
            """#),
        .init(
            "PIER_AUTH_FORGOT_PER_ADDRESS_PER_HOUR", default: "`10`",
            "password-reset requests per client address (per replica); beyond, 429"),
        .init(
            "PIER_AUTH_EXPORT_URLS", default: "none (the gateway hosting them: in-process)",
            #"""
            comma-separated `GET /<service>/me/export` URLs of the services running apart from auth,
            for `GET /auth/me/export`
            """#),
        .init(
            "PIER_AUTH_APPLE_AUDIENCES", default: "none (Sign in with Apple off)",
            "comma-separated bundle ids and service ids Apple's ID tokens may be for"),
        .init(
            ["PIER_AUTH_APPLE_TEAM_ID", "PIER_AUTH_APPLE_KEY_ID", "PIER_AUTH_APPLE_KEY_FILE"],
            default: "none (tokens not exchanged)",
            #"""
            the Apple team id and the Sign in with Apple key (its key id, and the `.p8` file Apple
            gives, mounted as a secret): authorization codes are exchanged and the tokens revoked
            when accounts go (all three, or none)
            """#),
        .init(
            "PIER_AUTH_APPLE_CLIENT_ID", default: "the first of `PIER_AUTH_APPLE_AUDIENCES`",
            "the bundle id (or service id) the app's authorization codes are issued to"),
        .init(
            "PIER_AUTH_APPLE_URL", default: "`https://appleid.apple.com`",
            "the base of Apple's token and revoke endpoints (http only to the loopback, for tests)"),
        .init(
            "PIER_AUTH_APPLE_RETRY_S", default: "`60`",
            "the first retry of a revocation Apple did not take (doubling, up to an hour; 8 attempts)"),
        .init(
            "PIER_AUTH_APPLE_JWKS_URL", default: "`https://appleid.apple.com/auth/keys`",
            #"""
            Apple's signing keys (fetched when needed, kept an hour, fetched again for an unknown
            key id at most once a minute); https, or http to the loopback only (a provider played in
            development)
            """#),
        .init(
            "PIER_WEBHOOKS", default: "none",
            #"""
            a JSON array of `{"name", "url", "secretFile" (or "secret"), "events": [...]}`: where
            webhooks go (see "Webhooks"); a secret is `whsec_` and 24–64 random bytes in base64, two
            while rotating
            """#),
        .init(
            "PIER_WEBHOOK_RETRY_MS", default: "`5000`",
            "the first retry of an undelivered webhook; the later ones grow from it to a day"),
        .init(
            "PIER_WEBHOOK_ATTEMPTS", default: "`14`",
            "attempts before a webhook is given up (14: about four days)"),
        .init(
            ["PIER_WEBHOOK_CONCURRENCY", "PIER_WEBHOOK_TIMEOUT_S"], default: "`16` / `15`",
            "webhook attempts in flight per process; an attempt's time limit"),
        .init(
            ["PIER_WEBHOOK_RETENTION_DAYS", "PIER_WEBHOOK_POLL_MS"], default: "`30` / `1000`",
            #"""
            how long ended deliveries are kept; how often messages another replica queued and
            retries that came due are looked for
            """#),
        .init(
            "PIER_AUTH_PASSKEY_RP_ID", default: "the host of `PIER_AUTH_PUBLIC_URL`",
            "the domain passkeys belong to: the app's associated domain (`webcredentials:`)"),
        .init(
            "PIER_AUTH_PASSKEY_RP_NAME", default: "`PIER_APP_NAME`",
            "the name authenticators show"),
        .init(
            "PIER_AUTH_PASSKEY_ORIGINS", default: "the origin of `PIER_AUTH_PUBLIC_URL`",
            #"""
            comma-separated `https://` origins passkeys are used from; the Android app's
            `android:apk-key-hash:` origins (from `PIER_ANDROID_CERT_SHA256`) are added
            """#),
        .init(
            "PIER_AUTH_MFA_KEY_FILE", default: "generated in development; required in production",
            #"""
            32 random bytes, base64 (`openssl rand -base64 32`): seals two-step sign-in secrets and
            Apple's refresh tokens at rest. Keep a backup: without it no authenticator app can be
            checked
            """#),
        .init(
            "PIER_AUTH_REQUIRE_MFA_FOR_ROLES", default: "`admin,support`",
            #"""
            roles whose sessions must have used a second factor before any team route of any service
            answers them (403 `mfa_enrolment_required`; the console leads them to set one up); their
            own account's routes still answer. `none`: no role
            """#),
        .init(
            "PIER_AUTH_OIDC_PROVIDERS", default: "none",
            #"""
            a JSON array of `{"name", "issuer", "jwksURL", "audiences": [...], "nonce":
            "plain"|"hashed"}`: other OpenID Connect providers, at `POST /auth/oidc/{name}`;
            `jwksURL` https (http to the loopback only)
            """#),
        .init(
            "PIER_ADMIN_PASSWORD", default: "the first line of standard input",
            "`create-admin`'s password (never on the command line, where `ps` shows it)"),
    ]
}
