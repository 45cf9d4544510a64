import Foundation
import Synchronization
import Testing

@testable import PierRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// Log lines written from many threads at once arrive whole and unmixed: batches are taken and
/// written one at a time, even when a batch is large and written in several parts.
@Suite struct LogOutputTests {
    /// Each line is one JSON object a log reader parses back to what was logged, whatever the
    /// text holds.
    @Test func linesAreJSONThatReadsBackAsLogged() throws {
        let lines = Mutex<[String]>([])
        let logger = Logger(service: "svc \"q\"", sink: { line in lines.withLock { $0.append(line) } })
        let awkward = "quote \" backslash \\ new\nline tab\t bell \u{07} é 😀"
        Logger.$requestID.withValue("req-1") {
            logger.warning(
                awkward,
                [
                    ("text", .string(awkward)), ("n", .int(-42)), ("x", .double(0.5)), ("inf", .double(.infinity)),
                    ("ok", .bool(true)),
                ])
        }
        logger.debug("dropped below the level")
        let written = lines.withLock { $0 }
        try #require(written.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(written[0].utf8)) as? [String: Any])
        #expect(object["level"] as? String == "warning" && object["service"] as? String == "svc \"q\"")
        #expect(object["msg"] as? String == awkward && object["text"] as? String == awkward)
        #expect(object["request_id"] as? String == "req-1")
        #expect(object["n"] as? Int == -42 && object["x"] as? Double == 0.5 && object["ok"] as? Bool == true)
        #expect(object["inf"] is NSNull && (object["time"] as? String)?.hasSuffix("Z") == true)
        #expect(Logger.quote("a\u{01}b") == #""a\u0001b""#)
    }

    /// Everything read from `descriptor` until its writing end closes, on a thread of its own.
    static func readAll(_ descriptor: Int32) async throws -> [UInt8] {
        try await BlockingPool(name: "log reader", threads: 1).run {
            var all = [UInt8](), buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                if count <= 0 { break }
                all += buffer[0..<count]
            }
            return all
        }
    }

    @Test func batchesFromManyThreadsNeverInterleave() async throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        let output = StandardOutput(descriptor: writeEnd, holdLimit: 1 << 30)  // nothing dropped here
        let writers = 8, lines = 5_000
        async let received = Self.readAll(readEnd)
        let pool = BlockingPool(name: "log writers", threads: writers)
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    _ = try? await pool.run {
                        // Long lines fill the 64 KiB batch often, so writers flush while the
                        // background thread does too.
                        for line in 0..<lines {
                            output.write("w\(writer) l\(line) " + String(repeating: "x", count: 200) + " end")
                        }
                    }
                }
            }
        }
        output.flush()
        close(writeEnd)
        let text = String(decoding: try await received, as: UTF8.self)
        let all = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(all.count == writers * lines)
        let intact = all.filter { $0.hasPrefix("w") && $0.hasSuffix(" end") && $0.utf8.count < 230 }
        #expect(intact.count == writers * lines)
        close(readEnd)
    }

    /// A log reader that stops reading holds up no one who logs: lines wait up to the limit,
    /// the rest are dropped and counted, and when reading resumes every kept line arrives whole,
    /// followed by the count.
    @Test(.timeLimit(.minutes(1))) func aStalledReaderHoldsUpNoOneWhoLogs() async throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd) }
        let output = StandardOutput(descriptor: writeEnd, holdLimit: 256 << 10)
        // Far more than the pipe (64 KiB) and the limit hold, written while nobody reads: each
        // call returns (were a line written by its caller, this would never end).
        let lines = 20_000
        for line in 0..<lines {
            output.write("l\(line) " + String(repeating: "x", count: 90) + " end")
            if line % 1000 == 0 { output.flushSoon() }
        }
        async let received = Self.readAll(readEnd)
        output.flush()
        output.flush()
        close(writeEnd)
        let text = String(decoding: try await received, as: UTF8.self)
        let all = text.split(separator: "\n")
        let kept = all.filter { $0.hasPrefix("l") && $0.hasSuffix(" end") && $0.utf8.count < 110 }
        let notices = all.filter { $0.contains("log lines dropped") }
        #expect(kept.count + notices.count == all.count)
        #expect(kept.count > 0 && kept.count < lines)
        let dropped = notices.compactMap { notice -> Int? in
            let object = try? JSONSerialization.jsonObject(with: Data(notice.utf8)) as? [String: Any]
            return object?["dropped"] as? Int
        }
        #expect(dropped.count == notices.count && !notices.isEmpty)
        #expect(kept.count + dropped.reduce(0, +) == lines)
    }
}
