#!/usr/bin/env bash
# Remote config (Plugins/RemoteConfig) against the gateway's
# /healthz in one run: GET /config answers from memory, so its rate should be near that of a
# route that does nothing (target >= 0.8). Both through `pier-gateway` hosting auth and
# config (release build), wrk at 32 connections; /config with an app's headers and a config of
# 20 parameters of 3 rules each (versions, locales, a rollout), for an anonymous caller.
# Usage: bench/config.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_prepare pier_bench_config
swift build -c release --static-swift-stdlib --product pier-gateway >/dev/null
bin=$(swift build -c release --static-swift-stdlib --show-bin-path)
port=18690
env PIER_DATABASE_URL="$url" PIER_PORT=$port PIER_DATA_DIR="$work" PIER_GATEWAY_RATE_LIMIT=0 PIER_HTTP_ACCESS_LOG=false \
  PIER_AUTH_REQUIRE_MFA_FOR_ROLES=none PIER_GATEWAY_EMBED=auth,config "$bin/pier-gateway" serve --migrate \
  > "$work/gateway.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
PIER_DATABASE_URL="$url" PIER_ADMIN_PASSWORD="a bench passphrase" PIER_GATEWAY_EMBED=auth,config \
  "$bin/pier-gateway" create-admin --email admin@example.com >/dev/null
token=$(curl -sf -XPOST "http://127.0.0.1:$port/auth/login" -H 'Content-Type: application/json' \
  -d '{"email":"admin@example.com","password":"a bench passphrase"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
python3 - <<'PY' > "$work/config.json"
import json
parameters = [{"key": "flag_%d" % n, "type": "bool", "defaultValue": False, "rules": [
    {"name": "New versions", "when": {"appVersionAtLeast": "3.%d" % n}, "value": True},
    {"name": "French", "when": {"locales": ["fr"], "platforms": ["ios"]}, "value": True},
    {"name": "A tenth", "when": {"rolloutPercent": 10}, "value": True}]} for n in range(20)]
print(json.dumps({"basedOn": 0, "parameters": parameters}))
PY
curl -sf -XPOST "http://127.0.0.1:$port/config/versions" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  --data @"$work/config.json" >/dev/null
run() {  # PATH [HEADER…]: requests/s
  local path=$1
  shift
  wrk -t2 -c32 -d"${duration}s" "$@" "http://127.0.0.1:$port$path" | awk '/Requests\/sec/ { print $2 }'
}
app=(-H "X-Installation-ID: bench-installation" -H "X-App-Platform: ios" -H "X-App-Version: 3.4.0" -H "Accept-Language: fr-FR")
healthz=$(run /healthz)
jwks=$(run /auth/.well-known/jwks.json)
config=$(run /config "${app[@]}")
echo "== GET /config vs GET /healthz, one run, ${duration}s each, 32 connections"
printf '%-44s %10.0f req/s\n' "GET /healthz (answered before routing)" "$healthz" \
  "GET /auth/.well-known/jwks.json (a routed constant)" "$jwks" "GET /config (20 parameters, an app's headers)" "$config"
python3 -c "print('ratio /config / /healthz: %.2f (target >= 0.8); /config / jwks: %.2f' % ($config / $healthz, $config / $jwks))"
