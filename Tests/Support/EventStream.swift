import PierHTTP

/// A server-sent events stream read as an app's client reads it, over a real connection: the
/// response head, then one message at a time as the server sends it.
public actor EventStream {
    public struct Message: Sendable, Equatable {
        public var id: String?
        public var event: String?
        public var data: String?
        public var retry: Int?
        /// Comment lines (`: heartbeat`), without the colon.
        public var comments: [String] = []

        public var isHeartbeat: Bool { data == nil && comments.contains("heartbeat") }
    }

    public nonisolated let status: Int
    public nonisolated let headers: HTTPHeaders
    /// The whole body, when the server answered with one (a problem instead of a stream).
    public nonisolated let problem: [UInt8]?
    private let body: HTTPClient.Body
    private var buffer: [UInt8] = []

    /// Opens `url` with `Accept: text/event-stream` (and `Last-Event-ID` when given).
    public static func open(
        _ url: String, token: String? = nil, lastEventID: String? = nil, client: HTTPClient = TestHTTP.client
    ) async throws -> EventStream {
        var headers: HTTPHeaders = ["Accept": "text/event-stream"]
        if let token { headers.set("Authorization", "Bearer \(token)") }
        if let lastEventID { headers.set("Last-Event-ID", lastEventID) }
        let response = try await client.stream(
            HTTPClient.Request(
                method: "GET", url: url, headers: headers, connectTimeoutMilliseconds: 5000, timeoutMilliseconds: 300_000))
        return EventStream(response)
    }

    private init(_ response: HTTPClient.StreamedResponse) {
        status = response.status
        headers = response.headers
        problem = response.wholeBody
        body = response.body
    }

    /// The next message; nil when the stream ended.
    public func next() async throws -> Message? {
        while true {
            if let end = Self.messageEnd(in: buffer) {
                let block = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeSubrange(..<(end + 2))
                return Self.parse(block)
            }
            guard let chunk = try await body.next() else { return nil }
            buffer += chunk
        }
    }

    /// The next message with data (heartbeats passed over); nil when the stream ended.
    public func nextEvent() async throws -> Message? {
        while let message = try await next() {
            if message.data != nil { return message }
        }
        return nil
    }

    public func close() { body.cancel() }

    private static func messageEnd(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 2 else { return nil }
        for index in 0..<(bytes.count - 1) where bytes[index] == 0x0A && bytes[index + 1] == 0x0A { return index }
        return nil
    }

    private static func parse(_ block: String) -> Message {
        var message = Message()
        for line in block.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix(":") {
                message.comments.append(String(line.dropFirst()).trimmingCharacters(in: " "))
                continue
            }
            let (field, value) =
                line.firstIndex(of: ":").map { (line[..<$0], String(line[line.index(after: $0)...].drop { $0 == " " })) }
                ?? (line, "")
            switch field {
            case "id": message.id = value
            case "event": message.event = value
            case "data": message.data = message.data.map { $0 + "\n" + value } ?? value
            case "retry": message.retry = Int(value)
            default: break
            }
        }
        return message
    }
}

extension String {
    fileprivate func trimmingCharacters(in character: Character) -> String {
        String(drop { $0 == character }.reversed().drop { $0 == character }.reversed())
    }
}
