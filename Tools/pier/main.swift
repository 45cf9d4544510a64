// `pier`: Pier from a terminal or a script, built on PierClient. `pier --help` lists the commands;
// each group of commands has a file of its own.
import Foundation
import PierClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

func run(_ given: Arguments) async throws -> Int32 {
    var arguments = given
    if arguments.flag("help") || arguments.words.isEmpty {
        print(help(for: arguments.words))
        return arguments.words.isEmpty && !arguments.flag("help") ? 2 : 0
    }
    let base = arguments.option("url") ?? environment["PIER_URL"] ?? "http://127.0.0.1:8080"
    guard let url = URL(string: base), url.scheme == "http" || url.scheme == "https" else {
        throw CLIError.usage("--url must be an http or https URL")
    }
    let output = Output(json: arguments.flag("json"))
    let pier = PierClient(baseURL: url, sessionStore: FileSessionStore(url: sessionFile()))
    let command = try arguments.next("a command")
    switch command {
    case _ where AccountCommands.names.contains(command):
        try await AccountCommands.run(command, &arguments, pier, output)
    case _ where AnonymousCommands.names.contains(command):
        try await AnonymousCommands.run(command, &arguments, pier, output)
    case "feedback":
        try await FeedbackCommands.run(&arguments, pier, output)
    case "status", "plans":
        try await SubscriptionCommands.run(command, &arguments, pier, output)
    case "admin":
        try await AdminCommands.run(&arguments, pier, output)
    default:
        throw CLIError.usage("unknown command \"\(command)\"")
    }
    return 0
}

// A plugin's command line (`pier config …` runs `pier-config …`), before pier reads options it
// does not know.
let words = Array(CommandLine.arguments.dropFirst())
if let first = words.first, let executable = PluginCommands.executable(for: first, path: environment["PATH"]) {
    standardError("pier: " + PluginCommands.run(executable, Array(words.dropFirst())))
    exit(1)
}

let parsed: Arguments
do {
    parsed = try Arguments(Array(CommandLine.arguments.dropFirst()))
} catch {
    if case .usage(let message) = error { standardError("pier: \(message) (pier --help)") }
    exit(2)
}
do {
    exit(try await run(parsed))
} catch let error as PierError {
    standardError("pier: \(error.detail)" + (error.code.map { " [\($0)]" } ?? ""))
    for field in error.fieldErrors { standardError("  \(field.field): \(field.message)") }
    if let retryAfter = error.retryAfter { standardError("  try again in \(Int(retryAfter)) s") }
    exit(CLIError.exitCode(error))
} catch CLIError.usage(let message) {
    standardError("pier: \(message) (pier --help)")
    exit(2)
} catch CLIError.failed(let message, let code) {
    standardError("pier: \(message)")
    exit(code)
}
