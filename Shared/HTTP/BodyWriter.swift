import CMicroHTTPD
import PierRuntime
import Synchronization

/// The producing end of a streamed response body: what a ``Response/streaming(status:headers:_:)``
/// producer writes to, whatever carries the body (the HTTP adapter, the in-process test client).
public protocol BodyWriter: Sendable {
    /// Appends bytes; waits while the transport's buffer is full.
    /// - Throws: ``BodyWriterClosed`` when the client went away.
    func write(_ bytes: [UInt8]) async throws
}

extension BodyWriter {
    /// Appends the UTF-8 bytes of `text`.
    public func write(_ text: String) async throws { try await write(Array(text.utf8)) }
}

/// The client disconnected or the server is stopping: stop producing.
public struct BodyWriterClosed: Error {}

/// A streamed body on a libmicrohttpd connection (chunked transfer encoding).
///
/// A handler's producer writes; libmicrohttpd reads on its own thread as the socket drains.
/// At most `limit` bytes wait in between: a producer faster than the client waits in `write`,
/// so a large export streams in bounded memory. When the client goes away, `write` throws.
///
/// While no bytes are buffered, the reader suspends the connection, and the next write resumes
/// it: no thread spins or blocks waiting for the producer.
final class ConnectionBodyWriter: BodyWriter {
    private struct State {
        var chunks: [[UInt8]] = []
        var offset = 0
        var buffered = 0
        var finished = false
        var failed = false
        var closed = false
        var readerSuspended = false
        var spaceWaiters: [CheckedContinuation<Void, Error>] = []
    }

    /// Bytes buffered at most before `write` waits.
    let limit: Int
    private let state = Mutex(State())
    /// The task producing the body, and the watch for its client leaving (endless streams).
    private let producer = Mutex<(task: Task<Void, Never>?, watch: HangupWatcher.Watch?)>((nil, nil))
    /// `@unchecked` reason: the connection pointer is only handed to MHD's own thread-safe
    /// suspend/resume calls.
    private let connection: ConnectionHandle

    init(connection: OpaquePointer, limit: Int = 256 << 10) {
        self.connection = ConnectionHandle(pointer: connection)
        self.limit = limit
    }

    func write(_ bytes: [UInt8]) async throws {
        guard !bytes.isEmpty else { return }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            let (resume, outcome) = state.withLock { state -> (Bool, Result<Void, Error>?) in
                if state.closed || state.failed { return (false, .failure(BodyWriterClosed())) }
                state.chunks.append(bytes)
                state.buffered += bytes.count
                let resume = state.readerSuspended
                state.readerSuspended = false
                if state.buffered >= limit {
                    state.spaceWaiters.append(continuation)
                    return (resume, nil)
                }
                return (resume, .success(()))
            }
            if resume { MHD_resume_connection(connection.pointer) }
            if let outcome { continuation.resume(with: outcome) }
        }
    }

    /// Ends the body after what is buffered.
    func finish() { end { $0.finished = true } }

    /// Follows the producing task, and for a stream that never ends by itself, its client: when
    /// the client hangs up (however idle the stream), the producer is cancelled and the response
    /// ends at once, freeing what the stream holds, rather than at the next write.
    func follow(_ task: Task<Void, Never>, socket: Int32?) {
        // The task first: a hang-up seen as soon as the watch begins finds it to cancel.
        producer.withLock { $0.task = task }
        let watch = socket.flatMap { socket in
            HangupWatcher.shared.watch(socket) { [weak self] in self?.clientGone() }
        }
        let closed = producer.withLock { producer in
            producer.watch = watch
            return state.withLock { $0.closed }
        }
        if closed { endWatch() }
    }

    /// The client hung up: stop the producer, end the response.
    func clientGone() {
        producer.withLock { $0.task }?.cancel()
        abort()
    }

    private func endWatch() {
        if let watch = producer.withLock({ producer -> HangupWatcher.Watch? in
            defer { producer.watch = nil }
            return producer.watch
        }) {
            HangupWatcher.shared.end(watch)
        }
    }

    /// Ends the response abruptly (the client sees a truncated chunked body, not a false end).
    func abort() { end { $0.failed = true } }

    private func end(_ mark: (inout State) -> Void) {
        let (resume, waiters) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Error>]) in
            mark(&state)
            let resume = state.readerSuspended
            state.readerSuspended = false
            defer { state.spaceWaiters = [] }
            return (resume, state.failed ? state.spaceWaiters : [])
        }
        waiters.forEach { $0.resume(throwing: BodyWriterClosed()) }
        if resume { MHD_resume_connection(connection.pointer) }
    }

    /// MHD destroyed the response: the body was sent, or the client went away.
    func close() {
        endWatch()
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Error>] in
            state.closed = true
            state.chunks = []
            state.buffered = 0
            defer { state.spaceWaiters = [] }
            return state.spaceWaiters
        }
        waiters.forEach { $0.resume(throwing: BodyWriterClosed()) }
    }

    /// MHD's content reader: copies buffered bytes, or reports the end, or suspends the
    /// connection until the producer writes. Returns MHD's ssize_t convention.
    func read(into target: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        var waiters: [CheckedContinuation<Void, Error>] = []
        let result = state.withLock { state -> Int in
            if state.failed { return -2 }  // MHD_CONTENT_READER_END_WITH_ERROR
            if state.buffered == 0 {
                if state.finished { return -1 }  // MHD_CONTENT_READER_END_OF_STREAM
                // Suspended under the lock, so a concurrent write resumes only after this.
                state.readerSuspended = true
                MHD_suspend_connection(connection.pointer)
                return 0
            }
            var copied = 0
            while copied < capacity, !state.chunks.isEmpty {
                let chunk = state.chunks[0]
                let count = min(capacity - copied, chunk.count - state.offset)
                chunk.withUnsafeBytes { bytes in
                    (target + copied).update(
                        from: bytes.baseAddress!.advanced(by: state.offset).assumingMemoryBound(to: CChar.self), count: count)
                }
                copied += count
                state.offset += count
                if state.offset == chunk.count {
                    state.chunks.removeFirst()
                    state.offset = 0
                }
            }
            state.buffered -= copied
            if state.buffered < limit {
                waiters = state.spaceWaiters
                state.spaceWaiters = []
            }
            return copied
        }
        waiters.forEach { $0.resume() }
        return result
    }
}

/// A connection pointer that crosses threads only into MHD's thread-safe calls.
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}
