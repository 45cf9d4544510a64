import Foundation
import PierClient
import RemoteConfigClient

// What an app does with remote config, on Linux, against a live gateway:
//   config-check BASE_URL STORAGE_FILE [EMAIL PASSWORD]
// prints `version new_paywall welcome changed-again` after a refresh and a second refresh, or,
// with an address that cannot be reached, the values kept in STORAGE_FILE.
let arguments = CommandLine.arguments
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
