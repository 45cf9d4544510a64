import Foundation
import Testing

@testable import PierClient

/// What a call of an ``Endpoint`` puts on the wire: its path segments and query components
/// percent-encoded as RFC 3986 says, its headers apart, and whether it may be sent again.
@Suite struct EndpointTests {
    /// An endpoint whose path takes text, so that hostile values can be tried.
    struct Named: EndpointParameters {
        static let declared: [Parameter] = [
            .path("name", .string, "A name."), .query("q", .string, "Words."), .header("X-Tag", .string, "A tag."),
        ]
        var name: String
        var q: String?
        var tag: String?
        enum CodingKeys: String, CodingKey {
            case name, q
            case tag = "X-Tag"
        }
    }

    static let named = Endpoint<Named, NoBody, NoContent>(
        "GET", "/things/{name}/parts", access: .anyone, operation: "getParts", summary: "Parts")

    @Test func valuesAreSentAsDataNeverAsMorePathOrQuery() {
        let hostile = Named(name: "a/b?c#d e+f", q: "a+b@example.com&admin=1 %20 é", tag: "x")
        #expect(Self.named.path(hostile) == "/things/a%2Fb%3Fc%23d%20e%2Bf/parts")
        #expect(
            Self.named.target(hostile)
                == "/things/a%2Fb%3Fc%23d%20e%2Bf/parts?q=a%2Bb%40example.com%26admin%3D1%20%2520%20%C3%A9")
        // Headers stay out of the path and the query.
        #expect(Self.named.headers(hostile).map(\.name) == ["X-Tag"])
        #expect(Self.named.query(hostile).map(\.name) == ["q"])
        // Unset values are left out; plain values pass as they are.
        #expect(Self.named.target(Named(name: "plain-name_1.0~")) == "/things/plain-name_1.0~/parts")
    }

    /// What the server reads from a request's text: the declared kinds, ranges, sets, lengths and
    /// patterns checked first, every problem named at once; a path segment's problem marked as
    /// such (a 404); a default filled in; the same type the client wrote.
    @Test func parametersAreCheckedAgainstTheirDeclarationsThenDecoded() throws {
        func problems<P>(_ result: Result<P, ParameterProblems>) -> ParameterProblems? {
            guard case .failure(let problems) = result else { return nil }
            return problems
        }
        let refused = try #require(
            problems(
                WebhookDeliveryQuery.decoded(["state": "lost", "limit": "0", "subject": String(repeating: "s", count: 101)])))
        #expect(
            refused.fields.map(\.field) == ["state", "subject", "limit"] && !refused.inPath
                && refused.fields[0].message == "must be pending, delivered or failed"
                && refused.fields[2].message == "must be an integer from 1 to 100")
        let read = try WebhookDeliveryQuery.decoded(["state": "failed", "endpoint": "crm"]).get()
        #expect(read == WebhookDeliveryQuery(endpoint: "crm", state: .failed, limit: 50))
        #expect(read.values.map(\.name) == ["endpoint", "state"], "the default limit is not sent")
        let path = try #require(problems(UserSessionID.decoded(["id": "me", "session": UUID().uuidString])))
        #expect(path.inPath && path.fields.map(\.field) == ["id"] && path.fields[0].message == "must be a UUID")
        let sender = try #require(problems(FeedbackSender.decoded(["X-Installation-ID": "two words"])))
        #expect(sender.fields.map(\.field) == ["X-Installation-ID"])
        let required = try #require(problems(GrantsQuery.decoded([:])))
        #expect(required.fields.map(\.message) == ["is required"])
        let user = UUID()
        #expect(try UserSessionID.decoded(["id": user.uuidString.lowercased(), "session": user.uuidString]).get().user == user)
    }

    /// A parameters type a plugin got wrong: a list member, a pattern that does not compile. The
    /// app that calls it goes on (no trap), the list is not sent, and the broken pattern refuses
    /// every value rather than checking none.
    struct Faulty: EndpointParameters {
        static let declared: [Parameter] = [
            .query("tags", .string, "Tags."), .header("X-Code", .string, "A code.").matching("([unclosed"),
        ]
        var tags: [String]
        var code: String?
        enum CodingKeys: String, CodingKey {
            case tags
            case code = "X-Code"
        }
    }

    @Test func aFaultyParametersTypeNeitherTrapsNorChecksNothing() {
        #expect(Faulty(tags: ["a", "b"], code: "x").values.map(\.name) == [])
        guard case .failure(let problems) = Faulty.decoded(["tags": "a", "X-Code": "x"]) else {
            Issue.record("a value was read past a pattern that does not compile")
            return
        }
        #expect(problems.fields.map(\.field) == ["X-Code"] && problems.fields[0].message == "has characters it may not have")
        guard case .failure(let list) = Faulty.decoded(["tags": "a"]) else {
            Issue.record("a list member was read from one text")
            return
        }
        #expect(list.fields.map(\.field) == ["parameters"])
    }

    @Test func aCallCarriesTheEndpointsMethodPathQueryHeadersAndRetryRule() {
        let id = UUID()
        let call = Call(FeedbackAPI.update, PathID(id), body: Data("{}".utf8))
        #expect(call.method == "PATCH" && call.path == "/feedback/\(id.uuidString.lowercased())")
        #expect(!call.retryable)
        let list = Call(FeedbackAPI.list, FeedbackQuery(status: "new,triaged", text: "a+b", includeTotal: true, limit: 5))
        #expect(list.retryable && list.path == "/feedback")
        #expect(
            list.query.map { "\($0.name)=\($0.value ?? "")" } == ["status=new,triaged", "q=a+b", "includeTotal=true", "limit=5"])
        let sent = Call(FeedbackAPI.create, FeedbackSender(installationID: "install-1"), body: Data())
        #expect(sent.retryable && sent.headers == ["X-Installation-ID": "install-1"] && sent.query.isEmpty)
    }

    @Test func theDefinitionNamesItsTypes() {
        let definition = FeedbackAPI.reply.definition
        #expect(definition.body == "CreateFeedbackReply" && definition.answer == "FeedbackReply")
        #expect(FeedbackAPI.item.definition.body == nil)
        #expect(FeedbackAPI.export.definition.answer == "FileAnswer")
        #expect(definition.parameters.map(\.name) == ["id"] && definition.access == .staff)
    }

    /// A body that may be left out (a confirmation a recent sign-in stands in for) is named
    /// as its type, not required, and not sent when nil; a required one is sent as it is.
    @Test func anOptionalBodyIsNotRequiredAndNotSentWhenNil() throws {
        let optional = AuthAPI.deleteAccount.definition
        #expect(optional.body == "ReauthenticationRequest" && !optional.bodyRequired)
        #expect(AuthAPI.login.definition.body == "LoginRequest" && AuthAPI.login.definition.bodyRequired)
        #expect(AuthAPI.me.definition.body == nil && !AuthAPI.me.definition.bodyRequired)
        let none: ReauthenticationRequest? = nil
        #expect(Transport.body(sent: none) == nil)
        let some: ReauthenticationRequest? = ReauthenticationRequest(password: "p")
        let sent = try #require(Transport.body(sent: some))
        #expect(try JSONDecoder().decode([String: String].self, from: sent) == ["password": "p"])
        #expect(Transport.body(sent: EmailRequest(email: "a@example.com")) != nil)
    }

    /// Two path parameters, a numeric id, a mailed page's link and an audit log by service.
    @Test func authsEndpointsBuildTheirPaths() {
        let user = UUID(), session = UUID()
        #expect(
            AuthAPI.endUserSession.path(UserSessionID(user: user, session: session))
                == "/auth/users/\(user.uuidString.lowercased())/sessions/\(session.uuidString.lowercased())")
        #expect(AuthAPI.replayWebhook.path(DeliveryID(42)) == "/auth/webhooks/deliveries/42/replay")
        #expect(AuthAPI.verifyEmailPage.target(TokenQuery(token: "a-b_c")) == "/auth/email/verify?token=a-b_c")
        #expect(AuditAPI.log(of: "feedback").path(AuditQuery()) == "/feedback/audit")
        #expect(AuditAPI.log(of: "a/b").template == "/a%2Fb/audit")
        #expect(
            AuditAPI.log(of: "auth").target(AuditQuery(subject: user, before: 7, limit: 100))
                == "/auth/audit?subject=\(user.uuidString.lowercased())&before=7&limit=100")
        // The refresh is safe to send again (the grace window answers the same successor).
        #expect(AuthAPI.refresh.retryable && !AuthAPI.login.retryable && !AuthAPI.deleteUser.retryable)
    }

    /// Every operation id of the API is unique, and every template's path parameters are
    /// declared by its parameters' type.
    @Test func everyDefinitionIsConsistent() {
        let all = FeedbackAPI.all + SubscriptionsAPI.all + AuthAPI.all + AuditAPI.all
        #expect(Set(all.map(\.operation)).count == all.count)
        #expect(Set(all.map { "\($0.method) \($0.template)" }).count == all.count)
        for definition in all {
            let names = definition.template.split(separator: "/").filter { $0.hasPrefix("{") }.map {
                String($0.dropFirst().dropLast())
            }
            #expect(definition.parameters.filter { $0.location == .path }.map(\.name) == names, "\(definition.template)")
        }
    }
}
