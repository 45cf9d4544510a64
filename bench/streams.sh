#!/usr/bin/env bash
# Idle live streams one service holds: STREAMS connections to GET /subscriptions/me/events on
# pier-subscriptions (release), from a Python asyncio client on the loopback, each waiting past its
# first status; then the server's memory per stream (VmRSS before and after, divided), its CPU
# while the streams sit idle through heartbeats, whether every stream is still open, and how long
# a grant takes to reach every stream of its user.
# Usage: bench/streams.sh [streams, default 10000] [idle seconds, default 20]
set -euo pipefail
cd "$(dirname "$0")/.."
streams=${1:-10000}
idle=${2:-20}
users=20
# shellcheck source=bench/lib.sh
. bench/lib.sh
bench_prepare pier_bench_streams pier-auth pier-subscriptions
ulimit -n "$(ulimit -Hn)"

bench_serve 18391 auth
bench_users 18391 "$users" "$work/tokens"
psql "$url" -qc "UPDATE auth.users SET role = 'admin' WHERE email = 'bench1@example.com'"
admin=$(curl -sf -XPOST http://127.0.0.1:18391/auth/login -H 'Content-Type: application/json' \
  -d '{"email":"bench1@example.com","password":"bench passphrase 1"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
per_user=$(((streams + users - 1) / users))
bench_serve 18392 subscriptions PIER_JWKS_URL=http://127.0.0.1:18391/auth/.well-known/jwks.json PIER_LIVE_STREAMS=$((streams + 100)) PIER_LIVE_STREAMS_PER_USER="$per_user" \
  PIER_LIVE_HEARTBEAT_S=5 PIER_HTTP_MAX_CONNECTIONS_PER_CLIENT=0 PIER_HTTP_MAX_CONNECTIONS=$((streams + 500))
server=${pids[-1]}
curl -sf -XPOST http://127.0.0.1:18392/subscriptions/plans -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
  -d '{"id":"pro-monthly","name":"Pro","price":499,"currency":"USD","billingPeriod":"P1M","entitlements":["pro"]}' >/dev/null
user=$(head -n 2 "$work/tokens" | tail -n 1 | cut -d . -f 2 | python3 -c \
  'import base64,json,sys; s=sys.stdin.read().strip(); print(json.loads(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))["sub"])')

python3 - "$work/tokens" "$streams" "$idle" "$server" "$admin" "$user" <<'PY'
import asyncio, json, os, sys, time, urllib.request
tokens_file, count, idle, server, admin, user = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
tokens = [line.strip() for line in open(tokens_file) if line.strip()]

def rss_kib():
    for line in open(f"/proc/{server}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

def cpu_seconds():
    fields = open(f"/proc/{server}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

class Stream:
    def __init__(self, token):
        self.token, self.statuses, self.heartbeats, self.open = token, 0, 0, False
        self.first = asyncio.get_running_loop().create_future()
        self.changed = None

    async def run(self):
        reader, writer = await asyncio.open_connection("127.0.0.1", 18392)
        writer.write(f"GET /subscriptions/me/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {self.token}\r\n"
                     "Accept: text/event-stream\r\n\r\n".encode())
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            self.first.set_exception(RuntimeError(head.split(b"\r\n")[0].decode()))
            return
        self.open = True
        buffer = b""
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                buffer += data
                # Chunked framing: messages are found by their text, the chunk sizes pass over.
                while b"\n\n" in buffer:
                    block, buffer = buffer.split(b"\n\n", 1)
                    if b"event: status" in block:
                        self.statuses += 1
                        if not self.first.done():
                            self.first.set_result(time.monotonic())
                        elif self.changed is not None and not self.changed.done():
                            self.changed.set_result(time.monotonic())
                    elif b": heartbeat" in block:
                        self.heartbeats += 1
        finally:
            self.open = False
            writer.close()

async def main():
    before = rss_kib()
    streams = [Stream(tokens[i % len(tokens)]) for i in range(count)]
    tasks = []
    started = time.monotonic()
    for i in range(0, count, 500):
        batch = streams[i:i + 500]
        tasks += [asyncio.create_task(s.run()) for s in batch]
        await asyncio.gather(*(s.first for s in batch))
    opened = time.monotonic() - started
    after = rss_kib()
    print(f"streams open: {sum(s.open for s in streams)} of {count} in {opened:.1f} s (each had its first status)")
    print(f"server RSS: {before / 1024:.1f} MiB before, {after / 1024:.1f} MiB with the streams: "
          f"{(after - before) / count:.1f} KiB per stream")
    beats = sum(s.heartbeats for s in streams)
    cpu = cpu_seconds()
    await asyncio.sleep(idle)
    cpu = cpu_seconds() - cpu
    beats = sum(s.heartbeats for s in streams) - beats
    print(f"idle {idle:.0f} s: {beats} heartbeats received, server CPU {cpu:.2f} s ({cpu / idle * 100:.1f}% of a core); "
          f"still open: {sum(s.open for s in streams)}; RSS {rss_kib() / 1024:.1f} MiB")
    # A grant to the second user: how long until each of its streams has the new status.
    own = [s for s in streams if s.token == tokens[1]]
    for s in own:
        s.changed = asyncio.get_running_loop().create_future()
    body = json.dumps({"userId": user, "planId": "pro-monthly", "duration": "P7D", "reason": "bench"}).encode()
    request = urllib.request.Request("http://127.0.0.1:18392/subscriptions/grants", data=body, method="POST",
                                     headers={"Authorization": f"Bearer {admin}", "Content-Type": "application/json"})
    asked = time.monotonic()
    await asyncio.get_running_loop().run_in_executor(None, urllib.request.urlopen, request)
    arrived = sorted(t - asked for t in await asyncio.gather(*(s.changed for s in own)))
    print(f"a grant reached all {len(own)} streams of its user: p50 {arrived[len(arrived) // 2] * 1000:.0f} ms, "
          f"last {arrived[-1] * 1000:.0f} ms after the request was sent")
    for task in tasks:
        task.cancel()

asyncio.run(main())
PY
