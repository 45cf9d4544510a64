import Foundation
import PierHTTP
import PierRuntime
import PierService
import PierTestSupport
import Testing

/// `pier-<name> healthcheck`, what a container's HEALTHCHECK runs instead of a shell and curl:
/// 0 only when the server on PIER_HOST:PIER_PORT answers /healthz with 200.
@Suite struct HealthcheckCommandTests {
    @Test func onlyAHealthyServerPasses() async throws {
        let healthy = Router<BasicRequestContext>()
        healthy.get("/healthz") { _, _ in Response.text("ok") }
        let up = try HTTPServer.started(healthy, name: "healthy")
        let sick = Router<BasicRequestContext>()
        sick.get("/healthz") { _, _ -> Response in throw HTTPError(503, detail: "draining") }
        let draining = try HTTPServer.started(sick, name: "sick")
        let nobody = try PortHolder()
        func check(_ environment: [String: String]) async -> Int32 {
            await ServiceRunner.healthcheck(environment: Environment(environment), defaultPort: nobody.port)
        }
        #expect(await check(["PIER_PORT": String(up.port)]) == 0)
        #expect(await check(["PIER_PORT": String(up.port), "PIER_HOST": "0.0.0.0"]) == 0)
        #expect(await check(["PIER_PORT": String(draining.port)]) == 1)
        #expect(await check([:]) == 1)  // the default port, where nothing listens
        #expect(await check(["PIER_PORT": "not a port"]) == 1)
        await up.shutdown()
        await draining.shutdown()
    }
}
