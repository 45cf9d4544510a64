import CCurl
import PierRuntime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The transfer thread: one libcurl multi handle driving every exchange.
final class TransferLoop: @unchecked Sendable {
    private enum Command {
        case add(Transfer)
        case unpause(Transfer)
        case stop
    }

    // Touched by the transfer thread only.
    private let multi: UnsafeMutableRawPointer
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    private var idle: [UnsafeMutableRawPointer] = []
    // Shared.
    /// Commands for the transfer thread, and whether it stopped (then nothing more is taken:
    /// the multi handle is gone). Wake-ups happen under this lock, never after a stop.
    private let commands = Mutex<(queue: [Command], stopped: Bool)>(([], false))
    private let count = Atomic<Int>(0)
    let maximumInFlight: Int

    init(maximumInFlight: Int) {
        self.maximumInFlight = maximumInFlight
        multi = curl_multi_init()!
        let loop = self
        startDetachedThread { loop.run() }
    }

    var inFlight: Int { count.load(ordering: .relaxed) }

    func add(_ exchange: Transfer) {
        guard count.add(1, ordering: .relaxed).newValue <= maximumInFlight else {
            count.subtract(1, ordering: .relaxed)
            exchange.fail(.overloaded)
            return
        }
        let taken = send(.add(exchange))
        if !taken {
            release(exchange)
            exchange.fail(.closed)
        }
    }

    /// An exchange taken by ``add(_:)`` is over: it no longer counts, in the process or its use.
    private func release(_ exchange: Transfer) {
        count.subtract(1, ordering: .relaxed)
    }

    private func send(_ command: Command) -> Bool {
        commands.withLock { state in
            guard !state.stopped else { return false }
            state.queue.append(command)
            curl_multi_wakeup(multi)
            return true
        }
    }

    func unpause(_ exchange: Transfer) { _ = send(.unpause(exchange)) }

    func stop() { _ = send(.stop) }

    private func run() {
        var running: Int32 = 0
        var descriptors: Int32 = 0
        while true {
            let pending = commands.withLock { state -> [Command] in
                defer { state.queue.removeAll(keepingCapacity: true) }
                return state.queue
            }
            for (index, command) in pending.enumerated() {
                switch command {
                case .add(let exchange):
                    guard let handle = idle.popLast() ?? curl_easy_init() else {
                        release(exchange)
                        exchange.fail(.connect("curl_easy_init failed"))
                        continue
                    }
                    exchange.configure(handle)
                    active[handle] = exchange
                    curl_multi_add_handle(multi, handle)
                case .unpause(let exchange):
                    if let handle = exchange.handle, active[handle] === exchange { curl_easy_pause(handle, CURLPAUSE_CONT) }
                case .stop:
                    let late = commands.withLock { state -> [Command] in
                        state.stopped = true
                        return state.queue
                    }
                    // Exchanges that came with or after the stop never started: they fail.
                    for case .add(let exchange) in pending[(index + 1)...] + late {
                        release(exchange)
                        exchange.fail(.closed)
                    }
                    for (handle, exchange) in active {
                        curl_multi_remove_handle(multi, handle)
                        exchange.finish(CURLE_ABORTED_BY_CALLBACK)
                        release(exchange)
                        curl_easy_cleanup(handle)
                    }
                    active = [:]
                    idle.forEach { curl_easy_cleanup($0) }
                    idle = []
                    curl_multi_cleanup(multi)
                    return
                }
            }
            curl_multi_perform(multi, &running)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi, &queued) {
                guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
                let code = message.pointee.data.result
                curl_multi_remove_handle(multi, handle)
                if let exchange = active.removeValue(forKey: handle) {
                    exchange.finish(code)
                    release(exchange)
                }
                idle.append(handle)
            }
            curl_multi_poll(multi, nil, 0, 1000, &descriptors)
        }
    }
}

/// One exchange, from the transfer thread's side.
final class Transfer: @unchecked Sendable {
    let request: HTTPClient.Request
    /// Set once, before the exchange reaches the transfer thread.
    var body: HTTPClient.Body!
    private(set) var handle: UnsafeMutableRawPointer?
    /// Called once: with the head, or with a failure before it.
    private var completion: (@Sendable (Result<HTTPClient.StreamedResponse, HTTPClient.Failure>) -> Void)?
    private var status = 0
    private var headers = HTTPHeaders()
    /// Set while a small body is read whole before the head is handed over.
    private var whole: [UInt8]?
    private var list: UnsafeMutablePointer<curl_slist>?
    private let resolve: String?
    private var resolveList: UnsafeMutablePointer<curl_slist>?

    init(
        request: HTTPClient.Request, resolve: String?,
        completion: @escaping @Sendable (Result<HTTPClient.StreamedResponse, HTTPClient.Failure>) -> Void
    ) {
        self.request = request
        self.resolve = resolve
        self.completion = completion
    }

    deinit {
        curl_slist_free_all(list)
        curl_slist_free_all(resolveList)
    }

    func fail(_ failure: HTTPClient.Failure) {
        completion?(.failure(failure))
        completion = nil
    }

    private func deliverHead() {
        completion?(.success(HTTPClient.StreamedResponse(status: status, headers: headers, body: body, wholeBody: whole)))
        completion = nil
    }

    func configure(_ handle: UnsafeMutableRawPointer) {
        self.handle = handle
        curl_easy_reset(handle)
        _ = CCurl_setopt_string(handle, CURLOPT_URL, request.url)
        _ = CCurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = CCurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        _ = CCurl_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1)
        _ = CCurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, request.connectTimeoutMilliseconds)
        // The addresses the NameResolver gave; a rule ages out of curl's cache after a second, and
        // the next exchange brings the resolver's current one.
        _ = CCurl_setopt_long(handle, CURLOPT_DNS_CACHE_TIMEOUT, 1)
        if let resolve {
            resolveList = curl_slist_append(nil, resolve)
            _ = CCurl_setopt_pointer(handle, CURLOPT_RESOLVE, UnsafeMutableRawPointer(resolveList))
        }
        _ = CCurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, request.timeoutMilliseconds)
        _ = CCurl_setopt_long(handle, CURLOPT_HTTP_CONTENT_DECODING, 0)
        _ = CCurl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method)
        if request.method == "HEAD" { _ = CCurl_setopt_long(handle, CURLOPT_NOBODY, 1) }
        for (name, value) in request.headers { list = curl_slist_append(list, "\(name): \(value)") }
        // curl would add these on its own; the client's request decides.
        list = curl_slist_append(list, "Expect:")
        if request.headers["Accept"] == nil { list = curl_slist_append(list, "Accept:") }
        _ = CCurl_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list))
        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = CCurl_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
        _ = CCurl_setopt_pointer(handle, CURLOPT_HEADERDATA, context)
        _ = CCurl_setopt_header_function(handle) { data, size, count, context in
            let exchange = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
            exchange.headerLine(UnsafeRawBufferPointer(start: data, count: size * count))
            return size * count
        }
        _ = CCurl_setopt_write_function(handle) { data, size, count, context in
            let exchange = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
            let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
            if exchange.whole != nil {
                exchange.whole! += bytes
                return bytes.count
            }
            switch exchange.body.push(bytes) {
            case .accepted: return bytes.count
            case .full: return Int(CURL_WRITEFUNC_PAUSE)
            case .cancelled: return 0
            }
        }
        if !request.body.isEmpty || ["POST", "PUT", "PATCH"].contains(request.method) {
            // COPYPOSTFIELDS: curl keeps its own copy for the whole transfer.
            _ = CCurl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, request.body.count)
            request.body.withUnsafeBytes { bytes in
                _ = CCurl_setopt_pointer(
                    handle, CURLOPT_COPYPOSTFIELDS,
                    UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
            }
        }
    }

    /// The transfer ended: the head (a body-less response's comes complete only now) and the end
    /// of the body, or the failure.
    func finish(_ code: CURLcode) {
        // Bytes of the request sent: none means the upstream cannot have seen it.
        var sent = 0
        if let handle { _ = CCurl_getinfo_long(handle, CURLINFO_REQUEST_SIZE, &sent) }
        handle = nil
        if code == CURLE_OK {
            deliverHead()
            body.finish(failure: nil)
            return
        }
        let reason = String(cString: curl_easy_strerror(code))
        if completion != nil {
            switch code {
            case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
                fail(.connect(reason))
            case CURLE_OPERATION_TIMEDOUT where sent == 0:
                // No connection within the connect timeout: an address that no longer answers
                // (a container stopped, its address gone) is unavailable, not slow.
                fail(.connect(reason))
            case CURLE_OPERATION_TIMEDOUT:
                fail(.timeout(reason))
            default:
                fail(.reset(reason))
            }
        }
        body.finish(failure: reason)
    }

    private func headerLine(_ line: UnsafeRawBufferPointer) {
        // Bytes, not Strings, until a field is known: every line of every head passes here.
        var end = line.count
        while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        if end == 0 {
            // The end of a head: a final one is the response's. A small body is read whole
            // first; otherwise the head goes now, and from here on nothing is retried.
            guard status >= 200 else { return }
            if let length = headers["Content-Length"].flatMap({ Int($0) }), length <= HTTPClient.wholeBodyLimit {
                whole = []
                whole!.reserveCapacity(length)
            } else {
                deliverHead()
            }
            return
        }
        if end > 5, line[0] == UInt8(ascii: "H"), line[1] == UInt8(ascii: "T"), line[2] == UInt8(ascii: "T"),
            line[3] == UInt8(ascii: "P"), line[4] == UInt8(ascii: "/")
        {
            // A new head (after a 1xx, curl reports each): start over.
            headers = HTTPHeaders()
            var index = 5
            while index < end, line[index] != 0x20 { index += 1 }
            var code = 0
            index += 1
            while index < end, (0x30...0x39).contains(line[index]) {
                code = code * 10 + Int(line[index] - 0x30)
                index += 1
            }
            status = code
            return
        }
        guard let colon = line[..<end].firstIndex(of: UInt8(ascii: ":")) else { return }
        var start = colon + 1
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        var stop = end
        while stop > start, line[stop - 1] == 0x20 || line[stop - 1] == 0x09 { stop -= 1 }
        headers.add(
            String(decoding: UnsafeRawBufferPointer(rebasing: line[..<colon]), as: UTF8.self),
            String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<stop]), as: UTF8.self))
    }
}
