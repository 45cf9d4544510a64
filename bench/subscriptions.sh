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
psql "$url" -q <<SQL
INSERT INTO subscriptions.plans (id, name, price, currency, billing_period, entitlements, appstore_product_ids)
VALUES ('pro-monthly', 'Pro', 499, 'USD', 'P1M', '{pro}', '{pier.pro.monthly}');
CREATE TEMP TABLE bench_users (n serial, id uuid);
\copy bench_users (id) FROM '$work/users'
INSERT INTO subscriptions.appstore_owners (original_transaction_id, user_id)
  SELECT 'bench-' || n, id FROM bench_users WHERE n % 2 = 0;
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

# The service's SELECT (SubscriptionFacts.sourcesQuery, copied: keep the two the same), one script per user: pgbench picks one
# at random for each transaction, as wrk picks the next user's token.
n=0
while read -r user; do
  n=$((n + 1))
  cat > "$work/select-$n.sql" <<SQL
SELECT 'grant' AS kind, g.id::text AS reference, p.id AS plan_id, p.name AS plan_name, p.entitlements,
    g.starts_at AS period_start, g.ends_at AS period_end, g.revoked_at IS NOT NULL AS revoked,
    NULL::timestamptz AS grace_until, false AS billing_retry, false AS will_renew, false AS trial, NULL::text AS environment,
    NULL::int AS offer_type, NULL::text AS offer_discount_type, NULL::text AS offer_identifier,
    NULL::text AS renews_to_id, NULL::text AS renews_to_name, NULL::int AS expiration_intent,
    NULL::text AS price_increase, NULL::text AS price, NULL::text AS currency, NULL::text AS ownership,
    NULL::int AS revocation_reason, NULL::text AS revocation_type
FROM subscriptions.grants g JOIN subscriptions.plans p ON p.id = g.plan_id
WHERE g.user_id = '$user'
UNION ALL
-- One subscription group, one source: Apple keeps one subscription of a group active at a
-- time, and the latest purchase giving access is it.
SELECT * FROM (
SELECT DISTINCT ON (coalesce(t.payload ->> 'subscriptionGroupIdentifier', o.original_transaction_id))
    'appstore', o.original_transaction_id, p.id, p.name, coalesce(p.entitlements, '{}'),
    t.purchase_date, t.expires_date, t.revocation_date IS NOT NULL,
    r.grace_period_expires_date, coalesce(r.billing_retry, false), coalesce(r.auto_renew, true),
    -- Only a free introductory offer is a trial (a payload from before Apple sent the
    -- discount type counts as one, as it did then).
    t.offer_type = 1 AND coalesce(t.payload ->> 'offerDiscountType', 'FREE_TRIAL') = 'FREE_TRIAL',
    t.environment, t.offer_type, t.payload ->> 'offerDiscountType', t.payload ->> 'offerIdentifier',
    CASE WHEN r.auto_renew_product_id <> t.product_id THEN coalesce(n.id, r.auto_renew_product_id) END,
    CASE WHEN r.auto_renew_product_id <> t.product_id THEN coalesce(n.name, r.auto_renew_product_id) END,
    r.expiration_intent, r.payload ->> 'priceIncreaseStatus', t.payload ->> 'price', t.payload ->> 'currency',
    t.payload ->> 'inAppOwnershipType', t.revocation_reason, t.payload ->> 'revocationType'
FROM subscriptions.appstore_owners o
CROSS JOIN LATERAL (
    SELECT * FROM subscriptions.appstore_transactions x
    WHERE x.original_transaction_id = o.original_transaction_id
    ORDER BY (x.revocation_date IS NULL AND coalesce(x.expires_date > now(), true)
            AND NOT coalesce((x.payload ->> 'isUpgraded')::boolean, false)) DESC,
        CASE WHEN x.revocation_date IS NULL AND coalesce(x.expires_date > now(), true)
            AND NOT coalesce((x.payload ->> 'isUpgraded')::boolean, false) THEN x.purchase_date END DESC NULLS LAST,
        x.expires_date DESC NULLS FIRST, x.signed_date DESC
    LIMIT 1
) t
LEFT JOIN subscriptions.appstore_renewals r ON r.original_transaction_id = o.original_transaction_id
LEFT JOIN subscriptions.plans p ON t.product_id = ANY (p.appstore_product_ids)
LEFT JOIN subscriptions.plans n ON r.auto_renew_product_id = ANY (n.appstore_product_ids)
WHERE o.user_id = '$user'
ORDER BY coalesce(t.payload ->> 'subscriptionGroupIdentifier', o.original_transaction_id),
    (t.revocation_date IS NULL AND coalesce(t.expires_date > now(), true)
        AND NOT coalesce((t.payload ->> 'isUpgraded')::boolean, false)) DESC,
    t.purchase_date DESC
) appstore;
SQL
  echo "-f $work/select-$n.sql" >> "$work/scripts"
done < "$work/users"

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
  (sleep 2; perf record -F 999 -g -p "$(pgrep -f 'pier-subscriptions serve' | head -1)" -o "$PIER_BENCH_PROFILE" -- sleep 4 >/dev/null 2>&1) &
fi
if [ -n "${PIER_BENCH_PROFILE:-}" ]; then
  (sleep 2; perf record -F 999 -g -p "$subscriptions_pid" -o "$PIER_BENCH_PROFILE" -- sleep 4 >/dev/null 2>&1) &
fi
me_rps=$(wrk -t2 -c$clients -d${duration}s -s "$work/rotate.lua" http://127.0.0.1:18293/subscriptions/me | rps)
pro_rps=$(wrk -t2 -c$clients -d${duration}s -s "$work/rotate.lua" http://127.0.0.1:18293/subscriptions/me/entitlements/pro | rps)
non200=$(grep -c '"status":[^2]' "$work/subscriptions.log" || true)
echo "pgbench SELECT (simple protocol)        $select_tps tps"
echo "pgbench SELECT (prepared, like Pier)     $prepared_tps tps"
echo "GET /subscriptions/me                    $me_rps req/s   ratio $(ratio "$me_rps" "$prepared_tps") vs prepared (target >= 0.7), $(ratio "$me_rps" "$select_tps") vs simple"
echo "GET /subscriptions/me/entitlements/pro   $pro_rps req/s   ratio $(ratio "$pro_rps" "$prepared_tps") vs prepared (target >= 0.7), $(ratio "$pro_rps" "$select_tps") vs simple"
echo "non-2xx answers: $non200"
echo "RSS of pier-subscriptions: idle $((idle_kb / 1024)) MB (target < 25 MB), peak $(($(awk '/VmHWM/ {print $2}' "/proc/$subscriptions_pid/status") / 1024)) MB (target < 40 MB)"
