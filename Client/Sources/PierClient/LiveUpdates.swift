import Foundation
import PierModels

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Reads server-sent events (`text/event-stream`) off URLSession's data delegate, which hands
/// bytes over as they arrive on Linux and on Apple platforms alike.
final class EventStreamReader: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// What a connection gives: the messages as they come; it ends when the server closes the
    /// stream, or throws the ``PierError`` that ended it (a problem answer, the network).
    typealias Messages = AsyncThrowingStream<ServerSentEvent, Error>

    private struct State {
        var response: HTTPURLResponse?
        var buffer: [UInt8] = []
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
        #if canImport(FoundationNetworking) && canImport(Glibc)
            // Linux: URLSession spins on an idle stream (see SocketEventStream.swift).
            if let messages = SocketEventStream.open(request, requestID: requestID) { return messages }
        #endif
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
            state.buffer += data
            return ServerSentEvent.take(from: &state.buffer).filter { $0.data != nil }
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

extension Authorized {
    /// The signed-in user's state at `path` as server-sent events named `event`, each handed to
    /// `received` (with the user it is of), which returns what to yield (nil: nothing). Reconnects with ``LiveBackoff``
    /// and `Last-Event-ID`, with a fresh access token when one is refused as expired; ends at a
    /// sign-out (here, or the session ended on the server: then this device signs out too) and
    /// when the reading task is cancelled.
    func live<State: Decodable & Sendable>(
        _ path: String, event: String, as: State.Type,
        received: @escaping @Sendable (State, _ user: UUID) async -> State?
    ) -> AsyncStream<State> {
        let (stream, continuation) = AsyncStream.makeStream(of: State.self, bufferingPolicy: .bufferingNewest(1))
        // Subscribed before the stream starts: a sign-out at any moment after this ends it.
        let authEvents = sessions.events.stream()
        let task = Task { [self] in
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    await follow(path, event: event) { (state: State, user) in
                        if let yielded = await received(state, user) { continuation.yield(yielded) }
                    }
                }
                group.addTask {
                    for await event in authEvents {
                        if case .signedOut = event { return }
                    }
                }
                await group.next()
                group.cancelAll()
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    private func follow<State: Decodable & Sendable>(
        _ path: String, event: String, received: @Sendable (State, UUID) async -> Void
    ) async {
        var backoff = LiveBackoff()
        var lastID: String?
        var rejected: String?
        while !Task.isCancelled {
            guard let user = sessions.snapshot.withLock({ $0?.id }) else { return }
            var failure: PierError?
            var token: String?
            do {
                let current = try await sessions.accessToken(rejected: rejected)
                (token, rejected) = (current, nil)
                var request = URLRequest(url: transport.baseURL.appendingPathComponent(path))
                request.setValue("Bearer \(current)", forHTTPHeaderField: "Authorization")
                if let lastID { request.setValue(lastID, forHTTPHeaderField: "Last-Event-ID") }
                let messages = EventStreamReader.open(request, configuration: transport.session.configuration)
                for try await message in messages where message.event == event {
                    guard let data = message.data, let state = try? Transport.decoder.decode(State.self, from: Data(data.utf8))
                    else { continue }
                    lastID = message.id
                    backoff.reset()
                    await received(state, user)
                }
            } catch let error as PierError {
                if error.kind == .signedOut { return }
                if error.status == 401 {
                    if [ProblemCode.sessionRevoked, .accountDeleted].contains(error.code) {
                        await sessions.signOut(error.code == .accountDeleted ? .accountDeleted : .sessionEnded)
                        return
                    }
                    rejected = token
                }
                failure = error
            } catch {
                failure = PierError(kind: .network, detail: "The live stream failed: \(error)")
            }
            let wait = backoff.delay(after: failure)
            try? await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000))
        }
    }
}
