import Foundation
import PierCrypto
import PierHTTP
import PierModels
import PierPostgres
import PierRuntime
import PierService
import PierTestSupport
import Testing

@testable import FeedbackService

@Suite struct FeedbackIntakeTests {
    static let harness = Task { try await FeedbackHarness.start(database: "pier_test_feedback") }
    var feedback: FeedbackHarness { get async throws { try await Self.harness.value } }

    @Test func anonymousFeedbackIsStoredExactly() async throws {
        let feedback = try await feedback
        let message = "  Crash on launch 💥 — لا يعمل التطبيق 'quoted' \"double\" ; DROP TABLE feedback.items; -- \\ %_  "
        let reply = try await feedback.send(
            "POST", "/feedback",
            json: """
                {"message":\(quoted(message)),"rating":2,"category":"bug","email":" Ada@Example.com ","appVersion":"2.3.1",
                 "build":"451","platform":"ios","osVersion":"18.1","device":"iPhone16,2","locale":"ar-EG",
                 "requestIds":["abc-123","c4016978899e44ce-1"],"metadata":{"screen":"checkout","attempt":3,"ratio":0.5}}
                """)
        #expect(reply.status == 201)
        let item = try reply.decode(FeedbackItem.self)
        #expect(reply.headers["Location"] == "/feedback/\(item.id.uuidString.lowercased())")
        #expect(item.message == message.trimmingCharacters(in: .whitespaces))
        #expect(item.rating == 2 && item.category == "bug" && item.status == "new" && item.platform == "ios")
        #expect(item.requestIds == ["abc-123", "c4016978899e44ce-1"])
        #expect(item.metadata == ["screen": .string("checkout"), "attempt": .number(3), "ratio": .number(0.5)])
        // The sender's view carries no team fields.
        #expect(item.email == nil && item.tags == nil && item.internalNote == nil && item.userId == nil)
        let stored = try await feedback.pool.query("SELECT message, email, user_id FROM feedback.items WHERE id = \(item.id)")
        #expect(try stored[0].decode("message", as: String.self) == item.message)
        #expect(try stored[0].decode("email", as: String?.self) == "Ada@Example.com")
        let tableStillThere = try await feedback.pool.query("SELECT to_regclass('feedback.items') IS NOT NULL AS present")
        #expect(try tableStillThere[0].decode("present", as: Bool.self))
    }

    /// The common tutorial's form posts `{"name", "feedback"}` and expects a 201: it gets one.
    @Test func theTutorialFormWorksAsWritten() async throws {
        let feedback = try await feedback
        let reply = try await feedback.send("POST", "/feedback", json: #"{"name":"Grace","feedback":"Lovely app"}"#)
        #expect(reply.status == 201)
        let item = try reply.decode(FeedbackItem.self)
        #expect(item.message == "Lovely app" && item.name == nil)  // the sender's view has no team fields
        let admin = try await feedback.send("GET", "/feedback/\(item.id.uuidString.lowercased())", token: feedback.admin())
        #expect(try admin.decode(FeedbackItem.self).name == "Grace")
        // Exactly one of the two names.
        let both = try await feedback.send("POST", "/feedback", json: #"{"message":"a","feedback":"b"}"#)
        #expect(both.status == 422 && both.problem?.errors?.map(\.field) == ["feedback"])
        let neither = try await feedback.send("POST", "/feedback", json: #"{"name":"Grace"}"#)
        #expect(neither.status == 422 && neither.problem?.errors?.map(\.field) == ["message"])
        // A signed-in sender's name is kept too (never dropped silently), beside the account;
        // their reply address is the account's, so a typed one is not.
        let signedIn = try await feedback.post(
            #"{"name":"Grace","feedback":"x","email":"other@example.com"}"#, token: feedback.token(UUID()))
        let stored = try await feedback.pool.query("SELECT name, email FROM feedback.items WHERE id = \(signedIn.id)")
        #expect(try stored[0].decode("name", as: String?.self) == "Grace")
        #expect(try stored[0].decode("email", as: String?.self) == nil)
        let long = try await feedback.send(
            "POST", "/feedback", json: #"{"name":"\#(String(repeating: "n", count: 101))","feedback":"x"}"#)
        #expect(long.status == 422 && long.problem?.errors?.map(\.field) == ["name"])
    }

    /// What a phone produces (`UIDevice.systemName` is "iOS") is accepted and stored normalized.
    @Test func vocabulariesAreReadCaseInsensitively() async throws {
        let feedback = try await feedback
        let item = try await feedback.post(#"{"message":"x","platform":"iOS","category":"Bug"}"#)
        #expect(item.platform == "ios" && item.category == "bug")
        let wrong = try await feedback.send("POST", "/feedback", json: #"{"message":"x","platform":"Symbian"}"#)
        #expect(wrong.status == 422 && wrong.problem?.errors?.map(\.field) == ["platform"])
    }

    @Test func signedInFeedbackBelongsToTheUserAndDropsTheEmail() async throws {
        let feedback = try await feedback
        let user = UUID()
        let item = try await feedback.post(#"{"message":"Love it","email":"me@example.com"}"#, token: feedback.token(user))
        #expect(item.category == "other")
        let stored = try await feedback.pool.query("SELECT email, user_id FROM feedback.items WHERE id = \(item.id)")
        #expect(try stored[0].decode("email", as: String?.self) == nil)
        #expect(try stored[0].decode("user_id", as: UUID?.self) == user)
        // A present but invalid token is a 401, never silently anonymous.
        let forged = try await feedback.send("POST", "/feedback", json: #"{"message":"x"}"#, token: "not.a.token")
        #expect(forged.status == 401)
    }

    @Test(arguments: [
        (#"{"message":""}"#, "message"),
        (#"{"message":"   \n\t  "}"#, "message"),
        (#"{"message":"\#(String(repeating: "a", count: 5001))"}"#, "message"),
        (#"{"message":"x","rating":0}"#, "rating"),
        (#"{"message":"x","rating":6}"#, "rating"),
        (#"{"message":"x","rating":"5"}"#, "rating"),
        (#"{"message":"x","rating":4.5}"#, "rating"),
        (#"{"message":"x","category":"rant"}"#, "category"),
        (#"{"message":"x","platform":"symbian"}"#, "platform"),
        (#"{"message":"x","email":"not-an-email"}"#, "email"),
        (#"{"message":"x","appVersion":"\#(String(repeating: "9", count: 65))"}"#, "appVersion"),
        (#"{"message":"x","locale":"\#(String(repeating: "e", count: 36))"}"#, "locale"),
        (#"{"message":"x","requestIds":[\#((0..<21).map { "\"r\($0)\"" }.joined(separator: ","))]}"#, "requestIds"),
        (#"{"message":"x","requestIds":["has space"]}"#, "requestIds[0]"),
        (#"{"message":"x","requestIds":"abc"}"#, "requestIds"),
        (#"{"message":"x","metadata":{"nested":{"a":1}}}"#, "metadata.nested"),
        (#"{"message":"x","metadata":{"list":[1,2]}}"#, "metadata.list"),
        (#"{"message":"x","metadata":{"flag":true}}"#, "metadata.flag"),
        (#"{"message":"x","metadata":{"big":"\#(String(repeating: "m", count: 4100))"}}"#, "metadata"),
        (#"{"message":"x","metadata":[1]}"#, "metadata"),
        (#"{"message":"x","bogus":1,"extra":"y"}"#, "bogus"),
        (#"{"rating":5}"#, "message"),
        (#"{"message":42}"#, "message"),
        (#"{"message":null}"#, "message"),
        (#"{"message":"x","id":"not-a-uuid"}"#, "id"),
    ])
    func badInputNamesTheField(body: String, field: String) async throws {
        let reply = try await feedback.send("POST", "/feedback", json: body)
        #expect(reply.status == 422, "\(body.prefix(60)) → \(reply.status)")
        #expect(reply.fields.contains(field), "\(body.prefix(60)) → \(reply.text.prefix(300))")
    }

    /// One answer names every missing and every unknown field, so a client fixes them in one go.
    @Test func everyMissingAndUnknownFieldIsNamedAtOnce() async throws {
        let feedback = try await feedback
        let reply = try await feedback.send("POST", "/feedback", json: #"{"messge":"typo","ratng":4,"rating":4}"#)
        #expect(reply.status == 422 && reply.problem?.code == .validationFailed)
        #expect(reply.problem?.errors?.map(\.field) == ["message", "messge", "ratng"])
        #expect(reply.problem?.errors?.first?.message == "is required (or feedback)")
    }

    @Test func malformedBodiesAre400() async throws {
        let feedback = try await feedback
        for body in [#"{"message":"x""#, "[]", "\"text\"", "", "{\"message\":\"x\"} trailing"] {
            #expect(try await feedback.send("POST", "/feedback", json: body).status == 400, "\(body)")
        }
        #expect(
            try await feedback.send("POST", "/feedback", json: #"{"message":"x"}"#, headers: ["Content-Type": "text/plain"])
                .status == 415)
        let huge = "{\"message\":\"" + String(repeating: "a", count: 1_100_000) + "\"}"
        // The body limit is the HTTP adapter's: over a socket. The client announces the body and
        // waits (`Expect: 100-continue`), as curl does for large bodies: the 413 comes before
        // it is sent. (Sent at once instead, the server answers and closes under a client still
        // writing, which on a busy machine may see the reset before it reads the answer.)
        let refused = try await feedback.socket.send(
            "POST", "/feedback", json: huge, headers: ["Expect": "100-continue"])
        #expect(refused.status == 413)
    }

    @Test func exactlyFiveThousandCharactersAreAccepted() async throws {
        let item = try await feedback.post(#"{"message":"\#(String(repeating: "é", count: 5000))"}"#)
        #expect(item.message.count == 5000)
    }

    @Test func retriesWithTheSameKeyCreateOneItem() async throws {
        let feedback = try await feedback
        let key = UUID().uuidString
        let body = #"{"message":"retry me \#(key)"}"#
        let first = try await feedback.send("POST", "/feedback", json: body, headers: ["Idempotency-Key": key])
        let second = try await feedback.send("POST", "/feedback", json: body, headers: ["Idempotency-Key": key])
        #expect(first.status == 201 && second.status == 201)
        #expect(first.body == second.body)
        #expect(second.headers["Idempotent-Replayed"] == "true")
        #expect(first.headers["Location"] == second.headers["Location"])
        let different = try await feedback.send(
            "POST", "/feedback", json: #"{"message":"something else"}"#, headers: ["Idempotency-Key": key])
        #expect(different.status == 422)
        #expect(different.fields == ["Idempotency-Key"])
        let count = try await feedback.pool.query(
            "SELECT count(*)::int AS n FROM feedback.items WHERE message = \("retry me " + key)")
        #expect(try count[0].decode("n", as: Int.self) == 1)
    }

    /// The same body written another way (member order, spacing, escapes, `2.0` for `2`) is the
    /// same request; a retry of an id under a new key replays it too.
    @Test func keysCompareWhatABodyMeansNotItsBytes() async throws {
        let feedback = try await feedback
        let key = UUID().uuidString
        let first = try await feedback.send(
            "POST", "/feedback", json: #"{"message":"same \#(key)","rating":2,"metadata":{"a":"x","b":1}}"#,
            headers: ["Idempotency-Key": key])
        let again = try await feedback.send(
            "POST", "/feedback", json: #"{ "metadata" : {"b":1.0,"a":"\u0078"}, "rating":2.0, "message":"same \#(key)" }"#,
            headers: ["Idempotency-Key": key])
        #expect(first.status == 201 && again.status == 201 && again.headers["Idempotent-Replayed"] == "true")
        #expect(first.body == again.body)

        let id = UUID()
        let token = try feedback.token(UUID())
        let body = #"{"id":"\#(id.uuidString)","message":"by id \#(key)"}"#
        let original = try await feedback.send(
            "POST", "/feedback", json: body, token: token, headers: ["Idempotency-Key": "k1-\(key)"])
        let retried = try await feedback.send(
            "POST", "/feedback", json: body, token: token, headers: ["Idempotency-Key": "k2-\(key)"])
        #expect(original.status == 201 && retried.status == 201 && retried.headers["Idempotent-Replayed"] == "true")
        #expect(try retried.decode(FeedbackItem.self).id == id)
        let count = try await feedback.pool.query(
            "SELECT count(*)::int AS n FROM feedback.items WHERE message = \("by id " + key)")
        #expect(try count[0].decode("n", as: Int.self) == 1)
    }

    @Test func aClientGeneratedIDIsAnIdempotencyKey() async throws {
        let feedback = try await feedback
        let id = UUID()
        let body = #"{"id":"\#(id.uuidString)","message":"with my own id"}"#
        let first = try await feedback.post(body)
        let second = try await feedback.post(body)
        #expect(first.id == id && second.id == id)
        #expect(
            try await feedback.send("POST", "/feedback", json: #"{"id":"\#(id.uuidString)","message":"changed"}"#).status == 422)
    }

    @Test func concurrentDuplicatesMakeExactlyOneRow() async throws {
        let feedback = try await feedback
        let key = UUID().uuidString
        let body = #"{"message":"at the same instant \#(key)","rating":4}"#
        let replies = try await withThrowingTaskGroup(of: Reply.self) { group in
            for _ in 0..<12 {
                group.addTask { try await feedback.send("POST", "/feedback", json: body, headers: ["Idempotency-Key": key]) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(replies.allSatisfy { $0.status == 201 })
        #expect(Set(replies.map(\.body)).count == 1)
        let count = try await feedback.pool.query(
            "SELECT count(*)::int AS n FROM feedback.items WHERE message = \("at the same instant " + key)")
        #expect(try count[0].decode("n", as: Int.self) == 1)
    }

    @Test func keysAreScopedToTheSender() async throws {
        let feedback = try await feedback
        let key = UUID().uuidString
        let a = try await feedback.post(#"{"message":"a"}"#, token: feedback.token(UUID()), headers: ["Idempotency-Key": key])
        let b = try await feedback.post(#"{"message":"b"}"#, token: feedback.token(UUID()), headers: ["Idempotency-Key": key])
        #expect(a.id != b.id)
    }

    /// Anonymous senders do not share one scope: two apps that pick the same key each get their
    /// own item (nothing dropped, nothing of the other's shown); one app's retry still replays.
    @Test func anonymousKeysAreScopedToTheInstallationOrAddress() async throws {
        let feedback = try await feedback
        let key = UUID().uuidString
        let first = try await feedback.post(
            #"{"message":"from app one"}"#, headers: ["Idempotency-Key": key, "X-Installation-ID": "install-one"])
        let second = try await feedback.post(
            #"{"message":"from app two"}"#, headers: ["Idempotency-Key": key, "X-Installation-ID": "install-two"])
        #expect(first.id != second.id && second.message == "from app two")
        let retry = try await feedback.post(
            #"{"message":"from app one"}"#, headers: ["Idempotency-Key": key, "X-Installation-ID": "install-one"])
        #expect(retry.id == first.id)
        // Without an installation id, the scope is the address: another key space again.
        let byAddress = try await feedback.post(#"{"message":"from app one"}"#, headers: ["Idempotency-Key": key])
        #expect(byAddress.id != first.id)
        for bad in [String(repeating: "x", count: 129), "has space", "tab\there"] {
            let reply = try await feedback.send(
                "POST", "/feedback", json: #"{"message":"m"}"#, headers: ["X-Installation-ID": bad])
            #expect(reply.status == 422 && reply.fields == ["X-Installation-ID"], "\(bad.debugDescription)")
        }
    }

    /// A client id that another sender's item has is not a 409 (which would confirm the item
    /// exists): the new item gets an id of its own, and the other item is neither shown nor changed.
    @Test func anotherSendersIDRevealsNothing() async throws {
        let feedback = try await feedback
        let owner = UUID()
        let id = UUID()
        let original = try await feedback.post(
            #"{"id":"\#(id.uuidString)","message":"the owner's words"}"#, token: feedback.token(owner))
        #expect(original.id == id)
        for token in [try feedback.token(UUID()), nil] {
            let reply = try await feedback.send(
                "POST", "/feedback", json: #"{"id":"\#(id.uuidString)","message":"a probe"}"#, token: token,
                headers: ["X-Installation-ID": "prober"])
            #expect(reply.status == 201)
            let item = try reply.decode(FeedbackItem.self)
            #expect(item.id != id && item.message == "a probe")
        }
        let kept = try await feedback.send("GET", "/feedback/\(id)", token: feedback.token(owner))
        #expect(try kept.decode(FeedbackItem.self).message == "the owner's words")
    }

    /// Two senders choosing the same new id at the same instant both get a 201 and an item of
    /// their own: the one that meets the primary key takes a fresh id, not a 409.
    @Test func twoSendersRacingForOneIDBothSucceed() async throws {
        let feedback = try await feedback
        for _ in 0..<20 {
            let id = UUID()
            let replies = try await withThrowingTaskGroup(of: Reply.self) { group in
                for sender in 0..<2 {
                    group.addTask {
                        try await feedback.send(
                            "POST", "/feedback", json: #"{"id":"\#(id.uuidString)","message":"racer \#(sender)"}"#,
                            token: try feedback.token(UUID()))
                    }
                }
                return try await group.reduce(into: [Reply]()) { $0.append($1) }
            }
            #expect(replies.allSatisfy { $0.status == 201 }, "\(replies.map(\.status))")
            let ids = Set(try replies.map { try $0.decode(FeedbackItem.self).id })
            #expect(ids.count == 2 && ids.contains(id))
        }
    }
}

@Suite struct FeedbackAbuseTests {
    /// `PIER_FEEDBACK_APP_ATTEST=optional`: a token sent is checked (a forged or another
    /// installation's is refused), and an attested installation's quota is its own, so two of
    /// them behind one address each send their share while the bare address is limited.
    @Test func attestedInstallationsHaveQuotasOfTheirOwn() async throws {
        let feedback = try await FeedbackHarness.start(
            database: "pier_test_feedback_app_attest",
            settings: ["PIER_FEEDBACK_QUOTA_PER_MINUTE": "2", "PIER_FEEDBACK_APP_ATTEST": "optional"])
        let now = Int(Date().timeIntervalSince1970)
        func token(_ installation: String, signer: AccessTokenSigner? = nil) throws -> String {
            try (signer ?? feedback.tokens.signer).sign(
                InstallationClaims(iss: "pier", sub: installation, aud: "pier", iat: now, exp: now + 3600, jti: "j"))
        }
        for installation in ["one", "two"] {
            for index in 0..<2 {
                try await feedback.post(
                    #"{"message":"\#(installation) \#(index)"}"#,
                    headers: ["X-Installation-ID": installation, "X-Installation-Token": try token(installation)])
            }
        }
        for index in 0..<2 { try await feedback.post(#"{"message":"bare \#(index)"}"#) }
        #expect(try await feedback.send("POST", "/feedback", json: #"{"message":"bare 3"}"#).status == 429)
        let forged = AccessTokenSigner(key: try P256PrivateKey.generate(), kid: "test")
        let refusals: [HTTPHeaders] = [
            ["X-Installation-ID": "three", "X-Installation-Token": try token("three", signer: forged)],
            ["X-Installation-ID": "three", "X-Installation-Token": try token("one")],
            ["X-Installation-ID": "three", "X-Installation-Token": try feedback.token(UUID())],
            ["X-Installation-Token": "not a token\u{0}"],
        ]
        for headers in refusals {
            let reply = try await feedback.send("POST", "/feedback", json: #"{"message":"m"}"#, headers: headers)
            #expect(reply.status == 422 && reply.problem?.code == .invalidAttestation, "\(reply.text)")
            #expect(reply.problem?.errors?.map(\.field) == ["X-Installation-Token"], "\(reply.text)")
        }
        await feedback.stop()
        let required = try await FeedbackHarness.start(
            database: "pier_test_feedback_app_attest", settings: ["PIER_FEEDBACK_APP_ATTEST": "required"])
        let bare = try await required.send("POST", "/feedback", json: #"{"message":"m"}"#)
        #expect(bare.status == 403 && bare.problem?.code == .attestationRequired, "\(bare.text)")
        try await required.post(#"{"message":"signed in"}"#, token: try required.token(UUID()))
        await required.stop()
    }

    @Test func quotasPerUserAndPerAddress() async throws {
        let feedback = try await FeedbackHarness.start(
            database: "pier_test_feedback_quota",
            settings: ["PIER_FEEDBACK_QUOTA_PER_MINUTE": "3", "PIER_FEEDBACK_QUOTA_PER_DAY": "5"])
        let user = try feedback.token(UUID())
        for index in 0..<3 { try await feedback.post(#"{"message":"m\#(index)"}"#, token: user) }
        let limited = try await feedback.send("POST", "/feedback", json: #"{"message":"too many"}"#, token: user)
        #expect(limited.status == 429 && limited.problem?.code == .rateLimited)
        // The same fields as the gateway's rate limit: what clients already read.
        #expect(limited.headers["RateLimit-Remaining"] == "0" && limited.headers["RateLimit-Policy"]?.hasSuffix(";w=60") == true)
        let retry = Int(limited.headers["Retry-After"] ?? "") ?? 0
        #expect((1...60).contains(retry))
        // A retry of an accepted request is not counted again.
        let key = UUID().uuidString
        let other = try feedback.token(UUID())
        try await feedback.post(#"{"message":"keyed"}"#, token: other, headers: ["Idempotency-Key": key])
        for _ in 0..<5 { try await feedback.post(#"{"message":"keyed"}"#, token: other, headers: ["Idempotency-Key": key]) }
        // Anonymous senders are counted per client address.
        for index in 0..<3 { try await feedback.post(#"{"message":"anon \#(index)"}"#) }
        #expect(try await feedback.send("POST", "/feedback", json: #"{"message":"anon 4"}"#).status == 429)
        // The daily quota, once the minute window has passed. Refused attempts count too, so
        // a sender who keeps pushing stays refused: this user has 3 stored and 1 refused.
        feedback.advanceClock(by: 61)
        try await feedback.post(#"{"message":"later"}"#, token: user)
        let daily = try await feedback.send("POST", "/feedback", json: #"{"message":"over the day"}"#, token: user)
        #expect(daily.status == 429)
        #expect((Int(daily.headers["Retry-After"] ?? "") ?? 0) > 3600)
        await feedback.stop()
    }

    /// One sender's concurrent attempts are counted exactly in one replica (they no longer queue
    /// on a row lock for it).
    @Test func concurrentAttemptsOfOneSenderCountExactly() async throws {
        let feedback = try await FeedbackHarness.start(
            database: "pier_test_feedback_quota_race", settings: ["PIER_FEEDBACK_QUOTA_PER_MINUTE": "10"])
        let user = try feedback.token(UUID())
        let statuses = try await concurrently(40) { index in
            try await feedback.send("POST", "/feedback", json: #"{"message":"race \#(index)"}"#, token: user).status
        }
        #expect(statuses.filter { $0 == 201 }.count == 10)
        #expect(statuses.filter { $0 == 429 }.count == 30)
        let stored = try await feedback.pool.query("SELECT count(*)::int AS n FROM feedback.items")[0].decode("n", as: Int.self)
        #expect(stored == 10)
        await feedback.stop()
    }

    /// Replicas share counts through the quota row: a replica that meets a sender for the first
    /// time reads what others counted, and one that knows the sender learns the others'
    /// attempts at its next flush.
    @Test func quotaCountsReachOtherReplicas() async throws {
        let feedback = try await FeedbackHarness.start(database: "pier_test_feedback_quota_replicas")
        let logger = Logger(service: "feedback", level: .error)
        func replica() -> SenderQuota {
            SenderQuota(perMinute: 3, perDay: 100, database: feedback.pool, logger: logger, interval: .seconds(3600))
        }
        let one = replica(), two = replica()
        try await one.prepare("user:a")
        #expect(one.count("user:a") == .allowed)
        #expect(one.count("user:a") == .allowed)
        try await one.flush()
        // The second replica reads the shared row when it first meets the sender.
        try await two.prepare("user:a")
        #expect(two.count("user:a") == .allowed)
        guard case .refused(let seconds, _, _) = two.count("user:a") else {
            Issue.record("the fourth attempt in the minute was allowed")
            return
        }
        #expect((1...60).contains(seconds))
        // The first replica knew the sender already: it learns at its next flush.
        try await two.flush()
        try await one.flush()
        #expect(one.count("user:a") != .allowed)
        // A flush that fails keeps the counts for the next one.
        // Its own pool: a connection that has not prepared the flush's statement yet.
        let pool = PostgresPool(configuration: feedback.pool.configuration)
        defer { pool.close() }
        let three = SenderQuota(perMinute: 3, perDay: 100, database: pool, logger: logger, interval: .seconds(3600))
        try await three.prepare("user:b")
        _ = three.count("user:b")
        try await feedback.pool.execute("ALTER TABLE feedback.quota RENAME TO quota_away")
        await #expect(throws: (any Error).self) { try await three.flush() }
        try await feedback.pool.execute("ALTER TABLE feedback.quota_away RENAME TO quota")
        try await three.flush()
        let shared = try await feedback.pool.query("SELECT minute_count FROM feedback.quota WHERE sender = 'user:b'")
        #expect(try shared.first?.decode("minute_count", as: Int.self) == 1)
        // A client rotating addresses cannot grow the map without bound: beyond the maximum, a
        // flush forgets every sender whose counts are shared; one that comes back is read again.
        let small = SenderQuota(
            perMinute: 2, perDay: 100, database: feedback.pool, logger: logger, interval: .seconds(3600), maximumSenders: 3)
        for index in 0..<10 {
            try await small.prepare("address:rotating-\(index)")
            #expect(small.count("address:rotating-\(index)") == .allowed)
        }
        try await small.prepare("address:rotating-0")
        #expect(small.count("address:rotating-0") == .allowed)
        try await small.flush()
        #expect(small.knownSenders == 0)
        try await small.prepare("address:rotating-0")
        guard case .refused = small.count("address:rotating-0") else {
            Issue.record("a forgotten sender's shared counts were not read again")
            return
        }
        await feedback.stop()
    }

    /// A sender met while the database is away: its quota cannot be read, which is a 503 the
    /// app may retry (never an attempt counted against an empty window).
    @Test func aQuotaThatCannotBeReadIsA503() async throws {
        let away = PostgresPool(
            configuration: PostgresConfiguration(
                url: "postgresql://postgres@127.0.0.1:1/pier", poolSize: 1, connectTimeoutSeconds: 1))
        defer { away.close() }
        let quota = SenderQuota(
            perMinute: 3, perDay: 100, database: away, logger: Logger(service: "feedback", level: .error),
            interval: .seconds(3600))
        do {
            try await quota.prepare("address:198.51.100.9")
            Issue.record("an unreachable database was read")
        } catch {
            #expect(ErrorMapping.map(error)?.status == 503, "\(error)")
        }
        #expect(quota.knownSenders == 0)
    }

    @Test func anonymousFeedbackCanWaitForModeration() async throws {
        let feedback = try await FeedbackHarness.start(
            database: "pier_test_feedback_moderation",
            settings: ["PIER_FEEDBACK_MODERATE_ANONYMOUS": "true"])
        let admin = try feedback.admin()
        let anonymous = try await feedback.post(#"{"message":"buy cheap pills"}"#)
        let signedIn = try await feedback.post(#"{"message":"real user"}"#, token: feedback.token(UUID()))
        let view = try await feedback.send("GET", "/feedback", token: admin).decode(FeedbackPage.self)
        #expect(view.items.map(\.id) == [signedIn.id])
        let pending = try await feedback.send("GET", "/feedback?moderation=pending", token: admin).decode(FeedbackPage.self)
        #expect(pending.items.map(\.id) == [anonymous.id])
        #expect(pending.items.first?.moderation == "pending")
        let approved = try await feedback.send(
            "PATCH", "/feedback/\(anonymous.id)", json: #"{"moderation":"approved"}"#, token: admin)
        #expect(approved.status == 200)
        let after = try await feedback.send("GET", "/feedback", token: admin).decode(FeedbackPage.self)
        #expect(Set(after.items.map(\.id)) == [signedIn.id, anonymous.id])
        await feedback.stop()
    }
}
