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
        var values: [(name: String, value: String)] {
            [("name", name), ("q", q), ("X-Tag", tag)].compactMap { name, value in value.map { (name, $0) } }
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
}
