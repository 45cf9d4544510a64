# What every bench script does first, sourced (not run) from the repository root:
#   bench_prepare DATABASE PRODUCT...   set up, install wrk, build the products (release), start
#                                       PostgreSQL, create a fresh DATABASE; sets $bin, $admin,
#                                       $url, $work and $pids (killed, $work removed, on exit)
#   bench_serve PORT NAME ENV...        runs $bin/pier-NAME serve --migrate with ENV, logging to
#                                       $work/NAME.log, and waits until it is ready
#   bench_users PORT COUNT FILE         registers COUNT users through pier-auth, one access token per line
#   bench_rotating METHOD BODY > FILE   a wrk script sending each request with the next token of
#                                       $work/tokens (BODY empty: none)
#   rps / tps / ratio                   read wrk's requests/s, pgbench's tps; divide two figures
bench_prepare() {
  local database=$1
  shift
  scripts/setup.sh
  command -v wrk >/dev/null || { local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo; $sudo apt-get install -y -qq wrk >/dev/null; }
  # Linked as the containers link them (scripts/containers.sh): the Swift runtime in the binary.
  for product in "$@"; do swift build -c release --static-swift-stdlib --product "$product" >/dev/null; done
  bin=$(swift build -c release --static-swift-stdlib --show-bin-path)
  scripts/postgres.sh start
  admin=$(scripts/postgres.sh url)
  PGOPTIONS="-c client_min_messages=warning" psql "$admin" -qc "DROP DATABASE IF EXISTS $database WITH (FORCE)" \
    -c "CREATE DATABASE $database" >/dev/null
  url="${admin%/*}/$database"
  work=$(mktemp -d)
  pids=()
  trap bench_cleanup EXIT
}

bench_cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}

bench_serve() {
  local port=$1 name=$2
  shift 2
  env PIER_DATABASE_URL="$url" PIER_PORT="$port" PIER_DATA_DIR="$work" "$@" "$bin/pier-$name" serve --migrate \
    > "$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && return 0; sleep 0.1; done
  echo "pier-$name did not become ready; its log:" >&2
  cat "$work/$name.log" >&2
  return 1
}

bench_users() {
  local port=$1 count=$2 file=$3
  for i in $(seq 1 "$count"); do
    curl -sf -XPOST "http://127.0.0.1:$port/auth/register" -H 'Content-Type: application/json' \
      -d "{\"email\":\"bench$i@example.com\",\"password\":\"bench passphrase $i\"}" \
      | python3 -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])' >> "$file"
  done
}

bench_rotating() {
  local method=$1 body=$2
  cat <<LUA
local tokens = {}
for line in io.lines("$work/tokens") do tokens[#tokens + 1] = line end
local counter = 0
local body = [[$body]]
request = function()
  counter = counter + 1
  local headers = { ["Authorization"] = "Bearer " .. tokens[(counter % #tokens) + 1] }
  if body == "" then return wrk.format("$method", nil, headers) end
  headers["Content-Type"] = "application/json"
  return wrk.format("$method", nil, headers, body)
end
LUA
}

rps() { awk '/Requests\/sec/ {print $2}'; }
tps() { awk '/^tps/ {print $3}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
