import PierService

extension SubscriptionsService {
    /// The settings subscriptions reads (its own, App Store's and Google Play's), declared
    /// once:
    /// docs/settings.md is made of these.
    public static let settings: [SettingDeclaration] = [
        .init(
            "PIER_SUBSCRIPTIONS_APPSTORE_BUNDLE_ID", default: "`dev.pier.app` in development; required in production",
            "the app's bundle id; signed data for another app is refused"),
        .init(
            "PIER_SUBSCRIPTIONS_APPSTORE_APP_APPLE_ID", default: "none; required in production",
            "the app's Apple ID; production notifications must carry it"),
        .init(
            "PIER_SUBSCRIPTIONS_APPSTORE_ROOTS", default: "Apple Root CA - G3 (bundled)",
            "comma-separated PEM files of the trusted roots"),
        .init(
            "PIER_SUBSCRIPTIONS_GOOGLE_PACKAGE", default: "none (Google Play off)",
            "the Android app's package name"),
        .init(
            "PIER_SUBSCRIPTIONS_GOOGLE_KEY_FILE", default: "required with the package",
            "the service account's JSON key (a secret file)"),
        .init(
            "PIER_SUBSCRIPTIONS_GOOGLE_API_URL", default: "`https://androidpublisher.googleapis.com`",
            "the Play Developer API"),
        .init(
            "PIER_SUBSCRIPTIONS_GOOGLE_PUSH_AUDIENCE", default: "none (pushes refused)",
            "the audience of the Pub/Sub push subscription's tokens"),
        .init(
            "PIER_SUBSCRIPTIONS_GOOGLE_PUSH_SERVICE_ACCOUNT", default: "required with the audience",
            "the service account the push subscription signs as"),
        .init(
            "PIER_SUBSCRIPTIONS_GOOGLE_JWKS_URL", default: "`https://www.googleapis.com/oauth2/v3/certs`",
            "Google's keys for push tokens"),
        .init(
            "PIER_SUBSCRIPTIONS_GOOGLE_TEST_PURCHASES", default: "`true`",
            "licence testers' purchases count (kept apart as sandbox facts)"),
        .init(
            ["PIER_SUBSCRIPTIONS_GOOGLE_POSTS_PER_ACCOUNT_PER_MINUTE", "PIER_SUBSCRIPTIONS_GOOGLE_POSTS_PER_ADDRESS_PER_MINUTE"],
            default: "`10` / `30`",
            #"""
            purchase posts (`POST /subscriptions/google/purchases`) one account, and one client
            address, may make in a minute; beyond, 429 (each post may cost a call to Google's
            per-app daily quota)
            """#),
        .init(
            "PIER_SUBSCRIPTIONS_GOOGLE_RECONCILE_S", default: "`600`",
            "how often purchases whose state may have moved are read again, and acknowledgements retried"),
        .init(
            "PIER_SUBSCRIPTIONS_APPSTORE_SANDBOX", default: "`true`",
            #"""
            accept sandbox purchases and notifications. App Review buys with sandbox accounts on the
            production build, and Apple asks a production server to cope: a sandbox purchase gives
            access to the account that made it alone (its status says `environment: sandbox`), and
            sandbox facts are kept apart from production's (keyed by environment: a sandbox renewal
            never changes a production subscription, and a sandbox purchase never decides the status
            of an account that pays in production, even in the same subscription group). `false`
            refuses them (422), and sandbox facts stored while it was `true` stop counting (they are
            kept, and count again if it is turned back on)
            """#),
        .init(
            "PIER_SUBSCRIPTIONS_APPSTORE_OCSP", default: "`soft`",
            #"""
            revocation checks (OCSP) of App Store certificates: `off`, `soft` (only a proven
            revocation refuses), `hard` (anything short of a good answer refuses)
            """#),
        .init(
            "PIER_SUBSCRIPTIONS_APPSTORE_OCSP_TIMEOUT_S", default: "`5`",
            "how long an OCSP responder is waited for"),
        .init(
            "PIER_SUBSCRIPTIONS_APPSTORE_KEY_FILE", default: "none",
            #"""
            the In-App Purchase key (`.p8`, PEM) for the App Store Server API; set with the two
            below, or none of them
            """#),
        .init(
            "PIER_SUBSCRIPTIONS_APPSTORE_KEY_ID", default: "none",
            "that key's id (App Store Connect)"),
        .init(
            "PIER_SUBSCRIPTIONS_APPSTORE_ISSUER_ID", default: "none",
            "the issuer id (App Store Connect)"),
        .init(
            "PIER_SUBSCRIPTIONS_APPSTORE_API_URL", default: "`https://api.storekit.itunes.apple.com`",
            "the App Store Server API for production data"),
        .init(
            "PIER_SUBSCRIPTIONS_APPSTORE_SANDBOX_API_URL", default: "`https://api.storekit-sandbox.itunes.apple.com`",
            "the App Store Server API for sandbox data"),
        .init(
            "PIER_SUBSCRIPTIONS_RECHECK_S", default: "`300`",
            "the longest `checkAgainAt` / `max-age` of a status"),
        .init(
            "PIER_SUBSCRIPTIONS_EVENT_POLL_S", default: "`5`",
            "event-log poll interval when no NOTIFY wakes the consumer"),
        .init(
            "PIER_SUBSCRIPTIONS_SIGNING_KEY_FILE",
            default: #"""
                generated into `PIER_DATA_DIR` in development; none in production (statuses unsigned, a
                warning at start)
                """#,
            #"""
            PEM P-256 private key that signs statuses (`Pier-Signed-Status`); a key of its own, not
            the auth service's
            """#),
        .init(
            "PIER_SUBSCRIPTIONS_SIGNED_STATUS_S", default: "`86400`",
            "how long a signed status is trusted, offline included (60 to 604800)"),
    ]
}
