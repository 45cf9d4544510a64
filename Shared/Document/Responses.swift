import PierModels

/// The headers the document names, described once.
enum Headers {
    static func reference(_ name: String) -> JSONValue { ["$ref": .string("#/components/headers/" + name)] }

    static let requestID: JSONValue = ["X-Request-ID": reference("X-Request-ID")]

    static let all: [String: JSONValue] = [
        "X-Request-ID": header(
            "The request's id: yours when you sent a sane one (1–128 visible ASCII), else made here. Quote it when reporting a problem."
        ),
        "Retry-After": header("Seconds to wait before trying again.", ["type": "integer", "minimum": 1]),
        "RateLimit-Limit": header("Requests allowed in the window (IETF RateLimit fields draft).", ["type": "integer"]),
        "RateLimit-Remaining": header("Requests left in the window: 0 on a 429.", ["type": "integer"]),
        "RateLimit-Reset": header("Seconds until the window allows a request again.", ["type": "integer"]),
        "RateLimit-Policy": header("The limit and its window in seconds, e.g. `10;w=60`."),
        "Idempotent-Replayed": header(
            "`true` when this is the stored answer to an earlier request with the same `Idempotency-Key` or client `id`: nothing new was created.",
            ["type": "string", "enum": ["true"]]),
        "ETag": header("A strong validator of the body: send it back as `If-None-Match` to get 304 while nothing changed."),
        "WWW-Authenticate": header(
            #"`Bearer` when no token was sent; `Bearer error="invalid_token", error_description="…"` when one was refused; `Bearer error="insufficient_scope"` on a 403 for a missing role (RFC 6750)."#
        ),
        "Cache-Control": header("How long the answer may be kept."),
        "Vary": header("The request headers the answer depends on (`Authorization`: it is the caller's own)."),
        "Location": header("The address of what was created."),
        "Pier-Signed-Status": header(
            "The answer signed by the status key (a compact JWS over the body and the `Pier-Status-Nonce` sent), for apps that check it against `GET /subscriptions/keys`."
        ),
    ]

    private static func header(_ description: String, _ schema: JSONValue = ["type": "string"]) -> JSONValue {
        ["description": .string(description), "schema": schema]
    }
}

/// The failures an operation can meet, each status with the codes it carries.
enum Responses {
    /// The failures every operation shares, described once.
    static let shared: [String: JSONValue] = [
        "MalformedRequest": problem("Malformed request (target, framing or encoding): `bad_request`"),
        "MalformedBody": problem("Malformed request or body (not JSON, not an object): `bad_request`"),
        "BodyTooLarge": problem("The body is larger than this endpoint takes: `body_too_large`"),
        "NotJSON": problem("The body is not `application/json`: `unsupported_media_type`"),
        "UriTooLong": problem("The request target (path and query) is longer than 8192 bytes: `uri_too_long`"),
        "HeadersTooLarge": problem("The request line and headers are larger than 8192 bytes: `headers_too_large`"),
        "Unavailable": problem(
            "Temporarily unavailable (`unavailable`, `schema_not_migrated`); see Retry-After",
            headers: ["Retry-After"]),
        "GatewayRateLimited": problem(
            "Too many requests (the gateway's per-client rate limit): `rate_limited`; see Retry-After",
            headers: ["Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy"]),
    ]

    static func reference(_ name: String) -> JSONValue { ["$ref": .string("#/components/responses/" + name)] }

    /// Each failure status of `endpoint` and its answer.
    static func failures(of endpoint: EndpointDefinition) -> [String: JSONValue] {
        var codes: [Int: [ProblemCode]] = [:]
        for code in endpoint.problems {
            for status in ProblemStatus.of(code) where !(codes[status]?.contains(code) ?? false) {
                codes[status, default: []].append(code)
            }
        }
        let token: [ProblemCode] = [.authenticationRequired, .tokenExpired, .tokenInvalid, .sessionRevoked, .accountDeleted]
        if endpoint.access != .public { codes[401] = token + (codes[401] ?? []).filter { !token.contains($0) } }
        if endpoint.access == .staff || endpoint.access == .admin {
            codes[403] = [.forbidden, .mfaEnrolmentRequired] + (codes[403] ?? []).filter { $0 != .forbidden }
        }
        if endpoint.parameters.contains(where: { $0.location == .path }) && codes[404] == nil { codes[404] = [.notFound] }
        if endpoint.bodyType != nil && codes[422] == nil { codes[422] = [.validationFailed] }

        var responses: [String: JSONValue] = [
            "400": reference(endpoint.bodyType == nil ? "MalformedRequest" : "MalformedBody"),
            "414": reference("UriTooLong"), "431": reference("HeadersTooLarge"),
            "503": reference("Unavailable"),
        ]
        if endpoint.bodyType != nil {
            responses["413"] = reference("BodyTooLarge")
            responses["415"] = reference("NotJSON")
        }
        responses["429"] = reference("GatewayRateLimited")
        for (status, list) in codes where status != 400 {
            if status == 503 && list.allSatisfy({ $0 == .unavailable }) { continue }
            var headers: [String] = []
            if status == 401 { headers.append("WWW-Authenticate") }
            if status == 429 || status == 503 { headers.append("Retry-After") }
            if status == 429 {
                headers += ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy"]
            }
            let named = list.map { "`\($0.rawValue)`" }.joined(separator: ", ")
            responses[String(status)] = problem(reason(status) + ": " + named, headers: headers)
        }
        return responses
    }

    static func problem(_ description: String, headers: [String] = []) -> JSONValue {
        var named = Headers.requestID.objectValue ?? [:]
        for name in headers { named[name] = Headers.reference(name) }
        return [
            "description": .string(description),
            "content": ["application/problem+json": ["schema": ["$ref": "#/components/schemas/Problem"]]],
            "headers": .object(named),
        ]
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "Done, nothing to answer"
        case 304: "Not modified"
        case 400: "Malformed request"
        case 401: "Not signed in, or the credentials were refused"
        case 403: "Not allowed"
        case 404: "Not found"
        case 409: "Conflicts with the current state"
        case 410: "Gone"
        case 413: "Too large"
        case 422: "Invalid fields (each named)"
        case 429: "Too many requests; see Retry-After"
        case 502: "A service Pier depends on failed"
        case 503: "Not ready; see Retry-After"
        case 504: "A service Pier depends on did not answer in time"
        default: "Status \(status)"
        }
    }
}

/// The statuses each problem code is answered with.
public enum ProblemStatus {
    public static func of(_ code: ProblemCode) -> [Int] {
        switch code {
        case .badRequest: [400]
        case .validationFailed, .weakPassword, .invalidEmailToken, .idempotencyKeyReused, .invalidMergeToken,
            .invalidAttestation:
            [422]
        case .unsupportedMediaType: [415]
        case .bodyTooLarge: [413]
        case .uriTooLong: [414]
        case .headersTooLarge: [431]
        case .lengthRequired: [411]
        case .notFound: [404]
        case .methodNotAllowed: [405]
        case .authenticationRequired, .tokenExpired, .tokenInvalid, .sessionRevoked, .accountDeleted, .invalidCredentials,
            .invalidRefreshToken, .reauthenticationRequired, .mfaRequired, .invalidMFAToken, .invalidCode:
            [401]
        case .invalidPasskey, .invalidIdentityToken: [401, 422]
        case .forbidden, .emailUnverified, .mfaEnrolmentRequired, .enrolmentApprovalRequired, .accountDisabled,
            .attestationRequired:
            [403]
        case .emailTaken, .lastSignInMethod, .addressUnverified, .lastAdmin, .conflict, .identityTaken, .anonymousAccount,
            .notAnonymous:
            [409]
        case .rateLimited, .tooManyStreams: [429]
        case .unavailable, .schemaNotMigrated, .appStoreAPIUnconfigured, .googlePlayFailed: [503]
        case .googlePlayUnconfigured: [404]
        case .appStoreAPIFailed: [502, 503]
        case .badGateway: [502]
        case .upstreamTimeout: [504]
        default: [500]
        }
    }
}
