import Foundation
import PierClient
import RemoteConfigClient

// What an app does with remote config, on Linux, against a live gateway:
//   config-check BASE_URL STORAGE_FILE [EMAIL PASSWORD]
// prints `version new_paywall welcome changed-again` after a refresh and a second refresh, or,
// with an address that cannot be reached, the values kept in STORAGE_FILE;
//   config-check watch BASE_URL EMAIL PASSWORD KEY[,KEY…]
// keeps the config current over the live stream and prints `version key=value…` each time the
// config changes (one line per new config, flushed at once).
let arguments = CommandLine.arguments
if arguments.count == 6, arguments[1] == "watch", let base = URL(string: arguments[2]) {
    let pier = PierClient(baseURL: base, options: .init(installationID: "config-watch"))
    _ = try await pier.auth.login(email: arguments[3], password: arguments[4])
    let config = RemoteConfig(pier: pier, platform: "ios", appVersion: "2.4.1")
    let updates = config.updates
    Task { await config.keepCurrent() }
    let keys = arguments[5].split(separator: ",").map(String.init)
    for await answer in updates {
        let values = keys.map { key -> String in
            switch answer.values[key] {
            case .bool(let flag)?: "\(key)=\(flag)"
            case .string(let text)?: "\(key)=\(text)"
            case .number(let number)?: "\(key)=\(number)"
            default: "\(key)=none"
            }
        }
        FileHandle.standardOutput.write(Data(([String(answer.version)] + values).joined(separator: " ").utf8 + [10]))
    }
    exit(0)
}
guard arguments.count >= 3, let base = URL(string: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: config-check BASE_URL STORAGE_FILE [EMAIL PASSWORD]\n".utf8))
    exit(2)
}
let pier = PierClient(baseURL: base, options: .init(installationID: "config-check"))
if arguments.count >= 5 { _ = try await pier.auth.login(email: arguments[3], password: arguments[4]) }
let config = RemoteConfig(pier: pier, storage: URL(fileURLWithPath: arguments[2]), platform: "ios", appVersion: "2.4.1")
var again = "offline"
do {
    try await config.refresh()
    again = try await config.refresh() ? "changed" : "unchanged"
} catch {
    // A cold start without the network: the kept values.
}
print(config.version, config.bool("new_paywall", default: false), config.string("welcome", default: "?"), again)
