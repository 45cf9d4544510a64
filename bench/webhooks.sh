#!/usr/bin/env bash
# Webhook delivery latency at a steady rate: events appended to the shared log at RATE per second
# (pgbench -R, as producers append them: one statement that inserts and notifies), pier-auth
# queueing and POSTing them to a receiver on the loopback that verifies each signature; the
# latency is the receiver's clock at arrival minus the event's own time (its transaction's).
# Usage: bench/webhooks.sh [seconds, default 20] [events per second, default 500]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-20}
rate=${2:-500}
# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_prepare pier_bench_webhooks pier-auth

secret="whsec_$(head -c 32 /dev/urandom | base64)"
echo "$secret" > "$work/secret"
python3 - "$work" 18299 <<'PY' &
import base64, hashlib, hmac, json, sys, threading, time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
work, port = sys.argv[1], int(sys.argv[2])
key = base64.b64decode(open(f"{work}/secret").read().strip().removeprefix("whsec_"))
lock = threading.Lock()
out = open(f"{work}/latencies", "a")
class Hooks(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        arrived = time.time()
        msg, stamp = self.headers["webhook-id"], self.headers["webhook-timestamp"]
        mac = base64.b64encode(hmac.new(key, f"{msg}.{stamp}.".encode() + body, hashlib.sha256).digest()).decode()
        ok = ("v1," + mac) in self.headers["webhook-signature"].split(" ")
        event = json.loads(body)
        at = datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp()
        with lock:
            out.write(f"{msg} {(arrived - at) * 1000:.3f} {int(ok)}\n")
            out.flush()
        self.send_response(204 if ok else 401)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args): pass
ThreadingHTTPServer(("127.0.0.1", port), Hooks).serve_forever()
PY
pids+=($!)
bench_serve 18291 auth \
  PIER_WEBHOOKS="[{\"name\":\"bench\",\"url\":\"http://127.0.0.1:18299/hooks\",\"secretFile\":\"$work/secret\",\"events\":[\"feedback.created\"]}]"

first=$(psql "$url" -Atc "SELECT coalesce(max(id), 0) FROM events.events")
cat > "$work/append.sql" <<'SQL'
INSERT INTO events.events (type, payload)
VALUES ('feedback.created', jsonb_build_object('feedbackId', gen_random_uuid(), 'message', 'bench'))
RETURNING pg_notify('pier_events', 'feedback.created')::text;
SQL
echo "appending $rate events/s for $duration s…"
pgbench -n -R "$rate" -T "$duration" -c 4 -j 2 -f "$work/append.sql" "$url" > "$work/pgbench.log" 2>&1 || { cat "$work/pgbench.log" >&2; exit 1; }
events=$(psql "$url" -Atc "SELECT count(*) FROM events.events WHERE id > $first")
for _ in $(seq 1 600); do
  [ "$(wc -l < "$work/latencies")" -ge "$events" ] && break
  sleep 0.1
done
python3 - "$work/latencies" "$events" "$duration" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1])]
events, duration = int(sys.argv[2]), float(sys.argv[3])
latencies = sorted(float(r[1]) for r in rows)
def pct(p): return latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))]
print(f"events appended: {events} ({events / duration:.0f}/s); received: {len(rows)}, distinct: {len({r[0] for r in rows})}, "
      f"signatures valid: {sum(int(r[2]) for r in rows)}")
print(f"latency from the event's transaction to the receiver (ms): p50 {pct(50):.1f}, p90 {pct(90):.1f}, "
      f"p99 {pct(99):.1f}, max {latencies[-1]:.1f}")
PY
psql "$url" -Atc "SELECT 'deliveries: ' || count(*) || ', attempts: ' || sum(attempts) || ', pending: ' || count(*) FILTER (WHERE state = 'pending') FROM auth.webhook_deliveries"
