#!/usr/bin/env bash
# Where the database's time goes for each hot request, per statement, with the stack as deployed
# (auth, feedback and subscriptions each a process of its own, every reader of the event log
# running): pg_stat_statements over a fixed number of requests of one kind at a time, so that
# what the requests' events set off in the other processes is counted with them. Prints, per
# kind, each statement's calls and rows per request, and the totals per request: statements
# (pg_stat_statements' count, which leaves out BEGIN and COMMIT, and the services' own), rows,
# WAL bytes, database time, and the CPU time of every PostgreSQL process (the backends, the WAL
# writer).
# Usage: bench/statements.sh [requests per kind, default 500]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-500}
# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_prepare pier_bench_statements pier-auth pier-feedback pier-subscriptions
# pg_stat_statements is loaded at the server's start: the cluster restarts with it for this run,
# and again without it when the run ends (the tests' cluster stays as it was).
if [ "$(psql "$admin" -tAc "SHOW shared_preload_libraries")" != pg_stat_statements ]; then
  echo "restarting the cluster with pg_stat_statements (and without it at the end)…"
  psql "$admin" -qc "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"
  scripts/postgres.sh restart
  unload() {
    psql "$admin" -qc "ALTER SYSTEM RESET shared_preload_libraries" && scripts/postgres.sh restart || true
  }
  trap 'bench_cleanup; unload' EXIT
fi
psql "$url" -qc "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"
jwks=PIER_JWKS_URL=http://127.0.0.1:18381/auth/.well-known/jwks.json
bench_serve 18381 auth PIER_AUTH_REQUIRE_MFA_FOR_ROLES=none PIER_AUTH_LOGINS_PER_ADDRESS_PER_MINUTE=1000000 \
  PIER_AUTH_HASHES_PER_ADDRESS=10000
bench_serve 18382 feedback "$jwks" PIER_FEEDBACK_QUOTA_PER_MINUTE=1000000 PIER_FEEDBACK_QUOTA_PER_DAY=100000000
bench_serve 18383 subscriptions "$jwks"
printf '%s\n' "bench admin passphrase" | PIER_DATABASE_URL="$url" "$bin/pier-auth" create-admin --email admin@example.com >/dev/null

# The CPU time of every process of the cluster so far, in clock ticks (1/100 s): the server
# started on this port, and its children (backends, WAL writer, checkpointer, …).
port=${admin##*:}
port=${port%%/*}
server=$(pgrep -o -f -- "bin/postgres .*-p $port( |$)")
cluster_cpu() {
  local total=0 pid
  for pid in $server $(pgrep -P "$server"); do
    total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
# The statements the three services ran, by their own count (BEGIN and COMMIT included, which
# pg_stat_statements leaves out); 0 from a build that does not count them.
stack_statements() {
  local total=0 port n
  for port in 18381 18382 18383; do
    n=$(curl -sf "http://127.0.0.1:$port/metrics" | awk '/^pier_db_statements_total/ {s += $2} END {print s + 0}')
    total=$((total + n))
  done
  echo "$total"
}

# KIND: COUNT requests of that kind from one client, in order, on one connection.
requests() {
  python3 - "$1" "$count" <<'PY'
import http.client, json, sys
kind, count = sys.argv[1], int(sys.argv[2])
def call(port, method, path, body=None, token=None, headers=None):
    connection = connections.setdefault(port, http.client.HTTPConnection("127.0.0.1", port))
    sent = {"Content-Type": "application/json", **(headers or {})}
    if token: sent["Authorization"] = "Bearer " + token
    connection.request(method, path, json.dumps(body) if body is not None else None, sent)
    reply = connection.getresponse()
    data = reply.read()
    if reply.status >= 300: sys.exit("%s %s: %d %s" % (method, path, reply.status, data[:200]))
    return json.loads(data) if data else None
connections = {}
admin = call(18381, "POST", "/auth/login", {"email": "admin@example.com", "password": "bench admin passphrase"})
if kind == "POST /feedback (anonymous)":
    for i in range(count):
        call(18382, "POST", "/feedback", {"message": "The checkout button does nothing", "rating": 3},
             headers={"X-Installation-ID": "bench-%d" % i})
elif kind == "POST /feedback (signed in)":
    for i in range(count):
        call(18382, "POST", "/feedback", {"message": "The checkout button does nothing", "rating": 3},
             token=admin["accessToken"])
elif kind == "POST /auth/login":
    for i in range(count):
        call(18381, "POST", "/auth/login", {"email": "admin@example.com", "password": "bench admin passphrase"})
elif kind == "POST /auth/refresh":
    token = admin["refreshToken"]
    for i in range(count):
        token = call(18381, "POST", "/auth/refresh", {"refreshToken": token})["refreshToken"]
elif kind == "GET /subscriptions/me":
    for i in range(count):
        call(18383, "GET", "/subscriptions/me", token=admin["accessToken"])
elif kind == "POST /subscriptions/grants":
    plan = {"id": "bench", "name": "Bench", "price": 100, "currency": "USD", "billingPeriod": "P1M", "entitlements": ["pro"]}
    connection = http.client.HTTPConnection("127.0.0.1", 18383)
    connection.request("POST", "/subscriptions/plans", json.dumps(plan),
                       {"Content-Type": "application/json", "Authorization": "Bearer " + admin["accessToken"]})
    connection.getresponse().read()
    for i in range(count):
        call(18383, "POST", "/subscriptions/grants",
             {"userId": admin["user"]["id"], "planId": "bench", "duration": "P1M", "reason": "bench"},
             token=admin["accessToken"])
PY
}

for kind in "POST /feedback (anonymous)" "POST /feedback (signed in)" "POST /auth/login" "POST /auth/refresh" \
  "GET /subscriptions/me" "POST /subscriptions/grants"; do
  requests "$kind"  # once first: connections opened, statements prepared
  psql "$url" -qAtc "SELECT pg_stat_statements_reset()" >/dev/null
  before=$(cluster_cpu) counted=$(stack_statements)
  requests "$kind"
  # The readers that the requests' events woke finish their work.
  sleep 1
  after=$(cluster_cpu) counted=$(($(stack_statements) - counted))
  echo
  echo "== $kind: $count requests"
  psql "$url" -qAt -F ' | ' <<SQL
SELECT round(calls::numeric / $count, 2) AS per_request, round(rows::numeric / greatest(calls, 1), 1) AS rows_per_call,
       round(total_exec_time::numeric / $count, 3) AS ms_per_request,
       regexp_replace(left(query, 90), '\s+', ' ', 'g') AS statement
FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND query NOT LIKE '%pg_stat_statements%' AND calls::numeric / $count >= 0.01
ORDER BY calls DESC, total_exec_time DESC;
SQL
  psql "$url" -qAt <<SQL
SELECT 'per request: ' || round(sum(calls)::numeric / $count, 2) || ' statements, '
       || round(sum(rows)::numeric / $count, 1) || ' rows, ' || round(sum(wal_bytes)::numeric / $count) || ' WAL bytes, '
       || round(sum(total_exec_time)::numeric / $count, 3) || ' ms in statements, '
       || round(($after - $before) * 10.0 / $count, 3) || ' ms of the cluster''s CPU; '
       || round($counted::numeric / $count, 2) || ' statements by the services'' count (with BEGIN and COMMIT)'
FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND query NOT LIKE '%pg_stat_statements%';
SQL
done

# Under load: anonymous POSTs as fast as 32 connections send them, and what they cost across the
# stack (every reader of the event log included) per POST.
cat > "$work/anonymous.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"message":"The checkout button does nothing on iOS 18","rating":3,"category":"bug","platform":"ios","appVersion":"2.3.1"}'
LUA
psql "$url" -qAtc "SELECT pg_stat_statements_reset()" >/dev/null
before=$(cluster_cpu) counted=$(stack_statements)
wrk -t2 -c32 -d10s -s "$work/anonymous.lua" http://127.0.0.1:18382/feedback > "$work/load.txt"
sleep 1
after=$(cluster_cpu) counted=$(($(stack_statements) - counted))
posts=$(awk '/requests in/ {print $1}' "$work/load.txt")
echo
echo "== POST /feedback (anonymous) under load: $(rps < "$work/load.txt") req/s, $posts requests"
psql "$url" -qAt -F ' | ' <<SQL
SELECT round(calls::numeric / $posts, 3) AS per_post, round(total_exec_time::numeric / $posts, 3) AS ms_per_post,
       regexp_replace(left(query, 90), '\s+', ' ', 'g') AS statement
FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND query NOT LIKE '%pg_stat_statements%' AND calls::numeric / $posts >= 0.001
ORDER BY calls DESC;
SELECT 'per POST: ' || round(sum(calls)::numeric / $posts, 3) || ' statements across the stack, '
       || round($counted::numeric / $posts, 3) || ' by the services'' count with BEGIN and COMMIT (target <= 6), '
       || round(sum(wal_bytes)::numeric / $posts) || ' WAL bytes, '
       || round(($after - $before) * 10.0 / $posts, 3) || ' ms of the cluster''s CPU'
FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND query NOT LIKE '%pg_stat_statements%';
SQL
