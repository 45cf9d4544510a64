import PierHTTP
import PierJSON
import PierModels
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Pier's HTTP API as the console calls it, with the signed-in staff member's token: the same
/// routes, checks and audit log as `pier admin` and PierAdmin. In-process when the console is
/// hosted beside the services (the gateway's own routes, proxied ones included), else over HTTP
/// at `PIER_CONSOLE_API_URL`.
final class PierAPI: Sendable {
    struct Reply: Sendable {
        let status: Int
        let body: [UInt8]

        var problem: Problem? { try? WireDecoder.decode(Problem.self, from: body) }
        var ok: Bool { (200..<300).contains(status) }

        func decode<T: Decodable>(_ type: T.Type) throws -> T { try WireDecoder.decode(type, from: body) }
    }

    private let local: LocalAPI?
    let baseURL: String?
    let http: HTTPClient

    init(baseURL: String?, http: HTTPClient, local: LocalAPI?) {
        self.baseURL = baseURL
        self.http = http
        self.local = local
    }

    /// `method` on `target` (a path with its encoded query), as the browser's request `from`
    /// (its address counts for the login's rate limits; its request id follows the call).
    func send(
        _ method: String, _ target: String, json body: [UInt8]? = nil, token: String? = nil, from browser: Request
    ) async throws -> Reply {
        var headers: HTTPHeaders = ["X-Request-ID": browser.requestID, "Accept": "application/json"]
        if let token { headers.set("Authorization", "Bearer " + token) }
        if body != nil { headers.set("Content-Type", "application/json") }
        if let local {
            var request = try Request.received(
                method: method, target: target, headers: headers, body: body ?? [], peerAddress: browser.clientAddress,
                trustedProxies: .none, requestID: browser.requestID)
            request.clientAddress = browser.clientAddress
            let response = await local.respond(to: request)
            return Reply(status: response.status, body: response.body)
        }
        guard let baseURL else {
            throw HTTPError.unavailable(
                retryAfter: 2, "The console is not hosted with Pier's API, and PIER_CONSOLE_API_URL is not set.")
        }
        headers.set("X-Forwarded-For", browser.clientAddress)
        do {
            let response = try await http.send(
                method, baseURL + target, headers: headers, body: body, timeout: .seconds(30), limit: 8 << 20)
            return Reply(status: response.status, body: response.body)
        } catch {
            throw HTTPError.unavailable(retryAfter: 2, "Pier's API cannot be reached from the console right now.")
        }
    }

    func json(_ value: some Encodable) throws -> [UInt8] { try JSON.encode(value) }

    /// `endpoint` with `body`, as the browser's request: with `token`, or none (a sign-in).
    func send<Parameters, Body: Encodable, Answer>(
        _ endpoint: Endpoint<Parameters, Body, Answer>, _ parameters: Parameters, body: Body, token: String? = nil,
        from browser: Request
    ) async throws -> Reply {
        try await send(endpoint.method, endpoint.target(parameters), json: try json(body), token: token, from: browser)
    }
}
