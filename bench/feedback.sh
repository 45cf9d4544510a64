#!/usr/bin/env bash
# The feedback service against pgbench on the same box, in one run, at the same concurrency:
#   POST /feedback from one anonymous sender (one address: a carrier NAT) and from many signed-in
#   senders, each vs pgbench running a plain INSERT of the same row     (target >= 0.6 each)
#   admin GET /feedback?limit=100 vs pgbench running the same SELECT prepared (target >= 0.5)
# and the RSS of pier-feedback idle and at its peak under these loads (targets < 25 / < 40 MB).
# Usage: bench/feedback.sh [seconds per run, default 10]
# PIER_BENCH_PROFILE=file / PIER_BENCH_PROFILE_LIST=file: perf profiles of the POST / list runs.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
clients=32
# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_prepare pier_bench_feedback pier-auth pier-feedback
# The admin reads the feedback with a password alone: no second factor asked of staff here.
bench_serve 18281 auth PIER_AUTH_REQUIRE_MFA_FOR_ROLES=none
bench_serve 18282 feedback PIER_JWKS_URL=http://127.0.0.1:18281/auth/.well-known/jwks.json \
  PIER_FEEDBACK_QUOTA_PER_MINUTE=1000000 PIER_FEEDBACK_QUOTA_PER_DAY=100000000 PIER_DB_POOL_SIZE=$clients
feedback_pid=${pids[-1]}
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
peak_kb() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }
idle_kb=$(rss_kb "$feedback_pid")

echo "registering 200 users…"
bench_users 18281 200 "$work/tokens"

bench_rotating POST '{"message":"The checkout button does nothing on iOS 18","rating":3,"category":"bug","platform":"ios","appVersion":"2.3.1"}' \
  > "$work/post.lua"
cat > "$work/insert.sql" <<'SQL'
\set r random(1, 5)
INSERT INTO feedback.items (id, user_id, message, rating, category, platform, app_version, request_ids, metadata, moderation, client_address)
VALUES (gen_random_uuid(), gen_random_uuid(), 'The checkout button does nothing on iOS 18', :r, 'bug', 'ios', '2.3.1', '{}', '{}', 'approved', '127.0.0.1')
RETURNING *;
SQL

echo "== POST /feedback vs pgbench INSERT (concurrency $clients, ${duration}s each)"
insert_tps=$(pgbench -n -c $clients -j 2 -T "$duration" -f "$work/insert.sql" "$url" 2>/dev/null | tps)
echo "pgbench INSERT                 $insert_tps tps"
cat > "$work/anonymous.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"message":"The checkout button does nothing on iOS 18","rating":3,"category":"bug","platform":"ios","appVersion":"2.3.1"}'
LUA
if [ -n "${PIER_BENCH_PROFILE:-}" ]; then
  (sleep 2; perf record -F 999 -g -p "$feedback_pid" -o "$PIER_BENCH_PROFILE" -- sleep 4 >/dev/null 2>&1) &
fi
anonymous_rps=$(wrk -t2 -c$clients -d${duration}s -s "$work/anonymous.lua" http://127.0.0.1:18282/feedback | rps)
many_rps=$(wrk -t2 -c$clients -d${duration}s -s "$work/post.lua" http://127.0.0.1:18282/feedback | rps)
non201=$(grep -c '"path":"/feedback","status":[^2]' "$work/feedback.log" || true)
echo "POST, one anonymous sender     $anonymous_rps req/s   ratio $(ratio "$anonymous_rps" "$insert_tps")   (target >= 0.6)"
echo "POST, 200 signed-in senders    $many_rps req/s   ratio $(ratio "$many_rps" "$insert_tps")   (target >= 0.6)"
echo "non-2xx answers: $non201"

echo "== admin GET /feedback?limit=100 vs pgbench running the same SELECT prepared"
printf '%s\n' "bench admin passphrase" | PIER_DATABASE_URL="$url" "$bin/pier-auth" create-admin --email admin@example.com >/dev/null
admin_token=$(curl -sf -XPOST http://127.0.0.1:18281/auth/login -H 'Content-Type: application/json' \
  -d '{"email":"admin@example.com","password":"bench admin passphrase"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
cat > "$work/list.lua" <<LUA
wrk.headers["Authorization"] = "Bearer $admin_token"
LUA
cat > "$work/list.sql" <<'SQL'
SELECT id, message, rating, category, status, duplicate_of, app_version, build, platform, os_version, device, locale,
       request_ids, metadata::text AS metadata, created_at, updated_at, user_id, name, email, moderation, tags, internal_note,
       (extract(epoch FROM created_at) * 1000000)::bigint AS created_us
FROM feedback.items WHERE true AND moderation = 'approved' ORDER BY created_at DESC, id DESC LIMIT 101;
SQL
# Fresh statistics after the bulk load (what autovacuum would do): both sides get the index plan.
psql "$url" -qc "ANALYZE feedback.items"
count=$(curl -sf "http://127.0.0.1:18282/feedback?limit=100" -H "Authorization: Bearer $admin_token" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
select_tps=$(pgbench -n -M prepared -c $clients -j 2 -T "$duration" -f "$work/list.sql" "$url" 2>/dev/null | tps)
if [ -n "${PIER_BENCH_PROFILE_LIST:-}" ]; then
  (sleep 2; perf record -F 999 -g -p "$feedback_pid" -o "$PIER_BENCH_PROFILE_LIST" -- sleep 4 >/dev/null 2>&1) &
fi
list_rps=$(wrk -t2 -c$clients -d${duration}s -s "$work/list.lua" "http://127.0.0.1:18282/feedback?limit=100" | rps)
echo "pgbench SELECT (prepared)      $select_tps tps"
echo "GET /feedback?limit=100        $list_rps req/s  ($count items per page)   ratio $(ratio "$list_rps" "$select_tps")   (target >= 0.5)"

echo "== memory of pier-feedback"
echo "idle (after start)             $((idle_kb / 1024)) MB   (target < 25 MB)"
echo "peak under these loads         $(($(peak_kb "$feedback_pid") / 1024)) MB   (target < 40 MB)"
