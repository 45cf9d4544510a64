#!/usr/bin/env bash
# The README's `make run`, as a newcomer runs it (a debug build, which make test has made): the
# stack comes up on 8080, every address the README prints answers, and a passkey made at the
# README's address (origin http://127.0.0.1:8080) registers and signs in (Tests/Interop/
# passkey_local.py), its account proven by the link auth mails, which must name the gateway.
# Run last: stopping the stack stops the PostgreSQL cluster it shares with the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
for module in cbor2 cryptography; do
  python3 -c "import $module" 2>/dev/null && continue
  python3 -m pip install -q "$module" 2>/dev/null || python3 -m pip install -q --break-system-packages "$module"
done
# The product as run.sh builds it, in the configuration scripts/build.sh built (so nothing
# is compiled here): built first, so that the wait below is the stack's start alone.
swift build -c debug --product pier-gateway 2>&1 | tail -n 1
log=$(mktemp)
started=$(date +%s.%N)
PIER_BUILD=debug setsid deploy/local/run.sh > "$log" 2>&1 &
stack=$!
stop() { kill -TERM -- "-$stack" 2>/dev/null || true; wait "$stack" 2>/dev/null || true; rm -f "$log"; }
trap stop EXIT
for _ in $(seq 1 1200); do
  grep -q "Pier is running" "$log" && break
  kill -0 "$stack" 2>/dev/null || { echo "local-stack: make run ended:" >&2; cat "$log" >&2; exit 1; }
  sleep 0.25
done
grep -q "Pier is running" "$log" || { echo "local-stack: make run did not come up in 5 minutes:" >&2; cat "$log" >&2; exit 1; }
echo "local-stack: make run (debug build present) serving after $(python3 -c "import time; print(round(time.time() - $started, 1))") s"
for address in $(grep -oh "http://127.0.0.1:8080[^ )\`\"'<>,;{}]*" README.md docs/*.md deploy/local/run.sh | sed 's/\.$//' | sort -u); do
  status=$(curl -s -o /dev/null -w '%{http_code}' "$address")
  case "$status" in
    200 | 303) ;;
    *) echo "local-stack: the README's address $address answers $status" >&2; exit 1 ;;
  esac
done
echo "local-stack: every address the README and docs/ print answers"
# Remote config is served by the stock stack: GET /config with an ETag, 304 when it is sent back.
etag=$(curl -s -D - -o /dev/null http://127.0.0.1:8080/config | tr -d '\r' | sed -n 's/^[Ee][Tt][Aa][Gg]: //p')
[ -n "$etag" ] || { echo "local-stack: GET /config answered without an ETag" >&2; exit 1; }
again=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" http://127.0.0.1:8080/config)
[ "$again" = 304 ] || { echo "local-stack: GET /config with its ETag answered $again, not 304" >&2; exit 1; }
echo "local-stack: make run serves remote config (GET /config: ETag $etag, then 304)"
# The shell blocks of the README and docs/ marked `<!-- run: local-stack -->`, as a newcomer
# types them, line by line: the addresses made unique, the password from PIER_PASSWORD as `pier`
# reads it, an admin's given, `make run`'s release build here the debug one, curl failing on an
# error's answer.
blocks=$(python3 - README.md docs/*.md <<'PY'
import re, sys
for name in sys.argv[1:]:
    text = open(name, encoding="utf-8").read()
    for block in re.findall(r"<!-- run: local-stack -->\n\s*```sh\n(.*?)```", text, re.S):
        print(block, end="")
PY
)
[ -n "$blocks" ] || { echo "local-stack: no shell block is marked to run here" >&2; exit 1; }
unique=$(date +%s%N)
ran=0
while IFS= read -r line; do
  command=${line%%#*}
  [ -n "${command// /}" ] || continue
  # A line that ends in a backslash goes on.
  while [[ "$command" == *\\ ]] && IFS= read -r more; do command="${command%\\}${more%%#*}"; done
  command=${command//ada@example.com/ada-$unique-$ran@example.com}
  command=${command//you@example.com/admin-$unique@example.com}
  command=${command//PIER_ADMIN_PASSWORD=…/PIER_ADMIN_PASSWORD=\"an admin passphrase\"}
  command=${command//.build\/release/.build\/debug}
  # An answer that is an error fails the line.
  command=${command//curl -s /curl -s --fail-with-body }
  XDG_CONFIG_HOME="$log.config" PIER_PASSWORD="a long enough passphrase" bash -c "set -o pipefail; $command" </dev/null \
    >"$log.out" 2>&1 || { echo "local-stack: a documented command failed: $line" >&2; cat "$log.out" >&2; exit 1; }
  ran=$((ran + 1))
done <<<"$blocks"
rm -rf "$log.out" "$log.config"
echo "local-stack: the $ran commands the README and docs/ mark as run here run as printed"
# "Download my data" through make run's gateway holds every service's part (auth gathers the
# others' over HTTP).
token=$(curl -s -H 'Content-Type: application/json' -d '{"email":"local-stack-'"$(date +%s%N)"'@example.com","password":"a long enough passphrase"}' \
  http://127.0.0.1:8080/auth/register | python3 -c 'import json, sys; print(json.load(sys.stdin)["accessToken"])')
parts=$(curl -s -H "Authorization: Bearer $token" http://127.0.0.1:8080/auth/me/export \
  | python3 -c 'import json, sys; print(",".join(sorted(json.load(sys.stdin)["services"])))')
[ "$parts" = "auth,feedback,subscriptions" ] || { echo "local-stack: make run's export holds $parts" >&2; exit 1; }
echo "local-stack: make run's \"download my data\" holds auth's, feedback's and subscriptions' parts"
python3 Tests/Interop/passkey_local.py http://127.0.0.1:8080 .pier/mail || { cat "$log" >&2; exit 1; }
