#!/usr/bin/env bash
# The local cluster works wherever the checkout is: for root, in a folder only root may enter
# (a clone under /root, the default on a fresh server), scripts/postgres.sh starts, restarts,
# serves and deletes a cluster the postgres user can reach. Other users: nothing to check.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "check-root-home: not root; skipped (the case is root's)"
  exit 0
fi
home=$(mktemp -d)
chmod 700 "$home"
port=15477
fail() { echo "check-root-home: FAILED: $*" >&2; PIER_PG_PORT=$port "$home/x/scripts/postgres.sh" delete || true; rm -rf "$home"; exit 1; }
mkdir -p "$home/x/scripts"
cp scripts/postgres.sh "$home/x/scripts/"
runuser -u postgres -- test -x "$home/x" && fail "the postgres user can enter $home: nothing is tested"
cd "$home/x"
PIER_PG_PORT=$port scripts/postgres.sh start 2>"$home/start.err" || fail "start: $(cat "$home/start.err")"
grep -q "cluster lives in /var/lib/postgresql/pier-" "$home/start.err" || fail "start did not say where the cluster lives"
[ -L .pier/postgres ] || fail ".pier/postgres is not a link to the cluster"
url=$(PIER_PG_PORT=$port scripts/postgres.sh url)
[ "$(psql "$url" -tAc 'SELECT 1')" = 1 ] || fail "the cluster does not answer"
[ "$(psql "${url%/*}/pier" -tAc 'SELECT 1')" = 1 ] || fail "start did not create the database pier the services use"
PIER_PG_PORT=$port scripts/postgres.sh restart || fail "restart"
PIER_PG_PORT=$port scripts/postgres.sh stop
PIER_PG_PORT=$port scripts/postgres.sh start 2>/dev/null || fail "start again (the link reused)"
[ "$(psql "$url" -tAc 'SELECT 1')" = 1 ] || fail "the cluster does not answer after a restart"
target=$(readlink -f .pier/postgres)
PIER_PG_PORT=$port scripts/postgres.sh delete
[ ! -e "$target" ] && [ ! -e .pier/postgres ] || fail "delete left $target"
cd / && rm -rf "$home"
echo "check-root-home: a cluster for a checkout only root can enter started, restarted and was deleted"
