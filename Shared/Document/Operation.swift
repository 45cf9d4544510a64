import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One operation of the document: what its definition says, with the answers every call can
/// meet (a malformed request, a token refused, the rate limit, the service unavailable) and
/// the problems it declares, each under its status.
struct Operation {
    let json: JSONValue

    init(_ endpoint: EndpointDefinition, recorder: SchemaRecorder) throws {
        var operation: [String: JSONValue] = [
            "operationId": .string(endpoint.operation),
            "summary": .string(endpoint.summary),
            "description": .string(Self.description(endpoint)),
            "x-problem-codes": .array(endpoint.problems.map { .string($0.rawValue) }),
        ]
        switch endpoint.access {
        case .public: break
        case .anyone: operation["security"] = [[:], ["bearer": []]]
        case .signedIn, .staff, .admin: operation["security"] = [["bearer": []]]
        }
        if !endpoint.parameters.isEmpty {
            operation["parameters"] = .array(endpoint.parameters.map(Self.parameter))
        }
        let form = endpoint.bodyType.map { $0 is any FormDecodable.Type } ?? false
        if let body = endpoint.bodyType {
            let schema = try recorder.schema(of: body)
            var content: [String: JSONValue] = ["application/json": ["schema": schema]]
            if form { content["application/x-www-form-urlencoded"] = ["schema": schema] }
            operation["requestBody"] = ["required": .bool(endpoint.bodyRequired), "content": .object(content)]
        }
        var responses = try Self.success(endpoint, recorder: recorder)
        if form {
            // A browser's form post is answered with a page saying what happened.
            var page = responses["200"]?.objectValue ?? ["description": "A page saying what happened"]
            var content = page["content"]?.objectValue ?? [:]
            content["text/html"] = ["schema": ["type": "string"]]
            page["content"] = .object(content)
            page["headers"] = page["headers"] ?? Headers.requestID
            responses["200"] = .object(page)
            responses["410"] = [
                "description": "The form's link no longer works (used, replaced or expired): a page saying so",
                "content": ["text/html": ["schema": ["type": "string"]]], "headers": Headers.requestID,
            ]
        }
        for (status, response) in Responses.failures(of: endpoint) where responses[status] == nil {
            responses[status] = response
        }
        operation["responses"] = .object(responses)
        json = .object(operation)
    }

    /// The summary, and who may call it.
    static func description(_ endpoint: EndpointDefinition) -> String {
        let who =
            switch endpoint.access {
            case .public: "Anyone may call it; no token is read."
            case .anyone: "Anyone may call it; a bearer token, when sent, names the caller."
            case .signedIn: "Needs a signed-in account's bearer token."
            case .staff: "Needs the bearer token of a member of the team (`support` or `admin`)."
            case .admin: "Needs an `admin`'s bearer token."
            }
        let retry = endpoint.retryable && endpoint.method != "GET" ? " Safe to retry." : ""
        return [endpoint.description, who + retry].compactMap { $0 }.joined(separator: "\n\n")
    }

    static func parameter(_ parameter: Parameter) -> JSONValue {
        var schema: [String: JSONValue] =
            switch parameter.kind {
            case .string: ["type": "string"]
            case .uuid: ["type": "string", "format": "uuid"]
            case .integer: ["type": "integer"]
            case .boolean: ["type": "boolean"]
            case .date: ["type": "string", "format": "date"]
            }
        if let minimum = parameter.minimum { schema["minimum"] = .number(Double(minimum)) }
        if let maximum = parameter.maximum { schema["maximum"] = .number(Double(maximum)) }
        if let length = parameter.length {
            schema["minLength"] = .number(Double(length.lowerBound))
            schema["maxLength"] = .number(Double(length.upperBound))
        }
        if let pattern = parameter.pattern { schema["pattern"] = .string(pattern) }
        if let values = parameter.values { schema["enum"] = .array(values.map(JSONValue.string)) }
        if let value = parameter.defaultValue {
            switch parameter.kind {
            case .integer: schema["default"] = .number(Double(value) ?? 0)
            case .boolean: schema["default"] = .bool(value == "true")
            default: schema["default"] = .string(value)
            }
        }
        return [
            "name": .string(parameter.name), "in": .string(parameter.location.rawValue),
            "required": .bool(parameter.required), "description": .string(parameter.summary), "schema": .object(schema),
        ]
    }

    /// The success (and a 304 where the answer carries an `ETag`).
    static func success(_ endpoint: EndpointDefinition, recorder: SchemaRecorder) throws -> [String: JSONValue] {
        var headers = Headers.requestID.objectValue ?? [:]
        for name in endpoint.headers { headers[name] = Headers.reference(name) }
        var response: [String: JSONValue] = [
            "description": .string(endpoint.answers ?? Responses.reason(endpoint.status)),
            "headers": .object(headers),
        ]
        if let content = try content(endpoint, recorder: recorder) { response["content"] = .object(content) }
        var responses = [String(endpoint.status): JSONValue.object(response)]
        for status in endpoint.also {
            var other = response
            other["description"] = .string(Responses.reason(status))
            responses[String(status)] = .object(other)
        }
        if endpoint.headers.contains("ETag") {
            var unchanged = headers
            unchanged["Vary"] = nil
            responses["304"] = [
                "description": "Not modified: the `ETag` sent in `If-None-Match` is current", "headers": .object(unchanged),
            ]
        }
        return responses
    }

    static func content(_ endpoint: EndpointDefinition, recorder: SchemaRecorder) throws -> [String: JSONValue]? {
        guard let answer = endpoint.answerType else { return nil }
        let text: JSONValue = ["schema": ["type": "string"]]
        switch answer {
        case is FileAnswer.Type: return Dictionary(endpoint.media.map { ($0, text) }, uniquingKeysWith: { a, _ in a })
        case is EventStreamAnswer.Type: return ["text/event-stream": text]
        case is HTMLPage.Type: return ["text/html": text]
        case is APIDocumentAnswer.Type: return ["application/json": ["schema": ["type": "object"]]]
        case is JWKSetAnswer.Type: return ["application/jwk-set+json": ["schema": try recorder.schema(of: JWKSet.self)]]
        case is GatewayIndex.Type:
            return ["application/json": ["schema": try recorder.schema(of: answer)], "text/html": text]
        default: return ["application/json": ["schema": try recorder.schema(of: answer)]]
        }
    }
}
