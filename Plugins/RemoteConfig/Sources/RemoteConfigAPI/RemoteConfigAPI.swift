import PierModels

/// The endpoints of remote config, as values: what the routes are registered from and what
/// the API document (`/openapi.json`) describes.
public enum RemoteConfigAPI {
    public static let config = Endpoint<ConfigRequest, NoBody, ConfigAnswer>(
        "GET", "/config", access: .anyone, operation: "getConfig",
        summary: "Every parameter's value for the calling app",
        description:
            "The app says what it is in its headers; a bearer token adds who is signed in and their entitlements. `If-None-Match` with the last `ETag` answers 304 while nothing changed for the caller.",
        answers: "The values", headers: ["ETag", "Cache-Control"])

    public static let versions = Endpoint<NoParameters, NoBody, ConfigVersions>(
        "GET", "/config/versions", access: .staff, operation: "listConfigVersions",
        summary: "The published versions, newest first (the team)", answers: "The versions")

    public static let version = Endpoint<ConfigVersionPath, NoBody, ConfigVersion>(
        "GET", "/config/versions/{version}", access: .staff, operation: "getConfigVersion",
        summary: "One published version (the team)", answers: "The version", problems: [.validationFailed, .notFound])

    public static let publish = Endpoint<NoParameters, PublishConfig, ConfigVersion>(
        "POST", "/config/versions", access: .admin, operation: "publishConfig",
        summary: "Publish the parameters as the next version (admins)",
        description: "`basedOn` is the version they were edited from: another publication since answers 409.",
        status: 201, answers: "The published version", problems: [.validationFailed, .conflict])

    public static let rollback = Endpoint<ConfigVersionPath, NoBody, ConfigVersion>(
        "POST", "/config/versions/{version}/rollback", access: .admin, operation: "rollBackConfig",
        summary: "Publish an earlier version's parameters again (admins)", status: 201, answers: "The published version",
        problems: [.validationFailed, .notFound])

    public static let preview = Endpoint<NoParameters, ConfigPreviewRequest, ConfigPreview>(
        "POST", "/config/preview", access: .staff, operation: "previewConfig",
        summary: "What a user or installation gets now, and why (the team)", answers: "The values and their reasons",
        problems: [.validationFailed])

    public static let stream = Endpoint<EventStreamRequest, NoBody, EventStreamAnswer>(
        "GET", "/config/stream", access: .signedIn, operation: "streamConfig",
        summary: "A message whenever the caller's config may have changed (server-sent events)",
        description:
            "A `text/event-stream`: first `event: config` with `data` a ConfigSignal (the version and the caller's entitlements), then one whenever either changes (a publication, a grant), within about a second. The app then asks `GET /config` again. Reconnect with `Last-Event-ID`.",
        answers: "The stream of config messages", headers: ["Cache-Control"], problems: [.tooManyStreams])

    public static let all = [
        config.definition, stream.definition, versions.definition, version.definition, publish.definition, rollback.definition,
        preview.definition,
    ]
}

/// What an app says of itself when it asks for its config: what the rules judge.
public struct ConfigRequest: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [
        .header("X-Installation-ID", .string, "The app installation's id (percentage rollouts are stable per installation)."),
        .header("X-App-Platform", .string, "`ios`, `android`, … (what rules' `platforms` judge)."),
        .header("X-App-Version", .string, "The app's marketing version (what rules' version ranges judge)."),
        .header("X-App-Locale", .string, "The app's language (`de-AT`); else the first of `Accept-Language`."),
        .header("Accept-Language", .string, "The languages the device prefers, when the app sends no `X-App-Locale`."),
        .header("If-None-Match", .string, "The `ETag` of the config last read: 304 while nothing changed for the caller."),
    ]
    public var installationID: String?
    public var platform: String?
    public var appVersion: String?
    public var locale: String?
    public var languages: String?
    public var ifNoneMatch: String?

    enum CodingKeys: String, CodingKey {
        case installationID = "X-Installation-ID"
        case platform = "X-App-Platform"
        case appVersion = "X-App-Version"
        case locale = "X-App-Locale"
        case languages = "Accept-Language"
        case ifNoneMatch = "If-None-Match"
    }

    public init(
        installationID: String? = nil, platform: String? = nil, appVersion: String? = nil, locale: String? = nil,
        languages: String? = nil, ifNoneMatch: String? = nil
    ) {
        (self.installationID, self.platform, self.appVersion) = (installationID, platform, appVersion)
        (self.locale, self.languages, self.ifNoneMatch) = (locale, languages, ifNoneMatch)
    }
}

/// `{version}`: one published version.
public struct ConfigVersionPath: EndpointParameters {
    public static let declared: [Parameter] = [.path("version", .integer, "The version's number.")]
    public var version: Int
    public init(_ version: Int) { self.version = version }
}
