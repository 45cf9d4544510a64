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

/// The HTTP/1.1 adapter: GNU libmicrohttpd parses and frames (keep-alive, pipelining, chunked
/// bodies, `Expect: 100-continue`, header limits); this layer applies Pier's transport limits
/// (sizes, deadlines, connections per client), hands each request to an ``HTTPPipeline`` and
/// queues its answer. Routing, middleware and errors live in the pipeline, not here.
///
/// Threads: MHD's own pool (``Configuration/threads``) reads requests, answers constant routes
/// (``Routes/constant(_:_:)``: health checks) at once, and starts the pipeline
/// as an immediate task on the same thread: what answers without suspending (refusals, static
/// documents) is queued at once, with no thread hop and no suspension of the
/// connection; what suspends (the database, the hasher, an upstream) suspends the connection
/// and resumes it with the response. Blocking work goes to dedicated pools, never to MHD's
/// threads or the cooperative pool.
///
/// `@unchecked Sendable`: the daemon pointer is written in `start` and `shutdown` only, which
/// the owner calls once each, in order; everything else is immutable or behind a `Mutex`.
public final class HTTPServer: @unchecked Sendable {
    public let configuration: Configuration
    public let pipeline: HTTPPipeline
    public let logger: Logger

    private var daemon: OpaquePointer?
    private var listenSocket: Int32 = -1
    /// Per-client connection caps and the request-head deadline.
    let connections: ConnectionGuard
    /// What each request's phases enforce.
    let phaseLimits: RequestPhases.Limits
    private var sweeper: Task<Void, Never>?
    /// The bound port (useful with port 0).
    public private(set) var port: Int = 0

    private struct Activity {
        var suspended: [ObjectIdentifier: Exchange] = [:]
        var streams: [ObjectIdentifier: ConnectionBodyWriter] = [:]
        /// Streams that never end by themselves (`text/event-stream`): cut first at shutdown,
        /// their clients reconnect elsewhere.
        var endless: Set<ObjectIdentifier> = []
    }
    /// Guarded by a plain pthread mutex: MHD's threads, the cooperative pool and the database's
    /// threads all take it per request, and Synchronization.Mutex spins when they collide.
    private var activityState = Activity()
    private let activityLock = ConditionLock()
    private func withActivity<T>(_ body: (inout Activity) -> T) -> T { activityLock.withLock { body(&activityState) } }
    /// Requests received and not yet completed.
    private let requests = Atomic<Int>(0)

    /// A server over `routes` alone: the access log (when configured) and errors as problems.
    public convenience init(configuration: Configuration, routes: Routes, logger: Logger) {
        var middleware: [any RouterMiddleware<BasicRequestContext>] = []
        if configuration.accessLog { middleware.append(AccessLogMiddleware(logger: logger)) }
        middleware.append(ErrorMiddleware(logger: logger))
        self.init(
            configuration: configuration, pipeline: HTTPPipeline(routes: routes, middleware: middleware, logger: logger),
            logger: logger)
    }

    public init(configuration: Configuration, pipeline: HTTPPipeline, logger: Logger) {
        self.configuration = configuration
        self.pipeline = pipeline
        self.logger = logger
        phaseLimits = RequestPhases.Limits(
            maxURLBytes: configuration.maxURLBytes, maxHeaderBytes: configuration.maxHeaderBytes,
            maxBodyBytes: configuration.maxBodyBytes, bodyTimeoutSeconds: configuration.bodyTimeoutSeconds)
        connections = ConnectionGuard(
            capPerClient: configuration.maxConnectionsPerClient,
            headTimeout: .milliseconds(Int(configuration.headTimeoutSeconds * 1000)),
            trusted: configuration.trustedProxies)
    }

    /// Binds, listens and starts MHD's threads (once: later calls do nothing).
    public func listen() throws {
        guard daemon == nil else { return }
        let files = System.raiseFileLimit()
        let (socket, family) = try Self.listen(host: configuration.host, port: configuration.port)
        listenSocket = socket
        var flags = MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_TURBO.rawValue
        if family == AF_INET6 { flags |= MHD_USE_IPv6.rawValue }
        var options: [MHD_OptionItem] = [
            MHD_OptionItem(option: MHD_OPTION.LISTEN_SOCKET, value: Int(socket), ptr_value: nil),
            MHD_OptionItem(option: MHD_OPTION.THREAD_POOL_SIZE, value: max(1, configuration.threads), ptr_value: nil),
            // Room for the process's other files (database connections, logs) under the limit.
            MHD_OptionItem(
                option: MHD_OPTION.CONNECTION_LIMIT, value: max(1, min(configuration.maxConnections, files - 256)),
                ptr_value: nil),
            MHD_OptionItem(option: MHD_OPTION.CONNECTION_TIMEOUT, value: configuration.idleTimeoutSeconds, ptr_value: nil),
            // Twice the head limit: heads between the two get Pier's own 431 (problem+json).
            MHD_OptionItem(
                option: MHD_OPTION.CONNECTION_MEMORY_LIMIT, value: 2 * configuration.maxHeaderBytes + 4096, ptr_value: nil),
            MHD_OptionItem(option: MHD_OPTION.STRICT_FOR_CLIENT, value: 1, ptr_value: nil),
        ]
        options.append(MHD_OptionItem(option: MHD_OPTION.END, value: 0, ptr_value: nil))
        // MHD holds this pointer until MHD_stop_daemon; the retain is released in `shutdown`.
        let context = Unmanaged.passRetained(self).toOpaque()
        daemon = options.withUnsafeBufferPointer { options in
            CMicroHTTPD_start(
                UInt32(flags), 0, accessHandler, context, requestCompleted, uriLogged, connectionNotified, options.baseAddress)
        }
        guard daemon != nil else {
            Unmanaged<HTTPServer>.fromOpaque(context).release()
            close(socket)
            throw HTTPServerError(message: "libmicrohttpd could not start on \(configuration.host):\(configuration.port)")
        }
        port = Int(CMicroHTTPD_bound_port(daemon))
        let connections = connections
        sweeper = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                connections.sweep()
            }
        }
    }

    /// Stops accepting, lets in-flight requests finish within the grace period, answers the
    /// rest with 503, then stops MHD's threads.
    public func shutdown() async {
        guard let daemon else { return }
        let socket = MHD_quiesce_daemon(daemon)
        if socket >= 0 { close(socket) }
        let endless = withActivity { state in state.endless.compactMap { state.streams[$0] } }
        endless.forEach { $0.abort() }
        let deadline = ContinuousClock.now + configuration.shutdownGracePeriod
        while inFlight > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        // MHD may not stop while a connection is suspended: answer what is still running and
        // cut streams still being produced.
        let (stuck, streams) = withActivity { (Array($0.suspended.values), Array($0.streams.values)) }
        streams.forEach { $0.abort() }
        for exchange in stuck {
            complete(
                exchange,
                with: Response.problem(
                    HTTPError.unavailable(retryAfter: 1, "The server is shutting down."), requestID: exchange.requestID))
        }
        let settle = ContinuousClock.now + .seconds(1)
        while withActivity({ !$0.suspended.isEmpty || !$0.streams.isEmpty })
            || inFlight > 0
                && ContinuousClock.now < settle
        {
            try? await Task.sleep(for: .milliseconds(10))
        }
        sweeper?.cancel()
        // It joins MHD's threads: a blocking wait, kept off the tasks' threads.
        let stopping = UncheckedDaemon(daemon)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            startDetachedThread {
                MHD_stop_daemon(stopping.pointer)
                done.resume()
            }
        }
        self.daemon = nil
        Unmanaged.passUnretained(self).release()
    }

    /// Requests received and not yet completed.
    public var inFlight: Int { requests.load(ordering: .relaxed) }

    // MARK: - The per-request state machine

    func began(_ uri: String, _ connection: OpaquePointer) -> Exchange {
        requests.add(1, ordering: .relaxed)
        return Exchange(connection: connection, uri: uri, limits: phaseLimits)
    }

    func ended(_ exchange: Exchange) {
        requests.subtract(1, ordering: .relaxed)
        // Only an exchange that waited for its pipeline was ever listed.
        if exchange.wasSuspended {
            withActivity { _ = $0.suspended.removeValue(forKey: ObjectIdentifier(exchange)) }
        }
    }

    /// One call of MHD's access handler: the request's phases say what to do with it.
    func handle(
        _ exchange: Exchange, method: String, upload: UnsafePointer<CChar>?,
        uploadSize: UnsafeMutablePointer<Int>
    ) -> MHD_Result {
        let count = uploadSize.pointee
        let action: RequestPhases.Action
        if exchange.phases.phase == .head {
            tracked(exchange.connection)?.headReceived()
            exchange.method = method
            if let constant = pipeline.constant(method: method, target: exchange.uri), answersAtOnce(exchange) {
                exchange.constant = constant
                action = exchange.phases.constantHead()
            } else {
                exchange.headers = Self.headers(of: exchange.connection)
                exchange.requestID = Request.requestID(exchange.headers["X-Request-ID"])
                action = exchange.phases.head(
                    .init(method: method, target: exchange.uri, headers: exchange.headers), at: MonotonicClock.seconds())
            }
        } else if count > 0 {
            uploadSize.pointee = 0
            action = exchange.phases.received(count, at: MonotonicClock.seconds())
            if case .keep = action {
                upload!.withMemoryRebound(to: UInt8.self, capacity: count) {
                    exchange.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
                }
            } else if exchange.phases.phase == .refused {
                exchange.body = []
            }
        } else {
            action = exchange.phases.ended()
        }
        switch action {
        case .proceed, .keep: return .YES
        case .refuse(let problem): return queue(exchange, .problem(problem, requestID: exchange.requestID))
        case .dispatch: return dispatch(exchange)
        case .answerIfReady:
            guard let response = exchange.takeResponse() else { return .YES }
            return queue(exchange, response)
        case .cut:
            if exchange.phases.phase == .body {
                logger.info("request body timed out", [("request_id", .string(exchange.requestID))])
            }
            return .NO
        }
    }

    /// Whether a request for a constant answer is within the limits and announces no body: then
    /// only its request id is read from the head (no header is copied), and the answer is queued
    /// once the head is complete. Anything else takes the usual way, checks and all.
    private func answersAtOnce(_ exchange: Exchange) -> Bool {
        let head = CMicroHTTPD_head_summary(exchange.connection)
        let uriBytes = exchange.uri.utf8.count
        guard head.announces_body == 0, uriBytes <= configuration.maxURLBytes,
            head.bytes + uriBytes + exchange.method.utf8.count + 12 <= configuration.maxHeaderBytes
        else { return false }
        let given = MHD_lookup_connection_value(exchange.connection, .HEADER_KIND, "X-Request-ID")
        exchange.requestID = Request.requestID(given.map { String(cString: $0) })
        return true
    }

    private func dispatch(_ exchange: Exchange) -> MHD_Result {
        // Found in the head phase; a constant path that was not answered at once (a body, the
        // limits) goes through the pipeline, whose route gives the same answer.
        if var constant = exchange.constant {
            constant.headers.set("X-Request-ID", exchange.requestID)
            return queue(exchange, constant)
        }
        let request: Request
        do {
            request = try Request.received(
                method: exchange.method, target: exchange.uri, headers: exchange.headers, body: exchange.body,
                peerAddress: Self.peerAddress(exchange.connection), trustedProxies: configuration.trustedProxies,
                requestID: exchange.requestID)
        } catch {
            return queue(exchange, .problem(error, requestID: exchange.requestID))
        }
        exchange.body = []
        let pipeline = pipeline
        let matched = pipeline.match(request)
        // Runs here until its first suspension; a response ready by then is queued at once.
        // After a suspension it goes on where its route prefers (the proxy: on the thread that
        // saw the upstream's answer), or else on the cooperative pool.
        Task.immediate(executorPreference: matched.executor) {
            let response = await pipeline.respond(to: request, matched)
            self.complete(exchange, with: response)
        }
        let answered = exchange.settle {
            exchange.wasSuspended = true
            withActivity { $0.suspended[ObjectIdentifier(exchange)] = exchange }
            MHD_suspend_connection(exchange.connection)
        }
        if let answered { return queue(exchange, answered) }
        return .YES
    }

    /// Hands a response to its exchange, once: to the thread still in the access handler, or
    /// to the suspended connection, which it resumes.
    private func complete(_ exchange: Exchange, with response: Response) {
        guard exchange.offer(response) else { return }
        withActivity { _ = $0.suspended.removeValue(forKey: ObjectIdentifier(exchange)) }
        MHD_resume_connection(exchange.connection)
    }

    private func queue(_ exchange: Exchange, _ response: Response) -> MHD_Result {
        exchange.phases.answered()
        if let producer = response.stream { return queueStream(exchange, response, producer) }
        let mhdResponse = response.body.withUnsafeBytes { body in
            MHD_create_response_from_buffer(
                body.count, UnsafeMutableRawPointer(mutating: body.baseAddress),
                .RESPMEM_MUST_COPY)
        }
        guard let mhdResponse else { return .NO }
        defer { MHD_destroy_response(mhdResponse) }
        for (name, value) in response.headers {
            MHD_add_response_header(mhdResponse, name, value)
        }
        return MHD_queue_response(exchange.connection, UInt32(response.status), mhdResponse)
    }

    private func queueStream(
        _ exchange: Exchange, _ response: Response,
        _ producer: @escaping @Sendable (any BodyWriter) async throws -> Void
    ) -> MHD_Result {
        let writer = ConnectionBodyWriter(connection: exchange.connection)
        let context = Unmanaged.passRetained(StreamContext(server: self, writer: writer)).toOpaque()
        guard
            let mhdResponse = MHD_create_response_from_callback(
                CMicroHTTPD_size_unknown(), 32 << 10, streamReader,
                context, streamClosed)
        else {
            Unmanaged<StreamContext>.fromOpaque(context).release()
            return .NO
        }
        defer { MHD_destroy_response(mhdResponse) }
        for (name, value) in response.headers {
            MHD_add_response_header(mhdResponse, name, value)
        }
        let endless = response.headers["Content-Type"]?.hasPrefix("text/event-stream") == true
        withActivity {
            $0.streams[ObjectIdentifier(writer)] = writer
            if endless { $0.endless.insert(ObjectIdentifier(writer)) }
        }
        let requestID = exchange.requestID
        let logger = logger
        let task = Task {
            do {
                try await producer(writer)
                writer.finish()
            } catch is BodyWriterClosed {
                writer.abort()
            } catch is CancellationError {
                writer.abort()
            } catch {
                logger.error(
                    "streamed response failed",
                    [("request_id", .string(requestID)), ("error", .string(String(describing: error)))])
                writer.abort()
            }
        }
        // An endless stream sits idle between messages: its client's leaving is watched for,
        // so the stream ends then and not at its next heartbeat.
        writer.follow(task, socket: endless ? CMicroHTTPD_connection_fd(exchange.connection) : nil)
        return MHD_queue_response(exchange.connection, UInt32(response.status), mhdResponse)
    }

    func streamEnded(_ writer: ConnectionBodyWriter) {
        writer.close()
        withActivity {
            _ = $0.streams.removeValue(forKey: ObjectIdentifier(writer))
            _ = $0.endless.remove(ObjectIdentifier(writer))
        }
    }
}

/// A server is a part of a ``ServiceGroup``: started after what it stands on (so that a caller
/// can report the bound port before the group runs), it answers until cancelled, then shuts
/// down gracefully.
extension HTTPServer: LifecycleService {
    public var lifecycleName: String { "http \(configuration.host):\(port)" }

    public func start() async throws { try listen() }

    public func run() async throws {
        try listen()
        await Lifecycle.untilCancelled()
        await shutdown()
    }
}
