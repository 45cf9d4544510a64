import PierHTTP
import PierModels

/// A server-sent events stream read as an app's client reads it, over a real connection: the
/// response head, then one message at a time as the server sends it.
public actor EventStream {
    public typealias Message = ServerSentEvent

    public nonisolated let status: Int
    public nonisolated let headers: HTTPHeaders
    /// The whole body, when the server answered with one (a problem instead of a stream).
    public nonisolated let problem: [UInt8]?
    private let body: HTTPClient.Body
    private var buffer: [UInt8] = []
    private var pending: [Message] = []

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

    /// The next message; nil when the stream ended. Nothing for `idle` (longer than any
    /// heartbeat) fails the test there and then, rather than at the client's timeout.
    public func next(idle: Duration = .seconds(60)) async throws -> Message? {
        while pending.isEmpty {
            let body = body
            let watchdog = Task {
                guard (try? await Task.sleep(for: idle)) != nil else { return false }
                body.cancel()
                return true
            }
            let chunk: [UInt8]?
            do {
                chunk = try await body.next()
                watchdog.cancel()
            } catch {
                watchdog.cancel()
                if await watchdog.value { throw TestFailure("no message, heartbeat or end within \(idle)") }
                throw error
            }
            if await watchdog.value { throw TestFailure("no message, heartbeat or end within \(idle)") }
            guard let chunk else { return nil }
            buffer += chunk
            pending += Message.take(from: &buffer)
        }
        return pending.removeFirst()
    }

    /// The next message with data (heartbeats passed over); nil when the stream ended. None
    /// within `within` fails the test.
    public func nextEvent(within: Duration = .seconds(60)) async throws -> Message? {
        let deadline = ContinuousClock.now + within
        do {
            while let message = try await next(idle: deadline - .now) {
                if message.data != nil { return message }
            }
        } catch is TestFailure {
            throw TestFailure("no message with data, nor the end, within \(within)")
        }
        return nil
    }

    public func close() { body.cancel() }
}
