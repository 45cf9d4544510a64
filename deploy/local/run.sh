#!/usr/bin/env bash
# The local stack in the foreground: PostgreSQL under .pier/, the database `pier`, migrations,
# then every service as its own process on its own port, each log line prefixed with the
# service's name. Ctrl-C (or SIGTERM) stops the services gracefully, then PostgreSQL.
#   PIER_BUILD=debug deploy/local/run.sh     use a debug build (faster to compile)
#   PIER_EMBED=1 deploy/local/run.sh         one process instead: pier-gateway --embed auth,feedback,subscriptions on 8080
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
configuration=${PIER_BUILD:-release}
scripts/setup.sh
echo "building ($configuration)…"
for product in pier-auth pier-feedback pier-subscriptions pier-gateway; do swift build -c "$configuration" --product $product; done
bin=$(swift build -c "$configuration" --show-bin-path)
scripts/postgres.sh start
admin=$(scripts/postgres.sh url)
PGOPTIONS="-c client_min_messages=warning" psql "$admin" -qtc "SELECT 1 FROM pg_database WHERE datname = 'pier'" | grep -q 1 \
  || psql "$admin" -qc "CREATE DATABASE pier"
export PIER_DATABASE_URL="${admin%/*}/pier" PIER_DATA_DIR="$root/.pier"

pids=()
stop() {
  trap - INT TERM
  echo "stopping…"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  scripts/postgres.sh stop
  echo "stopped"
}
trap stop INT TERM

# name port: one line per service; the gateway joins them in front as services land.
start() {
  local name=$1 port=$2
  PIER_PORT=$port "$bin/pier-$name" serve --migrate 2>&1 | sed -u "s/^/[$name] /" &
  pids+=($!)
}
if [ "${PIER_EMBED:-0}" = 1 ]; then
  PIER_PORT=8080 "$bin/pier-gateway" serve --embed auth,feedback,subscriptions --migrate 2>&1 | sed -u "s/^/[gateway] /" &
  pids+=($!)
  echo "Pier is running in one process on http://127.0.0.1:8080 (try: curl http://127.0.0.1:8080/readyz). Ctrl-C stops it."
else
  start auth 8081
  start feedback 8082
  start subscriptions 8083
  echo "Pier is running: auth on http://127.0.0.1:8081, feedback on http://127.0.0.1:8082, subscriptions on http://127.0.0.1:8083 (try: curl http://127.0.0.1:8082/readyz). Ctrl-C stops it."
fi
wait
