#!/usr/bin/env bash
# Validates the OpenAPI document (openapi-spec-validator) and fuzzes the whole API from it
# (schemathesis) against pier-gateway hosting every plugin on a fresh database: no request may
# get a 5xx answer, nor a status, content type or body that the document does not describe (as a
# client written from the document would meet it). The gateway's rate limit is off here, or most
# requests would only meet it.
set -euo pipefail
cd "$(dirname "$0")/.."
for package in openapi-spec-validator schemathesis; do
  python3 -m pip show -q "$package" >/dev/null 2>&1 || python3 -m pip install -q "$package" 2>/dev/null \
    || python3 -m pip install -q --break-system-packages "$package"
done
python3 -m openapi_spec_validator docs/openapi.json
admin=$(scripts/postgres.sh url)
PGOPTIONS="-c client_min_messages=warning" psql "$admin" -qc "DROP DATABASE IF EXISTS pier_fuzz WITH (FORCE)" -c "CREATE DATABASE pier_fuzz" >/dev/null
work=$(mktemp -d)
port=${PIER_FUZZ_PORT:-18480}
# Google Play on, against a stand-in of Google that grants any assertion and knows no purchase,
# its push tokens checked against auth's own keys (no token of Google's can pass).
google=$((port + 1))
python3 Tests/Interop/google_play_standin.py "$google" &
standin=$!
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/google.pem" 2>/dev/null
python3 -c 'import json,sys; print(json.dumps({"client_email": "fuzz@fuzz.iam.gserviceaccount.com", "private_key": open(sys.argv[1]).read(), "token_uri": sys.argv[2]}))' \
  "$work/google.pem" "http://127.0.0.1:$google/token" > "$work/google.json"
export PIER_SUBSCRIPTIONS_GOOGLE_PACKAGE=com.example.fuzz PIER_SUBSCRIPTIONS_GOOGLE_KEY_FILE="$work/google.json" \
  PIER_SUBSCRIPTIONS_GOOGLE_API_URL="http://127.0.0.1:$google" PIER_SUBSCRIPTIONS_GOOGLE_PUSH_AUDIENCE=fuzz \
  PIER_SUBSCRIPTIONS_GOOGLE_PUSH_SERVICE_ACCOUNT=push@fuzz.iam.gserviceaccount.com \
  PIER_SUBSCRIPTIONS_GOOGLE_JWKS_URL="http://127.0.0.1:$port/auth/.well-known/jwks.json"
PIER_DATABASE_URL="${admin%/*}/pier_fuzz" PIER_PORT=$port PIER_DATA_DIR="$work" PIER_LOG_LEVEL=warning PIER_HTTP_ACCESS_LOG=false \
  PIER_AUTH_ARGON2_MEMORY_KIB=1024 PIER_AUTH_ARGON2_ITERATIONS=1 \
  PIER_AUTH_HASHES_PER_ADDRESS=10000 PIER_AUTH_LOGINS_PER_ADDRESS_PER_MINUTE=100000000 PIER_GATEWAY_RATE_LIMIT=0 \
  PIER_FEEDBACK_QUOTA_PER_MINUTE=100000 PIER_FEEDBACK_QUOTA_PER_DAY=1000000 \
  "$(swift build --show-bin-path)/pier-gateway" --embed auth,feedback,subscriptions,config --migrate > "$work/gateway.log" 2>&1 &
pid=$!
trap 'kill $pid $standin 2>/dev/null || true; rm -rf "$work"' EXIT
# Migrations of three services first: wait for readiness itself (up to a minute), not a fixed time.
for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { echo "fuzz: the gateway did not become ready; see its log:" >&2; cat "$work/gateway.log" >&2; exit 1; }
token=$(curl -sf "http://127.0.0.1:$port/auth/register" -H 'Content-Type: application/json' \
  -d '{"email":"fuzz@example.com","password":"fuzz passphrase 1"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')
# The whole report is kept: on a failure it is printed whole (the failing requests, reproducible
# with the printed seed: PIER_FUZZ_SEED=… scripts/fuzz.sh), else its summary.
seed=()
[ -n "${PIER_FUZZ_SEED:-}" ] && seed=(--seed "$PIER_FUZZ_SEED")
if ! schemathesis run "http://127.0.0.1:$port/openapi.json" --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance --exclude-method DELETE \
  -H "Authorization: Bearer $token" --max-examples 40 --no-color "${seed[@]}" > "$work/report.txt" 2>&1; then
  cat "$work/report.txt"
  echo "fuzz: schemathesis found answers the document does not describe (above)" >&2
  exit 1
fi
tail -n 60 "$work/report.txt"
grep -q 'unhandled error' "$work/gateway.log" && { echo "fuzz: the gateway logged an unhandled error (a 500)" >&2; exit 1; }
echo "fuzz: no 5xx, every answer as the document describes it"
