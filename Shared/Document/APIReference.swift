import PierModels

/// The API reference in words (`docs/api-reference.md`), generated from the same definitions as
/// the OpenAPI document: each endpoint's method and path, who may call it, what it does, its
/// parameters, body, answer and problem codes, grouped by the part of Pier that serves it.
/// `pier-gateway api-reference` prints it; a test holds the file to it byte for byte, so the
/// reference cannot drift from the routes.
public enum APIReference {
    /// The reference of `endpoints`, as Markdown (one final newline).
    public static func markdown(_ endpoints: [EndpointDefinition] = APIDocument.endpoints) -> String {
        var groups: [(prefix: String, endpoints: [EndpointDefinition])] = []
        let own = Set(GatewayAPI.all.map(\.operation))
        for endpoint in endpoints {
            // The paths every process answers itself (health, the document, the index) together.
            let prefix =
                own.contains(endpoint.operation)
                ? "Every process" : "`/" + (endpoint.template.split(separator: "/").first.map(String.init) ?? "") + "`"
            if let index = groups.firstIndex(where: { $0.prefix == prefix }) {
                groups[index].endpoints.append(endpoint)
            } else {
                groups.append((prefix, [endpoint]))
            }
        }
        var text = """
            # API reference

            Generated from the endpoints' declarations (`pier-gateway api-reference`, `make openapi`), as
            `openapi.json` is: every route Pier serves, who may call it and what it answers. Errors are
            `application/problem+json` with a stable `code`; besides the codes listed, any call may meet
            `bad_request` (400), `authentication_required`, `token_invalid` or `session_revoked` (401,
            when it needs a token), `rate_limited` (429) and `unavailable` (503, with `Retry-After`).
            The guide in words is [api.md](api.md).

            """
        for group in groups {
            text += "\n## \(group.prefix)\n\n| Endpoint | Who | What |\n|---|---|---|\n"
            for endpoint in group.endpoints { text += row(endpoint) }
        }
        return text
    }

    static func row(_ endpoint: EndpointDefinition) -> String {
        var what = [endpoint.summary + "."]
        if let description = endpoint.description { what.append(description) }
        let parameters = endpoint.parameters.map { parameter in
            "`\(parameter.name)` (\(parameter.location.rawValue), \(parameter.kind.rawValue)\(parameter.required ? "" : ", optional")): \(parameter.summary)"
        }
        if !parameters.isEmpty { what.append("Parameters: " + parameters.joined(separator: "; ") + ".") }
        if let body = endpoint.body { what.append("Body: `\(body)`\(endpoint.bodyRequired ? "" : " (optional)").") }
        let answer = endpoint.answer.map { " `\($0)`" } ?? ""
        what.append("Answers \(endpoint.status)\(answer)\(endpoint.answers.map { ": " + $0 } ?? "").")
        if !endpoint.problems.isEmpty {
            what.append("Problems: " + endpoint.problems.map { "`\($0.rawValue)`" }.joined(separator: ", ") + ".")
        }
        if endpoint.retryable && endpoint.method != "GET" { what.append("Safe to retry.") }
        return "| `\(endpoint.method) \(endpoint.template)` | \(who(endpoint.access)) | \(cell(what.joined(separator: " "))) |\n"
    }

    static func who(_ access: Access) -> String {
        switch access {
        case .public: "anyone (no token read)"
        case .anyone: "anyone (a token names the caller)"
        case .signedIn: "signed in"
        case .staff: "the team (support, admin)"
        case .admin: "admin"
        }
    }

    /// Text a table cell can hold: one line, its bars escaped.
    static func cell(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).joined(separator: " ").replacing("|", with: "\\|")
    }
}
