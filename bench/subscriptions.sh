#!/usr/bin/env bash
# GET /subscriptions/me and GET /subscriptions/me/entitlements/pro (each request a valid bearer
# token of one of 120 users, half with an App Store subscription, half with a grant) against
# pgbench running the same SELECT for the same users at the same concurrency (32), in one run, and
# the RSS of pier-subscriptions idle and at its peak.
# Usage: bench/subscriptions.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
clients=32
users=120  # pgbench takes at most 128 scripts: one per user
# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_prepare pier_bench_subscriptions pier-auth pier-subscriptions
bench_serve 18291 auth
bench_serve 18293 subscriptions PIER_JWKS_URL=http://127.0.0.1:18291/auth/.well-known/jwks.json PIER_DB_POOL_SIZE=$clients
subscriptions_pid=${pids[-1]}
idle_kb=$(awk '/VmRSS/ {print $2}' "/proc/$subscriptions_pid/status")

echo "registering $users users and giving each a subscription…"
bench_users 18291 $users "$work/tokens"
python3 - "$work/tokens" > "$work/users" <<'PY'
import base64, json, sys
for token in open(sys.argv[1]):
    payload = token.split(".")[1]
    print(json.loads(base64.urlsafe_b64decode(payload + "=="))["sub"].lower())
PY
# Seeded in SQL (facts as the service stores them): half the users bought through the App Store
# (a verified transaction, a renewal info), half hold a grant.
psql "$url" -q -v ON_ERROR_STOP=1 <<SQL
INSERT INTO subscriptions.plans (id, name, price, currency, billing_period, entitlements, appstore_product_ids)
VALUES ('pro-monthly', 'Pro', 499, 'USD', 'P1M', '{pro}', '{pier.pro.monthly}');
CREATE TEMP TABLE bench_users (n serial, id uuid);
\copy bench_users (id) FROM '$work/users'
INSERT INTO subscriptions.appstore_owners (original_transaction_id, user_id, environment)
  SELECT 'bench-' || n, id, 'production' FROM bench_users WHERE n % 2 = 0;
INSERT INTO subscriptions.appstore_transactions (transaction_id, original_transaction_id, product_id, purchase_date,
    expires_date, environment, signed_date, payload)
  SELECT 'bench-' || n || '-' || k, 'bench-' || n, 'pier.pro.monthly', now() - (k || ' months')::interval,
    now() - (k || ' months')::interval + interval '1 month', 'production', now() - (k || ' months')::interval, '{}'
  FROM bench_users, generate_series(0, 5) k WHERE n % 2 = 0;
INSERT INTO subscriptions.appstore_renewals (original_transaction_id, auto_renew, billing_retry, environment, signed_date, payload)
  SELECT 'bench-' || n, true, false, 'production', now(), '{}' FROM bench_users WHERE n % 2 = 0;
INSERT INTO subscriptions.grants (id, user_id, plan_id, starts_at, ends_at, reason, granted_by)
  SELECT gen_random_uuid(), id, 'pro-monthly', now(), now() + interval '30 days', 'bench', gen_random_uuid()
  FROM bench_users WHERE n % 2 = 1;
ANALYZE;
SQL

# The service's SELECT, read from its source (SubscriptionFacts.sourcesQuery) so that the
# reference is always the statement the service runs: one script per user, pgbench picks one at
# random for each transaction, as wrk picks the next user's token.
python3 - "$work" <<'PY'
import pathlib, sys
work = pathlib.Path(sys.argv[1])
source = pathlib.Path("Services/Subscriptions/Sources/Repositories/SubscriptionFacts.swift").read_text()
body = source[source.index("static func sourcesQuery"):]
query = body.split('"""')[1].strip("\n")
query = "\n".join(line[8:] if line.startswith("        ") else line for line in query.splitlines())
users = (work / "users").read_text().split()
with open(work / "scripts", "a") as scripts:
    for n, user in enumerate(users, 1):
        text = query.replace("\\(user)", "'%s'" % user).replace("\\(now)", "now()").replace("\\(sandbox)", "true")
        text = text.replace("\\(googleTests)", "true")
        if "\\(" in text:
            sys.exit("bench: the service's SELECT has an interpolation this script does not fill: " + text[text.index("\\("):][:40])
        (work / f"select-{n}.sql").write_text(text.rstrip() + ";\n")
        scripts.write(f"-f {work}/select-{n}.sql\n")
PY

bench_rotating GET "" > "$work/rotate.lua"
first=$(head -n 1 "$work/tokens")
active=$(curl -sf http://127.0.0.1:18293/subscriptions/me -H "Authorization: Bearer $first" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
echo "a sample user's status: $active"

echo "== GET /subscriptions/me vs pgbench running the same SELECT ($users users, concurrency $clients, ${duration}s each)"
# shellcheck disable=SC2046
select_tps=$(pgbench -n -c $clients -j 2 -T "$duration" $(cat "$work/scripts") "$url" 2>/dev/null | tps)
# The service prepares its statements once per connection (the server plans each once); the
# same scripts in pgbench's prepared mode are the like-for-like reference.
# shellcheck disable=SC2046
prepared_tps=$(pgbench -n -M prepared -c $clients -j 2 -T "$duration" $(cat "$work/scripts") "$url" 2>/dev/null | tps)
if [ -n "${PIER_BENCH_PROFILE:-}" ]; then
  (sleep 2; perf record -F 999 -g -p "$subscriptions_pid" -o "$PIER_BENCH_PROFILE" -- sleep 4 >/dev/null 2>&1) &
fi
me_rps=$(wrk -t2 -c$clients -d${duration}s -s "$work/rotate.lua" http://127.0.0.1:18293/subscriptions/me | rps)
pro_rps=$(wrk -t2 -c$clients -d${duration}s -s "$work/rotate.lua" http://127.0.0.1:18293/subscriptions/me/entitlements/pro | rps)
non200=$(grep -c '"status":[^2]' "$work/subscriptions.log" || true)
echo "pgbench SELECT (simple protocol)        $select_tps tps"
echo "pgbench SELECT (prepared, like Pier)     $prepared_tps tps"
echo "GET /subscriptions/me                    $me_rps req/s   ratio $(ratio "$me_rps" "$prepared_tps") vs prepared (target >= 0.7), $(ratio "$me_rps" "$select_tps") vs simple"
echo "GET /subscriptions/me/entitlements/pro   $pro_rps req/s   ratio $(ratio "$pro_rps" "$prepared_tps") vs prepared (target >= 0.8), $(ratio "$pro_rps" "$select_tps") vs simple"
echo "non-2xx answers: $non200"
echo "RSS of pier-subscriptions: idle $((idle_kb / 1024)) MB (target < 25 MB), peak $(($(awk '/VmHWM/ {print $2}' "/proc/$subscriptions_pid/status") / 1024)) MB (target < 40 MB)"
