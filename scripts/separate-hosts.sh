#!/usr/bin/env bash
# Pier deployed as separate hosts on this machine: PostgreSQL, auth, feedback, two replicas of
# subscriptions and the gateway each in a network namespace of its own, with its own address
# on a private bridge (10.77.0.0/24). Then, through the gateway only:
#   1. the whole flow works: register, log in, send feedback, read the subscription status, and
#      the services see the client's address (forwarded by the gateway they trust);
#   2. killing feedback makes /feedback answer 503 within a second while /auth and
#      /subscriptions answer every request; restarting it restores /feedback, no gateway restart;
#   3. the two subscriptions replicas share the load, and killing one under load fails no request;
#   4. a 100 MB export streams through the gateway with its peak memory barely moving.
# Without the privilege to create namespaces, the same runs as processes on distinct loopback
# addresses (127.0.77.0/24), and the script says so.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${PIER_BIN:-$(swift build --show-bin-path)}
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
work=$(mktemp -d)
chmod 755 "$work"
hosts=(db auth feedback subscriptions-1 subscriptions-2 gateway)
declare -A address=([db]=10 [auth]=11 [feedback]=12 [subscriptions-1]=13 [subscriptions-2]=14 [gateway]=20)
declare -A pid=()

# PIER_HOSTS_MODE=loopback forces the fallback (to test it where namespaces work).
if [ "${PIER_HOSTS_MODE:-netns}" = netns ] && ip netns add pier-probe 2>/dev/null && ip netns del pier-probe; then
  mode=netns
  net=10.77.0
  client=$net.1
else
  mode=loopback
  net=127.0.77
  client=127.0.0.1
  echo "separate-hosts: no network namespaces (no privilege, or PIER_HOSTS_MODE=loopback): processes on distinct loopback addresses instead"
fi
ip_of() { echo "$net.${address[$1]}"; }
on() { # on HOST command…: runs the command on that host, as this process (exec'd when last)
  local host=$1
  shift
  if [ $mode = netns ]; then ip netns exec "pier-$host" "$@"; else "$@"; fi
}
on_exec() { # on_exec HOST command…: replaces this (sub)shell, so $! is the command's own pid
  local host=$1
  shift
  if [ $mode = netns ]; then exec ip netns exec "pier-$host" "$@"; else exec "$@"; fi
}

cleanup() {
  for host in "${!pid[@]}"; do kill -9 "${pid[$host]}" 2>/dev/null || true; done
  on db runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true
  if [ $mode = netns ]; then
    for host in "${hosts[@]}"; do
      ip netns del "pier-$host" 2>/dev/null || true
      ip link del "pier${address[$host]}" 2>/dev/null || true
    done
    ip link del pierbr0 2>/dev/null || true
  fi
  if [ "${keep:-0}" = 1 ]; then echo "logs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() {
  echo "separate-hosts: FAILED: $*" >&2
  keep=1
  exit 1
}

if [ $mode = netns ]; then
  ip link add pierbr0 type bridge
  ip addr add $client/24 dev pierbr0
  ip link set pierbr0 up
  for host in "${hosts[@]}"; do
    ip netns add "pier-$host"
    # Interface names are at most 15 characters: named by the host's address.
    ip link add "pier${address[$host]}" type veth peer name eth0 netns "pier-$host"
    ip link set "pier${address[$host]}" master pierbr0 up
    on "$host" ip addr add "$(ip_of "$host")/24" dev eth0
    on "$host" ip link set eth0 up
    on "$host" ip link set lo up
  done
fi

# PostgreSQL on its own host.
mkdir "$work/pg" && chown postgres:postgres "$work/pg" && chmod 700 "$work/pg"
runuser -u postgres -- "$pgbin/initdb" -D "$work/pg" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
cat >> "$work/pg/postgresql.conf" <<CONF
listen_addresses = '$(ip_of db)'
port = 5432
unix_socket_directories = ''
max_connections = 200
CONF
echo "host all all $net.0/24 trust" >> "$work/pg/pg_hba.conf"
on db runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg/server.log" -w -t 60 start >/dev/null
psql -q "postgresql://postgres@$(ip_of db):5432/postgres" -c "CREATE DATABASE pier"
database="postgresql://postgres@$(ip_of db):5432/pier"
gateway="http://$(ip_of gateway):8080"

# start HOST EXECUTABLE PORT [VAR=value…]
start() {
  local host=$1 executable=$2 port=$3
  shift 3
  on_exec "$host" env PIER_HOST="$(ip_of "$host")" PIER_PORT="$port" PIER_DATABASE_URL="$database" \
    PIER_DATA_DIR="$work" PIER_TRUSTED_PROXIES="$(ip_of gateway)" PIER_JWKS_URL="$gateway/auth/.well-known/jwks.json" \
    PIER_AUTH_ARGON2_MEMORY_KIB=1024 PIER_AUTH_ARGON2_ITERATIONS=1 PIER_FEEDBACK_QUOTA_PER_MINUTE=100000 \
    PIER_FEEDBACK_QUOTA_PER_DAY=1000000 "$@" "$bin/$executable" serve --migrate >> "$work/$host.log" 2>&1 &
  pid[$host]=$!
  disown
}
ready() { # ready URL: waits for readiness itself, up to a minute (migrations on a slow machine)
  for _ in $(seq 1 600); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done
  fail "$1 did not become ready"
}
# The admin's export below signs in with a password alone: no second factor asked of staff here.
start auth pier-auth 8081 PIER_AUTH_REQUIRE_MFA_FOR_ROLES=none
ready "http://$(ip_of auth):8081/readyz"
start feedback pier-feedback 8082
start subscriptions-1 pier-subscriptions 8083
start subscriptions-2 pier-subscriptions 8083
ready "http://$(ip_of feedback):8082/readyz"
ready "http://$(ip_of subscriptions-1):8083/readyz"
ready "http://$(ip_of subscriptions-2):8083/readyz"
start gateway pier-gateway 8080 PIER_TRUSTED_PROXIES= PIER_GATEWAY_HEALTH_INTERVAL_MS=300 PIER_GATEWAY_RATE_LIMIT=0 \
  PIER_GATEWAY_ROUTES="/auth=http://$(ip_of auth):8081,/feedback=http://$(ip_of feedback):8082;timeout=600000,/subscriptions=http://$(ip_of subscriptions-1):8083|http://$(ip_of subscriptions-2):8083"
ready "$gateway/readyz"
gateway_pid=${pid[gateway]}
echo "separate-hosts ($mode): PostgreSQL $(ip_of db), auth $(ip_of auth), feedback $(ip_of feedback)," \
  "subscriptions $(ip_of subscriptions-1) and $(ip_of subscriptions-2), gateway $(ip_of gateway)"

# 1. The whole flow through the gateway.
json() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
curl -sf "$gateway/auth/register" -H 'Content-Type: application/json' \
  -d '{"email":"ada@example.com","password":"separate hosts passphrase"}' > /dev/null || fail "register"
token=$(curl -sf "$gateway/auth/login" -H 'Content-Type: application/json' \
  -d '{"email":"ada@example.com","password":"separate hosts passphrase"}' | json '["accessToken"]') || fail "login"
curl -sf "$gateway/feedback" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d '{"message":"sent across hosts"}' > /dev/null || fail "feedback"
[ "$(curl -sf "$gateway/feedback/mine" -H "Authorization: Bearer $token" | json '["items"][0]["message"]')" = "sent across hosts" ] \
  || fail "reading feedback back"
status=$(curl -sf "$gateway/subscriptions/me" -H "Authorization: Bearer $token" | json '["status"]') || fail "status"
[ "$status" = none ] || fail "subscription status $status"
grep -q "\"path\":\"/auth/login\",\"status\":200,.*\"client\":\"$client\"" "$work/auth.log" \
  || fail "auth did not see the client's address $client"
echo "separate-hosts: the flow register → login → feedback → subscription status works through the gateway;" \
  "auth saw the client as $client"

# 1b. A logout is effective in every service within a second: each process learns it from the
# event log (LISTEN/NOTIFY), with no database lookup per request.
second=$(curl -sf "$gateway/auth/login" -H 'Content-Type: application/json' \
  -d '{"email":"ada@example.com","password":"separate hosts passphrase"}') || fail "second login"
old_token=$(echo "$second" | json '["accessToken"]')
old_refresh=$(echo "$second" | json '["refreshToken"]')
[ "$(curl -s -o /dev/null -w '%{http_code}' "$gateway/feedback/mine" -H "Authorization: Bearer $old_token")" = 200 ] \
  || fail "the second session's token was refused before logout"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$gateway/auth/logout" -H "Authorization: Bearer $old_token" \
  -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$old_refresh\"}")" = 204 ] || fail "logout"
logged_out=$(date +%s%N)
while true; do
  mine=$(curl -s -o /dev/null -w '%{http_code}' "$gateway/feedback/mine" -H "Authorization: Bearer $old_token")
  status=$(curl -s -o /dev/null -w '%{http_code}' "$gateway/subscriptions/me" -H "Authorization: Bearer $old_token")
  [ "$mine" = 401 ] && [ "$status" = 401 ] && break
  [ $(($(date +%s%N) - logged_out)) -lt 1000000000 ] \
    || fail "a second after logout, the old token still got /feedback $mine and /subscriptions $status"
done
revoked_ms=$((($(date +%s%N) - logged_out) / 1000000))
[ "$(curl -s -o /dev/null -w '%{http_code}' "$gateway/feedback/mine" -H "Authorization: Bearer $token")" = 200 ] \
  || fail "the other session's token was refused"
echo "separate-hosts: after a logout, feedback and subscriptions (each its own host) refused the old token" \
  "within ${revoked_ms} ms; the other session went on"

# 2. Feedback dies: 503 at once for /feedback, nothing else affected; it comes back by itself.
loop() { # loop PATH COUNT OUTPUT: statuses of COUNT requests
  for _ in $(seq 1 "$2"); do curl -s -o /dev/null -w '%{http_code}\n' "$gateway$1" -H "Authorization: Bearer $token"; done > "$3"
}
kill -9 "${pid[feedback]}"
killed=$(date +%s%N)
while true; do
  code=$(curl -s -o /dev/null -w '%{http_code}' "$gateway/feedback/mine" -H "Authorization: Bearer $token")
  [ "$code" = 503 ] && break
  [ $(($(date +%s%N) - killed)) -lt 1000000000 ] || fail "/feedback answered $code, not 503, a second after feedback died"
done
after_ms=$((($(date +%s%N) - killed) / 1000000))
loop /auth/me 50 "$work/auth.codes" &
first=$!
loop /subscriptions/me 50 "$work/subscriptions.codes" &
second=$!
wait $first $second
others=$(sort "$work/auth.codes" "$work/subscriptions.codes" | uniq -c | tr -s ' ' | tr '\n' ';')
[ "$others" = " 100 200;" ] || fail "with feedback down, /auth and /subscriptions answered: $others"
start feedback pier-feedback 8082
restored=0
for _ in $(seq 1 600); do
  if [ "$(curl -s -o /dev/null -w '%{http_code}' "$gateway/feedback/mine" -H "Authorization: Bearer $token")" = 200 ]; then
    restored=1
    break
  fi
  sleep 0.1
done
[ $restored = 1 ] || fail "/feedback did not come back within a minute of feedback restarting"
kill -0 "$gateway_pid" || fail "the gateway is gone"
echo "separate-hosts: feedback killed → /feedback 503 after ${after_ms} ms; /auth and /subscriptions answered 100 of 100;" \
  "feedback restarted → /feedback back, same gateway process"

# 3. Two subscriptions replicas share the load; one dies under load and no request fails.
served() { grep -c '"path":"/subscriptions/me"' "$work/$1.log" || true; }
before1=$(served subscriptions-1)
before2=$(served subscriptions-2)
loop /subscriptions/me 100 "$work/share.codes"
share1=$(($(served subscriptions-1) - before1))
share2=$(($(served subscriptions-2) - before2))
[ "$share1" -ge 30 ] && [ "$share2" -ge 30 ] || fail "replicas served $share1 and $share2 of 100"
workers=()
for worker in 1 2 3 4; do
  loop /subscriptions/me 150 "$work/load-$worker.codes" &
  workers+=($!)
done
sleep 0.5
kill -9 "${pid[subscriptions-2]}"
wait "${workers[@]}"
codes=$(cat "$work"/load-*.codes | sort | uniq -c | tr -s ' ' | tr '\n' ';')
[ "$codes" = " 600 200;" ] || fail "with a replica killed under load: $codes"
retried=$(curl -s "$gateway/metrics" | awk '/^pier_gateway_upstream_retries_total\{route="\/subscriptions"/ {sum += $2} END {print sum + 0}')
echo "separate-hosts: replicas served $share1 and $share2 of 100; one killed under load (600 requests, 4 clients):" \
  "600 answered 200, $retried retried on the other"

# 4. A 50 MB export through the gateway, in bounded memory (the gateway holds no body: it grows
# by a megabyte or so whatever the size, so half the body is a bound that buffering cannot meet).
on auth env PIER_DATABASE_URL="$database" PIER_DATA_DIR="$work" PIER_ADMIN_PASSWORD="separate hosts admin" \
  PIER_AUTH_ARGON2_MEMORY_KIB=1024 PIER_AUTH_ARGON2_ITERATIONS=1 "$bin/pier-auth" create-admin --email admin@example.com \
  >> "$work/auth.log" 2>&1 || fail "create-admin"
admin=$(curl -sf "$gateway/auth/login" -H 'Content-Type: application/json' \
  -d '{"email":"admin@example.com","password":"separate hosts admin"}' | json '["accessToken"]') || fail "admin login"
psql -q "$database" -c "INSERT INTO feedback.items (id, message, category, metadata, request_ids)
  SELECT gen_random_uuid(), repeat('Exported through the gateway. ', 40), 'idea', '{}', '{}' FROM generate_series(1, 40000)"
rss_before=$(awk '/VmHWM/ {print $2}' "/proc/$gateway_pid/status")
bytes=$(curl -sf -o /dev/null -w '%{size_download}' "$gateway/feedback/export?format=ndjson" -H "Authorization: Bearer $admin") \
  || fail "the export through the gateway"
rss_after=$(awk '/VmHWM/ {print $2}' "/proc/$gateway_pid/status")
[ "$bytes" -ge 48000000 ] || fail "the export was only $bytes bytes"
growth=$(((rss_after - rss_before) / 1024))
[ "$growth" -lt $((bytes / 2000000)) ] || fail "the gateway's peak memory grew by $growth MB while streaming $bytes bytes"
echo "separate-hosts: an export of $((bytes / 1000000)) MB streamed through the gateway; its peak RSS grew by $growth MB" \
  "($((rss_before / 1024)) → $((rss_after / 1024)) MB)"
echo "separate-hosts ($mode): passed"
