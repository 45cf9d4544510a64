#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The team's audit log: one per service, under its prefix (`/auth/audit`).
public enum AuditAPI {
    /// Those of the services Pier ships.
    public static let all: [EndpointDefinition] = ["auth", "feedback", "subscriptions"].map { AuditAPI.log(of: $0).definition }

    /// `GET /{service}/audit`: what the team did in `service` (its path prefix, one segment),
    /// newest first.
    public static func log(of service: String) -> Endpoint<AuditQuery, NoBody, AuditList> {
        Endpoint(
            "GET", "/\(PercentEncoding.component(service))/audit", access: .staff,
            operation: "list\(service.prefix(1).uppercased())\(service.dropFirst())Audit",
            summary: "What the team did in \(service), newest first (support or admin)", problems: [.validationFailed])
    }
}

/// Each service's part of "download my data": what `GET /auth/me/export` gathers from the
/// services that hold data about users, when they run apart.
public enum ExportAPI {
    /// Those of the services Pier ships beside auth.
    public static let all: [EndpointDefinition] = ["feedback", "subscriptions"].flatMap {
        [ExportAPI.mine(of: $0).definition, ExportAPI.user(of: $0).definition]
    }

    /// `GET /{service}/me/export`: the service's part of the caller's export.
    public static func mine(of service: String) -> Endpoint<NoParameters, NoBody, ExportPart> {
        Endpoint(
            "GET", "/\(PercentEncoding.component(service))/me/export", access: .signedIn,
            operation: "export\(service.prefix(1).uppercased())\(service.dropFirst())Mine",
            summary: "The \(service) service's part of the caller's export", answers: "Its part")
    }

    /// `GET /{service}/users/{userId}/export`: the service's part of an account's export (the team).
    public static func user(of service: String) -> Endpoint<UserID, NoBody, ExportPart> {
        Endpoint(
            "GET", "/\(PercentEncoding.component(service))/users/{userId}/export", access: .staff,
            operation: "export\(service.prefix(1).uppercased())\(service.dropFirst())User",
            summary: "The \(service) service's part of an account's export (support or admin)", answers: "Its part",
            problems: [.notFound])
    }
}

/// One service's part of an export.
public struct ExportPart: Codable, Sendable, Equatable {
    /// The service's name (`feedback`).
    public var service: String
    /// Everything it holds about the account, as its API shapes it.
    public var data: JSONValue

    public init(service: String, data: JSONValue) {
        self.service = service
        self.data = data
    }
}

/// `?token=`: the token of a mailed link, which its page posts back.
public struct TokenQuery: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [.query("token", .string, "The mailed link's token.")]
    public var token: String?
    public init(token: String? = nil) { self.token = token }
}

/// `{provider}`: an OpenID Connect provider's name, as the server's configuration gives it.
public struct ProviderName: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [
        .path("provider", .string, "The provider's name in the server's PIER_AUTH_OIDC (`google`, say).")
    ]
    public var provider: String
    public init(_ provider: String) { self.provider = provider }
}

/// `GET /auth/users?q=&limit=`.
public struct UserSearch: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [
        .query(
            "q", .string,
            "An address or its start, a display name's start, the starts of words of either (`smith`, `northwind`), or an account's id.",
            required: true
        ).sized(
            1...254),
        .query("limit", .integer, "At most this many, 1 to 100 (20 by default).").within(1...100, defaultValue: 20),
    ]
    enum CodingKeys: String, CodingKey {
        case query = "q"
        case limit
    }
    public var query: String
    public var limit: Int?
    public init(_ query: String, limit: Int? = nil) {
        self.query = query
        self.limit = limit
    }
}

/// `{id}/sessions/{session}`: one session of an account.
public struct UserSessionID: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [
        .path("id", .uuid, "The account's id."), .path("session", .uuid, "The session's id."),
    ]
    enum CodingKeys: String, CodingKey {
        case user = "id"
        case session
    }
    public var user: UUID
    public var session: UUID
    public init(user: UUID, session: UUID) {
        self.user = user
        self.session = session
    }
}

/// `{id}` of a webhook delivery: a number.
public struct DeliveryID: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [.path("id", .integer, "The delivery's id.").within(1...)]
    public var id: Int
    public init(_ id: Int) { self.id = id }
}

/// Which webhook deliveries are listed: every field that is set narrows it.
public struct WebhookDeliveryQuery: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [
        .query("endpoint", .string, "A configured endpoint's name."),
        .query("state", .string, "`pending`, `delivered` or `failed`.").one(of: ["pending", "delivered", "failed"]),
        .query("type", .string, "An event type (`user.created`, say)."),
        .query("subject", .string, "`user:<id>` or `feedback:<id>`.").sized(1...100),
        .query("cursor", .string, "The `nextCursor` of the page before."),
        .query("limit", .integer, "Items per page, 1 to 100 (50 by default).").within(1...100, defaultValue: 50),
    ]
    public var endpoint: String?
    public var state: WebhookDeliveryState?
    public var type: String?
    /// `user:<id>` or `feedback:<id>`.
    public var subject: String?
    /// The `nextCursor` of the previous page.
    public var cursor: String?
    public var limit: Int?

    public init(
        endpoint: String? = nil, state: WebhookDeliveryState? = nil, type: String? = nil, subject: String? = nil,
        cursor: String? = nil, limit: Int? = nil
    ) {
        self.endpoint = endpoint
        self.state = state
        self.type = type
        self.subject = subject
        self.cursor = cursor
        self.limit = limit
    }
}

/// Which audit entries are listed: every field that is set narrows it.
public struct AuditQuery: EndpointParameters, Equatable {
    public static let declared: [Parameter] = [
        .query("subject", .uuid, "The account the entries are about."),
        .query("actor", .uuid, "The team member who acted."),
        .query("target", .string, "What was acted on: an id (a plan's, an item's, a delivery's).").sized(1...200),
        .query("action", .string, "What was done: one of Pier's actions (`user.disabled`, …) or one the plugin declares.")
            .sized(1...100),
        .query("since", .date, "Recorded at or after (ISO 8601 date or date-time)."),
        .query("until", .date, "Recorded before (ISO 8601 date or date-time)."),
        .query("before", .integer, "The `next` of the page before.").within(1...),
        .query("limit", .integer, "Entries per page, 1 to 200 (50 by default).").within(1...200, defaultValue: 50),
    ]
    public var subject: UUID?
    public var actor: UUID?
    public var target: String?
    /// One of Pier's actions (``AuditAction``) or one a plugin declares.
    public var action: String?
    /// An ISO 8601 date or date-time.
    public var since: String?
    /// An ISO 8601 date or date-time.
    public var until: String?
    /// The `next` of the previous page.
    public var before: Int64?
    public var limit: Int?

    public init(
        subject: UUID? = nil, actor: UUID? = nil, target: String? = nil, action: String? = nil, since: String? = nil,
        until: String? = nil, before: Int64? = nil, limit: Int? = nil
    ) {
        self.subject = subject
        self.actor = actor
        self.target = target
        self.action = action
        self.since = since
        self.until = until
        self.before = before
        self.limit = limit
    }

}
