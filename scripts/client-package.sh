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

# The README's Swift snippets, as an app developer copies them: every ```swift block that does
# not import SwiftUI (which exists on Apple platforms only) is compiled on Linux, each as an
# executable of its own, with warnings as errors; the command-line quick start then runs against a
# live stack, its address the one change (the README's :8080 is `make run`'s).
mkdir -p "$app/Sources"
python3 - "$root/README.md" "$app" <<'PY'
import pathlib, re, sys
readme, app = pathlib.Path(sys.argv[1]).read_text(), pathlib.Path(sys.argv[2])
blocks = re.findall(r"```swift\n(.*?)```", readme, re.S)
compiled = []
for number, code in enumerate(blocks, 1):
    if "import SwiftUI" in code or not code.lstrip().startswith("import"):
        continue
    target = app / "Sources" / f"Snippet{number}"
    target.mkdir(parents=True, exist_ok=True)
    (target / "main.swift").write_text(code)
    compiled.append(f"Snippet{number}")
assert compiled, "no compilable Swift snippet in the README"
manifest = (app / "Package.swift").read_text()
snippets = ",\n".join(
    f'        .executableTarget(name: "{name}", dependencies: [.product(name: "PierClient", package: "Client")])'
    for name in compiled)
manifest = manifest.replace("    targets: [\n", "    targets: [\n" + snippets + ",\n", 1)
(app / "Package.swift").write_text(manifest)
(app / "snippets").write_text("\n".join(compiled))
# The one-line dependency the README gives is the one this app uses.
assert '.product(name: "PierClient", package: "Client")' in readme
print(f"client-package: README snippets to build on Linux: {', '.join(compiled)}")
PY
(cd "$app" && swift build -Xswiftc -warnings-as-errors 2>&1 | tail -n 3)
admin=$("$root/scripts/postgres.sh" url)
PGOPTIONS="-c client_min_messages=warning" psql "$admin" -qc "DROP DATABASE IF EXISTS pier_snippets WITH (FORCE)" \
  -c "CREATE DATABASE pier_snippets" >/dev/null
port=${PIER_SNIPPETS_PORT:-18095}
bin=$(cd "$root" && swift build --show-bin-path)
PIER_DATABASE_URL="${admin%/*}/pier_snippets" PIER_PORT=$port PIER_DATA_DIR="$app/data" PIER_LOG_LEVEL=warning \
  "$bin/pier-gateway" serve --embed auth,feedback,subscriptions --migrate > "$app/gateway.log" 2>&1 &
gateway=$!
trap 'kill $gateway 2>/dev/null || true; rm -rf "$app"' EXIT
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
quick=$(grep -l 'FileSessionStore' "$app"/Sources/Snippet*/main.swift | head -n 1)
[ -n "$quick" ] || { echo "client-package: the README has no command-line quick start" >&2; exit 1; }
sed -i "s|http://127.0.0.1:8080|http://127.0.0.1:$port|" "$quick"
name=$(basename "$(dirname "$quick")")
(cd "$app" && swift build -Xswiftc -warnings-as-errors --product "$name" 2>&1 | tail -n 1)
output=$(cd "$app" && HOME="$app" ".build/debug/$name")
echo "$output" | sed 's/^/  /'
echo "$output" | grep -q "^signed in as ada-" && echo "$output" | grep -q "^feedback .*: new" \
  && echo "$output" | grep -q "^subscription: none" \
  || { echo "client-package: the README's quick start did not run as it says; the gateway's log:" >&2; cat "$app/gateway.log" >&2; exit 1; }
echo "client-package: the README's Swift snippets build on Linux, and its command-line quick start runs"
