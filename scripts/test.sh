#!/usr/bin/env bash
# Runs every test against a real PostgreSQL that this script starts under .pier/:
# unit and integration suites (swift test), then the suites that restart the server, an app's
# package outside the repository built on PierClient alone (scripts/client-package.sh), then the
# interoperability check of issued tokens with PyJWT against the live pier-auth executable, the
# console in headless Chromium (scripts/browser.sh),
# the deployment checks, the compose stack in real containers (scripts/containers.sh), and last
# the README's `make run` with a passkey made at its address (scripts/local-stack.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# Every stage is timed: its wall time as it ends, and a table of them all at the end (or at the
# first failure), so what the suite costs is known stage by stage.
# (A stage's command runs with errexit off, as `cmd || rc=$?` has it: a function given to it
# returns its first failure itself.)
stages=()
stage() {
  local name=$1 what=$2 started rc=0
  shift 2
  started=$(date +%s)
  "$@" || rc=$?
  local took=$(( $(date +%s) - started ))
  stages+=("$(printf '%-18s %6d s  %s' "$name" "$took" "$what")")
  echo "test: stage $name took $took s$([ "$rc" = 0 ] || echo ", and failed ($rc)")"
  if [ "$rc" != 0 ]; then table; exit "$rc"; fi
}
table() {
  echo "test: stages (wall time):"
  printf '  %s\n' "${stages[@]}"
}

stage setup "the packages the tests need (apt)" scripts/setup.sh --tests
stage postgres "PostgreSQL under .pier/" scripts/postgres.sh start
export PIER_TEST_DATABASE_URL=$(scripts/postgres.sh url)
export SWIFT_BACKTRACE=enable=no

stage lint "format, imports, settings, shell blocks, layout" scripts/lint.sh
stage build "debug build of Pier and its tests (make run's too)" scripts/build.sh
# A test that makes no progress for 5 minutes reports every thread's stack (gdb), then stops:
# a hang says where it is instead of waiting out CI's limit.
watched() {
  local log size last=-1 still=0 pid rc
  log=$(mktemp)
  "$@" > >(tee "$log") 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 10
    size=$(stat -c %s "$log")
    if [ "$size" != "$last" ]; then last=$size; still=0; else still=$((still + 10)); fi
    if [ "$still" -ge 300 ]; then
      echo "test: no output for 5 minutes; every thread's stack of the test process:" >&2
      for test in $(pgrep -f 'PierPackageTests.xctest'); do
        gdb -p "$test" -batch -ex 'thread apply all bt' 2>&1 | grep -E '^(Thread|#)' >&2 || true
      done
      pkill -f 'PierPackageTests.xctest' || true
      wait "$pid" || true
      rm -f "$log"
      return 124
    fi
  done
  rc=0
  wait "$pid" || rc=$?
  rm -f "$log"
  return "$rc"
}
stage suites "swift test: every suite but those below" \
  watched swift test --skip-build --skip RestartTests --skip FeedbackExportMemoryTests
# Suites that restart the shared server, or measure this process's memory, run one at a
# time, after everything else.
restarts() {
  for suite in PostgresTests.RestartTests AuthTests.AuthRestartTests; do
    PIER_TEST_RESTART=1 swift test --skip-build --filter "$suite" || return $?
  done
}
stage restarts "suites that restart PostgreSQL" restarts
stage memory "the export's memory, alone" env PIER_TEST_ISOLATED=1 swift test --skip-build --filter FeedbackTests.FeedbackExportMemoryTests
stage client-package "an app's package on Pier by URL; README snippets" scripts/client-package.sh
stage docs "PierClient's reference (DocC), no broken link" scripts/docs.sh
stage plugin-outside "remote config; a plugin's package outside" scripts/plugin-outside.sh
stage interop "tokens checked by PyJWT" scripts/interop.sh
stage browser "the console in headless Chromium" scripts/browser.sh
stage fuzz "the OpenAPI fuzzer" scripts/fuzz.sh
stage check-deploy "deployment files" scripts/check-deploy.sh
stage root-home "a clone in root's home" scripts/check-root-home.sh
stage separate-hosts "services on separate hosts (namespaces)" scripts/separate-hosts.sh
stage containers "the compose stack in containers" scripts/containers.sh
stage local-stack "the README's make run" scripts/local-stack.sh
table
echo "all tests passed"
