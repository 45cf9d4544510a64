#!/usr/bin/env bash
# The debug build of Pier and its tests (`make test`, `make check`), in the very configuration
# `make run` builds: SwiftPM compiles every module again when the compiler's flags differ
# (measured: `-Xswiftc -warnings-as-errors` here made `make run`'s pier-auth a 50 s build of
# its own, and `make check` after `make run` another full one). So no flag is added, and a
# warning fails the build all the same: any line the compiler prints as a warning ends it, and
# the files that warned are touched, so that the next build compiles them again and says so
# once more (an incremental build prints nothing for a file it does not compile).
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
swift build --build-tests "$@" 2>&1 | tee "$log"
warned=$(grep -oE '^/[^:]+\.swift:[0-9]+:[0-9]+: warning: ' "$log" | cut -d: -f1 | sort -u || true)
if [ -n "$warned" ] || grep -q ': warning: ' "$log"; then
  echo "build: warnings are errors in Pier; the lines above say where" >&2
  # shellcheck disable=SC2086
  [ -z "$warned" ] || touch $warned
  exit 1
fi
