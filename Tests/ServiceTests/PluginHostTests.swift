import Foundation
import PierHTTP
import PierPostgres
import PierRuntime
import PierTestSupport
import Testing

@testable import PierService

/// The one composition root: what it builds it also stops, in reverse order, whether the process
/// ends normally or a part fails before anything is served.
@Suite struct PluginHostTests {
    /// A plugin with a table, a route, and a background part that still sends through the
    /// process's client when it stops (as a worker flushing its last batch would).
    struct Widgets: Service {
        static let name = "widgets"
        static let prefix = "/widgets"
        static let schema = "widgets"
        static let migrations = [
            Migration(version: 1, name: "widgets", sql: "CREATE TABLE widgets.widgets (id int PRIMARY KEY)")
        ]
        static let defaultPort = 0
        /// Where the background part says whether its last send went through.
        static let lastSends = Locked<[String: Int]>([:])

        let http: HTTPClient
        let peer: String

        static func make(context: ServiceContext) async throws -> Widgets {
            Widgets(http: context.http, peer: context.configuration.environment.string("TEST_PEER", default: ""))
        }

        func routes(into routes: inout Routes) {
            let router = Router<BasicRequestContext>()
            router.get("/widgets") { _, _ in Response.text("widgets") }
            routes.merge(router.routes)
        }

        var background: [any LifecycleService] {
            let (http, peer) = (http, peer)
            return [
                Lifecycle("widget flusher") {
                    let status = (try? await http.get(peer + "/flush"))?.status ?? 0
                    Widgets.lastSends.withLock { $0[peer] = status }
                }
            ]
        }
    }

    /// A plugin that cannot be built (a configuration it refuses).
    struct Broken: Service {
        struct Refused: Error {}
        static let name = "broken"
        static let prefix = "/broken"
        static let schema = "broken"
        static let migrations: [Migration] = []
        static let defaultPort = 0

        static func make(context: ServiceContext) async throws -> Broken { throw Refused() }
        func routes(into routes: inout Routes) {}
    }

    /// Plugins that offer and need capabilities, by name: a reader of "parts" and two writers.
    struct Part<Tag>: Service {
        static var name: String { String(describing: Tag.self).lowercased() }
        static var prefix: String { "/" + name }
        static var schema: String { name }
        static var migrations: [Migration] { [] }
        static var defaultPort: Int { 0 }
        static var needs: [String] { Tag.self == First.self || Tag.self == Second.self ? [] : ["parts"] }
        static var offers: [String] { Tag.self == Reader.self ? [] : ["parts"] }
        static func make(context: ServiceContext) async throws -> Self { Self() }
        func routes(into routes: inout Routes) {}
    }
    enum Reader {}
    enum First {}
    enum Second {}
    /// Offers "parts" and needs them (it reads the others'): built alone, not beside another such.
    enum Loop {}
    enum OtherLoop {}

    /// A plugin that needs a capability is built after every plugin that offers it (so it is
    /// built with what they offered), the given order kept otherwise; needs that go round are
    /// refused before anything is built.
    @Test func pluginsAreBuiltAfterWhatTheyNeed() throws {
        let order = try PluginHost.buildingOrder([Plugin(Part<Reader>.self), Plugin(Part<First>.self), Plugin(Part<Second>.self)])
        #expect(order.map(\.name) == ["first", "second", "reader"])
        let kept = try PluginHost.buildingOrder([Plugin(Part<First>.self), Plugin(Part<Second>.self)])
        #expect(kept.map(\.name) == ["first", "second"])
        // One plugin offering and needing the same thing is built; two are a cycle.
        #expect(try PluginHost.buildingOrder([Plugin(Part<Loop>.self)]).map(\.name) == ["loop"])
        let afterFirst = try PluginHost.buildingOrder([Plugin(Part<Loop>.self), Plugin(Part<First>.self)])
        #expect(afterFirst.map(\.name) == ["first", "loop"])
        #expect(throws: (any Error).self) {
            _ = try PluginHost.buildingOrder([Plugin(Part<Loop>.self), Plugin(Part<OtherLoop>.self)])
        }
    }

    static func configuration(_ url: String, application: String, peer: String = "") throws -> ServiceConfiguration {
        try ServiceConfiguration(
            environment: Environment(["PIER_DATABASE_URL": url, "PIER_PORT": "0", "TEST_PEER": peer]), defaultPort: 0,
            applicationName: application)
    }

    /// Connections the pools of `application` hold (each pool names its connections after it).
    static func connections(_ url: String, application: String) async throws -> Int {
        let observer = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 1))
        defer { observer.close() }
        let rows = try await observer.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE \(application + "%")")
        return try rows[0].decode("n", as: Int.self)
    }

    @Test func aHostThatFailsPartWayClosesWhatItOpened() async throws {
        let url = try await TestDatabase.create("pier_test_host_failure")
        let application = "pier-host-failure-\(UUID().uuidString.prefix(8))"
        let http = HTTPClient()
        let logger = Logger(service: "host", level: .error)
        do {
            _ = try await PluginHost.start(
                [Plugin(Widgets.self), Plugin(Broken.self)], configuration: Self.configuration(url, application: application),
                logger: logger, migrate: true, http: http)
            Issue.record("a host with a plugin that cannot be built started")
        } catch {
            #expect(error is Broken.Refused)
        }
        // The first plugin's pool (migrated, so it held connections) and the revocation list's
        // are closed, and so is the client.
        #expect(await eventually { (try? await Self.connections(url, application: application)) == 0 })
        do {
            _ = try await http.get("http://127.0.0.1:9/")
            Issue.record("the client of a host that failed still sends")
        } catch {
            #expect(error == .closed)
        }
    }

    @Test func theClientStopsAfterEverythingThatSendsThroughIt() async throws {
        let url = try await TestDatabase.create("pier_test_host_order")
        let application = "pier-host-order-\(UUID().uuidString.prefix(8))"
        let peerRouter = Router<BasicRequestContext>()
        peerRouter.get("/flush") { _, _ in Response.text("flushed") }
        let peer = try HTTPServer.started(peerRouter, name: "peer")
        let base = "http://127.0.0.1:\(peer.port)"
        let http = HTTPClient()
        let running = try await PluginHost.start(
            [Plugin(Widgets.self)], configuration: Self.configuration(url, application: application, peer: base),
            logger: Logger(service: "host", level: .error), migrate: true, http: http)
        async let reason = running.run()
        let served = try await http.get("http://127.0.0.1:\(running.server.port)/widgets", timeout: .seconds(60))
        #expect(served.status == 200 && String(decoding: served.body, as: UTF8.self) == "widgets")
        running.stop()
        #expect(try await reason == .stopped)
        // The worker's last send, made as it stopped, went through: the client was still open.
        #expect(Widgets.lastSends.withLock { $0[base] } == 200)
        // Once the host stopped, the client is closed and the pools hold no connection.
        do {
            _ = try await http.get(base + "/flush")
            Issue.record("the client outlived its host")
        } catch {
            #expect(error == .closed)
        }
        #expect(await eventually { (try? await Self.connections(url, application: application)) == 0 })
        await peer.shutdown()
    }
}
