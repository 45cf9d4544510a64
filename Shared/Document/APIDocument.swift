import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Pier's API document (OpenAPI 3.1), generated from the endpoints' definitions (``Endpoint``:
/// method, path, parameters, who may call, body and answer types, problem codes) and their
/// types' schemas (read from the types, see ``SchemaRecorder``, with the notes of
/// ``Documented``). The gateway serves it at `/openapi.json`; `pier-gateway openapi` prints it
/// and `make openapi` writes it to `docs/openapi.json`, which a test holds to it byte for byte.
public enum APIDocument {
    /// Every endpoint Pier serves, in the document's order.
    public static let endpoints: [EndpointDefinition] =
        GatewayAPI.all + AuthAPI.all + FeedbackAPI.all + SubscriptionsAPI.all + AuditAPI.all + ExportAPI.all

    /// The document of `endpoints`, as JSON text (members sorted, two-space indents, one final
    /// newline): the same bytes for the same definitions.
    public static func generate(_ endpoints: [EndpointDefinition] = endpoints, version: String) throws -> [UInt8] {
        let recorder = SchemaRecorder()
        var paths: [String: JSONValue] = [:]
        for endpoint in endpoints {
            var path = paths[endpoint.template]?.objectValue ?? [:]
            path[endpoint.method.lowercased()] = try Operation(endpoint, recorder: recorder).json
            paths[endpoint.template] = .object(path)
        }
        _ = try recorder.schema(of: Problem.self)
        let schemas = recorder.components
        let unused = Set(Notes.all.keys).subtracting(recorder.noted)
        guard unused.isEmpty else {
            throw SchemaRecorder.Failure(description: "notes of components the document lacks: \(unused.sorted())")
        }
        let document: JSONValue = [
            "openapi": "3.1.0",
            "info": [
                "title": "Pier", "version": .string(version),
                "description": """
                The backend a mobile app docks at. Errors are `application/problem+json` (RFC 9457) with a \
                stable `code`; every answer carries `X-Request-ID`.
                """,
            ],
            "servers": [["url": "http://127.0.0.1:8080"]],
            "paths": .object(paths),
            "components": [
                "schemas": .object(schemas),
                "securitySchemes": ["bearer": ["type": "http", "scheme": "bearer", "bearerFormat": "JWT"]],
                "headers": .object(Headers.all),
                "responses": .object(Responses.shared),
            ],
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(document)) + [0x0A]
    }
}
