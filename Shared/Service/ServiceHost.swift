import PierHTTP
import PierModels
import PierPostgres
import PierRuntime

/// Mounts one or more services behind one router with the operator endpoints: `/healthz`
/// (alive), `/readyz` (database reachable, migrations applied, services ready: checked in the
/// background, answered at once; see ``ReadinessMonitor``) and `/metrics`.
/// The standalone runner hosts one service; the gateway hosts several the same way.
public struct ServiceHost: Sendable {
    /// A hosted service with what readiness needs to know about it.
    public struct Mounted: Sendable {
        public let name: String
        public let schema: String
        public let migrations: [Migration]
        public let database: PostgresPool
        public let service: any Service

        public init(name: String, schema: String, migrations: [Migration], database: PostgresPool, service: any Service) {
            self.name = name
            self.schema = schema
            self.migrations = migrations
            self.database = database
            self.service = service
        }
    }

    public let mounted: [Mounted]
    public let metrics: Metrics
    /// Readiness, kept fresh in the background while `/readyz` is asked.
    let readiness: ReadinessMonitor
    /// More Prometheus text (the gateway's upstreams), appended to `/metrics`.
    let extraMetrics: @Sendable () -> String

    public init(
        mounted: [Mounted], metricsName: String, extraChecks: @escaping @Sendable () async -> [String: Bool] = { [:] },
        extraMetrics: @escaping @Sendable () -> String = { "" }
    ) {
        self.mounted = mounted
        self.metrics = Metrics(service: metricsName)
        self.readiness = ReadinessMonitor(mounted: mounted, extraChecks: extraChecks)
        self.extraMetrics = extraMetrics
    }

    /// The services' routes plus the operator endpoints: all three, or only `/healthz` when
    /// `/readyz` and `/metrics` are on an admin listener of their own (``operatorRoutes(all:)``).
    public func routes(operatorEndpoints: Bool = true) -> Routes {
        var routes = Routes()
        for entry in mounted { entry.service.routes(into: &routes) }
        routes.merge(operatorRoutes(all: operatorEndpoints))
        return routes
    }

    /// `/healthz`, `/readyz` and `/metrics` alone, for the admin listener (`PIER_ADMIN_PORT`).
    public func operatorRoutes(all: Bool = true) -> Routes {
        let router = Router<BasicRequestContext>()
        var routes = Routes()
        routes.constant(
            GatewayAPI.health.path,
            Response(status: 200, headers: ["Content-Type": "application/json"], body: Array(#"{"status":"ok"}"#.utf8)))
        guard all else { return routes }
        let readiness = readiness
        router.get(GatewayAPI.readiness.path) { _, _ in
            let checks = await readiness.current()
            let ready = checks.values.allSatisfy { $0 }
            return try Response.json(
                Readiness(status: ready ? "ready" : "unavailable", checks: checks),
                status: ready ? 200 : 503, headers: ready ? [:] : ["Retry-After": "2"])
        }
        let metrics = metrics
        let pools = mounted.map { (name: $0.name, pool: $0.database) }
        let extraMetrics = extraMetrics
        router.on("GET", GatewayAPI.metrics.path) { _, _ in
            .text(metrics.render(pools: pools) + extraMetrics(), contentType: "text/plain; version=0.0.4")
        }
        routes.merge(router.routes)
        return routes
    }
}
