import Foundation
import PierHTTP
import PierModels

/// A response as tests look at it.
public struct Reply: Sendable {
    public let status: Int
    public let headers: HTTPHeaders
    public let body: [UInt8]

    /// The body decoded with the API's conventions (ISO 8601 dates).
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(T.self, from: Data(body))
    }

    public var problem: Problem? { try? decode(Problem.self) }
    public var text: String { String(decoding: body, as: UTF8.self) }
    /// The fields a validation problem names.
    public var fields: [String] { problem?.errors?.map(\.field) ?? [] }
}

/// Sends requests to a live service with JSON bodies and bearer tokens.
public final class ServiceClient: Sendable {
    public let base: String
    private let client = HTTPClient(threads: 24, timeoutSeconds: 30)

    public init(base: String) { self.base = base }

    public func send(
        _ method: String, _ path: String, json: String? = nil, token: String? = nil,
        headers extra: HTTPHeaders = [:]
    ) async throws -> Reply {
        var headers = extra
        if json != nil, headers["Content-Type"] == nil { headers.set("Content-Type", "application/json") }
        if let token { headers.set("Authorization", "Bearer \(token)") }
        let response = try await client.send(method, base + path, headers: headers, body: json.map { Array($0.utf8) })
        return Reply(status: response.status, headers: response.headers, body: response.body)
    }
}
