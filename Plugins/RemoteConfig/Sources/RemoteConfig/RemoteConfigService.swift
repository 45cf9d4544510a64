import PierAudit
import PierEvents
import PierHTTP
import PierIdentity
import PierJSON
import PierModels
import PierPostgres
import PierRuntime
import PierService
import RemoteConfigAPI

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Remote config and feature flags, as a plugin: parameters with defaults and rules per caller,
/// published in versions (history, rollback), served from memory at `GET /config`.
public struct RemoteConfigService: Service {
    public static let name = "config"
    public static let prefix = "/config"
    public static let schema = "remote_config"
    public static let defaultPort = 8090
    public static let migrations = [
        Migration(
            version: 1, name: "create_remote_config",
            sql: String(decoding: PackageResources._001_create_remote_config_sql, as: UTF8.self)),
        AuditLog.migration(schema: schema, version: 2),
    ]
    public static var endpoints: [EndpointDefinition] { RemoteConfigAPI.all }
    public static var needs: [String] { [Capability<any EntitlementsReader>.entitlements.name] }
    public static var events: [EventDeclaration] {
        [
            EventDeclaration(
                ConfigPublished.type,
                summary:
                    "A version of the remote config was published (or an earlier one again): its number and the keys that changed"
            )
        ]
    }
    public static var auditLog: AuditLogDeclaration? {
        AuditLogDeclaration(
            title: "Remote config",
            actions: [
                ("config.published", "published the remote config"), ("config.rolled_back", "rolled the remote config back"),
            ],
            targets: [("config", "version", "/console/config/versions/")])
    }
    public static var consolePages: [ConsolePage] { [ConfigPages.page] }

    let store: ConfigStore
    /// The signed-in apps' streams: told of every publication and of their user's
    /// subscription changes.
    let live: LiveFeed
    let entitlements: (any EntitlementsReader)?
    let authenticator: Authenticator
    let database: PostgresPool
    /// The request header a deployment puts the caller's country in (`PIER_CONFIG_COUNTRY_HEADER`).
    let countryHeader: String?
    let logger: Logger

    public static func make(context: ServiceContext) async throws -> RemoteConfigService {
        let store = ConfigStore(database: context.database, events: context.events, logger: context.logger)
        // Without subscriptions in this process, a rule on entitlements never holds (said at start).
        let entitlements = context.need(.entitlements)
        let live = LiveFeed(
            name: "config stream", database: context.database, listener: context.events,
            revocations: context.authenticator.revocations, changes: [SubscriptionUpdated.type],
            broadcasts: [ConfigPublished.type],
            snapshot: { user in
                // Read again here: the store may not have heard of the publication yet.
                try await store.reload()
                let owned = try await entitlements?.entitlements(of: user) ?? []
                return try JSON.encode(ConfigSignal(version: store.current?.version ?? 0, entitlements: owned.sorted()))
            }, settings: context.configuration.live)
        return RemoteConfigService(
            store: store, live: live, entitlements: entitlements, authenticator: context.authenticator,
            database: context.database, countryHeader: context.configuration.environment.string("PIER_CONFIG_COUNTRY_HEADER"),
            logger: context.logger)
    }

    public var background: [any LifecycleService] { [store, live] }

    public func isReady() async -> Bool { store.current != nil }

    public func routes(into routes: inout Routes) {
        let router = Router<ServiceRequestContext>()
        let endpoints = EndpointRouter(router, authenticator: authenticator)
        endpoints.on(RemoteConfigAPI.config) { request, context, asked in try await config(request, context, asked) }
        endpoints.on(RemoteConfigAPI.stream) { request, context, stream in
            EndpointReply(
                promised: try ServerSentEvents.response(
                    request, resumingAfter: stream.lastEventID, feed: live, caller: try context.caller(), event: "config"))
        }
        endpoints.on(RemoteConfigAPI.versions) { _, _ in
            JSONResponse(ConfigVersions(items: try await store.versions(limit: 50)))
        }
        endpoints.on(RemoteConfigAPI.version) { _, _, path in
            guard let version = try await store.version(path.version) else { throw HTTPError.notFound("No such version.") }
            return JSONResponse(version)
        }
        endpoints.on(RemoteConfigAPI.publish) { _, context, body in try await publish(body, context) }
        endpoints.on(RemoteConfigAPI.rollback) { _, context, path in try await rollback(path.version, context) }
        endpoints.on(RemoteConfigAPI.preview) { _, _, body in try await preview(body) }
        routes.merge(router.routes)
        routes.merge(
            AuditLog.routes(
                service: Self.name, prefix: Self.prefix, schema: Self.schema, database: database, authenticator: authenticator,
                actions: Self.auditLog?.actions.map(\.action) ?? []))
    }

    // MARK: - Handlers

    /// `GET /config`: evaluated from memory; the caller's entitlements are read (through the
    /// subscriptions plugin) only when a rule asks for them.
    func config(_ request: Request, _ context: ServiceRequestContext, _ asked: ConfigRequest) async throws
        -> EndpointReply<ConfigAnswer>
    {
        guard let held = store.held else {
            throw HTTPError.unavailable(retryAfter: 2, "The config has not been read from the database yet.")
        }
        let current = held.version
        var caller = ConfigCaller(
            userID: context.principal?.userID, installationID: asked.installationID, platform: asked.platform,
            appVersion: asked.appVersion, locale: asked.locale ?? Self.firstLanguage(asked.languages),
            // The header the deployment's load balancer names (PIER_CONFIG_COUNTRY_HEADER).
            country: countryHeader.flatMap { request.headers[$0] })
        if let user = caller.userID, Self.asksForEntitlements(current.parameters) {
            caller.entitlements = try await entitlements?.entitlements(of: user) ?? []
        }
        let answer = try store.answer(current, choices: held.compiled.choices(for: caller))
        var headers: HTTPHeaders = ["Cache-Control": "private, no-cache", "Vary": "Authorization", "ETag": answer.etag]
        if let match = asked.ifNoneMatch,
            match.split(separator: ",").contains(where: {
                $0.trimmingWhitespace() == answer.etag || $0.trimmingWhitespace() == "*"
            })
        {
            return EndpointReply(promised: Response(status: 304, headers: headers))
        }
        headers.set("Content-Type", "application/json")
        return EndpointReply(promised: Response(status: 200, headers: headers, body: answer.body))
    }

    func publish(_ body: PublishConfig, _ context: ServiceRequestContext) async throws -> JSONResponse<ConfigVersion> {
        let actor = try context.auditActor()
        var errors = Evaluation.problems(body.parameters)
        if let note = body.note, note.count > 500 {
            errors.append(.init(field: "note", message: "must be at most 500 characters"))
        }
        if body.basedOn < 0 { errors.append(.init(field: "basedOn", message: "must be the version edited from, 0 at first")) }
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        switch try await store.publish(body.parameters, basedOn: body.basedOn, note: body.note ?? "", by: actor) {
        case .published(let version):
            logger.info("config published", [("version", .int(version.version))])
            return JSONResponse(version, status: 201)
        case .stale(let newest):
            throw HTTPError.conflict(
                "Version \(newest) was published since version \(body.basedOn): open it, make the change again, and publish.")
        }
    }

    func rollback(_ number: Int, _ context: ServiceRequestContext) async throws -> JSONResponse<ConfigVersion> {
        let actor = try context.auditActor()
        guard let earlier = try await store.version(number) else { throw HTTPError.notFound("No such version.") }
        let note = "Rolled back to version \(number)"
        guard
            case .published(let version) = try await store.publish(
                earlier.parameters, basedOn: 0, note: note, restoring: number, by: actor)
        else { throw HTTPError.conflict("The rollback could not be published.") }
        return JSONResponse(version, status: 201)
    }

    func preview(_ body: ConfigPreviewRequest) async throws -> JSONResponse<ConfigPreview> {
        guard let current = store.current else {
            throw HTTPError.unavailable(retryAfter: 2, "The config has not been read from the database yet.")
        }
        var caller = ConfigCaller(
            userID: body.userId, installationID: body.installationId, platform: body.platform, appVersion: body.appVersion,
            locale: body.locale, country: body.country)
        if let user = body.userId { caller.entitlements = try await entitlements?.entitlements(of: user) ?? [] }
        let (values, reasons) = Evaluation.values(current.parameters, for: caller)
        return JSONResponse(
            ConfigPreview(version: current.version, values: values, reasons: reasons, entitlements: caller.entitlements.sorted()))
    }

    // MARK: - Helpers

    static func asksForEntitlements(_ parameters: [ConfigParameter]) -> Bool {
        parameters.contains { $0.rules.contains { $0.when.entitlements != nil } }
    }

    /// The first language of `Accept-Language` (`fr-CA,fr;q=0.8` → `fr-CA`).
    static func firstLanguage(_ header: String?) -> String? {
        guard let header else { return nil }
        let first = header.split(separator: ",").first?.split(separator: ";").first?.trimmingWhitespace() ?? ""
        return first.isEmpty || first == "*" ? nil : String(first)
    }
}
