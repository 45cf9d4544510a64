#!/usr/bin/env bash
# Pier's benchmarks, each a ratio against a reference run side by side in the same run:
#   1. GET /healthz on pier-auth vs nginx serving a static body   (target >= 0.8)
#   2. POST /auth/login vs the bare KDF, same parameters/threads   (target >= 0.9)
#   3. SELECT 1 from 32 Swift tasks: the database pool's threads vs libpq's async API on one loop
# and the RSS of pier-auth idle and under load. Absolute numbers drift on shared machines;
# compare the ratios. Usage: bench/run.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
threads=$(nproc)
connections=64
scripts/setup.sh
command -v wrk >/dev/null && command -v nginx >/dev/null || {
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get install -y -qq wrk nginx-light >/dev/null
}
swift build -c release --static-swift-stdlib --product pier-auth >/dev/null
swift build -c release --static-swift-stdlib --product pier-kdf-bench >/dev/null
swift build -c release --static-swift-stdlib --product pier-pq-bench >/dev/null
bin=$(swift build -c release --static-swift-stdlib --show-bin-path)
scripts/postgres.sh start
admin=$(scripts/postgres.sh url)
PGOPTIONS="-c client_min_messages=warning" psql "$admin" -qc "DROP DATABASE IF EXISTS pier_bench WITH (FORCE)" -c "CREATE DATABASE pier_bench" >/dev/null
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
rps() { awk '/Requests\/sec/ {print $2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# pier-auth, access log on (its real cost; /healthz is a constant answer, never logged), written
# to a file. wrk is one address standing for many clients: the per-address shares of hashing
# and logins are lifted for it.
PIER_DATABASE_URL="${admin%/*}/pier_bench" PIER_PORT=18181 PIER_DATA_DIR="$work" \
  PIER_AUTH_HASHES_PER_ADDRESS=10000 PIER_AUTH_LOGINS_PER_ADDRESS_PER_MINUTE=100000000 \
  "$bin/pier-auth" serve --migrate > "$work/auth.log" 2>&1 &
auth_pid=$!
pids+=($auth_pid)
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:18181/readyz >/dev/null && break; sleep 0.1; done
sleep 1
idle_rss=$(rss_kb $auth_pid)

# nginx serving a 15-byte static body, access log off. It is run with one worker per core (its
# `auto`) and with two per core (what pier-auth uses by default), and the faster of the two is
# the reference.
nginx_run() {
  local workers=$1
  mkdir -p "$work/nginx$workers"
  cat > "$work/nginx$workers/nginx.conf" <<CONF
worker_processes $workers;
pid $work/nginx$workers/nginx.pid;
error_log $work/nginx$workers/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/nginx$workers;
  server {
    listen 127.0.0.1:18180;
    location /healthz { default_type application/json; return 200 '{"status":"ok"}'; }
  }
}
CONF
  nginx -c "$work/nginx$workers/nginx.conf" -g "daemon off;" &
  local pid=$!
  sleep 0.5
  wrk -t2 -c$connections -d${duration}s http://127.0.0.1:18180/healthz | rps
  kill $pid
  wait $pid 2>/dev/null || true
}

echo "== GET /healthz: pier-auth vs nginx (wrk -t2 -c$connections -d${duration}s)"
nginx_one=$(nginx_run "$threads")
nginx_two=$(nginx_run $((2 * threads)))
nginx_rps=$(awk -v a="$nginx_one" -v b="$nginx_two" 'BEGIN { print (a > b ? a : b) }')
pier_rps=$(wrk -t2 -c$connections -d${duration}s http://127.0.0.1:18181/healthz | rps)
loaded_rss=$(rss_kb $auth_pid)
echo "nginx     $nginx_rps req/s  (workers = cores: $nginx_one; 2 x cores: $nginx_two)"
echo "pier-auth $pier_rps req/s  (a constant answer, queued by the thread that read it)"
echo "ratio     $(ratio "$pier_rps" "$nginx_rps")   (target >= 0.8)"

echo "== POST /auth/login vs the bare KDF (Argon2id m=19456 t=2 p=1, $threads threads)"
# 64 accounts, taken in turn: many users logging in, not one account hammered by every
# connection (which the per-account throttle answers with 429 once 5 attempts are in flight).
for n in $(seq 0 63); do
  curl -sf -XPOST http://127.0.0.1:18181/auth/register -H 'Content-Type: application/json' \
    -d "{\"email\":\"bench$n@example.com\",\"password\":\"bench passphrase 1\"}" >/dev/null
done
cat > "$work/login.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local counter = 0
request = function()
  counter = counter + 1
  local body = string.format('{"email":"bench%d@example.com","password":"bench passphrase 1"}', counter % 64)
  return wrk.format(nil, nil, nil, body)
end
LUA
kdf=$("$bin/pier-kdf-bench" "$threads" "$duration")
login=$(wrk -t2 -c16 -d${duration}s -s "$work/login.lua" http://127.0.0.1:18181/auth/login | rps)
login_rss=$(rss_kb $auth_pid)
non2xx=$(grep -c '"path":"/auth/login","status":[^2]' "$work/auth.log" || true)
echo "bare KDF  $kdf hashes/s"
echo "login     $login logins/s  (non-2xx answers: $non2xx)"
echo "ratio     $(ratio "$login" "$kdf")   (target >= 0.9)"

echo "== memory of pier-auth (RSS)"
echo "idle                $((idle_rss / 1024)) MB   (target < 25 MB)"
echo "after healthz load  $((loaded_rss / 1024)) MB"
echo "after login load    $((login_rss / 1024)) MB   (target < 80 MB)"

echo "== PostgreSQL from Swift tasks: PierPostgres's pool (non-blocking libpq, one epoll thread) vs a thread per connection (32 tasks)"
"$bin/pier-pq-bench" "${admin%/*}/pier_bench" 32 "$duration"
