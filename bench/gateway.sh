#!/usr/bin/env bash
# The same request through the gateway and straight to the service, in one run: requests/s
# ratio and the latency the gateway adds at p50 and p99 (targets: >= 0.7, < 0.3 ms at p50),
# for the proxy mode (pier-gateway --route in front of pier-auth) and the embedded mode
# (pier-gateway --embed auth, against pier-auth alone), with nginx as a reverse proxy (keep-alive
# upstream, 2 workers) in front of the same pier-auth as the reference of what proxying costs on
# this machine. The request is GET /auth/.well-known/jwks.json: no database, so the gateway's
# own cost is what shows. Rate limiting is off (one client address sends everything).
# Usage: bench/gateway.sh [seconds per run, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
connections=32
# shellcheck source=bench/lib.sh
. bench/lib.sh
command -v nginx >/dev/null || { sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo; $sudo apt-get install -y -qq nginx-light >/dev/null; }
bench_prepare pier_bench_gateway pier-auth pier-gateway
bench_serve 18681 auth
bench_serve 18680 gateway PIER_GATEWAY_ROUTES=/auth=http://127.0.0.1:18681 PIER_GATEWAY_RATE_LIMIT=0
# The embedded gateway hosts auth with the same database (its migrations are applied).
env PIER_DATABASE_URL="$url" PIER_PORT=18682 PIER_DATA_DIR="$work" PIER_GATEWAY_RATE_LIMIT=0 "$bin/pier-gateway" --embed auth \
  > "$work/embedded.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:18682/readyz >/dev/null && break; sleep 0.1; done
cat > "$work/nginx.conf" <<NGINX
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  upstream auth { server 127.0.0.1:18681; keepalive 64; }
  server {
    listen 127.0.0.1:18683;
    location / { proxy_pass http://auth; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
  # The same, writing an access line per request as the gateway does (for comparison only:
  # the target stays against the line above).
  server {
    listen 127.0.0.1:18684;
    access_log $work/nginx-access.log;
    location / { proxy_pass http://auth; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
NGINX
nginx -c "$work/nginx.conf"
trap 'nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true; bench_cleanup' EXIT

path=/auth/.well-known/jwks.json
# run PORT: "requests/s p50-ms p99-ms"
run() {
  wrk -t2 -c$connections -d${duration}s --latency "http://127.0.0.1:$1$path" | awk '
    function ms(value) {
      if (value ~ /us$/) return substr(value, 1, length(value) - 2) / 1000
      if (value ~ /ms$/) return substr(value, 1, length(value) - 2) + 0
      if (value ~ /s$/) return substr(value, 1, length(value) - 1) * 1000
      return value
    }
    /Requests\/sec/ { rps = $2 }
    $1 == "50%" { p50 = ms($2) }
    $1 == "99%" { p99 = ms($2) }
    END { printf "%s %.3f %.3f\n", rps, p50, p99 }'
}
report() { # report MODE DIRECT VIA
  read -r direct_rps direct_p50 direct_p99 <<< "$2"
  read -r via_rps via_p50 via_p99 <<< "$3"
  printf "%-9s direct %9.0f req/s p50 %.3f ms p99 %.3f ms | through the gateway %9.0f req/s p50 %.3f ms p99 %.3f ms\n" \
    "$1" "$direct_rps" "$direct_p50" "$direct_p99" "$via_rps" "$via_p50" "$via_p99"
  awk -v a="$via_rps" -v b="$direct_rps" -v p="$via_p50" -v q="$direct_p50" -v r="$via_p99" -v s="$direct_p99" -v m="$1" \
    'BEGIN { printf "%-9s ratio %.2f (target >= 0.7), added p50 %.3f ms (target < 0.3), added p99 %.3f ms\n", m, a / b, p - q, r - s }'
}
echo "== GET $path, wrk -t2 -c$connections, ${duration}s per run"
direct=$(run 18681)
proxied=$(run 18680)
embedded=$(run 18682)
nginx_proxy=$(run 18683)
nginx_logging=$(run 18684)
report proxy "$direct" "$proxied"
report embedded "$direct" "$embedded"
report nginx "$direct" "$nginx_proxy"
report nginx+log "$direct" "$nginx_logging"
