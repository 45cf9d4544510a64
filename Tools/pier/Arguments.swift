import Foundation
import PierClient

/// A command line split into words and `--name value` options, read one piece at a time so
/// that each command says exactly what it takes.
struct Arguments {
    private(set) var words: [String]
    private var options: [String: String]
    private var flags: Set<String>
    /// Options that take no value.
    static let flagNames: Set<String> = ["json", "help", "password-stdin", "refresh", "refresh-google", "all", "end", "watch"]

    init(_ arguments: [String]) throws(CLIError) {
        var words: [String] = []
        var options: [String: String] = [:]
        var flags: Set<String> = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                words += arguments[index...]
                break
            }
            guard argument.hasPrefix("--"), argument.count > 2 else {
                if argument == "-h" { flags.insert("help") } else { words.append(argument) }
                continue
            }
            let name = String(argument.dropFirst(2))
            if let equals = name.firstIndex(of: "=") {
                options[String(name[..<equals])] = String(name[name.index(after: equals)...])
                continue
            }
            if Self.flagNames.contains(name) {
                flags.insert(name)
                continue
            }
            guard index < arguments.count else { throw .usage("--\(name) needs a value") }
            options[name] = arguments[index]
            index += 1
        }
        self.words = words
        self.options = options
        self.flags = flags
    }

    mutating func next(_ what: String) throws(CLIError) -> String {
        guard !words.isEmpty else { throw .usage("missing \(what)") }
        return words.removeFirst()
    }

    mutating func nextIfAny() -> String? { words.isEmpty ? nil : words.removeFirst() }

    /// The next word, which must be a UUID (`what` names it: "the session id").
    mutating func nextID(_ what: String) throws(CLIError) -> UUID {
        let text = try next(what)
        guard let id = UUID(uuidString: text) else { throw .usage("\(what) must be a UUID, not \"\(text)\"") }
        return id
    }

    mutating func option(_ name: String) -> String? { options.removeValue(forKey: name) }

    mutating func int(_ name: String, in range: ClosedRange<Int>) throws(CLIError) -> Int? {
        guard let text = option(name) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw .usage("--\(name) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    mutating func bool(_ name: String) throws(CLIError) -> Bool? {
        guard let text = option(name) else { return nil }
        switch text.lowercased() {
        case "true", "yes", "1": return true
        case "false", "no", "0": return false
        default: throw .usage("--\(name) must be true or false")
        }
    }

    mutating func id(_ name: String) throws(CLIError) -> UUID? {
        guard let text = option(name) else { return nil }
        guard let id = UUID(uuidString: text) else { throw .usage("--\(name) must be a UUID") }
        return id
    }

    /// An ISO 8601 date and time (`2027-01-31T12:00:00Z`), or a day (`2027-01-31`, midnight UTC).
    mutating func date(_ name: String) throws(CLIError) -> Date? {
        guard let text = option(name) else { return nil }
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [
            [.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds], [.withFullDate],
        ] {
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return date }
        }
        throw .usage("--\(name) must be a date (2027-01-31) or a date and time (2027-01-31T12:00:00Z)")
    }

    mutating func list(_ name: String) -> [String]? {
        option(name).map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// Refuses what no one read: a typo is an error, not ignored.
    func finish() throws(CLIError) {
        if let word = words.first { throw .usage("unexpected \"\(word)\"") }
        if let name = options.keys.sorted().first { throw .usage("unknown option --\(name)") }
    }
}

/// Why the command failed, and its exit code.
enum CLIError: Error {
    case usage(String)
    case failed(String, code: Int32)

    /// Exit codes by outcome (documented in `pier --help`).
    static func exitCode(_ error: PierError) -> Int32 {
        switch error.kind {
        case .signedOut: return 3
        case .network: return 6
        case .decoding, .untrusted, .device: return 1
        case .server:
            switch error.status ?? 0 {
            case 401, 403: return 3
            case 404: return 4
            case 409, 422, 400: return 5
            case 429, 503, 502, 504: return 6
            default: return 1
            }
        }
    }
}
