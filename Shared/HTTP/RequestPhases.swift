/// One request's way through libmicrohttpd's calls of the access handler, as a value: each call
/// is an event, each answer an action that ``HTTPServer`` carries out. It reads no clock, no
/// socket and no C structure (the time and the head are given), so every order of calls is
/// tested without a server (`RequestPhasesTests`).
///
/// MHD calls the handler once when the head is complete, once per piece of the body, once when
/// the body has ended, and again whenever a suspended connection is resumed.
struct RequestPhases: Sendable {
    enum Phase: Sendable {
        /// The head has not been seen.
        case head
        /// The body is being read.
        case body
        /// The body is too large: what comes is dropped, a 413 goes out when it ends.
        case refused
        /// The pipeline has the request; the connection waits for its answer.
        case waiting
        /// An answer is queued; anything more MHD hands over is drained.
        case answered
    }

    enum Action: Sendable {
        /// Go on (MHD_YES).
        case proceed
        /// Keep the piece of the body.
        case keep
        /// Answer with this problem now.
        case refuse(HTTPError)
        /// The request is whole: hand it to the pipeline.
        case dispatch
        /// Queue the pipeline's answer, when it is there.
        case answerIfReady
        /// Close the connection without an answer (MHD_NO).
        case cut
    }

    /// The limits of ``HTTPServer/Configuration`` that the phases enforce.
    struct Limits: Sendable {
        var maxURLBytes: Int
        var maxHeaderBytes: Int
        var maxBodyBytes: Int
        var bodyTimeoutSeconds: Double
    }

    /// What the head says, as the checks need it.
    struct Head: Sendable {
        var method: String
        var target: String
        var headers: HTTPHeaders
    }

    let limits: Limits
    private(set) var phase = Phase.head
    /// When the body began (seconds of the monotonic clock).
    private var bodyStartedAt = 0.0
    /// Bytes of the body kept, or dropped once refused.
    private(set) var bodyBytes = 0

    init(limits: Limits) { self.limits = limits }

    /// The head of a request whose constant answer goes out once the body has ended. It
    /// announced none, so no clock is read on this path (health checks): a body that comes
    /// anyway finds its time passed and the connection is cut.
    mutating func constantHead() -> Action {
        guard phase == .head else { return .cut }
        phase = .body
        bodyStartedAt = -.infinity
        return .proceed
    }

    /// The head, checked: a problem is answered before any of the body is read (MHD then closes
    /// the connection, so nothing of a refused body is taken for the next request).
    mutating func head(_ head: Head, at now: Double) -> Action {
        guard phase == .head else { return .cut }
        bodyStartedAt = now
        if let problem = Self.check(head, limits) {
            phase = .answered
            return .refuse(problem)
        }
        phase = .body
        return .proceed
    }

    /// A piece of the body of `count` bytes (more than zero).
    mutating func received(_ count: Int, at now: Double) -> Action {
        let late = now - bodyStartedAt > limits.bodyTimeoutSeconds
        switch phase {
        case .body:
            // MHD cannot answer in the middle of a chunked upload: the body is dropped as it
            // comes and 413 answered once it ends (or the connection cut if it never does).
            if bodyBytes + count > limits.maxBodyBytes {
                phase = .refused
                bodyBytes = count
                return .proceed
            }
            if late { return .cut }
            bodyBytes += count
            return .keep
        case .refused:
            bodyBytes += count
            return late || bodyBytes > 16 * limits.maxBodyBytes ? .cut : .proceed
        case .waiting:
            return .answerIfReady
        case .answered:
            return .proceed
        case .head:
            // MHD's first call is the head's, always; a body before it is not a request.
            return .cut
        }
    }

    /// The body has ended (or there was none), or the connection was resumed.
    mutating func ended() -> Action {
        switch phase {
        case .body:
            phase = .waiting
            return .dispatch
        case .refused:
            phase = .answered
            return .refuse(Self.tooLarge(limits))
        case .waiting:
            return .answerIfReady
        case .answered:
            return .proceed
        case .head:
            return .cut
        }
    }

    /// An answer was queued outside the phases' own (a request that could not be read, the
    /// pipeline's answer).
    mutating func answered() { phase = .answered }

    static func tooLarge(_ limits: Limits) -> HTTPError {
        HTTPError(413, detail: "The request body is larger than \(limits.maxBodyBytes) bytes.")
    }

    /// The first thing wrong with `head`: the target's length, the head's size, the framing of
    /// the body (RFC 9112 §6: one length, or the chunked coding alone), a declared length over
    /// the limit.
    static func check(_ head: Head, _ limits: Limits) -> HTTPError? {
        if head.target.utf8.count > limits.maxURLBytes {
            return HTTPError(414, detail: "The request target is longer than \(limits.maxURLBytes) bytes.")
        }
        let headBytes = head.headers.reduce(head.target.utf8.count + head.method.utf8.count + 12) {
            $0 + $1.name.utf8.count + $1.value.utf8.count + 4
        }
        if headBytes > limits.maxHeaderBytes {
            return HTTPError(431, detail: "The request line and headers are larger than \(limits.maxHeaderBytes) bytes.")
        }
        let lengths = head.headers.values("Content-Length")
        let codings = head.headers.values("Transfer-Encoding")
        let chunked = !codings.isEmpty
        if lengths.count > 1 { return .badRequest("Send Content-Length once.") }
        if chunked && (codings.count > 1 || !codings[0].trimmingWhitespace().caseInsensitiveEquals("chunked")) {
            return .badRequest("Only the chunked transfer coding is supported.")
        }
        if chunked && !lengths.isEmpty { return .badRequest("Send either Content-Length or Transfer-Encoding, not both.") }
        if let length = lengths.first {
            guard let value = Int(length), value >= 0 else { return .badRequest("Content-Length must be a number.") }
            if value > limits.maxBodyBytes { return tooLarge(limits) }
        }
        return nil
    }
}
