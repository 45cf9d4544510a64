import Foundation
import Gateway
import PierModels
import PierPostgres
import PierService
import PierServiceTestSupport
import PierTestSupport
import Testing

/// The database cost of each hot request, held to a budget written here: the statements, round
/// trips and rows written of the request itself (counted on the task that served it, whatever
/// pools it used), and of the work its events set off in every follower of a whole stack hosted
/// in one process (event consumers, live feeds, the revocation list). Counted, not timed: the
/// same on any machine. Raising a budget is a reviewed change whose commit says what it buys.
@Suite(.serialized) struct StatementBudgetTests {
    /// What a request may cost: its own statements, round trips, rows written, and the
    /// statements of the work its events set off.
    struct Budget: Sendable {
        var statements: Int
        var roundTrips: Int
        var rowsWritten: Int
        var eventStatements: Int
    }

    struct Cost: CustomStringConvertible {
        var request: PostgresActivity.Counts
        var events: PostgresActivity.Counts
        var description: String { "request: \(request); its events: \(events)" }

        func expect(within budget: Budget, _ route: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(request.statements <= budget.statements, "\(route): \(self)", sourceLocation: sourceLocation)
            #expect(request.roundTrips <= budget.roundTrips, "\(route): \(self)", sourceLocation: sourceLocation)
            #expect(request.rowsWritten <= budget.rowsWritten, "\(route): \(self)", sourceLocation: sourceLocation)
            #expect(events.statements <= budget.eventStatements, "\(route): \(self)", sourceLocation: sourceLocation)
        }
    }

    /// The stack's settings: one connection per pool (a request never meets a connection on
    /// which its statements are not prepared yet), and the event readers' polls far apart (a
    /// reader busy with its poll when the notification comes would do the work uncounted). The
    /// one connection is waited for as long as a loaded machine needs: counted, not timed.
    static let settings = [
        "PIER_DB_POOL_SIZE": "1", "PIER_DB_ACQUIRE_TIMEOUT_MS": "120000", "PIER_WEBHOOK_POLL_MS": "60000",
        "PIER_FEEDBACK_EVENT_POLL_S": "3600",
        "PIER_SUBSCRIPTIONS_EVENT_POLL_S": "3600", "PIER_AUTH_MAIL_POLL_S": "3600",
        // Every round sends from one address: no quota in the way.
        "PIER_FEEDBACK_QUOTA_PER_MINUTE": "100000", "PIER_FEEDBACK_QUOTA_PER_DAY": "100000",
    ]

    /// Sends one request in-process (so that its task counts what it asks of the database) and,
    /// when it appends events, waits until they are notified and every follower they woke is
    /// done.
    static func measure(
        _ running: Hosted, appendsEvents: Bool, _ send: () async throws -> Reply
    ) async throws -> (Reply, Cost) {
        let listener = try #require(running.events)
        let ledger = PostgresActivity()
        // Every follower waits (none is busy with an earlier event or its poll): what the
        // notification sets off is all counted.
        #expect(await eventually { listener.followersIdle })
        let (before, generation) = (listener.notifiedWork.counts, listener.generation)
        let reply = try await PostgresActivity.$ledger.withValue(ledger) { try await send() }
        if appendsEvents {
            #expect(await eventually { listener.generation != generation && listener.followersAtWork == 0 })
        }
        return (reply, Cost(request: ledger.counts, events: listener.notifiedWork.counts.since(before)))
    }

    @Test func everyHotRequestKeepsToItsBudget() async throws {
        let url = try await TestDatabase.create("pier_test_budget")
        // Apple's notifications signed by a test authority that the service trusts.
        let ca = try TestCA()
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("pier-budget-\(UUID())").path
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: data) }
        try ca.rootPEM.write(toFile: data + "/roots.pem", atomically: true, encoding: .utf8)
        let appStore = [
            "PIER_DATA_DIR": data, "PIER_SUBSCRIPTIONS_APPSTORE_ROOTS": data + "/roots.pem",
            "PIER_SUBSCRIPTIONS_APPSTORE_BUNDLE_ID": AppStorePayload.bundleID,
            "PIER_SUBSCRIPTIONS_APPSTORE_APP_APPLE_ID": String(AppStorePayload.appAppleID),
        ]
        let running = try await EmbeddedStack.start(
            databaseURL: url, settings: Self.settings.merging(appStore) { $1 }, plugins: ["auth", "feedback", "subscriptions"])
        do {
            try await Self.measureEveryHotRequest(running, ca: ca)
        } catch {
            await running.shutdown()
            throw error
        }
        await running.shutdown()
    }

    /// With a webhook endpoint subscribed to new feedback, an item's event wakes auth's webhook
    /// consumer, which queues the message in the transaction that moves its cursor: that work
    /// is the event's cost (the attempt to send it is the sender's, not counted here).
    @Test func anEventCostsWhatItsSubscribedReadersDo() async throws {
        let url = try await TestDatabase.create("pier_test_budget_events")
        let hooks =
            #"[{"name":"backend","url":"http://127.0.0.1:9/hooks","secret":"whsec_c2VjcmV0IGZvciB0aGUgYnVkZ2V0IHRlc3QgMzI=","events":["feedback.created"]}]"#
        let running = try await EmbeddedStack.start(
            databaseURL: url, settings: Self.settings.merging(["PIER_WEBHOOKS": hooks]) { $1 },
            plugins: ["auth", "feedback", "subscriptions"])
        do {
            let client = ServiceClient(pipeline: running.pipeline)
            var installation = 0
            // The request's one statement; its wake-up (``EventAnnouncer``: one NOTIFY for the
            // items of 10 ms) and the consumer's transaction: BEGIN, its cursor locked, the
            // events read, the message queued, the cursor moved, COMMIT.
            let budget = Budget(statements: 1, roundTrips: 1, rowsWritten: 0, eventStatements: 7)
            // An event is read once it is settled: while any transaction of the cluster older than
            // it is open (another suite's, when suites run at once), the consumer passes it by and
            // applies it with the next one, two to a transaction. A round whose consumer applied
            // exactly its own event (one message queued, the cursor moved: two rows) is held to
            // the budget, until three were; the first two prepare the statements on their
            // connections. On a busy cluster few rounds are such: up to 300.
            var (held, round) = (0, 0)
            while held < 3 && round < 300 {
                defer { round += 1 }
                installation += 1
                let (reply, cost) = try await Self.measure(running, appendsEvents: true) {
                    try await client.send(
                        "POST", "/feedback", json: #"{"message":"A word for the webhook"}"#,
                        headers: ["X-Installation-ID": "hooks-\(installation)"])
                }
                #expect(reply.status == 201, "\(reply.text)")
                guard round >= 2, cost.events.rowsWritten == 2 else { continue }
                print("budget POST /feedback with a webhook subscribed, round \(round): \(cost)")
                cost.expect(within: budget, "POST /feedback with a webhook subscribed")
                held += 1
            }
            #expect(held > 0, "no round of \(round) applied its own event alone")
        } catch {
            await running.shutdown()
            throw error
        }
        await running.shutdown()
    }

    static func measureEveryHotRequest(_ running: Hosted, ca: TestCA) async throws {
        let client = ServiceClient(pipeline: running.pipeline)
        let password = "a budget passphrase"
        func credentials(_ email: String) -> String { #"{"email":"\#(email)","password":"\#(password)"}"# }
        let registered = try await client.send("POST", "/auth/register", json: credentials("budget@example.com"))
        #expect(registered.status == 201, "\(registered.text)")
        let pool = try #require(running.pools["auth"])
        try await pool.execute("UPDATE auth.users SET role = 'admin' WHERE email = 'budget@example.com'")

        // Each request runs twice first: what a connection prepares once is not the budget's.
        func twiceThenMeasured(
            _ route: String, appendsEvents: Bool, _ budget: Budget, status: Int,
            _ send: () async throws -> Reply
        ) async throws -> Reply {
            for _ in 0..<2 { _ = try await send() }
            let (reply, cost) = try await Self.measure(running, appendsEvents: appendsEvents, send)
            #expect(reply.status == status, "\(route): \(reply.text)")
            print("budget \(route): \(cost)")
            cost.expect(within: budget, route)
            return reply
        }

        var installation = 0
        // A new item: its one statement (the item and its event), and the event's wake-up, one
        // NOTIFY for the items of 10 ms, that no reader answers (none reads new feedback here).
        _ = try await twiceThenMeasured(
            "POST /feedback (anonymous)", appendsEvents: true,
            Budget(statements: 1, roundTrips: 1, rowsWritten: 0, eventStatements: 1), status: 201
        ) {
            installation += 1
            return try await client.send(
                "POST", "/feedback", json: #"{"message":"An anonymous word"}"#,
                headers: ["X-Installation-ID": "budget-\(installation)"])
        }
        let login = try await twiceThenMeasured(
            "POST /auth/login", appendsEvents: false,
            Budget(statements: 7, roundTrips: 7, rowsWritten: 1, eventStatements: 0), status: 200
        ) { try await client.send("POST", "/auth/login", json: credentials("budget@example.com")) }
        var session = try login.decode(AuthSession.self)
        _ = try await twiceThenMeasured(
            "POST /feedback (signed in)", appendsEvents: true,
            Budget(statements: 1, roundTrips: 1, rowsWritten: 0, eventStatements: 1), status: 201
        ) {
            try await client.send("POST", "/feedback", json: #"{"message":"A signed-in word"}"#, token: session.accessToken)
        }
        _ = try await twiceThenMeasured(
            "POST /auth/refresh", appendsEvents: false,
            Budget(statements: 6, roundTrips: 6, rowsWritten: 3, eventStatements: 0), status: 200
        ) {
            let reply = try await client.send(
                "POST", "/auth/refresh", json: #"{"refreshToken":"\#(session.refreshToken)"}"#)
            if let renewed = try? reply.decode(AuthSession.self) { session = renewed }
            return reply
        }
        _ = try await twiceThenMeasured(
            "GET /subscriptions/me", appendsEvents: false,
            Budget(statements: 1, roundTrips: 1, rowsWritten: 0, eventStatements: 0), status: 200
        ) { try await client.send("GET", "/subscriptions/me", token: session.accessToken) }
        let plan = try await client.send(
            "POST", "/subscriptions/plans",
            json:
                #"{"id":"budget","name":"Budget","price":100,"currency":"USD","billingPeriod":"P1M","entitlements":["pro"],"appStoreProductIds":["pier.pro.monthly"]}"#,
            token: session.accessToken)
        #expect(plan.status == 201, "\(plan.text)")
        let user = session.user.id
        _ = try await twiceThenMeasured(
            "POST /subscriptions/grants", appendsEvents: true,
            Budget(statements: 6, roundTrips: 6, rowsWritten: 3, eventStatements: 0), status: 201
        ) {
            try await client.send(
                "POST", "/subscriptions/grants",
                json: #"{"userId":"\#(user)","planId":"budget","duration":"P1M","reason":"budget"}"#, token: session.accessToken)
        }
        // Apple's notification of a renewal: stored once (by its UUID), with the facts it
        // carries and the change of status they make, in one transaction before the 200.
        var renewal = 0
        _ = try await twiceThenMeasured(
            "POST /subscriptions/appstore/notifications", appendsEvents: true,
            Budget(statements: 9, roundTrips: 9, rowsWritten: 3, eventStatements: 0), status: 200
        ) {
            renewal += 1
            let now = Date()
            let transaction = try ca.sign(
                AppStorePayload.transaction(
                    id: "9\(renewal)", original: "9000", purchased: now, expires: now.addingTimeInterval(30 * 86_400), user: user)
            )
            let notification = try ca.sign(AppStorePayload.notification("DID_RENEW", transaction: transaction, renewal: nil))
            return try await client.send(
                "POST", "/subscriptions/appstore/notifications", json: #"{"signedPayload":"\#(notification)"}"#)
        }
    }
}
