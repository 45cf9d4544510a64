import CMicroHTTPD
import PierRuntime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The server could not start.
public struct HTTPServerError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// One request's state across MHD's calls.
///
/// `@unchecked Sendable`: MHD calls the handler for a connection on one thread at a time; while
/// the connection is suspended only the task touches it, and `offer`/`takeResponse` hand the
/// response over under a lock (MHD_resume_connection orders the rest).
final class Exchange: @unchecked Sendable {
    let connection: OpaquePointer
    let uri: String
    var phases: RequestPhases
    var method = ""
    var headers = HTTPHeaders()
    var body: [UInt8] = []
    var requestID = ""
    /// Whether the connection was suspended for the pipeline's answer (the server listed it).
    var wasSuspended = false
    /// The constant answer found from the request line alone (``HTTPServer`` read no header).
    var constant: Response?
    /// Where the response is: the pipeline still running on MHD's thread (`running`), the
    /// connection suspended for it (`waiting`), or there (`ready`) until taken.
    private enum Handoff {
        case running, waiting, ready(Response), taken
    }
    private let handoff = Mutex(Handoff.running)

    init(connection: OpaquePointer, uri: String, limits: RequestPhases.Limits) {
        self.connection = connection
        self.uri = uri
        phases = RequestPhases(limits: limits)
    }

    /// Called by the access handler once the pipeline's task returned control: the response
    /// when it is already there, else nil after `suspend` ran (under the lock, so that a
    /// response offered meanwhile resumes a connection that is suspended).
    func settle(suspend: () -> Void) -> Response? {
        handoff.withLock { state in
            if case .ready(let response) = state {
                state = .taken
                return response
            }
            state = .waiting
            suspend()
            return nil
        }
    }

    /// Stores the response once; true when the connection waits for it (resume it). Later
    /// offers (a late task after a shutdown answer) are ignored.
    func offer(_ response: Response) -> Bool {
        handoff.withLock { state in
            switch state {
            case .running:
                state = .ready(response)
                return false
            case .waiting:
                state = .ready(response)
                return true
            case .ready, .taken:
                return false
            }
        }
    }

    func takeResponse() -> Response? {
        handoff.withLock { state in
            guard case .ready(let response) = state else { return nil }
            state = .taken
            return response
        }
    }
}

// MARK: - C callbacks (static, context through Unmanaged: no captures cross into C)

func server(_ context: UnsafeMutableRawPointer?) -> HTTPServer {
    Unmanaged<HTTPServer>.fromOpaque(context!).takeUnretainedValue()
}

let uriLogged: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) -> UnsafeMutableRawPointer? = {
    context, uri, connection in
    let exchange = server(context).began(uri.map { String(cString: $0) } ?? "/", connection!)
    return Unmanaged.passRetained(exchange).toOpaque()
}

/// The connection's record in the ``ConnectionGuard``, kept in its socket context from its
/// start to its close.
func tracked(_ connection: OpaquePointer) -> ConnectionGuard.Tracked? {
    CMicroHTTPD_socket_context(connection).map { Unmanaged<ConnectionGuard.Tracked>.fromOpaque($0).takeUnretainedValue() }
}

let requestCompleted: MHD_RequestCompletedCallback = { context, connection, state, _ in
    if let connection { tracked(connection)?.answered() }
    guard let state, let raw = state.pointee else { return }
    let exchange = Unmanaged<Exchange>.fromOpaque(raw).takeRetainedValue()
    state.pointee = nil
    server(context).ended(exchange)
}

let connectionNotified: MHD_NotifyConnectionCallback = { context, connection, socketContext, code in
    guard let connection, let socketContext else { return }
    let server = server(context)
    if code.rawValue == 0 {  // MHD_CONNECTION_NOTIFY_STARTED
        let fd = CMicroHTTPD_connection_fd(connection)
        let (tracked, allowed) = server.connections.started(fd: fd, peer: HTTPServer.peerAddress(connection))
        socketContext.pointee = Unmanaged.passRetained(tracked).toOpaque()
        // Over its client's share: cut now; the connection closes without being read.
        if !allowed { shutdown(fd, Int32(SHUT_RDWR)) }
    } else if let raw = socketContext.pointee {
        socketContext.pointee = nil
        server.connections.closed(Unmanaged<ConnectionGuard.Tracked>.fromOpaque(raw).takeRetainedValue())
    }
}

/// What MHD holds for a streamed response until it destroys it.
final class StreamContext: Sendable {
    let server: HTTPServer
    let writer: ConnectionBodyWriter
    init(server: HTTPServer, writer: ConnectionBodyWriter) {
        self.server = server
        self.writer = writer
    }
}

let streamReader: MHD_ContentReaderCallback = { context, _, buffer, capacity in
    let stream = Unmanaged<StreamContext>.fromOpaque(context!).takeUnretainedValue()
    return stream.writer.read(into: buffer!, capacity: capacity)
}

let streamClosed: MHD_ContentReaderFreeCallback = { context in
    let stream = Unmanaged<StreamContext>.fromOpaque(context!).takeRetainedValue()
    stream.server.streamEnded(stream.writer)
}

let accessHandler: MHD_AccessHandlerCallback = { context, _, _, method, _, upload, uploadSize, state in
    guard let state, let raw = state.pointee, let uploadSize else { return .NO }
    let exchange = Unmanaged<Exchange>.fromOpaque(raw).takeUnretainedValue()
    return server(context).handle(
        exchange, method: method.map { String(cString: $0) } ?? "GET",
        upload: upload, uploadSize: uploadSize)
}

/// MHD's daemon handed to the thread that stops it (used there alone).
struct UncheckedDaemon: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}
