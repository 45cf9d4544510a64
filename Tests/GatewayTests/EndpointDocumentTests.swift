import Foundation
import Gateway
import PierDocument
import PierModels
import PierService
import Testing

/// The API document is generated from the endpoints' definitions (``Endpoint``, in PierModels),
/// which are what the server routes and the clients call; the repository's copy
/// (`docs/openapi.json`) is that document byte for byte, and the document says of each
/// endpoint what its definition says: its operation id and summary, who may call it, its
/// parameters, its body and answer types, its success status and its problem codes.
@Suite struct EndpointDocumentTests {
    /// The document the gateway serves.
    static func document() -> [String: Any] {
        ((try? JSONSerialization.jsonObject(with: Data(Gateway.document))) as? [String: Any]) ?? [:]
    }

    static let defined: [EndpointDefinition] = APIDocument.endpoints

    /// `docs/openapi.json` is what the definitions generate: a change to an endpoint or a type
    /// that leaves the file behind fails here (`make openapi` writes it again).
    @Test func theRepositorysDocumentIsTheGeneratedOne() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/openapi.json")
        let kept = try Data(contentsOf: file)
        let generated = try APIDocument.generate(
            APIDocument.endpoints + Gateway.builtIn.flatMap(\.endpoints), version: PierVersion.current)
        #expect(Array(kept) == generated, "docs/openapi.json differs from the definitions: run `make openapi`")
        #expect(Gateway.document == generated)
    }

    /// `docs/api-reference.md`, the reference in words, is what the same definitions generate,
    /// and names every route the gateway serves.
    @Test func theReferenceInWordsIsTheGeneratedOne() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/api-reference.md")
        let kept = try String(contentsOf: file, encoding: .utf8)
        let endpoints = APIDocument.endpoints + Gateway.builtIn.flatMap(\.endpoints)
        #expect(
            kept == APIReference.markdown(endpoints), "docs/api-reference.md differs from the definitions: run `make openapi`")
        for endpoint in endpoints { #expect(kept.contains("| `\(endpoint.method) \(endpoint.template)` |")) }
    }

    /// `docs/settings.md` is what the settings' declarations make: every executable's, each
    /// plugin's and the gateway's, each variable once.
    @Test func theSettingsReferenceIsTheGeneratedOne() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/settings.md")
        let kept = try String(contentsOf: file, encoding: .utf8)
        #expect(kept == Gateway.settingsReference(), "docs/settings.md differs from the declarations: run `make openapi`")
        let sections = SettingsReference.sections(
            plugins: Gateway.builtIn, extra: [.init(title: "gateway", settings: Gateway.settings)])
        let names = sections.flatMap(\.settings).flatMap(\.names)
        #expect(Set(names).count == names.count, "a variable declared twice")
        #expect(sections.map(\.settings.count).allSatisfy { $0 > 0 })
        for name in ["PIER_DATABASE_URL", "PIER_AUTH_SIGNING_KEY_FILE", "PIER_FEEDBACK_APP_ATTEST", "PIER_CONFIG_COUNTRY_HEADER"]
        {
            #expect(kept.contains("| `\(name)`"), "\(name) is not in docs/settings.md")
        }
    }

    /// Every endpoint's parameters type reads what its declarations name and writes it back the
    /// same: a value for each declared parameter (valid for its kind and limits, never its
    /// default) decodes, and the type's `values` give each name with the same text. A member
    /// whose coding key differs from its declared name fails here.
    @Test func eachParametersTypeReadsAndWritesWhatItDeclares() throws {
        func roundTrip<P: EndpointParameters>(_ type: P.Type, _ text: [String: String]) throws -> [String: String] {
            let decoded = try P.decoded(text).get()
            return Dictionary(decoded.values.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        }
        let endpoints = APIDocument.endpoints + Gateway.builtIn.flatMap(\.endpoints)
        var checked = 0
        for endpoint in endpoints where !endpoint.parameters.isEmpty {
            let text = Dictionary(uniqueKeysWithValues: endpoint.parameters.map { ($0.name, Self.sample(of: $0)) })
            let written = try roundTrip(endpoint.parametersType, text)
            #expect(written == text, "\(endpoint.method) \(endpoint.template): wrote \(written) for \(text)")
            checked += 1
        }
        #expect(checked > 40)
    }

    /// A value `parameter` accepts that is not its default.
    static func sample(of parameter: Parameter) -> String {
        switch parameter.kind {
        case .uuid: return "0b5c7a9e-3f41-4d7a-9c2e-5a8e1f0d6b42"
        case .boolean: return parameter.defaultValue == "true" ? "false" : "true"
        case .integer:
            let low = parameter.minimum ?? 1
            return String(String(low) == parameter.defaultValue ? (parameter.maximum ?? low + 1) : low)
        case .date: return "2026-11-30"
        case .string:
            if let values = parameter.values { return values.first { $0 != parameter.defaultValue } ?? values[0] }
            let length = parameter.length ?? 16...16
            return String(repeating: "a", count: min(max(length.lowerBound, 16), length.upperBound))
        }
    }

    /// A body's required members, checked before it is decoded (``StrictDecodable/required``),
    /// are the members the document says are required.
    @Test func eachBodysRequiredMembersAreTheDocuments() throws {
        let schemas = try #require((Self.document()["components"] as? [String: Any])?["schemas"] as? [String: Any])
        var checked = 0
        for endpoint in Self.defined {
            guard let body = endpoint.bodyType as? any StrictDecodable.Type, let name = endpoint.body else { continue }
            let schema = try #require(schemas[name] as? [String: Any], "\(name) is not in the document")
            let documented = Set(schema["required"] as? [String] ?? [])
            let alternatives = body.required.filter { $0.count > 1 }.flatMap { $0 }
            let checkedFirst = Set(body.required.filter { $0.count == 1 }.flatMap { $0 })
            #expect(checkedFirst == documented, "\(name): checked \(checkedFirst.sorted()), documented \(documented.sorted())")
            if !alternatives.isEmpty {
                // One of several names: documented as one of the alternatives required.
                let oneOf = (schema["oneOf"] as? [[String: Any]] ?? []).compactMap { $0["required"] as? [String] }
                #expect(Set(oneOf.flatMap { $0 }) == Set(alternatives), "\(name): \(oneOf)")
            }
            checked += 1
        }
        #expect(checked > 20)
    }

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
        case String(describing: APIDocumentAnswer.self):
            #expect(schema("application/json")?["type"] as? String == "object", "\(name): the document")
        case let answer? where answer.hasPrefix("Array<"):
            let element = answer.dropFirst("Array<".count).dropLast()
            let items = schema("application/json")?["items"] as? [String: Any]
            #expect(items?["$ref"] as? String == "#/components/schemas/\(element)", "\(name): a list of \(element)")
        case let answer?:
            #expect(schema("application/json")?["$ref"] as? String == "#/components/schemas/\(answer)", "\(name): answer")
        }
    }

    /// What an API linter (Spectral's OpenAPI rules) asks of the document: each operation has an
    /// id, a summary and a description; each parameter and response is described; every
    /// reference resolves and every component is used.
    @Test func theDocumentPassesTheLintersRules() throws {
        let document = Self.document()
        let text = String(decoding: Gateway.document, as: UTF8.self)
        let paths = try #require(document["paths"] as? [String: [String: [String: Any]]])
        var problems: [String] = []
        for (path, operations) in paths {
            for (method, operation) in operations {
                let name = "\(method.uppercased()) \(path)"
                for key in ["operationId", "summary", "description"] where (operation[key] as? String ?? "").isEmpty {
                    problems.append("\(name): no \(key)")
                }
                if (operation["summary"] as? String)?.hasSuffix(".") == true {
                    problems.append("\(name): summary ends in a period")
                }
                for parameter in operation["parameters"] as? [[String: Any]] ?? []
                where (parameter["description"] as? String ?? "").isEmpty {
                    problems.append("\(name): parameter \(parameter["name"] ?? "?") undescribed")
                }
                for (status, response) in operation["responses"] as? [String: [String: Any]] ?? [:]
                where response["$ref"] == nil && (response["description"] as? String ?? "").isEmpty {
                    problems.append("\(name): response \(status) undescribed")
                }
            }
        }
        // Every reference resolves; every component is referred to.
        let components = try #require(document["components"] as? [String: [String: Any]])
        let references = Set(
            text.split(separator: "\"").filter { $0.hasPrefix("#/components/") }.map { String($0) })
        for reference in references {
            let parts = reference.split(separator: "/").map(String.init)  // #, components, kind, name
            if parts.count != 4 || components[parts[2]]?[parts[3]] == nil { problems.append("\(reference) does not resolve") }
        }
        for (kind, members) in components where kind != "securitySchemes" {
            for member in members.keys where !references.contains("#/components/\(kind)/\(member)") {
                problems.append("#/components/\(kind)/\(member) is never used")
            }
        }
        #expect(problems.isEmpty, "\(problems.sorted().joined(separator: "\n"))")
        #expect(paths.count > 80)
    }

    /// Operation ids are unique across the definitions, as the document's rules require.
    @Test func operationIdsAreUnique() {
        let ids = Self.defined.map(\.operation)
        #expect(Set(ids).count == ids.count, "\(ids)")
        #expect(!ids.isEmpty)
    }
}
