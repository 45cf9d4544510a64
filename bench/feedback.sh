#!/usr/bin/env bash
# The feedback service against pgbench on the same box, in one run, at the same concurrency:
#   POST /feedback from one anonymous sender (one address: a carrier NAT) and from many signed-in
#   senders, each vs pgbench inserting just the item's row (the write a tutorial app makes;
#   target >= 0.5 each) and vs pgbench running every statement a POST runs (target >= 0.6 each)
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
# What an anonymous POST runs, prepared as the service prepares it (FeedbackItems.insert; keep in
# step): the item and its event in one statement. (Its notification, one for all the items of
# 10 ms, is left out: a few statements a second. The time format's colons are written chr(58):
# pgbench would read `:MI` as a variable.)
cat > "$work/post.sql" <<'SQL'
\set r random(1, 5)
WITH item AS (
    INSERT INTO feedback.items (id, user_id, name, email, message, rating, category, app_version, build, platform,
        os_version, device, locale, request_ids, metadata, moderation, client_address)
    VALUES (gen_random_uuid(), NULL, NULL, NULL, 'The checkout button does nothing on iOS 18', :r, 'bug', '2.3.1', NULL, 'ios',
        NULL, NULL, NULL, '{}'::text[], '{}'::jsonb, 'approved', '127.0.0.1')
    RETURNING id, message, rating, category, status, duplicate_of, app_version, build, platform, os_version, device, locale,
        request_ids, metadata::text AS metadata, created_at, updated_at, user_id, name, email, moderation, tags, internal_note,
        (extract(epoch FROM created_at) * 1000000)::bigint AS created_us
), event AS (
    INSERT INTO events.events (type, payload)
    SELECT 'feedback.created', jsonb_build_object(
        'feedbackId', id, 'userId', user_id, 'message', message, 'rating', rating, 'category', category,
        'platform', platform, 'appVersion', app_version, 'moderation', moderation,
        'createdAt', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24' || chr(58) || 'MI' || chr(58) || 'SS.MS"Z"'))
    FROM item
    RETURNING id
)
SELECT item.* FROM item, event;
SQL

echo "== POST /feedback vs pgbench (concurrency $clients, ${duration}s each)"
insert_tps=$(pgbench -n -c $clients -j 2 -T "$duration" -f "$work/insert.sql" "$url" 2>/dev/null | tps)
echo "pgbench INSERT of the item     $insert_tps tps"
post_tps=$(pgbench -n -M prepared -c $clients -j 2 -T "$duration" -f "$work/post.sql" "$url" 2>/dev/null | tps)
echo "pgbench, a POST's statements   $post_tps tps"
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
for run in "one anonymous sender:$anonymous_rps" "200 signed-in senders:$many_rps"; do
  name=${run%%:*} figure=${run##*:}
  printf 'POST, %-25s %s req/s   vs the INSERT %s (target >= 0.5)   vs its statements %s (target >= 0.6)\n' \
    "$name" "$figure" "$(ratio "$figure" "$insert_tps")" "$(ratio "$figure" "$post_tps")"
done
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

echo "== a mixed load: anonymous POSTs, signed-in POSTs and admin lists at once (${duration}s)"
mixed=()
wrk -t1 -c16 -d${duration}s -s "$work/anonymous.lua" http://127.0.0.1:18282/feedback > "$work/mixed-anonymous.txt" &
mixed+=($!)
wrk -t1 -c16 -d${duration}s -s "$work/post.lua" http://127.0.0.1:18282/feedback > "$work/mixed-signed.txt" &
mixed+=($!)
wrk -t1 -c16 -d${duration}s -s "$work/list.lua" "http://127.0.0.1:18282/feedback?limit=100" > "$work/mixed-list.txt" &
mixed+=($!)
wait "${mixed[@]}"
echo "anonymous POST $(rps < "$work/mixed-anonymous.txt") req/s, signed-in POST $(rps < "$work/mixed-signed.txt") req/s, list $(rps < "$work/mixed-list.txt") req/s"

echo "== memory of pier-feedback"
echo "idle (after start)             $((idle_kb / 1024)) MB   (target < 25 MB)"
echo "peak under these loads         $(($(peak_kb "$feedback_pid") / 1024)) MB   (target < 40 MB)"
