import Foundation
import PierHTTP
import PierModels
import Synchronization

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

/// Sends requests with JSON bodies and bearer tokens: over a socket to a live server, or
/// in-process straight into a pipeline (no socket, no port, no HTTP parsing: what most handler
/// tests need). In-process requests come from `peerAddress`; the transport's own limits (body
/// size, framing, deadlines) are the adapter's and are tested over sockets.
public final class ServiceClient: Sendable {
    enum Transport: Sendable {
        case socket(base: String, client: HTTPClient)
        case inProcess(HTTPPipeline, trusted: TrustedProxies, peerAddress: String)
    }

    let transport: Transport

    /// Over HTTP to `base` (`http://127.0.0.1:port`).
    public init(base: String) {
        transport = .socket(base: base, client: TestHTTP.client)
    }

    /// In-process, into `pipeline`.
    public init(pipeline: HTTPPipeline, trusted: TrustedProxies = .none, peerAddress: String = "127.0.0.1") {
        transport = .inProcess(pipeline, trusted: trusted, peerAddress: peerAddress)
    }

    public func send(
        _ method: String, _ path: String, json: String? = nil, token: String? = nil,
        headers extra: HTTPHeaders = [:]
    ) async throws -> Reply {
        var headers = extra
        if json != nil, headers["Content-Type"] == nil { headers.set("Content-Type", "application/json") }
        if let token { headers.set("Authorization", "Bearer \(token)") }
        let body = json.map { Array($0.utf8) }
        switch transport {
        case .socket(let base, let client):
            let response = try await client.send(
                method, base + path, headers: headers, body: body, timeout: .seconds(30), limit: 64 << 20)
            return Reply(status: response.status, headers: response.headers, body: response.body)
        case .inProcess(let pipeline, let trusted, let peerAddress):
            let request: Request
            do {
                request = try Request.received(
                    method: method, target: path, headers: headers, body: body ?? [], peerAddress: peerAddress,
                    trustedProxies: trusted)
            } catch {
                let response = Response.problem(error, requestID: "")
                return Reply(status: response.status, headers: response.headers, body: response.body)
            }
            let response = await pipeline.respond(to: request)
            // A transport always suspends somewhere; a loop of requests answered at once (a
            // refusal) must not hold a cooperative thread either.
            await Task.yield()
            guard let stream = response.stream else {
                return Reply(status: response.status, headers: response.headers, body: method == "HEAD" ? [] : response.body)
            }
            let collected = CollectedBody()
            try await stream(collected)
            return Reply(status: response.status, headers: response.headers, body: collected.bytes)
        }
    }
}

/// The outbound client tests share: one transfer thread for the whole test process, as a
/// process of Pier has.
public enum TestHTTP {
    public static let client = HTTPClient()
}

/// A streamed body gathered in memory (in-process responses).
final class CollectedBody: BodyWriter {
    private let buffer = Mutex<[UInt8]>([])
    func write(_ bytes: [UInt8]) async throws { buffer.withLock { $0.append(contentsOf: bytes) } }
    var bytes: [UInt8] { buffer.withLock { $0 } }
}
