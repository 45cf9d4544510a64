import Synchronization

#if canImport(Glibc)
    import Glibc
#endif
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Structured logs: one JSON object per line on standard output (time, level, service,
/// message, then the fields). Callers never pass secrets: passwords, tokens and hashes have
/// no field here and must not be put in messages.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CustomStringConvertible {
        case debug, info, warning, error
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
        public var description: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warning: "warning"
            case .error: "error"
            }
        }
        /// Parses `debug`, `info`, `warning` or `error`.
        public init?(name: String) {
            switch name.lowercased() {
            case "debug": self = .debug
            case "info": self = .info
            case "warning", "warn": self = .warning
            case "error": self = .error
            default: return nil
            }
        }
    }

    /// A field value: a string, an integer, a number or a boolean.
    public enum Value: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
        case string(String)
        case int(Int)
        case double(Double)
        case bool(Bool)
        public init(stringLiteral value: String) { self = .string(value) }
        public init(integerLiteral value: Int) { self = .int(value) }
    }

    /// The service name written on every line.
    public let service: String
    /// Lines below this level are dropped.
    public let level: Level
    /// Where lines go; standard output unless a test captures them.
    private let sink: @Sendable (String) -> Void

    public init(service: String, level: Level = .info, sink: (@Sendable (String) -> Void)? = nil) {
        self.service = service
        self.level = level
        self.sink = sink ?? { line in StandardOutput.shared.write(line) }
    }

    /// The id of the request the current task answers: set by the server's pipeline around each
    /// request, written on every line logged meanwhile, whatever logger writes it.
    @TaskLocal public static var requestID: String?

    /// The same logger under another service name (plugins hosted together keep their own).
    public func named(_ service: String) -> Logger { Logger(service: service, level: level, sink: sink) }

    public func debug(_ message: String, _ fields: [(String, Value)] = []) { log(.debug, message, fields) }
    public func info(_ message: String, _ fields: [(String, Value)] = []) { log(.info, message, fields) }
    public func warning(_ message: String, _ fields: [(String, Value)] = []) { log(.warning, message, fields) }
    public func error(_ message: String, _ fields: [(String, Value)] = []) { log(.error, message, fields) }

    public func log(_ level: Level, _ message: String, _ fields: [(String, Value)]) {
        guard level >= self.level else { return }
        // One string grown in place: no temporary per `+`.
        var line = ""
        line.reserveCapacity(160 + message.utf8.count + fields.count * 32)
        line.append("{\"time\":\"")
        line.append(Timestamps.now())
        line.append("\",\"level\":\"")
        line.append(level.description)
        line.append("\",\"service\":")
        Logger.appendQuoted(service, to: &line)
        line.append(",\"msg\":")
        Logger.appendQuoted(message, to: &line)
        if let id = Logger.requestID, !id.isEmpty {
            line.append(",\"request_id\":")
            Logger.appendQuoted(id, to: &line)
        }
        for (key, value) in fields {
            line.append(",")
            Logger.appendQuoted(key, to: &line)
            line.append(":")
            switch value {
            case .string(let text): Logger.appendQuoted(text, to: &line)
            case .int(let number): line.append(String(number))
            case .double(let number): line.append(number.isFinite ? String(number) : "null")
            case .bool(let flag): line.append(flag ? "true" : "false")
            }
        }
        line.append("}")
        sink(line)
        if level >= .warning { StandardOutput.shared.flushSoon() }
    }

    /// Writes out buffered lines now (before exit).
    public static func flush() { StandardOutput.shared.flush() }

    /// A JSON string literal.
    public static func quote(_ text: String) -> String {
        var output = ""
        appendQuoted(text, to: &output)
        return output
    }

    /// `text` as a JSON string literal, appended to `output`.
    static func appendQuoted(_ text: String, to output: inout String) {
        output.append("\"")
        // Most values (paths, ids, methods) need no escaping: one scan, one append.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            output.append(text)
            output.append("\"")
            return
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output.append("\\\"")
            case "\\": output.append("\\\\")
            case "\n": output.append("\\n")
            case "\r": output.append("\\r")
            case "\t": output.append("\\t")
            case let c where c.value < 0x20:
                let hex = String(c.value, radix: 16)
                output.append("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
            default: output.unicodeScalars.append(scalar)
            }
        }
        output.append("\"")
    }
}

/// Standard output, buffered: lines are gathered and written in batches by a background thread
/// every 50 ms, or at once when 64 KiB have gathered or a warning or an error was logged, so
/// logging costs one system call per batch instead of one per request. A thread that logs never
/// writes itself: when standard output stalls (a log reader that stopped reading), only the
/// background thread waits; lines past ``holdLimit`` are dropped and counted, and the count is
/// written when output moves again. Nothing that serves requests or waits for sockets is held up.
///
/// `@unchecked Sendable`: `pending`, `dropped` and `wanted` are only touched under `state`.
final class StandardOutput: @unchecked Sendable {
    static let shared = StandardOutput(descriptor: 1)
    private let descriptor: Int32
    /// How many bytes wait at most for standard output.
    let holdLimit: Int
    private let state = ConditionLock()
    private var pending: [UInt8] = []
    private var dropped = 0
    private var wanted = false
    /// Held while a batch is written, so batches (taken in order under it) never interleave,
    /// even when a write is partial.
    private let writing = Mutex<Void>(())

    /// - Parameter descriptor: where batches go (standard output; a pipe in tests).
    init(descriptor: Int32, holdLimit: Int = 8 << 20) {
        self.descriptor = descriptor
        self.holdLimit = holdLimit
        startDetachedThread { [self] in
            while true {
                state.withLock {
                    if !wanted { state.wait(seconds: 0.05) }
                    wanted = false
                }
                flush()
            }
        }
    }

    func write(_ line: String) {
        let full = state.withLock { () -> Bool in
            guard pending.count + line.utf8.count < holdLimit else {
                dropped += 1
                return false
            }
            pending.append(contentsOf: line.utf8)
            pending.append(UInt8(ascii: "\n"))
            return pending.count >= 64 << 10
        }
        if full { flushSoon() }
    }

    /// Has the background thread write what is gathered now.
    func flushSoon() {
        state.withLock {
            wanted = true
            state.signal()
        }
    }

    /// Writes what is gathered, waiting for standard output to take it (before exit, in tests).
    func flush() {
        writing.withLock { _ in
            var (batch, lost) = state.withLock { () -> ([UInt8], Int) in
                defer {
                    pending.removeAll(keepingCapacity: pending.capacity <= 1 << 20)
                    dropped = 0
                }
                return (pending, dropped)
            }
            if lost > 0 {
                let notice =
                    #"{"time":"\#(Timestamps.now())","level":"warning","service":"log","#
                    + #""msg":"log lines dropped: standard output did not keep up","dropped":\#(lost)}"#
                batch += notice.utf8
                batch.append(UInt8(ascii: "\n"))
            }
            var offset = 0
            while offset < batch.count {
                let written = batch[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return }
                offset += written
            }
        }
    }
}

/// The log timestamp, with the date and time down to the second formatted once per second.
enum Timestamps {
    private static let cache = Mutex<(second: Int64, text: String)>((-1, ""))

    static func now() -> String {
        let value = Date().timeIntervalSince1970
        let second = Int64(value.rounded(.down))
        let millis = Int((value - Double(second)) * 1000)
        let prefix = cache.withLock { cache -> String in
            if cache.second != second {
                let full = CivilDate.iso8601(secondsSince1970: Double(second), fractionDigits: 0)
                cache = (second, String(full.dropLast()))
            }
            return cache.text
        }
        let digits = String(millis)
        return prefix + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }
}
