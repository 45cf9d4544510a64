import Foundation
import PierModels
import Testing

/// The API document says of each endpoint what its definition (``Endpoint``, in PierModels)
/// says, which is what the server routes and the clients call: its operation id and summary,
/// who may call it, its parameters, its body and answer types, its success status and its
/// problem codes.
@Suite struct EndpointDocumentTests {
    /// The document as the repository holds it (and the gateway serves it).
    static func document() -> [String: Any] {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Services/Gateway/Resources/openapi.json")
        let data = (try? Data(contentsOf: file)) ?? Data()
        return ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any]) ?? [:]
    }

    static let defined: [EndpointDefinition] = FeedbackAPI.all + SubscriptionsAPI.all + AuthAPI.all + AuditAPI.all

    @Test(arguments: defined.map { "\($0.method) \($0.template)" })
    func theDocumentSaysWhatTheDefinitionSays(_ name: String) throws {
        let endpoint = try #require(Self.defined.first { "\($0.method) \($0.template)" == name })
        let paths = try #require(Self.document()["paths"] as? [String: [String: Any]])
        let operation = try #require(
            paths[endpoint.template]?[endpoint.method.lowercased()] as? [String: Any], "\(name) is not documented")
        #expect(operation["operationId"] as? String == endpoint.operation)
        #expect(operation["summary"] as? String == endpoint.summary)
        #expect(operation["x-problem-codes"] as? [String] == endpoint.problems.map(\.rawValue))

        // Who may call it: anyone without a token read, anyone (a token optional), or a bearer.
        let security = operation["security"] as? [[String: [String]]]
        let expected: [[String: [String]]]? =
            switch endpoint.access {
            case .public: nil
            case .anyone: [[:], ["bearer": []]]
            case .signedIn, .staff, .admin: [["bearer": []]]
            }
        #expect(security == expected, "\(name): security \(String(describing: security))")

        // Its parameters, where each goes and whether it is required.
        let parameters = (operation["parameters"] as? [[String: Any]] ?? []).map { parameter in
            "\(parameter["in"] as? String ?? "?") \(parameter["name"] as? String ?? "?")\(parameter["required"] as? Bool == true ? " required" : "")"
        }
        let declared = endpoint.parameters.map { "\($0.location.rawValue) \($0.name)\($0.required ? " required" : "")" }
        #expect(Set(parameters) == Set(declared), "\(name): documented \(parameters.sorted()), defined \(declared.sorted())")

        // The body's schema.
        let body = operation["requestBody"] as? [String: Any]
        let bodySchema =
            ((body?["content"] as? [String: Any])?["application/json"] as? [String: Any])?["schema"] as? [String: Any]
        #expect(bodySchema?["$ref"] as? String == endpoint.body.map { "#/components/schemas/\($0)" }, "\(name): body")
        if endpoint.body != nil {
            #expect((body?["required"] as? Bool ?? false) == endpoint.bodyRequired, "\(name): whether the body is required")
        }

        // The success and its answer's schema.
        let responses = try #require(operation["responses"] as? [String: Any])
        let success = try #require(responses[String(endpoint.status)] as? [String: Any], "\(name): no \(endpoint.status)")
        let content = success["content"] as? [String: Any]
        func schema(_ type: String) -> [String: Any]? { (content?[type] as? [String: Any])?["schema"] as? [String: Any] }
        switch endpoint.answer {
        case nil:
            #expect(content == nil, "\(name): a \(endpoint.status) without a body")
        case String(describing: FileAnswer.self):
            #expect(content?.isEmpty == false && content?["application/json"] == nil, "\(name): a file")
        case String(describing: EventStreamAnswer.self):
            #expect(content?.keys.sorted() == ["text/event-stream"], "\(name): an event stream")
        case String(describing: HTMLPage.self):
            #expect(content?.keys.sorted() == ["text/html"], "\(name): a page")
        case String(describing: JWKSetAnswer.self):
            #expect(schema("application/jwk-set+json")?["$ref"] as? String == "#/components/schemas/JWKSet", "\(name)")
        case let answer? where answer.hasPrefix("ItemList<"):
            // `{"items": [...]}`, written out where it is used.
            let element = answer.dropFirst("ItemList<".count).dropLast()
            var list = schema("application/json")
            if let named = list?["$ref"] as? String {
                // Or a named list (`SessionList`) of the same shape.
                let schemas = (Self.document()["components"] as? [String: Any])?["schemas"] as? [String: Any]
                list = schemas?[String(named.dropFirst("#/components/schemas/".count))] as? [String: Any]
            }
            let items = (list?["properties"] as? [String: Any])?["items"] as? [String: Any]
            let reference = (items?["items"] as? [String: Any])?["$ref"] as? String
            #expect(reference == "#/components/schemas/\(element)", "\(name): a list of \(element)")
        case let answer?:
            #expect(schema("application/json")?["$ref"] as? String == "#/components/schemas/\(answer)", "\(name): answer")
        }
    }

    /// Operation ids are unique across the definitions, as the document's rules require.
    @Test func operationIdsAreUnique() {
        let ids = Self.defined.map(\.operation)
        #expect(Set(ids).count == ids.count, "\(ids)")
        #expect(!ids.isEmpty)
    }
}
