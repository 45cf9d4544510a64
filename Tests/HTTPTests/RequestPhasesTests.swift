import Testing

@testable import PierHTTP

/// A request's phases across libmicrohttpd's calls, without a server: every order of head, body
/// pieces, end and resumption that MHD can make, with the clock given.
@Suite struct RequestPhasesTests {
    static let limits = RequestPhases.Limits(maxURLBytes: 64, maxHeaderBytes: 256, maxBodyBytes: 100, bodyTimeoutSeconds: 10)

    /// What an action is, for comparing: its name, and a refusal's status.
    static func named(_ action: RequestPhases.Action) -> String {
        switch action {
        case .proceed: "proceed"
        case .keep: "keep"
        case .refuse(let problem): "refuse \(problem.status)"
        case .dispatch: "dispatch"
        case .answerIfReady: "answerIfReady"
        case .cut: "cut"
        }
    }

    static func head(_ headers: HTTPHeaders = [:], target: String = "/feedback", method: String = "POST")
        -> RequestPhases.Head
    {
        RequestPhases.Head(method: method, target: target, headers: headers)
    }

    static func twice(_ name: String, _ value: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name, value)
        headers.add(name, value)
        return headers
    }

    /// The phases after `head` at time 0, and the head's action.
    static func started(_ headers: HTTPHeaders = [:]) -> (RequestPhases, String) {
        var phases = RequestPhases(limits: limits)
        let action = phases.head(head(headers), at: 0)
        return (phases, named(action))
    }

    @Test func aBodyIsKeptPieceByPieceThenDispatchedAndAnsweredOnResumption() {
        var (phases, first) = Self.started(["Content-Length": "60"])
        #expect(first == "proceed" && phases.phase == .body)
        #expect(Self.named(phases.received(30, at: 1)) == "keep")
        #expect(Self.named(phases.received(30, at: 2)) == "keep")
        #expect(phases.bodyBytes == 60)
        #expect(Self.named(phases.ended()) == "dispatch")
        #expect(phases.phase == .waiting)
        // Resumed before the answer is there (a spurious wake), then with it.
        #expect(Self.named(phases.ended()) == "answerIfReady")
        #expect(Self.named(phases.ended()) == "answerIfReady")
        phases.answered()
        #expect(Self.named(phases.ended()) == "proceed")
        #expect(Self.named(phases.received(5, at: 3)) == "proceed")
    }

    @Test func aChunkedBodyOverTheLimitIsDroppedAndAnswered413WhenItEnds() {
        var (phases, _) = Self.started(["Transfer-Encoding": "chunked"])
        #expect(Self.named(phases.received(90, at: 1)) == "keep")
        // The piece that crosses the limit: nothing more is kept.
        #expect(Self.named(phases.received(20, at: 1)) == "proceed")
        #expect(phases.phase == .refused)
        #expect(Self.named(phases.received(500, at: 2)) == "proceed")
        #expect(Self.named(phases.ended()) == "refuse 413")
        #expect(phases.phase == .answered)
    }

    @Test func aRefusedBodyThatNeverEndsIsCut() {
        var (phases, _) = Self.started(["Transfer-Encoding": "chunked"])
        _ = phases.received(101, at: 1)
        // Sixteen times the limit is drained at most.
        var last = "proceed"
        var rounds = 0
        while last == "proceed", rounds < 100 {
            last = Self.named(phases.received(100, at: 2))
            rounds += 1
        }
        // Cut by the piece that takes what was dropped (101 + 100 per round) past 1,600 bytes.
        #expect(last == "cut")
        #expect(rounds == 15 && phases.bodyBytes == 1_601)
        // Too slow is cut too.
        var (slow, _) = Self.started(["Transfer-Encoding": "chunked"])
        _ = slow.received(101, at: 1)
        #expect(Self.named(slow.received(1, at: 11)) == "cut")
    }

    @Test func aBodyPastItsTimeIsCut() {
        var (phases, _) = Self.started(["Content-Length": "50"])
        #expect(Self.named(phases.received(10, at: 9.9)) == "keep")
        #expect(Self.named(phases.received(10, at: 10.1)) == "cut")
        #expect(phases.bodyBytes == 10)
    }

    @Test func headsAreCheckedBeforeAnyBodyIsRead() {
        let cases: [(RequestPhases.Head, String)] = [
            (Self.head(target: "/" + String(repeating: "a", count: 64)), "refuse 414"),
            (Self.head(["X-Big": String(repeating: "b", count: 250)]), "refuse 431"),
            (Self.head(["Content-Length": "101"]), "refuse 413"),
            (Self.head(["Content-Length": "100"]), "proceed"),
            (Self.head(["Content-Length": "-1"]), "refuse 400"),
            (Self.head(["Content-Length": "ten"]), "refuse 400"),
            (Self.head(Self.twice("Content-Length", "1")), "refuse 400"),
            (Self.head(["Transfer-Encoding": "gzip"]), "refuse 400"),
            (Self.head(Self.twice("Transfer-Encoding", "chunked")), "refuse 400"),
            (Self.head(["Transfer-Encoding": " Chunked "]), "proceed"),
            (Self.head(["Transfer-Encoding": "chunked", "Content-Length": "5"]), "refuse 400"),
            (Self.head(), "proceed"),
        ]
        for (head, expected) in cases {
            var phases = RequestPhases(limits: Self.limits)
            let action = Self.named(phases.head(head, at: 0))
            #expect(action == expected, "\(head.headers)")
            #expect(phases.phase == (expected == "proceed" ? .body : .answered))
            // After a refusal, whatever MHD still hands over is drained.
            if expected != "proceed" {
                #expect(Self.named(phases.received(10, at: 1)) == "proceed")
                #expect(Self.named(phases.ended()) == "proceed")
            }
        }
    }

    @Test func aConstantAnswerGoesOutWhenItsEmptyBodyEnds() {
        var phases = RequestPhases(limits: Self.limits)
        #expect(Self.named(phases.constantHead()) == "proceed")
        #expect(Self.named(phases.ended()) == "dispatch")
        // It announced no body: one that comes anyway is cut, whatever the time.
        var smuggled = RequestPhases(limits: Self.limits)
        _ = smuggled.constantHead()
        #expect(Self.named(smuggled.received(1, at: 0)) == "cut")
    }

    @Test func callsOutOfOrderCutTheConnectionAndNeverCrash() {
        var phases = RequestPhases(limits: Self.limits)
        #expect(Self.named(phases.received(1, at: 0)) == "cut")
        #expect(Self.named(phases.ended()) == "cut")
        _ = phases.head(Self.head(), at: 0)
        #expect(Self.named(phases.head(Self.head(), at: 0)) == "cut")
        #expect(Self.named(phases.constantHead()) == "cut")
    }
}
