#!/usr/bin/env bash
# Starts a PostgreSQL 15 cluster of the project's own under .pier/postgres (no system service),
# listening on 127.0.0.1:${PIER_PG_PORT:-15432} with trust authentication for local use only.
#   scripts/postgres.sh start   create the cluster if needed, start it, wait until it accepts
#   scripts/postgres.sh stop    stop it (fast shutdown)
#   scripts/postgres.sh url     print the admin URL
# PostgreSQL refuses to run as root: as root, the cluster runs as the `postgres` system user.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Below Linux's ephemeral range (32768-60999): no client socket can be holding the port.
port=${PIER_PG_PORT:-15432}
data="$root/.pier/postgres"
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin" ] || { echo "postgres.sh: PostgreSQL server binaries not found; run scripts/setup.sh" >&2; exit 1; }

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-start}" in
  start)
    mkdir -p "$root/.pier"
    if [ ! -f "$data/PG_VERSION" ]; then
      mkdir -p "$data"
      [ "$(id -u)" = 0 ] && chown postgres:postgres "$data"
      chmod 700 "$data"
      as_owner "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
      cat >> "$data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = ''
max_connections = 200
shared_buffers = 128MB
fsync = on
log_min_messages = warning
CONF
    fi
    if ! as_owner "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
      as_owner "$bin/pg_ctl" -D "$data" -l "$data/server.log" -o "-p $port" -w -t 60 start >/dev/null
    fi
    for _ in $(seq 1 60); do
      "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" && exit 0
      sleep 0.5
    done
    echo "postgres.sh: the server did not become ready; see $data/server.log" >&2
    exit 1
    ;;
  stop)
    [ -f "$data/PG_VERSION" ] && as_owner "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
    ;;
  restart)
    as_owner "$bin/pg_ctl" -D "$data" -m fast -w restart -l "$data/server.log" -o "-p $port" >/dev/null
    ;;
  url)
    echo "postgresql://postgres@127.0.0.1:$port/postgres"
    ;;
  *)
    echo "usage: scripts/postgres.sh start|stop|restart|url" >&2
    exit 2
    ;;
esac
