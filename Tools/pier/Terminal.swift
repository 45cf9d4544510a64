import Foundation
import PierClient

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What every command shares: where the session is kept, the password, the mailed link's
/// token, and how an answer is printed (a table for a person, JSON for a script).

func standardError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

let environment = ProcessInfo.processInfo.environment

func sessionFile() -> URL {
    let base =
        environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
        ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config")
    return base.appendingPathComponent("pier/session.json")
}
/// The password: from standard input with `--password-stdin`, else `$PIER_PASSWORD`, else asked
/// on the terminal without echo.
func password(_ arguments: Arguments) throws(CLIError) -> String {
    if arguments.flag("password-stdin") {
        guard let line = readLine(strippingNewline: true), !line.isEmpty else { throw .usage("no password on standard input") }
        return line
    }
    if let given = environment["PIER_PASSWORD"], !given.isEmpty { return given }
    guard isatty(0) == 1 else { throw .usage("give the password with --password-stdin or $PIER_PASSWORD") }
    FileHandle.standardError.write(Data("Password: ".utf8))
    var saved = termios()
    tcgetattr(0, &saved)
    var silent = saved
    silent.c_lflag &= ~tcflag_t(ECHO)
    tcsetattr(0, TCSANOW, &silent)
    let line = readLine(strippingNewline: true)
    tcsetattr(0, TCSANOW, &saved)
    standardError("")
    guard let line, !line.isEmpty else { throw .usage("no password given") }
    return line
}

/// The token of a mailed link: the `token` parameter of a whole link pasted as it is (from
/// any host: the link may point at the app's universal-link domain), or the token itself.
func mailedToken(_ given: String) throws(CLIError) -> String {
    let text = given.trimmingCharacters(in: .whitespacesAndNewlines)
    guard text.contains("://") || text.contains("?") else { return text }
    guard let components = URLComponents(string: text),
        let token = components.queryItems?.first(where: { $0.name == "token" })?.value, !token.isEmpty
    else { throw CLIError.usage("the link has no token=… in it; paste the whole link from the mail, or the token alone") }
    return token
}

/// Prints `rows` under `headers`, columns aligned.
func table(_ headers: [String], _ rows: [[String]]) {
    let widths = headers.indices.map { column in
        ([headers[column]] + rows.map { $0[column] }).map(\.count).max() ?? 0
    }
    func line(_ cells: [String]) -> String {
        zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
            .trimmingCharacters(in: .whitespaces)
    }
    print(line(headers))
    for row in rows { print(line(row)) }
}

func shortDate(_ date: Date?) -> String {
    guard let date else { return "" }
    return ISO8601DateFormatter().string(from: date)
}

/// How a command prints its answer: the value as JSON (`--json`, for scripts), or what
/// `human` prints for a person.
struct Output {
    let json: Bool

    func show<T: Encodable>(_ value: T, _ human: (T) -> Void) throws {
        if json { raw(try Self.lowercasingIDs(JSONEncoder.pier.encode(value))) } else { human(value) }
    }

    /// Ids as the API writes them, lowercase (Foundation's encoder writes a UUID in capitals).
    static func lowercasingIDs(_ data: Data) throws -> Data {
        func lowered(_ value: JSONValue) -> JSONValue {
            switch value {
            case .string(let text) where text.count == 36 && UUID(uuidString: text) != nil: .string(text.lowercased())
            case .array(let items): .array(items.map(lowered))
            case .object(let members): .object(members.mapValues(lowered))
            default: value
            }
        }
        return try JSONEncoder.pier.encode(lowered(try JSONDecoder().decode(JSONValue.self, from: data)))
    }

    /// A line for a person; nothing with `--json` (the exit status says it was done).
    func say(_ text: String) {
        if !json { print(text) }
    }

    func raw(_ data: Data) {
        FileHandle.standardOutput.write(data)
        if data.last != UInt8(ascii: "\n") { print("") }
    }
}

extension JSONEncoder {
    /// The server's conventions: sorted keys, ISO 8601 dates.
    static let pier: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()
}
