import Foundation
import PierHTTP
import PierPostgres
import PierRuntime
import PierService
import PierTestSupport
import Testing

@testable import FeedbackService
@testable import Gateway

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
            await Executable.healthcheck(environment: Environment(environment), defaultPort: nobody.port).rawValue
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

/// `pier-<name>` and `pier-gateway` are the same host with other plugins: one command line,
/// one table of exit statuses (0 done, 1 failed, 2 wrong command line or configuration).
@Suite struct ExecutableTests {
    func run(_ executable: Executable, _ words: String..., environment: [String: String] = [:]) async -> Int32 {
        await executable.main(arguments: [executable.name] + words, environment: Environment(environment))
    }

    @Test func everyExecutableReadsTheSameCommandLine() async throws {
        let feedback = Executable.standalone(FeedbackService.self)
        for executable in [feedback, Gateway.executable] {
            #expect(await run(executable, "--help") == 0)
            #expect(await run(executable, "--version") == 0)
            #expect(await run(executable, "frobnicate") == 2)
            #expect(await run(executable, "serve", "extra") == 2)
            #expect(await run(executable, environment: ["PIER_PORT": "eighty"]) == 2)
            #expect(executable.usage.contains("\(executable.name) healthcheck"))
        }
        // Only the gateway chooses its plugins (every one it was built with when it names none).
        #expect(await run(feedback, "--embed", "auth") == 2)
        #expect(await run(Gateway.executable, "--embed", "billing") == 2)
        #expect(await run(Gateway.executable, "--route") == 2)
        // A prefix is either hosted or proxied.
        #expect(await run(Gateway.executable, "--embed", "feedback", "--route", "/feedback=http://127.0.0.1:9") == 2)
        // A plugin's command is the host's command when it hosts the plugin.
        #expect(Gateway.executable.usage.contains("pier-gateway create-admin"))
        #expect(await run(Gateway.executable, "create-admin", "--embed", "feedback") == 2)
    }

    /// A plugin's command on a database nobody migrated: refused in words (exit 1, nothing done),
    /// and with `--migrate` its plugin's schema is migrated first, then it runs.
    @Test func aCommandMigratesFirstWhenToldAndSaysSoWhenNot() async throws {
        let url = try await TestDatabase.create("pier_test_command_migrates")
        let environment = ["PIER_DATABASE_URL": url, "PIER_LOG_LEVEL": "error", "PIER_ADMIN_PASSWORD": "an admin passphrase"]
        #expect(
            await run(Gateway.executable, "create-admin", "--embed", "auth", "--email", "a@example.com", environment: environment)
                == 1)
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 1))
        defer { pool.close() }
        #expect(try await pool.query("SELECT 1 AS n FROM pg_namespace WHERE nspname = 'auth'").isEmpty)
        #expect(
            await run(
                Gateway.executable, "create-admin", "--migrate", "--embed", "auth", "--email", "a@example.com",
                environment: environment)
                == 0)
        let admins = try await pool.query("SELECT role FROM auth.users WHERE email = 'a@example.com'")
        #expect(try admins.map { try $0.decode("role", as: String.self) } == ["admin"])
    }

    /// A gateway told no plugin and no route hosts every plugin it was built with (remote config
    /// among them): the README's `pier-gateway serve --migrate` and docs/plugins.md's
    /// `my-gateway serve --migrate` run as printed (here `migrate`, which stops when done).
    @Test func aGatewayNamingNoPluginHostsEveryOne() async throws {
        let url = try await TestDatabase.create("pier_test_gateway_every_plugin")
        let status = await run(Gateway.executable, "migrate", environment: ["PIER_DATABASE_URL": url, "PIER_LOG_LEVEL": "error"])
        #expect(status == 0)
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 1))
        let schemas = try await pool.query(
            """
            SELECT nspname FROM pg_namespace
            WHERE nspname IN ('auth', 'feedback', 'subscriptions', 'console', 'remote_config') ORDER BY 1
            """)
        #expect(
            try schemas.map { try $0.decode("nspname", as: String.self) }
                == ["auth", "console", "feedback", "remote_config", "subscriptions"])
        pool.close()
        #expect(Gateway.executable.usage.contains("every one of them when neither names any"))
    }

    /// A team's list that adds one of Pier's own plugins again (remote config was a team's
    /// plugin before it was built in) is refused before anything starts: exit 2, never a trap;
    /// hosting it twice through the host is refused too.
    @Test func aPluginListedTwiceIsRefused() async throws {
        let twice = Gateway.builtIn + [Gateway.builtIn.last!]
        #expect(Plugin.repeated(in: twice)?.contains("the name config") == true)
        #expect(Plugin.repeated(in: Gateway.builtIn) == nil)
        let executable = Gateway.executable(plugins: twice, name: "my-gateway")
        #expect(await run(executable, "migrate", environment: ["PIER_DATABASE_URL": "postgresql://127.0.0.1:9/none"]) == 2)
        let configuration = try ServiceConfiguration(
            environment: Environment(["PIER_DATABASE_URL": "postgresql://127.0.0.1:9/none", "PIER_PORT": "0"]), defaultPort: 0,
            applicationName: "twice")
        await #expect(throws: Environment.Failure.self) {
            _ = try await PluginHost.start(
                twice, configuration: configuration, logger: Logger(service: "twice", level: .error), migrate: false)
        }
    }

    /// A database that refuses is a failure of the step (1), told on stderr, not a usage error.
    @Test func aFailedStepExitsWithOne() async throws {
        let nobody = try PortHolder()
        let status = await run(
            Executable.standalone(FeedbackService.self), "migrate",
            environment: [
                "PIER_DATABASE_URL": "postgresql://postgres@127.0.0.1:\(nobody.port)/pier", "PIER_DB_STARTUP_WAIT_S": "0",
                "PIER_LOG_LEVEL": "error",
            ])
        #expect(status == 1)
    }
}
