#!/usr/bin/env bash
# The team's console and reports at scale: 1,000,000 feedback items over a year, 10,000
# accounts and a year of their App Store subscriptions (~70,000 periods: free weeks, monthly
# renewals, expiries, refunds, auto-renew turned off), the gateway hosting auth, feedback,
# subscriptions and the console (release build). Measured at one connection (wrk --latency: the
# median is the server's time plus loopback):
#   GET /feedback/stats, GET /feedback/stats/daily?days=365, GET /feedback?limit=50,
#   GET /subscriptions/stats/daily?days=365 (the API), the console's inbox and dashboard (30 and
#   365 days), and search pages (the API's and the console inbox's: stems, prefixes, names,
#   address parts, tags, with and without counts)                  (target < 100 ms p50; p99 shown)
# and, for comparison, the counts /feedback/stats made before the rollup (four GROUP BY over
# every item), timed by psql.
# Usage: bench/reports.sh [seconds per measure, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_prepare pier_bench_reports pier-gateway
port=18290
base=http://127.0.0.1:$port
bench_serve $port gateway PIER_GATEWAY_EMBED=auth,feedback,subscriptions,console PIER_AUTH_ARGON2_MEMORY_KIB=8192 \
  PIER_HTTP_ACCESS_LOG=false PIER_GATEWAY_RATE_LIMIT=0 PIER_AUTH_REQUIRE_MFA_FOR_ROLES=none

echo "loading 10,000 accounts, 1,000,000 feedback items and the App Store periods of a year…"
started=$(date +%s)
psql "$url" -q <<'SQL'
INSERT INTO auth.users (id, email, email_key, display_name, created_at, email_verified_at)
SELECT gen_random_uuid(), 'user' || n || '@example.com', 'user' || n || '@example.com', 'User ' || n,
    now() - make_interval(secs => (n * 3153.6)::int), now()
FROM generate_series(1, 10000) AS n;
WITH accounts AS (SELECT array_agg(id) AS ids FROM auth.users)
INSERT INTO feedback.items (id, user_id, message, rating, category, platform, app_version, status, moderation, created_at,
    updated_at, locale, name, email, tags)
SELECT gen_random_uuid(), CASE WHEN n % 3 = 0 THEN NULL ELSE accounts.ids[1 + n % 10000] END,
    (ARRAY['The app crashes when I export my data', 'Push notifications never arrive on time',
        'The screen freezes after the payment', 'Please add a dark mode', 'I was charged twice for Pro',
        'Sync between my iPhone and iPad is slow', 'Love the new widgets', 'How do I cancel my subscription?',
        'Crashing on launch since the update', 'The checkout button does nothing after the update',
        'Le paiement échoue à chaque fois', 'Die App stürzt beim Exportieren ab'])[1 + n % 12] || ' (' || n || ')',
    CASE WHEN n % 4 = 0 THEN NULL ELSE 1 + n % 5 END, (ARRAY['bug', 'idea', 'praise', 'question', 'other'])[1 + n % 5],
    (ARRAY['ios', 'ipados', 'android', 'web', NULL])[1 + n % 5], (ARRAY['2.3.0', '2.3.1', '2.4.0', '2.4.1'])[1 + (n / 250000)],
    CASE WHEN n < 20000 THEN (ARRAY['new', 'new', 'triaged', 'planned'])[1 + n % 4]
        ELSE (ARRAY['done', 'closed', 'duplicate', 'triaged', 'closed'])[1 + n % 5] END,
    CASE WHEN n % 50 = 0 THEN 'pending' ELSE 'approved' END,
    now() - make_interval(secs => n * 31.536), now() - make_interval(secs => n * 31.536),
    (ARRAY['en-US', 'en-GB', NULL, 'fr-FR', 'de-DE', 'es-ES'])[1 + n % 6],
    CASE WHEN n % 3 = 0 THEN (ARRAY['Casey', 'Robin', 'Sam', 'Alex', 'Zoë'])[1 + n % 5] || ' Sender' || (n % 997) END,
    CASE WHEN n % 3 = 0 THEN 'sender' || n || '@mail' || (n % 89) || '.example' END,
    CASE WHEN n % 7 = 0 THEN ARRAY['billing'] WHEN n % 11 = 0 THEN ARRAY['crash', 'ios-17'] ELSE '{}' END
FROM generate_series(1, 1000000) AS n, accounts;
INSERT INTO subscriptions.plans (id, name, price, currency, billing_period, trial_period, entitlements,
    appstore_product_ids)
VALUES ('pro-monthly', 'Pro', 499, 'USD', 'P1M', 'P7D', ARRAY['pro'], ARRAY['pier.pro.monthly']),
    ('team-monthly', 'Team', 1499, 'USD', 'P1M', NULL, ARRAY['pro', 'team'], ARRAY['pier.team.monthly']);
-- Subscriber n starts within the year, half with a free week; then 1 to 13 monthly periods (up
-- to now), one in eleven refunded ten days into its last period.
WITH subscribers AS (
    SELECT n, now() - make_interval(secs => (n * 3153.6)::int) AS starts, n % 2 = 0 AS trial,
        CASE WHEN n % 3 = 0 THEN 'pier.team.monthly' ELSE 'pier.pro.monthly' END AS product, 1 + n % 13 AS periods
    FROM generate_series(1, 10000) AS n
), periods AS (
    SELECT s.n, s.product, k, s.trial AND k = 0 AS free,
        s.starts + CASE WHEN s.trial AND k > 0 THEN interval '7 days' + (k - 1) * interval '30 days'
            ELSE k * interval '30 days' END AS purchased,
        k = s.periods - (CASE WHEN s.trial THEN 0 ELSE 1 END) AS last
    FROM subscribers s, generate_series(0, s.periods - (CASE WHEN s.trial THEN 0 ELSE 1 END)) AS k
)
INSERT INTO subscriptions.appstore_transactions (transaction_id, original_transaction_id, product_id, purchase_date,
    expires_date, revocation_date, offer_type, environment, signed_date, payload)
SELECT n || '-' || k, n || '-0', product, purchased,
    purchased + CASE WHEN free THEN interval '7 days' ELSE interval '30 days' END,
    CASE WHEN last AND NOT free AND n % 11 = 0 AND purchased + interval '10 days' < now()
        THEN purchased + interval '10 days' END,
    CASE WHEN free THEN 1 END, 'production', purchased, '{}'
FROM periods WHERE purchased <= now();
INSERT INTO subscriptions.appstore_notifications (notification_uuid, notification_type, subtype,
    original_transaction_id, environment, signed_date, data)
SELECT gen_random_uuid(), 'DID_CHANGE_RENEWAL_STATUS', 'AUTO_RENEW_DISABLED', original_transaction_id, 'production',
    max(purchase_date) + interval '2 days', '{}'
FROM subscriptions.appstore_transactions WHERE original_transaction_id ~ '^[0-9]*7-0$'
GROUP BY original_transaction_id HAVING max(purchase_date) + interval '2 days' < now();
-- A year of rows is long vacuumed in a real database: done now, so that autovacuum does not
-- run through the freshly loaded tables while the figures are taken.
VACUUM (ANALYZE) auth.users;
VACUUM (ANALYZE) feedback.items;
VACUUM (ANALYZE) subscriptions.appstore_transactions;
VACUUM (ANALYZE) subscriptions.appstore_notifications;
SQL
echo "loaded in $(($(date +%s) - started)) s"

# The worker rolls up at start and every minute: wait until it has the year.
started=$(date +%s)
until [ "$(psql "$url" -tAc "SELECT coalesce(through >= current_date - 1, false) AND
    (SELECT count(*) FROM feedback.daily) > 0 FROM feedback.rollup_state")" = t ]; do
  [ $(($(date +%s) - started)) -lt 180 ] || { echo "the rollup did not catch up in 180 s" >&2; exit 1; }
  sleep 2
done
echo "rolled up by the worker $(($(date +%s) - started)) s after the load (at most a minute of it waiting for its turn)"
# The load's pages written out now rather than by the checkpointer while the figures are taken.
psql "$url" -qc "CHECKPOINT"

before() {
  local total=0 start
  for column in status category "coalesce(platform, 'unknown')"; do
    start=$(date +%s%N)
    psql "$url" -qtAc "SELECT $column, count(*) FROM feedback.items GROUP BY 1" >/dev/null
    total=$((total + ($(date +%s%N) - start) / 1000000))
  done
  start=$(date +%s%N)
  psql "$url" -qtAc "SELECT app_version, round(avg(rating), 2), count(rating) FROM feedback.items GROUP BY 1" >/dev/null
  echo $((total + ($(date +%s%N) - start) / 1000000))
}
echo "before the rollup, /feedback/stats ran four GROUP BY over every item: $(before) ms"

# Support's account, its token and a console session.
password="a bench passphrase"
curl -sf -XPOST "$base/auth/register" -H 'Content-Type: application/json' \
  -d "{\"email\":\"support@example.com\",\"password\":\"$password\"}" >/dev/null
psql "$url" -qc "UPDATE auth.users SET role = 'support', email_verified_at = now() WHERE email = 'support@example.com'"
token=$(curl -sf -XPOST "$base/auth/login" -H 'Content-Type: application/json' \
  -d "{\"email\":\"support@example.com\",\"password\":\"$password\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
jar=$work/cookies
form=$(curl -sf -c "$jar" "$base/console/sign-in" | grep -o 'name="form" value="[^"]*"' | head -n 1 | cut -d '"' -f 4)
curl -sf -o /dev/null -b "$jar" -c "$jar" -XPOST "$base/console/sign-in" -H "Origin: $base" --data-urlencode "form=$form" \
  --data-urlencode "email=support@example.com" --data-urlencode "password=$password" --data-urlencode "next="
cookie=$(awk '$6 == "pier_console" { print $7 }' "$jar")
[ -n "$cookie" ] || { echo "no console session" >&2; exit 1; }

median() {  # NAME PATH HEADER: the median and 99th percentile latency at one connection
  local name=$1 path=$2 header=$3 status
  status=$(curl -s -o /dev/null -w '%{http_code}' -H "$header" "$base$path")
  [ "$status" = 200 ] || { echo "$path answered $status" >&2; exit 1; }
  printf '%-44s %s   (%s)\n' "$name" \
    "$(wrk -t1 -c1 -d"${duration}s" --latency -H "$header" "$base$path" |
      awk '$1 == "50%" { p50 = $2 } $1 == "99%" { p99 = $2 } END { print p50 " p50, " p99 " p99" }')" \
    "target < 100 ms"
}
echo "== 1,000,000 items, 10,000 accounts, $(psql "$url" -tAc 'SELECT count(*) FROM subscriptions.appstore_transactions') App Store periods; one connection, ${duration}s each"
median "GET /feedback/stats" /feedback/stats "Authorization: Bearer $token"
median "GET /feedback/stats/daily?days=365" "/feedback/stats/daily?days=365" "Authorization: Bearer $token"
median "GET /feedback?limit=50" "/feedback?limit=50" "Authorization: Bearer $token"
median "GET /subscriptions/stats/daily?days=365" "/subscriptions/stats/daily?days=365" "Authorization: Bearer $token"
median "console inbox" /console/inbox "Cookie: pier_console=$cookie"
median "console dashboard (30 days)" /console/dashboard "Cookie: pier_console=$cookie"
median "console dashboard (365 days)" "/console/dashboard?days=365" "Cookie: pier_console=$cookie"
echo "== search: 12 messages in 6 languages, a third with a sender's name and address, tags on a fifth"
median "GET /feedback?q=crash (1 in 12 match)" "/feedback?q=crash&limit=50" "Authorization: Bearer $token"
median "GET /feedback?q=crash&includeTotal=true" "/feedback?q=crash&limit=50&includeTotal=true" "Authorization: Bearer $token"
median "GET /feedback?q=notif (a prefix)" "/feedback?q=notif&limit=50" "Authorization: Bearer $token"
median "GET /feedback?q=crash+export (two words)" "/feedback?q=crash%20export&limit=50" "Authorization: Bearer $token"
median "GET /feedback?q=zoe+sender500 (a name)" "/feedback?q=zoe%20sender500&limit=50" "Authorization: Bearer $token"
median "GET /feedback?q=mail42 (an address's part)" "/feedback?q=mail42&limit=50" "Authorization: Bearer $token"
median "GET /feedback?tag=billing&status=new" "/feedback?tag=billing&status=new&limit=50" "Authorization: Bearer $token"
median "GET /feedback?q=widgets&status=new (rare)" "/feedback?q=widgets&status=new&limit=50" "Authorization: Bearer $token"
median "console inbox, search 'crash' (with counts)" "/console/inbox?q=crash" "Cookie: pier_console=$cookie"
median "console inbox, 'open' and a tag" "/console/inbox?status=open&tag=crash" "Cookie: pier_console=$cookie"
median "GET /auth/users?q=user77 (a word's start)" "/auth/users?q=user77" "Authorization: Bearer $token"
