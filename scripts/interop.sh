#!/usr/bin/env bash
# Starts the real pier-auth executable on a fresh database and checks, with PyJWT (an
# independent JWT library), that its tokens verify against its JWKS and altered ones do not.
set -euo pipefail
cd "$(dirname "$0")/.."
# PyJWT from PyPI, or from Debian when pip is not there.
if ! python3 -c "import jwt, cryptography" 2>/dev/null; then
  python3 -m pip install -q "pyjwt[crypto]" 2>/dev/null \
    || python3 -m pip install -q --break-system-packages "pyjwt[crypto]" 2>/dev/null \
    || { sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo; DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-jwt python3-cryptography >/dev/null; }
fi
admin=$(scripts/postgres.sh url)
PGOPTIONS="-c client_min_messages=warning" psql "$admin" -qc "DROP DATABASE IF EXISTS pier_interop WITH (FORCE)" -c "CREATE DATABASE pier_interop" >/dev/null
work=$(mktemp -d)
port=${PIER_INTEROP_PORT:-18081}
export PIER_DATABASE_URL="${admin%/*}/pier_interop" PIER_PORT=$port PIER_DATA_DIR="$work" PIER_LOG_LEVEL=warning
binary=$(swift build --show-bin-path)/pier-auth

# The command line: help, version, refusals that name what is wrong.
"$binary" --help | grep -q "create-admin --email"
"$binary" --version | grep -q "^pier-auth "
status=0; "$binary" frobnicate 2>/dev/null || status=$?
[ "$status" = 2 ] || { echo "interop: an unknown command should exit 2, got $status" >&2; exit 1; }
status=0; PIER_PORT=eighty "$binary" serve 2> "$work/err" || status=$?
[ "$status" = 2 ] && grep -q "PIER_PORT" "$work/err" || { echo "interop: a bad PIER_PORT should be named" >&2; exit 1; }
status=0; PIER_ENV=production "$binary" serve 2> "$work/err" || status=$?
[ "$status" = 2 ] || { echo "interop: production without a signing key must refuse to start" >&2; exit 1; }

"$binary" migrate > /dev/null
PIER_ADMIN_PASSWORD="interop admin passphrase" "$binary" create-admin --email admin@example.com | grep -q "admin admin@example.com ready"
echo "weak" | "$binary" create-admin --email other@example.com 2>/dev/null && { echo "interop: a weak admin password was accepted" >&2; exit 1; }
"$binary" serve > "$work/auth.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { echo "interop: pier-auth did not become ready; see its log:" >&2; cat "$work/auth.log" >&2; exit 1; }
python3 Tests/Interop/jwt_interop.py "http://127.0.0.1:$port"
kill -TERM $pid
wait $pid
echo "interop: pier-auth stopped cleanly on SIGTERM"
