import Foundation
import PierModels

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One message of a server-sent events stream.
struct ServerSentEvent: Sendable, Equatable {
    var id: String?
    var event: String?
    var data: String
}

/// Reads server-sent events (`text/event-stream`) off URLSession's data delegate, which hands
/// bytes over as they arrive on Linux and on Apple platforms alike.
final class EventStreamReader: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// What a connection gives: the messages as they come; it ends when the server closes the
    /// stream, or throws the ``PierError`` that ended it (a problem answer, the network).
    typealias Messages = AsyncThrowingStream<ServerSentEvent, Error>

    private struct State {
        var response: HTTPURLResponse?
        var buffer = Data()
        var problem = Data()
        var lastID: String?
    }

    private let state = Locked(State())
    private let continuation: Messages.Continuation
    private let requestID: String

    private init(continuation: Messages.Continuation, requestID: String) {
        self.continuation = continuation
        self.requestID = requestID
    }

    /// Opens `request` (its `Authorization` and `Last-Event-ID` set by the caller) on a session of
    /// `configuration` of its own, closed when the stream is no longer read.
    static func open(_ request: URLRequest, configuration: URLSessionConfiguration) -> Messages {
        var request = request
        let requestID = "pierclient-" + UUID().uuidString.lowercased()
        request.setValue(requestID, forHTTPHeaderField: "X-Request-ID")
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        let (messages, continuation) = Messages.makeStream(bufferingPolicy: .bufferingNewest(64))
        let reader = EventStreamReader(continuation: continuation, requestID: requestID)
        let session = URLSession(configuration: configuration, delegate: reader, delegateQueue: nil)
        let task = session.dataTask(with: request)
        continuation.onTermination = { _ in
            task.cancel()
            session.invalidateAndCancel()
        }
        task.resume()
        return messages
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        state.withLock { $0.response = response as? HTTPURLResponse }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let messages = state.withLock { state -> [ServerSentEvent] in
            guard state.response?.statusCode == 200 else {
                if state.problem.count < 64 << 10 { state.problem.append(data) }
                return []
            }
            state.buffer.append(data)
            return Self.take(&state.buffer)
        }
        for message in messages { continuation.yield(message) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let (response, problem) = state.withLock { ($0.response, $0.problem) }
        if let response, response.statusCode != 200 {
            continuation.finish(
                throwing: Transport.problem(
                    problem, response, requestID: response.value(forHTTPHeaderField: "X-Request-ID") ?? requestID))
        } else if let error {
            continuation.finish(
                throwing: PierError(
                    kind: .network, detail: "The live stream was interrupted: \(error.localizedDescription)",
                    requestId: requestID))
        } else {
            continuation.finish()
        }
        session.finishTasksAndInvalidate()
    }

    /// The complete messages at the start of `buffer` (removed from it); comments and fields
    /// other than `id`, `event` and `data` are passed over, as are blocks without data.
    static func take(_ buffer: inout Data) -> [ServerSentEvent] {
        var messages: [ServerSentEvent] = []
        let bytes = [UInt8](buffer)
        var start = 0
        var index = 0
        while index + 1 < bytes.count {
            guard bytes[index] == 0x0A, bytes[index + 1] == 0x0A else {
                index += 1
                continue
            }
            let block = String(decoding: bytes[start..<index], as: UTF8.self)
            if let message = parse(block) { messages.append(message) }
            start = index + 2
            index = start
        }
        buffer = Data(bytes[start...])
        return messages
    }

    static func parse(_ block: String) -> ServerSentEvent? {
        var message = ServerSentEvent(data: "")
        var hasData = false
        for line in block.split(separator: "\n", omittingEmptySubsequences: true) where !line.hasPrefix(":") {
            let line = line.hasSuffix("\r") ? line.dropLast() : line
            let field = line.prefix { $0 != ":" }
            var value = line.dropFirst(field.count)
            if value.hasPrefix(":") { value = value.dropFirst() }
            if value.hasPrefix(" ") { value = value.dropFirst() }
            switch field {
            case "id": message.id = String(value)
            case "event": message.event = String(value)
            case "data":
                message.data += (hasData ? "\n" : "") + value
                hasData = true
            default: break
            }
        }
        return hasData ? message : nil
    }
}

/// When a live stream reconnects: 1 s after a failure, doubling up to a minute, with jitter (so
/// that clients cut off together do not come back together), the server's `Retry-After` when
/// it gives one; back to 1 s once a connection has delivered a message.
struct LiveBackoff {
    var next: TimeInterval = 1
    static let longest: TimeInterval = 60

    mutating func delay(after error: PierError?) -> TimeInterval {
        defer { next = min(Self.longest, next * 2) }
        if let retryAfter = error?.retryAfter { return retryAfter }
        return Double.random(in: next / 2...next)
    }

    mutating func reset() { next = 1 }
}
