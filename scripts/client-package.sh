#!/usr/bin/env bash
# An app's package outside the repository adds PierClient as the README says (a path to
# Client/) and builds on Linux with `import PierClient` alone: the client, the wire types its
# calls take and return, and their errors. Its dependency graph holds the client's package
# and nothing else; the client's package has no system-library (C) target.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
app=$(mktemp -d)
trap 'rm -rf "$app"' EXIT
mkdir -p "$app/Sources/SeedsApp"
cat > "$app/Package.swift" <<MANIFEST
// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "SeedsApp",
    platforms: [.macOS(.v13), .iOS(.v16)],
    dependencies: [.package(path: "$root/Client")],
    targets: [
        .executableTarget(name: "SeedsApp", dependencies: [.product(name: "PierClient", package: "Client")])
    ]
)
MANIFEST
cat > "$app/Sources/SeedsApp/main.swift" <<'SWIFT'
import Foundation
import PierClient

// Every type an app's screens hold, from the one import.
let pier = PierClient(baseURL: URL(string: "http://127.0.0.1:9")!)
let user: User? = pier.auth.currentUser
let items: [FeedbackItem] = []
let plans: [Plan] = []
let status: SubscriptionStatus? = nil
let problem: ProblemCode = .tokenExpired
func send() async throws(PierError) -> FeedbackItem? { nil }
// The README's feedback form: typed errors caught without a cast.
func submit() async -> String {
    do throws(PierError) {
        _ = try await pier.feedback.send(NewFeedback(message: "Hello", name: "Ada", category: "idea"))
        return "sent"
    } catch where error.queuedForRetry {
        return error.isOffline ? "offline" : "later"
    } catch {
        return error.fieldErrors.first.map { "\($0.field) \($0.message)" } ?? error.detail
    }
}
// Typed values, and prices with their currency's decimals.
let shown = plans.map { "\($0.name): \($0.amount.formatted()) every \($0.period.count) \($0.period.unit?.rawValue ?? "")" }
let open = items.filter { $0.status != .done && $0.category == .bug && $0.platform == .ios }
print(user == nil, items.count, plans.count, status == nil, problem, shown.count + open.count)
SWIFT
cd "$app"
swift build -Xswiftc -warnings-as-errors 2>&1 | tail -n 3
[ "$(.build/debug/SeedsApp)" = "true 0 0 true token_expired 0" ] || { echo "client-package: the app did not run" >&2; exit 1; }
python3 - "$root/Client" <<'PY'
import json, subprocess, sys
graph = json.loads(subprocess.run(["swift", "package", "show-dependencies", "--format", "json"],
                                  check=True, capture_output=True, text=True).stdout)
names = [d["identity"] for d in graph["dependencies"]]
nested = [n for d in graph["dependencies"] for n in d["dependencies"]]
assert names == ["client"] and not nested, f"the app's dependencies: {names}, theirs: {nested}"
described = json.loads(subprocess.run(["swift", "package", "describe", "--type", "json"], cwd=sys.argv[1],
                                      check=True, capture_output=True, text=True).stdout)
kinds = {t["name"]: t["type"] for t in described["targets"]}
assert kinds == {"PierModels": "library", "PierClient": "library"}, f"the client's targets: {kinds}"
assert not described.get("dependencies"), f"the client's dependencies: {described.get('dependencies')}"
print(f"client-package: an outside app builds on PierClient alone ({', '.join(sorted(kinds))}; no C module, no server target)")
PY
