#!/usr/bin/env bash
# Plugins, as a team writes and runs them (docs/plugins.md):
#   1. remote config, Pier's own plugin written on the public plugin products alone, in the stock
#      stack as `make run` runs it (a process per service, each `pier-gateway --embed <its
#      plugins>`: remote config beside subscriptions, the console in the front gateway, auth's
#      webhooks sending the plugin's event), on a fresh database: driven over HTTP, rules on
#      entitlements granted by the team included (Plugins/RemoteConfig/Tests/http_test.py), its
#      console pages in Chromium (console_test.py);
#   2. docs/plugins.md's guestbook, its files as the page gives them, a package outside the
#      repository that depends on this checkout as a package (as a URL would give it), built.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
cd "$root"
bin=$(swift build --show-bin-path)
# 1. Remote config in the stock stack.
admin=$("$root/scripts/postgres.sh" url)
PGOPTIONS="-c client_min_messages=warning" psql "$admin" -qc "DROP DATABASE IF EXISTS pier_plugin WITH (FORCE)" \
  -c "CREATE DATABASE pier_plugin" >/dev/null
port=${PIER_PLUGIN_PORT:-18095}
export PIER_DATABASE_URL="${admin%/*}/pier_plugin" PIER_DATA_DIR="$work" PIER_LOG_LEVEL=warning \
  PIER_AUTH_REQUIRE_MFA_FOR_ROLES=none PIER_TRUSTED_PROXIES=127.0.0.1 \
  PIER_JWKS_URL=http://127.0.0.1:$((port + 2))/auth/.well-known/jwks.json PIER_AUTH_PUBLIC_URL=http://127.0.0.1:$port
# Pier's webhooks send the plugin's event to the receiver http_test.py runs.
export PIER_PLUGIN_HOOK_PORT=${PIER_PLUGIN_HOOK_PORT:-18096}
export PIER_WEBHOOKS='[{"name":"backend","url":"http://127.0.0.1:'$PIER_PLUGIN_HOOK_PORT'/hooks","secret":"whsec_'"$(openssl rand -base64 32)"'","events":["config.published"]}]'
# name port executable [arguments…]: a process of the stack, its log in $work/<name>.log.
start() {
  local name=$1 port=$2 executable=$3
  shift 3
  PIER_PORT=$port "$bin/$executable" serve --migrate "$@" > "$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && return 0; sleep 0.1; done
  echo "plugin-outside: $name did not become ready; its log:" >&2
  cat "$work/$name.log" >&2
  exit 1
}
start auth $((port + 2)) pier-gateway --embed auth
start feedback $((port + 3)) pier-gateway --embed feedback
start subscriptions $((port + 4)) pier-gateway --embed subscriptions,config
start gateway "$port" pier-gateway --embed console --route /auth=http://127.0.0.1:$((port + 2)) \
  --route /feedback=http://127.0.0.1:$((port + 3)) --route /subscriptions=http://127.0.0.1:$((port + 4)) \
  --route /config=http://127.0.0.1:$((port + 4))
# Hosted beside subscriptions, remote config has what it needs: its log says nothing of it.
if grep -h "offered by no plugin" "$work"/*.log >&2; then
  echo "plugin-outside: a plugin runs without a capability it needs" >&2
  exit 1
fi
PIER_ADMIN_PASSWORD="the operator's passphrase" "$bin/pier-gateway" create-admin --embed auth --email owner@example.com >/dev/null
# A support account (an address verified, as a team role requires): it grants, and reads the pages.
curl -sf -H 'Content-Type: application/json' "http://127.0.0.1:$port/auth/register" \
  -d '{"email":"sam@example.com","password":"a support passphrase"}' >/dev/null
psql "$PIER_DATABASE_URL" -qc "UPDATE auth.users SET email_verified_at = now() WHERE email = 'sam@example.com'"
"$bin/pier-gateway" set-role --embed auth --email sam@example.com --role support >/dev/null
PIER_PLUGIN_SUPPORT_EMAIL=sam@example.com PIER_PLUGIN_SUPPORT_PASSWORD="a support passphrase" \
PIER_BINARY="$bin/pier" CONFIG_CHECK="$bin/config-check" python3 Plugins/RemoteConfig/Tests/http_test.py "http://127.0.0.1:$port" owner@example.com "the operator's passphrase"
# The plugin's console pages in Chromium, by an admin and by support; a customer of its own.
"$root/scripts/python-modules.sh" selenium
curl -sf -H 'Content-Type: application/json' "http://127.0.0.1:$port/auth/register" \
  -d '{"email":"robin@example.com","password":"a customer passphrase"}' >/dev/null
python3 Plugins/RemoteConfig/Tests/console_test.py "http://127.0.0.1:$port" owner@example.com "the operator's passphrase" \
  sam@example.com "a support passphrase" robin@example.com "$root" "$root/.pier/screenshots"

# 2. The guestbook of docs/plugins.md, its files as the page gives them, beside a checkout of
# Pier: the page's `../pier` becomes this checkout's own path, and its package name `pier` this
# checkout's (a path dependency's identity is its last component, as a URL's is). It builds into
# the checkout's build folder, in the configuration scripts/build.sh built: SwiftPM finds Pier's
# modules compiled by the very same commands (same paths, same package name) and compiles only
# the plugin's (measured: 100 s for a plugin built in a folder of its own, or by a path that
# names Pier otherwise; 10 s here). No -warnings-as-errors, which would compile Pier again: a
# warning the compiler prints fails the stage all the same.
mkdir -p "$work/example/guestbook"
built() {  # swift build in the current package, into the checkout's build folder
  local log
  log=$(mktemp)
  swift build --build-tests --scratch-path "$root/.build" >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; return 1; }
  if grep ': warning: ' "$log" >&2; then rm -f "$log"; echo "plugin-outside: warnings in $PWD" >&2; return 1; fi
  # What it compiled, by module: the package's own, never one of Pier's again.
  local compiled again
  compiled=$(sed -nE 's/^\[[0-9]+\/[0-9]+\] Compiling ([A-Za-z_0-9]+) .*/\1/p' "$log" | sort -u | tr '\n' ' ')
  again=$(for module in $compiled; do grep -q "name: \"$module\"" "$root/Package.swift" && echo "$module"; done || true)
  rm -f "$log"
  echo "plugin-outside: $(basename "$PWD") compiled ${compiled:-nothing}(of Pier's modules: ${again:-none})"
  [ -z "$again" ] || { echo "plugin-outside: Pier's modules were compiled again; scripts/build.sh builds them first" >&2; return 1; }
}
python3 - "$root/docs/plugins.md" "$work/example/guestbook" <<'PY'
import os, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
for block in re.findall(r"```swift\n(.*?)```", text, re.S):
    first, _, rest = block.partition("\n")
    if first.startswith("// ") and first[3:].endswith(".swift"):
        path = os.path.join(sys.argv[2], first[3:])
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w", encoding="utf-8") as out:
            # The manifest's first line must be the tools version.
            out.write(rest if first == "// Package.swift" else block)
PY
identity=$(basename "$root" | tr '[:upper:]' '[:lower:]')
grep -q 'path: "\.\./pier"' "$work/example/guestbook/Package.swift" \
  || { echo "plugin-outside: docs/plugins.md's manifest no longer finds Pier at ../pier" >&2; exit 1; }
sed -i "s|path: \"\.\./pier\"|path: \"$root\"|; s|package: \"pier\"|package: \"$identity\"|g" "$work/example/guestbook/Package.swift"
(cd "$work/example/guestbook" && built)
# Its test, as printed, with the plugin kit on a database of its own.
(cd "$work/example/guestbook" && PIER_TEST_DATABASE_URL=$admin swift test --skip-build --scratch-path "$root/.build" 2>&1) \
  >"$work/guestbook-test.log" || { cat "$work/guestbook-test.log" >&2; echo "plugin-outside: docs/plugins.md's guestbook test failed" >&2; exit 1; }
grep -q "Test signedInPeopleSignAndAnyoneReads() passed" "$work/guestbook-test.log" \
  || { cat "$work/guestbook-test.log" >&2; echo "plugin-outside: docs/plugins.md's guestbook test did not run" >&2; exit 1; }
echo "plugin-outside: docs/plugins.md's guestbook builds and its test passes as written"
echo "plugin-outside: remote config served by the stock stack (a process per service); a plugin's package outside the repository built on Pier's"
