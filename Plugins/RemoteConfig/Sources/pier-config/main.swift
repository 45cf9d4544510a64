// `pier-config`: remote config from a terminal or a script, on PierClient and the plugin's
// endpoints, beside `pier` (it shares its session: `pier login` once, or `pier-config login`).
//
//   pier-config login EMAIL                     (password from PIER_PASSWORD)
//   pier-config show [--platform P] [--app-version V] [--locale L] [--installation ID]
//   pier-config versions
//   pier-config get VERSION
//   pier-config publish FILE [--note TEXT] [--based-on VERSION]   (FILE: the parameters, a JSON array)
//   pier-config rollback VERSION
//   pier-config preview [--user ID] [--platform P] [--app-version V] [--locale L] [--installation ID]
//
// `--url` (or PIER_URL) is the gateway, http://127.0.0.1:8080 by default; `--json` prints the
// answers as JSON. Exit 0 done, 1 refused or failed (the reason on standard error), 2 a wrong
// command line.
import Foundation
import PierClient
import RemoteConfigAPI

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct Usage: Error { let message: String }

/// The words and `--name value` options of the command line.
struct CommandLineWords {
    var words: [String] = []
    var options: [String: String] = [:]
    var json = false

    init(_ arguments: [String]) throws(Usage) {
        var rest = arguments[...]
        while let next = rest.popFirst() {
            if next == "--json" {
                json = true
            } else if next.hasPrefix("--") {
                guard let value = rest.popFirst() else { throw Usage(message: "\(next) needs a value") }
                options[String(next.dropFirst(2))] = value
            } else {
                words.append(next)
            }
        }
    }

    func number(_ index: Int, _ what: String) throws(Usage) -> Int {
        guard words.count > index, let value = Int(words[index]), value > 0 else { throw Usage(message: "give \(what)") }
        return value
    }
}

func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    encoder.dateEncodingStrategy = .iso8601
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

func text(_ value: JSONValue) -> String {
    switch value {
    case .string(let text): return text
    case .bool(let flag): return String(flag)
    case .number(let number): return JSONValue.text(of: number)
    default:
        let data = (try? JSONEncoder().encode(value)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

/// `publish FILE [--note TEXT] [--based-on VERSION]`: the file's parameters as the next version
/// (over the newest, unless told which one they were edited from).
func publish(_ line: CommandLineWords, _ pier: PierClient) async throws {
    guard line.words.count == 2 else { throw Usage(message: "pier-config publish FILE [--note TEXT] [--based-on VERSION]") }
    let data = try Data(contentsOf: URL(fileURLWithPath: line.words[1]))
    let parameters = try JSONDecoder().decode([ConfigParameter].self, from: data)
    let basedOn: Int
    if let given = line.options["based-on"] {
        guard let number = Int(given) else { throw Usage(message: "--based-on takes a version") }
        basedOn = number
    } else {
        basedOn = try await pier.call(RemoteConfigAPI.versions, NoParameters()).items.first?.version ?? 0
    }
    let published = try await pier.call(
        RemoteConfigAPI.publish, NoParameters(),
        body: PublishConfig(basedOn: basedOn, parameters: parameters, note: line.options["note"]))
    if line.json { try printJSON(published) } else { print("published version \(published.version)") }
}

func run(_ line: CommandLineWords) async throws -> Int32 {
    let base = line.options["url"] ?? ProcessInfo.processInfo.environment["PIER_URL"] ?? "http://127.0.0.1:8080"
    guard let url = URL(string: base), url.scheme == "http" || url.scheme == "https" else {
        throw Usage(message: "--url must be an http or https URL")
    }
    let home =
        ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
        ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config")
    let pier = PierClient(baseURL: url, sessionStore: FileSessionStore(url: home.appendingPathComponent("pier/session.json")))
    guard let command = line.words.first else { throw Usage(message: "give a command") }
    switch command {
    case "login":
        guard line.words.count == 2, let password = ProcessInfo.processInfo.environment["PIER_PASSWORD"] else {
            throw Usage(message: "pier-config login EMAIL, with the password in PIER_PASSWORD")
        }
        let user = try await pier.auth.login(email: line.words[1], password: password)
        print("signed in as \(user.handle)")
    case "show":
        let asking = ConfigRequest(
            installationID: line.options["installation"] ?? pier.installationID, platform: line.options["platform"],
            appVersion: line.options["app-version"], locale: line.options["locale"])
        guard let answer = try await pier.fetch(RemoteConfigAPI.config, asking).answer else { return 0 }
        if line.json {
            try printJSON(answer)
        } else {
            print("version \(answer.version)")
            for key in answer.values.keys.sorted() { print("\(key) = \(text(answer.values[key]!))") }
        }
    case "versions":
        let versions = try await pier.call(RemoteConfigAPI.versions, NoParameters())
        if line.json {
            try printJSON(versions)
        } else {
            for version in versions.items {
                let restores = version.restores.map { " (restores \($0))" } ?? ""
                print(
                    "\(version.version)  \(version.publishedAt)  \(version.parameters.count) parameters\(restores)  \(version.note)"
                )
            }
        }
    case "get":
        try printJSON(try await pier.call(RemoteConfigAPI.version, ConfigVersionPath(try line.number(1, "a version"))))
    case "publish":
        try await publish(line, pier)
    case "rollback":
        let published = try await pier.call(RemoteConfigAPI.rollback, ConfigVersionPath(try line.number(1, "a version")))
        if line.json {
            try printJSON(published)
        } else {
            print("published version \(published.version), restoring \(published.restores ?? 0)")
        }
    case "preview":
        let request = ConfigPreviewRequest(
            userId: line.options["user"].flatMap(UUID.init(uuidString:)), installationId: line.options["installation"],
            platform: line.options["platform"], appVersion: line.options["app-version"], locale: line.options["locale"])
        let preview = try await pier.call(RemoteConfigAPI.preview, NoParameters(), body: request)
        if line.json {
            try printJSON(preview)
        } else {
            for key in preview.values.keys.sorted() {
                print("\(key) = \(text(preview.values[key]!))  (\(preview.reasons[key] ?? "default"))")
            }
        }
    default:
        throw Usage(message: "unknown command \"\(command)\"")
    }
    return 0
}

do {
    exit(try await run(try CommandLineWords(Array(CommandLine.arguments.dropFirst()))))
} catch let usage as Usage {
    FileHandle.standardError.write(Data("pier-config: \(usage.message)\n".utf8))
    exit(2)
} catch let error as PierError {
    // What was refused, and each field named, as `pier` says it.
    var lines = ["pier-config: \(error.detail)" + (error.code.map { " [\($0)]" } ?? "")]
    lines += error.fieldErrors.map { "  \($0.field): \($0.message)" }
    FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    exit(1)
} catch {
    FileHandle.standardError.write(Data("pier-config: \(error)\n".utf8))
    exit(1)
}
