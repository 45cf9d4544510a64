#!/usr/bin/env bash
# The compose deployment (deploy/docker) run for real, in OCI containers, with podman:
#   1. the image is built from deploy/docker/Dockerfile as docs/operating.md says (one host release
#      build, fed to the runtime stage with BINARY=prebuilt), plus a stand-in for the official
#      postgres:15-bookworm image (scripts/containers/postgres; no registry is reachable here);
#   2. deploy/docker/compose.yaml, unchanged, comes up in stages, each waited on by its
#      healthcheck (podman-compose ignores `condition:`): PostgreSQL and auth's migrate job
#      together (the job waits for the database), the other migrate jobs, the services, the
#      gateway on its published port;
#   3. through that port, with the pier command line: register, log in, send feedback, read
#      the subscription status; the console at /console/: an admin signs in, reads the inbox,
#      opens remote config's page and publishes a version (`pier config`) that /config serves;
#   4. feedback's container is stopped (SIGTERM to PID 1: it exits 0, promptly): only /feedback
#      fails, 503 with Retry-After; started again, it is back without touching the gateway;
#      its process killed outright, the restart policy brings it back; PostgreSQL stopped
#      and started again: 503 with Retry-After meanwhile, then served again by themselves;
#   5. every service runs as uid 10001 on a read-only root file system, its secrets are files
#      and not in its environment; then image sizes and each container's memory are reported;
#   6. `compose down` leaves no container, volume or network of the project.
# Podman comes from the machine's sandbox tool (podman-sandbox.sh, found next to the repository
# or at $PIER_PODMAN_SANDBOX); nothing in deploy/ depends on it.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
say() { printf 'containers: %s\n' "$*"; }
# The reason of a failure is also kept in a file: a failure in $(…) ends only its subshell.
reason=$(mktemp)
fail() {
  printf 'containers: FAILED: %s\n' "$*" | tee -a "$reason" >&2
  exit 1
}

sandbox=${PIER_PODMAN_SANDBOX:-}
if [ -z "$sandbox" ]; then
  # Next to the repository, or next to the working copy it was cloned from (a CI clone).
  origin=$(git config --get remote.origin.url 2>/dev/null || true)
  for candidate in ../shared/tools/podman-sandbox.sh "${origin:+$origin/../shared/tools/podman-sandbox.sh}" \
    /work/shared/tools/podman-sandbox.sh; do
    if [ -f "$candidate" ]; then sandbox=$candidate; break; fi
  done
fi
[ -n "$sandbox" ] && [ -f "$sandbox" ] || fail "podman-sandbox.sh not found: set PIER_PODMAN_SANDBOX"
ready=$(bash "$sandbox" | tail -n 1)
compose_bin=${ready##*podman-compose at }
[ -x "$compose_bin" ] || fail "podman-compose not found (the sandbox tool said: $ready)"
say "$ready"

# 1. The image. One release build on the host (measured: shorter than a build in Swift's image;
# see docs/operating.md, Docker) gives pier-gateway, the image every container runs
# (PIER_GATEWAY_EMBED names what each hosts; compose.yaml says why).
swift build -c release --static-swift-stdlib --product pier-gateway >/dev/null
swift build -c release --static-swift-stdlib --product pier >/dev/null
swift build -c release --static-swift-stdlib --product pier-config >/dev/null
bin=$(swift build -c release --show-bin-path)
compiled=$(date +%s)
services=(auth feedback subscriptions console)
images=(gateway)
mkdir -p .build/images
for name in "${images[@]}"; do cp "$bin/pier-$name" .build/images/; done
# HEALTHCHECK is part of Docker's image format only (podman's default, OCI, drops it).
export BUILDAH_FORMAT=docker
for name in "${images[@]}"; do
  podman build -q -f deploy/docker/Dockerfile --build-arg PRODUCT="pier-$name" --build-arg BINARY=prebuilt \
    -t "pier-$name" . >/dev/null
done
podman build -q -t docker.io/library/postgres:15-bookworm scripts/containers/postgres >/dev/null
built=$(date +%s)
say "release build $((compiled - started)) s, images built in $((built - compiled)) s"

# 2. The stack, from a copy of deploy/ (the secrets are made there, as secrets/README.md says).
work=$(mktemp -d)
# A project (and so network) name of this run's own: podman's address allocator can keep a static
# address of a container that is gone (seen: "requested ip address 10.201.17.10 is already
# allocated to container ID …" for a container no longer there, on both attempts); its record is
# kept by network name, so a new name starts clean. What a killed run left goes first (its
# networks, with their containers): the fixed subnet cannot be had twice.
project=pier-containers-test-$$
podman network ls --format '{{.Name}}' | grep '^pier-containers-test' | xargs -r podman network rm -f >/dev/null 2>&1 || true
port=${PIER_CONTAINERS_PORT:-18080}
ticker=
compose() { PIER_GATEWAY_PORT=$port "$compose_bin" -p "$project" -f "$work/deploy/docker/compose.yaml" "$@"; }
container() {
  podman ps -a --filter "label=com.docker.compose.project=$project" \
    --filter "label=com.docker.compose.service=$1" --format '{{.ID}}' | head -n 1
}
cleanup() {
  status=$?
  if [ "$status" != 0 ]; then
    for c in $(podman ps -a --filter "label=com.docker.compose.project=$project" --format '{{.Names}}'); do
      echo "--- $c ($(podman inspect -f '{{.State.Status}}, exit {{.State.ExitCode}}, restarted {{.RestartCount}} times' "$c"))" >&2
      podman logs --tail 30 "$c" >&2 2>&1 || true
    done
    # Again after the logs: what CI shows of a failure is its end.
    cat "$reason" >&2
  fi
  rm -f "$reason"
  [ -n "$ticker" ] && kill "$ticker" 2>/dev/null
  compose down -v >/dev/null 2>&1 || true
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
cp -r deploy "$work/"
(
  cd "$work/deploy/docker/secrets"
  for name in postgres auth_db feedback_db subscriptions_db console_db config_db; do openssl rand -hex 24 >"${name}_password"; done
  for key in auth subscriptions; do
    openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt >"${key}_signing_key.pem"
  done
  openssl rand -base64 32 >auth_mfa_key
  chmod 0700 .
  chmod 0444 ./*_password
  chown 10001:10001 ./*_signing_key.pem auth_mfa_key && chmod 0400 ./*_signing_key.pem auth_mfa_key
)
compose down -v >/dev/null 2>&1 || true

# Healthchecks run only when something runs them: podman 4.3 relies on systemd timers.
bash "$sandbox" ticker 1 >/dev/null 2>&1 &
ticker=$!

# Runs "$@" every second until it succeeds, for a minute at most; prints the seconds it took.
within_a_minute() {
  local what=$1 start
  shift
  start=$(date +%s)
  until "$@"; do
    [ $(($(date +%s) - start)) -lt 60 ] || fail "$what after 60 s"
    sleep 1
  done
  echo $(($(date +%s) - start))
}
is_healthy() { [ "$(podman inspect -f '{{.State.Health.Status}}' "$(container "$1")" 2>/dev/null)" = healthy ]; }
healthy() { within_a_minute "$1 is not healthy" is_healthy "$1" >/dev/null; }
completed() {
  local id code
  id=$(container "$1")
  code=$(podman wait "$id")
  [ "$code" = 0 ] || fail "$1 exited with $code"
}

# Starts a stage; on a busy machine podman-compose's "up" has failed once: it is tried a second
# time, after the first attempt's containers are removed (one of them still held its static
# address, and the second attempt failed on it); when that fails too its output is the reason.
up() {
  compose up -d "$@" >"$work/up.log" 2>&1 && return 0
  say "compose up $* failed once; trying again: $(tail -n 3 "$work/up.log" | tr '\n' ' ')"
  local name
  for name in "$@"; do
    [ "${name#-}" = "$name" ] || continue
    podman ps -aq --filter "label=com.docker.compose.project=$project" \
      --filter "label=com.docker.compose.service=$name" | xargs -r podman rm -f >/dev/null 2>&1 || true
  done
  sleep 2
  compose up -d "$@" >"$work/up.log" 2>&1 || fail "compose up $*: $(tail -n 20 "$work/up.log")"
}

# Each later stage with --no-deps: podman-compose would start the finished jobs again.
up postgres auth-migrate
healthy postgres
completed auth-migrate
up --no-deps feedback-migrate subscriptions-migrate console-migrate
completed feedback-migrate
completed subscriptions-migrate
completed console-migrate
up --no-deps auth feedback subscriptions console
for name in "${services[@]}"; do healthy "$name"; done
up --no-deps gateway
healthy gateway
up=$(date +%s)
podman logs "$(container auth-migrate)" 2>&1 | grep -q '"waiting for the database"' \
  && say "auth's migrate job waited for PostgreSQL to start, then migrated"

base=http://127.0.0.1:$port
# The gateway serves a route once its own check of the upstream's /readyz passed: each prefix
# answers (its upstream's 200 or 401), not the gateway's 503.
routed() {
  local auth feedback subscriptions config console
  auth=$(curl -s -o /dev/null -w '%{http_code}' "$base/auth/.well-known/jwks.json")
  config=$(curl -s -o /dev/null -w '%{http_code}' "$base/config")
  feedback=$(curl -s -o /dev/null -w '%{http_code}' "$base/feedback/mine")
  subscriptions=$(curl -s -o /dev/null -w '%{http_code}' "$base/subscriptions/plans")
  console=$(curl -s -o /dev/null -w '%{http_code}' "$base/console/sign-in")
  [ "$auth" = 200 ] && [ "$feedback" = 401 ] && [ "$subscriptions" = 200 ] && [ "$config" = 200 ] && [ "$console" = 200 ]
}
waited=$(within_a_minute "the gateway does not route every prefix" routed)
# And every service verifies tokens: each fetches auth's keys (JWKS) on first use, over the
# compose network's DNS (which podman's, fresh, can be slow to answer for some seconds).
probe=$(curl -s -X POST "$base/auth/register" -H 'Content-Type: application/json' \
  -d "{\"email\":\"probe-$(date +%s)@example.com\",\"password\":\"a long enough passphrase\"}" \
  | grep -o '"accessToken":"[^"]*"' | cut -d '"' -f 4)
[ -n "$probe" ] || fail "registering through the gateway gave no access token"
verified() {
  [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $probe" "$base/feedback/mine")" = 200 ] \
    && [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $probe" "$base/subscriptions/me")" = 200 ]
}
trusted=$(within_a_minute "feedback and subscriptions do not accept auth's tokens" verified)
say "stack up and healthy in $((up - built)) s; every route served $waited s after the gateway was healthy," \
  "tokens accepted by every service $trusted s later"

# 3. The flow, as an app's developer scripts it.
export XDG_CONFIG_HOME=$work/client PIER_URL=$base PIER_PASSWORD="a long enough passphrase"
pier=$bin/pier
email="containers-$(date +%s)@example.com"
"$pier" register "$email" --name "Container Test" >/dev/null || fail "register"
"$pier" logout >/dev/null
"$pier" login "$email" >/dev/null || fail "login"
"$pier" whoami | grep -q "$email" || fail "whoami"
"$pier" feedback send "Sent through the containers" --rating 5 --category praise >/dev/null || fail "feedback send"
"$pier" --json feedback list | grep -q "Sent through the containers" || fail "feedback list"
"$pier" --json status | grep -q '"active"' || fail "status"
# Statuses signed with the key from the secret (production signs nothing without one).
curl -s "$base/subscriptions/.well-known/jwks.json" | grep -q '"alg":"ES256"' || fail "no status signing key published"
curl -s -o /dev/null -D - -H "Authorization: Bearer $probe" -H 'Pier-Status-Nonce: containers-nonce-0123456789' \
  "$base/subscriptions/me" | grep -qi '^pier-signed-status: ey' || fail "a status asked with a nonce came unsigned"
# Hostile input through the published port: clear problems, never a 5xx.
problem() {  # METHOD PATH STATUS [curl arguments…]: the status, as application/problem+json
  local method=$1 path=$2 want=$3 got
  shift 3
  got=$(curl -s -o /dev/null -w '%{http_code} %{content_type}' -X "$method" "$base$path" "$@")
  [ "$got" = "$want application/problem+json" ] || fail "$method $path: expected $want as a problem, got $got"
}
problem POST /feedback 400 -H 'Content-Type: application/json' -d '{"message": "unterminated'
problem POST /feedback 422 -H 'Content-Type: application/json' -d '{"message": 42}'
head -c 2000000 /dev/zero | tr '\0' 'a' >"$work/large"
problem POST /feedback 413 -H 'Content-Type: application/json' --data-binary "@$work/large"
# The probe's token with the last character of its signature changed.
if [ "${probe: -1}" = A ]; then tampered=${probe%?}B; else tampered=${probe%?}A; fi
problem GET /feedback/mine 401 -H "Authorization: Bearer $tampered"
problem GET /subscriptions/me 401 -H 'Authorization: Bearer not.a.token'
say "malformed, mistyped and oversized bodies, tampered tokens: 400, 422, 413, 401 problems through the gateway"
# Without SMTP, auth writes its mails to its volume (the root file system is read-only); its
# outbox sends after the registration committed, so the mail is waited for.
mailed() {
  local pid
  pid=$(podman inspect -f '{{.State.Pid}}' "$(container auth)")
  grep -lq "$email" "/proc/$pid/root/var/lib/pier/mail/"*.eml 2>/dev/null
}
within_a_minute "the verification mail is not in auth's volume" mailed >/dev/null
say "register, login, feedback and status through the gateway on $base; the verification mail in auth's volume"

# The team's console behind the gateway, as a browser on this host opens it: http://localhost
# (a secure context, where the default Secure __Host- cookie is kept). An admin made on the
# server, the form sent with the browser's Origin (the console learns the host the browser
# asked for from the gateway's X-Forwarded-Host), the inbox read through Pier's API.
admin="admin-$(date +%s)@example.com"
podman exec -i "$(container auth)" pier create-admin --email "$admin" <<<"$PIER_PASSWORD" >/dev/null \
  || fail "pier-auth create-admin in auth's container"
console=http://localhost:$port/console
jar=$work/console.cookies
form=$(curl -s -c "$jar" "$console/sign-in" | grep -o 'name="form" value="[^"]*"' | cut -d '"' -f 4)
[ -n "$form" ] || fail "the console's sign-in page has no form"
sign_in() {  # ORIGIN [curl arguments…]: the status and where it leads
  local origin=$1
  shift
  curl -s -o "$work/signed.html" -w '%{http_code} %{redirect_url}' -b "$jar" -H "Origin: $origin" "$@" \
    --data-urlencode "form=$form" --data-urlencode "email=$admin" --data-urlencode "password=$PIER_PASSWORD" \
    --data-urlencode "next=" "$console/sign-in"
}
refused=$(sign_in http://evil.example)
[ "$refused" = "403 " ] || fail "a sign-in form sent from another origin: $refused, not 403"
signed=$(sign_in "http://localhost:$port" -c "$jar")
[ "$signed" = "303 http://localhost:$port/console/inbox" ] \
  || fail "signing in to the console: $signed $(grep -o 'class="problem"[^<]*' "$work/signed.html")"
grep -q '__Host-pier_console' "$jar" || fail "the console's session cookie is not __Host-pier_console"
# The admin role asks for a second factor: the console leads there, and the admin sets up an
# authenticator app (its code computed by Tests/Interop/totp.py, from RFC 6238 alone).
led=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' -b "$jar" "$console/inbox")
[ "$led" = "303 http://localhost:$port/console/two-step" ] || fail "an admin without a second factor was led to: $led"
# The page's forms (two-step, sign out) carry the same token: one of them.
csrf=$(curl -s -b "$jar" "$console/two-step" | grep -o 'name="csrf" value="[^"]*"' | head -1 | cut -d '"' -f 4)
set_up() {
  curl -s -b "$jar" -H "Origin: http://localhost:$port" --data-urlencode "csrf=$csrf" --data-urlencode "password=" \
    "$console/two-step" >"$work/two-step.html"
}
# A team account's first second factor waits for the link mailed to it (in auth's volume).
set_up
grep -q 'data-approval' "$work/two-step.html" || fail "the admin's first second factor was not held for the mailed link"
approval=$(python3 Tests/Interop/mailed_link.py "/proc/$(podman inspect -f '{{.State.Pid}}' "$(container auth)")/root/var/lib/pier/mail" \
  "$admin" /auth/mfa/approve) || fail "no approval link mailed to the admin"
approved=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
  -d "{\"token\":\"${approval#*token=}\"}" "http://localhost:$port/auth/mfa/approve")
[ "$approved" = 204 ] || fail "the mailed approval link answered $approved"
set_up
grep -q '<div class="qr"><svg' "$work/two-step.html" || fail "the two-step page shows no QR code"
secret=$(grep -o 'name="secret" value="[^"]*"' "$work/two-step.html" | head -1 | cut -d '"' -f 4)
[ -n "$secret" ] || fail "the two-step page gives no key"
curl -s -b "$jar" -H "Origin: http://localhost:$port" --data-urlencode "csrf=$csrf" --data-urlencode "secret=$secret" \
  --data-urlencode "code=$(python3 Tests/Interop/totp.py "$secret")" "$console/two-step/confirm" \
  | grep -q "Two-step sign-in is on" || fail "the authenticator app's code did not turn two-step sign-in on"
curl -s -b "$jar" "$console/inbox" | grep -q "Sent through the containers" \
  || fail "the console's inbox does not show the feedback sent"
# Remote config, beside subscriptions: its page in the console (which has every plugin's pages),
# a version published by the admin through the gateway, served to the app.
curl -s -b "$jar" "$console/config" | grep -q "Nothing published yet" || fail "the console has no remote config page"
# The admin's command line, in a session of its own: signed in with its next code (this one was
# spent turning two-step sign-in on).
printf '[{"key":"welcome","type":"string","defaultValue":"hello","rules":[]}]' >"$work/config.json"
XDG_CONFIG_HOME=$work/admin "$pier" login "$admin" --code "$(python3 Tests/Interop/totp.py "$secret" 1)" >/dev/null \
  || fail "the admin could not sign in with pier and a code"
XDG_CONFIG_HOME=$work/admin "$pier" config publish "$work/config.json" --note "from the containers test" >/dev/null \
  || fail "pier config publish, as the admin, through the gateway"
curl -s "$base/config" | grep -q '"welcome":"hello"' || fail "GET /config does not serve the version published"
if podman logs "$(container subscriptions)" 2>&1 | grep -q "offered by no plugin"; then
  fail "remote config runs without a capability it needs: $(podman logs "$(container subscriptions)" 2>&1 | grep "offered by no plugin")"
fi
say "the console behind the gateway: a form from another origin refused; an admin signed in at" \
  "http://localhost:$port/console/ and read the feedback sent in the inbox; remote config's page shown," \
  "a version published with pier config and served at /config"

# 4. One service stopped: only its routes fail; started again, back behind the same gateway.
gateway_started=$(podman inspect -f '{{.State.StartedAt}}' "$(container gateway)")
feedback=$(container feedback)
stop_began=$(date +%s%N)
podman stop -t 20 "$feedback" >/dev/null 2>&1
stopped_in=$((($(date +%s%N) - stop_began) / 1000000))
code=$(podman inspect -f '{{.State.ExitCode}}' "$feedback")
[ "$code" = 0 ] || fail "feedback exited with $code on SIGTERM (not a graceful stop)"
say "feedback stopped on SIGTERM in $stopped_in ms, exit 0"
headers=$(curl -s -o /dev/null -D - -X POST "$base/feedback" -H 'Content-Type: application/json' \
  -d '{"message":"while feedback is down"}')
grep -q '^HTTP/1.1 503' <<<"$headers" || fail "/feedback with its service stopped: $(head -n 1 <<<"$headers")"
grep -qi '^Retry-After:' <<<"$headers" || fail "/feedback's 503 has no Retry-After"
"$pier" whoami >/dev/null || fail "/auth failed while feedback was stopped"
"$pier" status >/dev/null || fail "/subscriptions failed while feedback was stopped"
podman start "$feedback" >/dev/null 2>&1
sent() { "$pier" feedback send "$1" >/dev/null 2>&1; }
back=$(within_a_minute "/feedback is not back after its service started again" sent "Back again")
say "feedback stopped: /feedback 503 with Retry-After, /auth and /subscriptions served; started again: back in $back s"
# A crash (the process killed outright): compose's restart policy starts it again.
kill -KILL "$(podman inspect -f '{{.State.Pid}}' "$feedback")"
restarted_and_sent() { [ "$(podman inspect -f '{{.RestartCount}}' "$feedback")" -ge 1 ] && sent "After a crash"; }
again=$(within_a_minute "feedback is not restarted and served after it was killed" restarted_and_sent)
say "feedback killed (SIGKILL): restarted by its restart policy, served again in $again s"
# The database goes away and comes back (at another address): the services answer 503 with
# Retry-After meanwhile, and serve again by themselves.
podman stop -t 20 "$(container postgres)" >/dev/null 2>&1
headers=$(curl -s -o /dev/null -D - -H "Authorization: Bearer $probe" "$base/feedback/mine")
grep -q '^HTTP/1.1 503' <<<"$headers" || fail "/feedback/mine without its database: $(head -n 1 <<<"$headers")"
grep -qi '^Retry-After:' <<<"$headers" || fail "the 503 without a database has no Retry-After"
podman start "$(container postgres)" >/dev/null 2>&1
healthy postgres
listed() { "$pier" --json feedback list 2>/dev/null | grep -q "After a crash"; }
recovered=$(within_a_minute "the services do not serve again after the database came back" listed)
say "PostgreSQL stopped: 503 with Retry-After; started again: served again $recovered s after it was healthy"
[ "$(podman inspect -f '{{.State.StartedAt}}' "$(container gateway)")" = "$gateway_started" ] \
  || fail "the gateway restarted"
say "the gateway ran throughout, untouched"

# 5. How the services run.
for name in "${services[@]}" gateway; do
  id=$(container "$name")
  pid=$(podman inspect -f '{{.State.Pid}}' "$id")
  uid=$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")
  [ "$uid" = 10001 ] || fail "$name runs as uid $uid"
  [ "$(podman inspect -f '{{.HostConfig.ReadonlyRootfs}}' "$id")" = true ] || fail "$name's root is writable"
  # As the process sees it: its root mount is read-only.
  awk '$5 == "/" { print $6 }' "/proc/$pid/mountinfo" | grep -qE '(^|,)ro(,|$)' || fail "$name's root is mounted read-write"
  grep -qE '^options.*timeout:1' "/proc/$pid/root/etc/resolv.conf" \
    || fail "$name's resolver waits 5 s for a dropped lookup: $(grep '^options' "/proc/$pid/root/etc/resolv.conf")"
done
for pair in auth:auth_db_password auth:auth_signing_key auth:auth_mfa_key feedback:feedback_db_password \
  subscriptions:subscriptions_db_password subscriptions:subscriptions_signing_key subscriptions:config_db_password \
  console:console_db_password; do
  name=${pair%%:*} secret=${pair#*:}
  pid=$(podman inspect -f '{{.State.Pid}}' "$(container "$name")")
  file=/proc/$pid/root/run/secrets/$secret
  [ -f "$file" ] || fail "$name has no secret file /run/secrets/$secret"
  source=$work/deploy/docker/secrets/$secret
  [ -f "$source" ] || source=$source.pem
  cmp -s "$file" "$source" || fail "$name's /run/secrets/$secret is not the secret"
  # A piece of the secret itself (a PEM's key material, not its armour).
  needle=$(grep -v -- '-----' "$source" | head -c 24)
  if tr '\0' '\n' <"/proc/$pid/environ" | grep -qF -- "$needle"; then fail "$name has $secret in its environment"; fi
  if podman inspect "$(container "$name")" | grep -qF -- "$needle"; then fail "$name's configuration shows $secret"; fi
done
say "every service: uid 10001, read-only root, a 1-s resolver timeout, secrets as files under /run/secrets and nowhere in its environment"
# Each plugin's role owns its schema; feedback, subscriptions and remote config may append to
# the event log (replies mailed by auth, the events webhooks send, a publication) and nothing
# more there; the console only reads it. Remote config, in subscriptions' process, cannot read
# subscriptions' tables (its rules ask subscriptions' capability).
privileges=$(podman exec "$(container postgres)" psql -U postgres -d pier -tAc "
  SELECT string_agg(r || ':' || has_table_privilege(r, 'events.events', 'SELECT')::text
    || has_table_privilege(r, 'events.events', 'INSERT')::text
    || has_table_privilege(r, 'events.events', 'DELETE')::text, ' ' ORDER BY r)
  FROM unnest(ARRAY['pier_config', 'pier_console', 'pier_feedback', 'pier_subscriptions']) AS r")
[ "$privileges" = "pier_config:truetruefalse pier_console:truefalsefalse pier_feedback:truetruefalse pier_subscriptions:truetruefalse" ] \
  || fail "privileges on the event log: $privileges"
apart=$(podman exec "$(container postgres)" psql -U postgres -d pier -tAc "
  SELECT has_schema_privilege('pier_config', 'subscriptions', 'USAGE')::text || ' '
    || has_schema_privilege('pier_subscriptions', 'remote_config', 'USAGE')::text")
[ "$apart" = "false false" ] || fail "remote config and subscriptions reach each other's schema: $apart"
say "the event log: feedback, subscriptions and remote config append (INSERT only), the console reads;" \
  "remote config and subscriptions, in one process, each in its own schema alone"

say "image sizes:"
for name in "${images[@]}"; do
  printf '  pier-%-14s %s MB\n' "$name" "$(($(podman image inspect -f '{{.Size}}' "pier-$name") / 1000000))"
done
printf '  %-19s %s MB (the stand-in)\n' postgres "$(($(podman image inspect -f '{{.Size}}' postgres:15-bookworm) / 1000000))"
say "memory after the flow (the container's cgroup, as podman stats shows it; the resident set of its processes):"
for name in postgres "${services[@]}" gateway; do
  id=$(container "$name")
  total=0
  for p in $(podman top "$id" hpid | tail -n +2); do
    # A process that ended since `podman top` listed it counts nothing.
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null || true)
    total=$((total + ${rss:-0}))
  done
  printf '  %-19s %-10s RSS %s MB\n' "$name" "$(podman stats --no-stream --format '{{.MemUsage}}' "$id" | cut -d' ' -f1)" \
    "$((total / 1024))"
done

# 6. Down, and nothing left behind.
compose down -v >/dev/null 2>&1
left=$(podman ps -a -q --filter "label=com.docker.compose.project=$project")
[ -z "$left" ] || fail "containers left after down: $left"
if podman volume ls -q | grep -q "^${project}_"; then fail "volumes left after down"; fi
if podman network ls --format '{{.Name}}' | grep -q "^${project}_"; then fail "networks left after down"; fi
say "compose down: no container, volume or network left"
say "passed in $(($(date +%s) - started)) s"
