#!/usr/bin/env bash
# The local stack in the foreground: PostgreSQL under .pier/, the database `pier`, migrations,
# then every service as its own process on its own port and the gateway in front of them on
# 8080, each log line prefixed with its name. Every process is pier-gateway hosting what
# `--embed` names, as every container of the compose and Kubernetes files is: each knows every
# plugin's events (auth's webhooks) and pages (the console), and remote config runs beside
# subscriptions, whose entitlements its rules ask in-process. Ctrl-C (or SIGTERM) stops everything gracefully,
# then PostgreSQL.
#   PIER_BUILD=debug deploy/local/run.sh     use a debug build (faster to compile)
#   PIER_EMBED=1 deploy/local/run.sh         one process instead: pier-gateway --embed auth,feedback,subscriptions,console,config on 8080
# Either way the gateway hosts the team's console at http://127.0.0.1:8080/console/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
configuration=${PIER_BUILD:-release}
scripts/setup.sh
echo "building ($configuration)…"
swift build -c "$configuration" --product pier-gateway
bin=$(swift build -c "$configuration" --show-bin-path)
# Starts the cluster and creates the database `pier` when it is missing.
scripts/postgres.sh start
admin=$(scripts/postgres.sh url)
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

# name port plugins: one line per service.
start() {
  local name=$1 port=$2 plugins=$3
  # Output through sed by process substitution, so that $! is the service itself (what stop signals).
  PIER_PORT=$port PIER_TRUSTED_PROXIES=127.0.0.1 "$bin/pier-gateway" serve --embed "$plugins" --migrate \
    > >(sed -u "s/^/[$name] /") 2>&1 &
  pids+=($!)
}
ready() {
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$1/readyz" >/dev/null && return 0; sleep 0.1; done
  echo "a service on port $1 did not become ready" >&2
}
if [ "${PIER_EMBED:-0}" = 1 ]; then
  PIER_PORT=8080 "$bin/pier-gateway" serve --embed auth,feedback,subscriptions,console,config --migrate > >(sed -u "s/^/[gateway] /") 2>&1 &
  pids+=($!)
  echo "Pier is running in one process on http://127.0.0.1:8080 (try: curl http://127.0.0.1:8080/readyz; the console: http://127.0.0.1:8080/console/; remote config: http://127.0.0.1:8080/config). Ctrl-C stops it."
else
  # Mailed links and passkeys name the address clients use, the gateway's, not auth's own port.
  # "Download my data" gathers the other services' parts over HTTP, as in every split deployment.
  PIER_AUTH_PUBLIC_URL=${PIER_AUTH_PUBLIC_URL:-http://127.0.0.1:8080} \
    PIER_AUTH_EXPORT_URLS=http://127.0.0.1:8082/feedback/me/export,http://127.0.0.1:8083/subscriptions/me/export \
    start auth 8081 auth
  start feedback 8082 feedback
  start subscriptions 8083 subscriptions,config
  for port in 8081 8082 8083; do ready $port; done
  # The gateway trusts nothing in front of it here; the services trust the gateway's address.
  # It hosts the console itself, which calls the services through the gateway's own routes (and
  # shows remote config's pages).
  PIER_PORT=8080 "$bin/pier-gateway" serve --embed console --migrate \
    --route /auth=http://127.0.0.1:8081 --route /feedback=http://127.0.0.1:8082 \
    --route /subscriptions=http://127.0.0.1:8083 --route /config=http://127.0.0.1:8083 \
    > >(sed -u "s/^/[gateway] /") 2>&1 &
  pids+=($!)
  ready 8080
  echo "Pier is running on http://127.0.0.1:8080 (the gateway; try: curl http://127.0.0.1:8080/readyz), with auth on :8081, feedback on :8082 and subscriptions with remote config on :8083; the console: http://127.0.0.1:8080/console/; remote config: http://127.0.0.1:8080/config. Ctrl-C stops it."
fi
wait
