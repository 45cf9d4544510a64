#!/usr/bin/env bash
# An app's package outside the repository adds Pier as the README says, the repository as one
# package (here this checkout, by a path whose last component is `pier`: the identity a URL
# ending in pier.git gives), and builds on Linux with `import PierClient` alone: the client, the
# wire types its calls take and return, and their errors. Its build compiles PierModels,
# PierClient and itself and nothing else (no server module, no C module: nothing to install on
# a Mac), warns of nothing, and links none of the server's C libraries.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$root" "$work/pier"
app=$work/SeedsApp
mkdir -p "$app/Sources/SeedsApp"
cat > "$app/Package.swift" <<MANIFEST
// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "SeedsApp",
    platforms: [.macOS(.v13), .iOS(.v16)],
    dependencies: [.package(path: "../pier")],
    targets: [
        .executableTarget(name: "SeedsApp", dependencies: [.product(name: "PierClient", package: "pier")])
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
swift build -Xswiftc -warnings-as-errors >"$work/build.log" 2>&1 \
  || { cat "$work/build.log" >&2; exit 1; }
if grep -i 'warning' "$work/build.log" >&2; then echo "client-package: the app's build warned" >&2; exit 1; fi
[ "$(.build/debug/SeedsApp)" = "true 0 0 true token_expired 0" ] || { echo "client-package: the app did not run" >&2; exit 1; }
compiled=$(sed -nE 's/^\[[0-9]+\/[0-9]+\] Compiling ([A-Za-z_0-9]+) .*/\1/p' "$work/build.log" | sort -u | tr '\n' ' ')
[ "$compiled" = "PierClient PierModels SeedsApp " ] || { echo "client-package: the app's build compiled $compiled" >&2; exit 1; }
linked=$(readelf -d .build/debug/SeedsApp | sed -nE 's/.*Shared library: \[(.*)\]/\1/p' | tr '\n' ' ')
if grep -qE 'libpq|libssl|libcrypto|libargon2|libmicrohttpd|libqrencode|libcbor|libcurl' <<<"$linked"; then
  echo "client-package: the app links a C library of the server: $linked" >&2
  exit 1
fi
python3 - <<'PY'
import json, subprocess
graph = json.loads(subprocess.run(["swift", "package", "show-dependencies", "--format", "json"],
                                  check=True, capture_output=True, text=True).stdout)
names = [d["identity"] for d in graph["dependencies"]]
nested = [n for d in graph["dependencies"] for n in d["dependencies"]]
assert names == ["pier"] and not nested, f"the app's dependencies: {names}, theirs: {nested}"
PY
echo "client-package: an outside app depends on Pier, one package;" \
  "it compiled ${compiled% } and links $linked"
# The README's Swift snippets, as an app developer copies them, each compiled in the context it
# is shown in, with warnings as errors: a whole file (it starts with `import`) as an executable of
# its own; a view fragment (a Button's action, a sheet, @State) as the body of a view, beside
# Tests/Snippets/SnippetUI.swift, a stand-in for the few SwiftUI shapes it uses (so a `catch`
# inside a `Task` in a closure sees `any Error`, as in the app). What needs Apple's frameworks is
# named as not built here, with the reason. The command-line quick start then runs against a live
# stack, its address the one change (the README's :8080 is `make run`'s).
mkdir -p "$app/Sources/SnippetUI"
cp "$root/Tests/Snippets/SnippetUI.swift" "$app/Sources/SnippetUI/"
python3 - "$root" "$app" <<'PY'
import pathlib, re, sys, textwrap
# The README and the guides an app developer reads (docs/plugins.md's are a plugin's, built by
# scripts/plugin-outside.sh).
root, app = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
guides = [root / "README.md"] + sorted(p for p in (root / "docs").glob("*.md") if p.name != "plugins.md")
guides.append(root / "Client/Sources/PierClient/PierClient.docc/PierClient.md")
readme = "\n".join(p.read_text() for p in guides)
blocks = re.findall(r"```swift\n(.*?)```", readme, re.S)
apple_only = {
    "KeychainSessionStore": "the Keychain", "anchor:": "AuthenticationServices (a passkey sheet's anchor)",
    "StoreKit": "StoreKit", "Transaction.": "StoreKit", "CryptoKit": "CryptoKit",
}
compiled, views = [], []
for number, block in enumerate(blocks, 1):
    code = textwrap.dedent(block)
    why = next((what for marker, what in apple_only.items() if marker in code), None)
    if why:
        print(f"client-package: README snippet {number} not built here: it needs {why}, on Apple platforms only")
        continue
    target = app / "Sources" / f"Snippet{number}"
    if code.lstrip().startswith("import") and "import SwiftUI" not in code:
        target.mkdir(parents=True, exist_ok=True)
        (target / "main.swift").write_text(code)
        compiled.append(f"Snippet{number}")
    elif "Button(" in code or "@State" in code:
        lines = code.rstrip("\n").split("\n")
        members, body = [], []
        for line in lines:
            if not body and (line.startswith(("@State", "let ", "var ")) or not line.strip()):
                members.append(line)
            else:
                body.append(line)
        # What a screen holding the snippet has: the client, and the fields it names.
        declared = " ".join(members)
        extra = [f'@State private var {name} = ""' for name in ["message", "email", "password"]
                 if not re.search(r"\bvar " + name + r"\b", declared)]
        source = "import Foundation\nimport PierClient\nimport SnippetUI\n\nstruct Screen: View {\n    let pier: PierClient\n"
        source += "".join(f"    {line}\n" for line in extra + members)
        source += "\n    @ViewBuilder var body: some View {\n" + "".join(f"        {line}\n" for line in body) + "    }\n}\n"
        target.mkdir(parents=True, exist_ok=True)
        (target / "Screen.swift").write_text(source)
        views.append(f"Snippet{number}")
    else:
        print(f"client-package: README snippet {number} is a Package.swift fragment: the manifest above uses it")
assert compiled and views, "no compilable Swift snippet in the README"
manifest = (app / "Package.swift").read_text()
targets = [f'        .executableTarget(name: "{name}", dependencies: [.product(name: "PierClient", package: "pier")])'
           for name in compiled]
targets += ['        .target(name: "SnippetUI")'] + [
    f'        .target(name: "{name}", dependencies: ["SnippetUI", .product(name: "PierClient", package: "pier")])'
    for name in views]
manifest = manifest.replace("    targets: [\n", "    targets: [\n" + ",\n".join(targets) + ",\n", 1)
(app / "Package.swift").write_text(manifest)
(app / "snippets").write_text("\n".join(compiled))
# The one-line dependency the README gives is the one this app uses.
assert '.product(name: "PierClient", package: "pier")' in readme
print(f"client-package: README snippets built on Linux: {', '.join(compiled)}; in a view's context: {', '.join(views)}")
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
trap 'kill $gateway 2>/dev/null || true; rm -rf "$work"' EXIT
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
