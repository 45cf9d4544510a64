import AuthService
import ConsoleService
import FeedbackService
import PierAppAssociation
import PierDocument
import PierHTTP
import PierIdentity
import PierModels
import PierRuntime
import PierService
import RemoteConfig
import SubscriptionsService
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The front door: hosts plugins in one process behind one port, with exactly the paths and
/// behaviour they have when run apart (each keeps its own pool, its own database role when
/// `PIER_<NAME>_DATABASE_URL` is set, its own logger name and its own migrations), and/or
/// proxies routes to upstreams. The same ``PluginHost`` as `pier-<name>`, with more plugins and the
/// proxy as an extension.
public enum Gateway {
    /// Pier's own plugins: auth, feedback, subscriptions, the console and remote config (a plugin
    /// written on the plugin kit alone, as a team's would be).
    public static let builtIn = [
        Plugin(AuthService.self), Plugin(FeedbackService.self), Plugin(SubscriptionsService.self), Plugin(ConsoleService.self),
        Plugin(RemoteConfigService.self),
    ]

    /// The plugins this build can host.
    public static let plugins = builtIn

    /// `pier-gateway [--embed auth,…] [--route /prefix=http://host:port …] [--migrate]`.
    public static let executable = executable(plugins: builtIn)

    /// A gateway hosting `plugins` (Pier's own and a team's: `Gateway.builtIn + [Plugin(Mine.self)]`),
    /// its `main`: `pier-gateway openapi` prints the API document of them all (`api-reference`, the
    /// same in words, Markdown), `settings-reference` the settings they read (Markdown), anything
    /// else is the gateway's command line (see ``executable``). What a team's own gateway
    /// executable calls (docs/plugins.md).
    public static func main(plugins: [Plugin], name: String = "pier-gateway") async -> Int32 {
        switch CommandLine.arguments.dropFirst().first {
        case "openapi": return writeDocument(plugins: plugins, name: name)
        case "api-reference":
            print(APIReference.markdown(APIDocument.endpoints + plugins.flatMap(\.endpoints)), terminator: "")
            return 0
        case "settings-reference":
            print(settingsReference(plugins: plugins), terminator: "")
            return 0
        default: return await executable(plugins: plugins, name: name).main()
        }
    }

    /// The settings reference of a gateway hosting `plugins` (docs/settings.md for Pier's own).
    public static func settingsReference(plugins: [Plugin] = builtIn) -> String {
        SettingsReference.markdown(
            SettingsReference.sections(plugins: plugins, extra: [.init(title: "`pier-gateway`", settings: settings)]))
    }

    /// The gateway's command line for `plugins`.
    public static func executable(plugins: [Plugin], name: String = "pier-gateway") -> Executable {
        let document = Document(adding: plugins.flatMap(\.endpoints)).bytes
        return Executable(
            name: name, defaultPort: 8080, plugins: plugins, embedVariable: "PIER_GATEWAY_EMBED",
            options: [
                .init(
                    "--route", value: "route",
                    help: """
                        /prefix=http://host:port[|http://host2:port…][;connect=ms;timeout=ms;retries=n;bearer=pass|verify|require;required=true|false]
                                 (or PIER_GATEWAY_ROUTES, comma-separated)
                        """)
            ],
            summary: "host plugins in this process and/or proxy routes to upstreams, on PIER_PORT (default 8080)"
        ) { options, configuration, logger, http in
            [
                try Front(
                    settings: try ProxySettings(environment: configuration.environment, extraRoutes: options["--route"] ?? []),
                    configuration: configuration, http: http, logger: logger,
                    document: document)
            ]
        }
    }

    /// The API document, generated once from the endpoints' definitions (a failure to describe a
    /// type is a bug a test finds first).
    public static let document: [UInt8] = Document.generate(adding: builtIn.flatMap(\.endpoints))

    /// The document of Pier's endpoints and `extra` (a team's plugins'), generated when first
    /// asked for: generating it at start would hold the generator's memory in every gateway
    /// (6 MB of resident memory, measured by the containers' check) for a page rarely read.
    final class Document: Sendable {
        let extra: [EndpointDefinition]
        private let made = Mutex<[UInt8]?>(nil)

        init(adding extra: [EndpointDefinition]) { self.extra = extra }

        @Sendable func bytes() -> [UInt8] {
            made.withLock { made in
                if let made { return made }
                let bytes = Self.generate(adding: extra)
                made = bytes
                return bytes
            }
        }

        /// The document of the endpoints the API declares (PierModels) and `extra`.
        static func generate(adding extra: [EndpointDefinition]) -> [UInt8] {
            (try? APIDocument.generate(APIDocument.endpoints + extra, version: PierVersion.current))
                ?? Array(#"{"error":"the API document could not be generated"}"#.utf8)
        }
    }

    /// `pier-gateway openapi`: prints the document (of Pier's endpoints and those `plugins`
    /// declare); 1 when it cannot be generated.
    public static func writeDocument(plugins: [Plugin] = builtIn, name: String = "pier-gateway") -> Int32 {
        do {
            let bytes = try APIDocument.generate(
                APIDocument.endpoints + plugins.flatMap(\.endpoints), version: PierVersion.current)
            print(String(decoding: bytes, as: UTF8.self), terminator: "")
            return 0
        } catch {
            Executable.printError("\(name) openapi: \(error)")
            return 1
        }
    }

    /// Starts `names` (or none) and the proxy of `settings` in this process: what tests run.
    public static func start(
        _ names: [String], proxy settings: ProxySettings? = nil, configuration: ServiceConfiguration, logger: Logger,
        migrate: Bool
    ) async throws -> PluginHost.Running {
        let unknown = names.filter { name in !plugins.contains { $0.name == name } }
        guard unknown.isEmpty else {
            throw Environment.Failure(variable: "--embed", problem: "unknown plugin \(unknown.joined(separator: ", "))")
        }
        let http = HTTPClient()
        return try await PluginHost.start(
            plugins.filter { names.contains($0.name) },
            extensions: [
                try Front(settings: settings, configuration: configuration, http: http, logger: logger) { document }
            ],
            configuration: configuration, logger: logger, migrate: migrate, keys: nil, signals: [], metricsName: "gateway",
            http: http, catalog: plugins)
    }

    /// What the gateway serves beside its plugins: the proxied routes (behind the rate limit,
    /// when one is set), an index at `/`, `/openapi.json` and the domain's app association files.
    struct Front: HostExtension {
        let proxy: Proxy?
        let limiter: RateLimiter?
        let association: AppAssociation
        /// `/openapi.json` (Pier's endpoints and the hosted plugins'), made when first asked for.
        let document: @Sendable () -> [UInt8]

        init(
            settings: ProxySettings?, configuration: ServiceConfiguration, http: HTTPClient, logger: Logger,
            document: @escaping @Sendable () -> [UInt8]
        ) throws(Environment.Failure) {
            self.document = document
            association = try AppAssociation(environment: configuration.environment)
            proxy = settings.flatMap { settings in
                settings.routes.isEmpty
                    ? nil
                    : Proxy(
                        settings: settings, http: http, trusted: configuration.http.trustedProxies,
                        logger: logger.named("proxy"))
            }
            limiter = settings.flatMap { $0.rateLimit > 0 ? RateLimiter(rate: $0.rateLimit, burst: $0.rateBurst) : nil }
        }

        var prefixes: [String] { proxy?.settings.routes.map(\.prefix) ?? [] }

        func routes(into routes: inout Routes, authenticator: Authenticator) {
            proxy?.routes(into: &routes, authenticator: authenticator)
            let router = Router<BasicRequestContext>()
            router.get(GatewayAPI.document.path) { [document] _, _ in
                Response(
                    status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "public, max-age=300"],
                    body: document())
            }
            // The root, where a newcomer's browser goes first: where things are, not a 404. A
            // browser (it asks for HTML) gets a page of links, with no icon to fetch; anyone else
            // the same as JSON.
            let index = Array(
                #"{"name":"Pier","api":"/openapi.json","console":"/console/","readiness":"/readyz","health":"/healthz"}"#.utf8)
            let page = Array(
                """
                <!doctype html><html lang="en"><head><meta charset="utf-8"><title>Pier</title><link rel="icon" href="data:,">
                </head><body><h1>Pier</h1><ul><li><a href="/console/">The team's console</a></li>
                <li><a href="/openapi.json">The API (OpenAPI 3.1)</a></li><li><a href="/readyz">Readiness</a></li></ul></body></html>
                """.utf8)
            router.get(GatewayAPI.index.path) { request, _ in
                let html = request.headers["Accept"]?.contains("text/html") == true
                return Response(
                    status: 200,
                    headers: [
                        "Content-Type": html ? "text/html; charset=utf-8" : "application/json", "Cache-Control": "no-store",
                        "Vary": "Accept", "Content-Security-Policy": "default-src 'none'; img-src data:",
                    ], body: html ? page : index)
            }
            // What a browser asks of every site, after any page (a JSON answer too): an icon, not a
            // 404 in its console.
            let icon = Array(
                ##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2f5bd3"/></svg>"##
                    .utf8)
            router.get(GatewayAPI.icon.path) { _, _ in
                Response(
                    status: 200, headers: ["Content-Type": "image/svg+xml", "Cache-Control": "public, max-age=86400"], body: icon)
            }
            // Read by iOS and Android from the domain's root, never through a redirect: JSON
            // whatever the name says (Apple's has no extension).
            router.get(
                GatewayAPI.appleAssociation.path,
                Self.associationFile(association.appleFile, setting: "PIER_APPLE_APP_IDS"))
            router.get(
                GatewayAPI.androidAssociation.path, Self.associationFile(association.androidFile, setting: "PIER_ANDROID_PACKAGE")
            )
            routes.merge(router.routes)
        }

        /// An association file as iOS and Android fetch it, or 404 naming the setting without one.
        static func associationFile(_ file: [UInt8]?, setting: String)
            -> @Sendable (Request, BasicRequestContext) async throws -> Response
        {
            { _, _ in
                guard let file else {
                    throw HTTPError.notFound("No app is associated with this domain: set " + setting + ".")
                }
                let headers: HTTPHeaders = ["Content-Type": "application/json", "Cache-Control": "public, max-age=3600"]
                return Response(status: 200, headers: headers, body: file)
            }
        }

        var middleware: [any RouterMiddleware<BasicRequestContext>] { limiter.map { [$0] } ?? [] }
        var background: [any LifecycleService] { proxy?.background ?? [] }
        func readiness() -> [String: Bool] { proxy?.readiness() ?? [:] }
        func metrics() -> String { proxy?.renderMetrics() ?? "" }
    }
}
