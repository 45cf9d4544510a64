#!/usr/bin/env bash
# Memory over a long run: pier-auth and pier-feedback under steady mixed load (feedback intake,
# reading one's own feedback, token checks, a trickle of logins) for N minutes, RSS sampled
# every 30 s. Flat means the last samples are no higher than the first ones under load.
# Usage: bench/soak.sh [minutes, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
scripts/setup.sh
swift build -c release --static-swift-stdlib --product pier-auth >/dev/null
swift build -c release --static-swift-stdlib --product pier-feedback >/dev/null
bin=$(swift build -c release --static-swift-stdlib --show-bin-path)
scripts/postgres.sh start
admin=$(scripts/postgres.sh url)
PGOPTIONS="-c client_min_messages=warning" psql "$admin" -qc "DROP DATABASE IF EXISTS pier_soak WITH (FORCE)" -c "CREATE DATABASE pier_soak" >/dev/null
url="${admin%/*}/pier_soak"
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
PIER_DATABASE_URL=$url PIER_PORT=18381 PIER_DATA_DIR="$work" PIER_AUTH_HASHES_PER_ADDRESS=10000 \
  PIER_AUTH_LOGINS_PER_ADDRESS_PER_MINUTE=100000000 "$bin/pier-auth" serve --migrate > /dev/null 2>&1 &
auth=$!
pids+=($auth)
PIER_DATABASE_URL=$url PIER_PORT=18382 PIER_JWKS_URL=http://127.0.0.1:18381/auth/.well-known/jwks.json \
  PIER_FEEDBACK_QUOTA_PER_MINUTE=1000000 PIER_FEEDBACK_QUOTA_PER_DAY=100000000 "$bin/pier-feedback" serve --migrate > /dev/null 2>&1 &
feedback=$!
pids+=($feedback)
for port in 18381 18382; do
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
done
token=$(curl -sf -XPOST http://127.0.0.1:18381/auth/register -H 'Content-Type: application/json' \
  -d '{"email":"soak@example.com","password":"soak passphrase 1"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
cat > "$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"message":"soak test feedback","rating":4,"metadata":{"screen":"home"}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $token"
LUA
cat > "$work/auth.lua" <<LUA
wrk.headers["Authorization"] = "Bearer $token"
LUA
seconds=$((minutes * 60))
wrk -t1 -c4 -d${seconds}s -s "$work/post.lua" http://127.0.0.1:18382/feedback > "$work/post.out" &
pids+=($!)
wrk -t1 -c4 -d${seconds}s -s "$work/auth.lua" "http://127.0.0.1:18382/feedback/mine?limit=20" > "$work/mine.out" &
pids+=($!)
wrk -t1 -c4 -d${seconds}s -s "$work/auth.lua" http://127.0.0.1:18381/auth/me > "$work/me.out" &
pids+=($!)
rss() { awk '/VmRSS/ {printf "%d", $2 / 1024}' "/proc/$1/status"; }
echo "minute  pier-auth MB  pier-feedback MB"
for sample in $(seq 1 $((seconds / 30))); do
  sleep 30
  # A trickle of logins keeps the password hasher in the mix.
  for _ in 1 2 3; do
    curl -sf -XPOST http://127.0.0.1:18381/auth/login -H 'Content-Type: application/json' \
      -d '{"email":"soak@example.com","password":"soak passphrase 1"}' >/dev/null || true
  done
  printf "%5s   %11s   %15s\n" "$(awk -v s=$sample 'BEGIN { printf "%.1f", s / 2 }')" "$(rss $auth)" "$(rss $feedback)"
done
wait "${pids[2]}" "${pids[3]}" "${pids[4]}" 2>/dev/null || true
echo "requests: feedback POST $(awk '/requests in/ {print $1}' "$work/post.out"), mine $(awk '/requests in/ {print $1}' "$work/mine.out"), auth/me $(awk '/requests in/ {print $1}' "$work/me.out")"
