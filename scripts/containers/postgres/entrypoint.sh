#!/bin/bash
# The official image's entrypoint, as documented (hub.docker.com/_/postgres), reduced to what
# compose uses: run as postgres; on an empty data directory, initdb with POSTGRES_USER (default
# postgres) and POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE, scram-sha-256 for connections over
# the network, POSTGRES_DB (default the user) created, then /docker-entrypoint-initdb.d/ in
# order (*.sh run when executable, sourced otherwise; *.sql through psql) against a server
# that listens on its socket only; then the server for real, on every address.
set -Eeuo pipefail

file_env() {
  local var=$1 file_var="${1}_FILE"
  if [ -n "${!var:-}" ] && [ -n "${!file_var:-}" ]; then
    echo "error: both $var and $file_var are set (but are exclusive)" >&2
    exit 1
  fi
  local value=${2:-}
  if [ -n "${!var:-}" ]; then
    value=${!var}
  elif [ -n "${!file_var:-}" ]; then
    value=$(<"${!file_var}")
  fi
  export "$var"="$value"
  unset "$file_var"
}

if [ "${1:0:1}" = - ]; then set -- postgres "$@"; fi

if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  file_env POSTGRES_PASSWORD
  file_env POSTGRES_USER postgres
  file_env POSTGRES_DB "$POSTGRES_USER"
  if [ -z "$POSTGRES_PASSWORD" ]; then
    echo "error: the database is uninitialized and the superuser password is not specified:" \
      "set POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE" >&2
    exit 1
  fi
  initdb --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  printf '\nhost all all all scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start >/dev/null
  export PGPASSWORD=$POSTGRES_PASSWORD
  if [ "$POSTGRES_DB" != postgres ]; then
    psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --dbname postgres \
      --set db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";' >/dev/null
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh)
        if [ -x "$f" ]; then echo "running $f"; "$f"; else echo "sourcing $f"; . "$f"; fi ;;
      *.sql)
        echo "running $f"
        psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --dbname "$POSTGRES_DB" -f "$f" ;;
      *) if [ -e "$f" ]; then echo "ignoring $f"; fi ;;
    esac
  done
  unset PGPASSWORD
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "PostgreSQL init process complete; ready for start up."
fi

if [ "$1" = postgres ]; then
  shift
  exec postgres -c listen_addresses='*' "$@"
fi
exec "$@"
