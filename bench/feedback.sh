#!/usr/bin/env bash
# POST /feedback against pgbench running the same INSERT at the same concurrency, in one run,
# and GET /feedback/mine (20 items) against pgbench running the same SELECT.
# Feedback comes from 200 signed-in users (registered through pier-auth first), so quotas work
# as in production: the quota check reads a sender's recent items, at most a quota's worth.
# Usage: bench/feedback.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
clients=16
# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_prepare pier_bench_feedback pier-auth pier-feedback
bench_serve 18281 auth
bench_serve 18282 feedback PIER_JWKS_URL=http://127.0.0.1:18281/auth/.well-known/jwks.json \
  PIER_FEEDBACK_QUOTA_PER_MINUTE=100000 PIER_FEEDBACK_QUOTA_PER_DAY=100000 PIER_DB_POOL_SIZE=$clients

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
if [ -n "${PIER_BENCH_PROFILE:-}" ]; then
  (sleep 2; perf record -F 999 -g -p "$(pgrep -f 'pier-feedback serve' | head -1)" -o "$PIER_BENCH_PROFILE" -- sleep 4 >/dev/null 2>&1) &
fi
post_rps=$(wrk -t2 -c$clients -d${duration}s -s "$work/post.lua" http://127.0.0.1:18282/feedback | rps)
non201=$(grep -c '"path":"/feedback","status":[^2]' "$work/feedback.log" || true)
echo "pgbench INSERT  $insert_tps tps"
echo "POST /feedback  $post_rps req/s  (non-2xx answers: $non201)"
echo "ratio           $(ratio "$post_rps" "$insert_tps")   (target >= 0.7)"
# Where the gap is: pgbench running the service's own statement (quota counter + INSERT).
cat > "$work/intake.sql" <<'SQL'
\set u random(1, 200)
WITH quota AS (
    UPDATE feedback.quota AS q SET
        minute_start = CASE WHEN q.minute_start <= now() - interval '1 minute' THEN now() ELSE q.minute_start END,
        minute_count = CASE WHEN q.minute_start <= now() - interval '1 minute' THEN 1 ELSE q.minute_count + 1 END,
        day_start = CASE WHEN q.day_start <= now() - interval '1 day' THEN now() ELSE q.day_start END,
        day_count = CASE WHEN q.day_start <= now() - interval '1 day' THEN 1 ELSE q.day_count + 1 END
    WHERE q.sender = 'bench:' || :u
    RETURNING minute_count, day_count
), item AS (
    INSERT INTO feedback.items (id, user_id, message, rating, category, platform, app_version, request_ids, metadata, moderation, client_address)
    SELECT gen_random_uuid(), gen_random_uuid(), 'The checkout button does nothing on iOS 18', 3, 'bug', 'ios', '2.3.1', '{}', '{}', 'approved', '127.0.0.1'
    FROM quota WHERE quota.minute_count <= 1000000
    RETURNING *
)
SELECT * FROM quota LEFT JOIN item ON true;
SQL
psql "$url" -qc "INSERT INTO feedback.quota SELECT 'bench:' || i, now(), 0, now(), 0 FROM generate_series(1, 200) i ON CONFLICT DO NOTHING"
intake_tps=$(pgbench -n -c $clients -j 2 -T "$duration" -f "$work/intake.sql" "$url" 2>/dev/null | tps)
echo "pgbench running the service's statement (quota + INSERT): $intake_tps tps; POST /feedback is $(ratio "$post_rps" "$intake_tps") of it"

echo "== GET /feedback/mine (20 items) vs pgbench running the same SELECT"
token=$(head -n 1 "$work/tokens")
user=$(python3 -c 'import base64,json,sys; p=sys.argv[1].split(".")[1]; print(json.loads(base64.urlsafe_b64decode(p + "=="))["sub"])' "$token")
cat > "$work/mine.lua" <<LUA
wrk.headers["Authorization"] = "Bearer $token"
LUA
cat > "$work/select.sql" <<SQL
SELECT id, message, rating, category, status, duplicate_of, app_version, build, platform, os_version, device, locale,
       request_ids, metadata::text AS metadata, created_at, updated_at, user_id, email, moderation, tags, internal_note,
       (extract(epoch FROM created_at) * 1000000)::bigint AS created_us
FROM feedback.items WHERE user_id = '$user' ORDER BY created_at DESC, id DESC LIMIT 21;
SQL
count=$(curl -sf "http://127.0.0.1:18282/feedback/mine?limit=20" -H "Authorization: Bearer $token" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
select_tps=$(pgbench -n -c $clients -j 2 -T "$duration" -f "$work/select.sql" "$url" 2>/dev/null | tps)
mine_rps=$(wrk -t2 -c$clients -d${duration}s -s "$work/mine.lua" "http://127.0.0.1:18282/feedback/mine?limit=20" | rps)
echo "pgbench SELECT        $select_tps tps"
echo "GET /feedback/mine    $mine_rps req/s  ($count items per page)"
echo "ratio                 $(ratio "$mine_rps" "$select_tps")"
