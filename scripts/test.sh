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
scripts/setup.sh --tests
scripts/postgres.sh start
export PIER_TEST_DATABASE_URL=$(scripts/postgres.sh url)
export SWIFT_BACKTRACE=enable=no

scripts/lint.sh
swift build --build-tests -Xswiftc -warnings-as-errors
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
watched swift test --skip-build --skip RestartTests --skip FeedbackExportMemoryTests
# Suites that restart the shared server, or measure this process's memory, run one at a
# time, after everything else.
for suite in PostgresTests.RestartTests AuthTests.AuthRestartTests; do
  PIER_TEST_RESTART=1 swift test --skip-build --filter "$suite"
done
PIER_TEST_ISOLATED=1 swift test --skip-build --filter FeedbackTests.FeedbackExportMemoryTests
scripts/client-package.sh
scripts/plugin-outside.sh
scripts/interop.sh
scripts/browser.sh
scripts/fuzz.sh
scripts/check-deploy.sh
scripts/check-root-home.sh
scripts/separate-hosts.sh
scripts/containers.sh
scripts/local-stack.sh
echo "all tests passed"
