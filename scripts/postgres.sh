#!/usr/bin/env bash
# Starts a PostgreSQL 15 cluster of the project's own under .pier/postgres (no system service),
# listening on 127.0.0.1:${PIER_PG_PORT:-15432} with trust authentication for local use only.
#   scripts/postgres.sh start   create the cluster if needed, start it, wait until it accepts, and
#                               create the database `pier` the services use when it is missing
#   scripts/postgres.sh stop    stop it (fast shutdown)
#   scripts/postgres.sh url     print the admin URL
#   scripts/postgres.sh delete  stop it and delete its files
# PostgreSQL refuses to run as root: as root, the cluster runs as the `postgres` system user.
# When that user cannot reach the checkout (a clone under /root, which only root may enter), the
# cluster's files live in /var/lib/postgresql/pier-<hash of the checkout's path>, and
# .pier/postgres is a link to them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Below Linux's ephemeral range (32768-60999): no client socket can be holding the port.
port=${PIER_PG_PORT:-15432}
data="$root/.pier/postgres"
# The postgres user may not be able to follow the link's own path: it is given the target's.
[ -L "$data" ] && data=$(readlink -f "$data")
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin" ] || { echo "postgres.sh: PostgreSQL server binaries not found; run scripts/setup.sh" >&2; exit 1; }

# From /, which the postgres user can always enter (initdb and pg_ctl read their working folder).
as_owner() {
  if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

# As root, a cluster folder the postgres user can reach: .pier/postgres itself when it can,
# else a folder of its own elsewhere, linked from .pier/postgres.
place_cluster() {
  mkdir -p "$root/.pier"
  [ "$(id -u)" = 0 ] || return 0
  [ -L "$root/.pier/postgres" ] && return 0
  [ -f "$data/PG_VERSION" ] && return 0
  if runuser -u postgres -- test -x "$root/.pier"; then return 0; fi
  local hash elsewhere
  hash=$(printf '%s' "$root" | sha256sum | cut -c1-12)
  elsewhere="/var/lib/postgresql/pier-$hash"
  mkdir -p "$elsewhere"
  chown postgres:postgres "$elsewhere"
  rm -rf "$root/.pier/postgres"
  ln -s "$elsewhere" "$root/.pier/postgres"
  data="$elsewhere"
  echo "postgres.sh: the postgres user cannot enter $root; the cluster lives in $elsewhere (linked from .pier/postgres)" >&2
}

case "${1:-start}" in
  start)
    place_cluster
    if [ ! -f "$data/PG_VERSION" ]; then
      mkdir -p "$data"
      [ "$(id -u)" = 0 ] && chown postgres:postgres "$data"
      chmod 700 "$data"
      as_owner "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
      cat >> "$data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = ''
# The test suites run in parallel, each with its own pools: 392 connections at the peak of
# the swift test run (109 suites, measured); 600 leaves room for the suites to come.
max_connections = 600
shared_buffers = 128MB
# A development and test cluster: nothing in it must outlive a power cut, and every suite's
# CREATE DATABASE forces a checkpoint whose fsync of thousands of files once stalled 57 s on a
# shared disk, timing out statements everywhere. Processes killed (the services' or the server's
# own) lose nothing either way: the kernel still holds what was written.
fsync = off
log_min_messages = warning
CONF
    fi
    if ! as_owner "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
      # Every suite runs its own stack at once (pools, listeners, webhooks' workers): 600
      # connections, also for a cluster made with an older limit.
      as_owner "$bin/pg_ctl" -D "$data" -l "$data/server.log" -o "-p $port -c max_connections=600" -w -t 60 start >/dev/null
    fi
    ready=0
    for _ in $(seq 1 60); do
      "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" && { ready=1; break; }
      sleep 0.5
    done
    [ "$ready" = 1 ] || { echo "postgres.sh: the server did not become ready; see $data/server.log" >&2; exit 1; }
    # The database the services use (`make run`, a service started by hand): there from the start.
    admin="postgresql://postgres@127.0.0.1:$port/postgres"
    PGOPTIONS="-c client_min_messages=warning" psql "$admin" -qtAc "SELECT 1 FROM pg_database WHERE datname = 'pier'" | grep -q 1 \
      || psql "$admin" -qc "CREATE DATABASE pier" >/dev/null
    exit 0
    ;;
  stop)
    [ -f "$data/PG_VERSION" ] && as_owner "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
    ;;
  delete)
    [ -f "$data/PG_VERSION" ] && as_owner "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$data" "$root/.pier/postgres"
    ;;
  restart)
    as_owner "$bin/pg_ctl" -D "$data" -m fast -w restart -l "$data/server.log" -o "-p $port -c max_connections=600" >/dev/null
    ;;
  url)
    echo "postgresql://postgres@127.0.0.1:$port/postgres"
    ;;
  *)
    echo "usage: scripts/postgres.sh start|stop|restart|delete|url" >&2
    exit 2
    ;;
esac
