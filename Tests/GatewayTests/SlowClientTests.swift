import Foundation
import PierRuntime
import PierService
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import FeedbackService
@testable import Gateway

/// Slow clients cannot shut the doors: 3,000 connections from 50 addresses, each holding half a
/// request head, are kept (well within capacity and each address's share), and a client from
/// another address gets `/healthz` within a second, 10 of 10 — on a service, and on the gateway
/// in front of it. One test, one target after the other: each holds 6,000 sockets in this process.
@Suite struct SlowClientTests {
    @Test func slowClientsCannotShutTheDoorsOfAServiceOrTheGateway() async throws {
        let tokens = try TestTokens()
        let service = try await LiveService<FeedbackService>.start(
            database: "pier_test_slow_clients", settings: ["PIER_LOG_LEVEL": "error"],
            logger: Logger(service: "feedback", level: .error), keys: tokens.keys
        ) { context in
            FeedbackService.make(
                context: context, configuration: try FeedbackConfiguration(environment: context.configuration.environment))
        }
        let direct = try await RawClient.freshClientsAmongSlowOnes(port: service.port, count: 3000, addresses: 50)
        print(
            "slow clients at a service: \(direct.held) of 3000 held; fresh /healthz: \(direct.fresh.map { Int($0.seconds * 1000) }) ms"
        )
        #expect(direct.held == 3000)
        #expect(direct.fresh.allSatisfy { $0.status == 200 && $0.seconds < 1 }, "\(direct.fresh)")

        let gateway = try await ProxyGatewayTests.gateway(["/feedback=\(service.base)"])
        let edge = try await RawClient.freshClientsAmongSlowOnes(port: gateway.server.port, count: 3000, addresses: 50)
        print(
            "slow clients at the gateway: \(edge.held) of 3000 held; fresh /healthz: \(edge.fresh.map { Int($0.seconds * 1000) }) ms"
        )
        #expect(edge.held == 3000)
        #expect(edge.fresh.allSatisfy { $0.status == 200 && $0.seconds < 1 }, "\(edge.fresh)")
        // The gateway still reaches the service through all this.
        #expect(
            try await ServiceClient(base: "http://127.0.0.1:\(gateway.server.port)").send("GET", "/feedback/mine").status == 401)
        await gateway.shutdown()
        await service.stop()
    }
}
