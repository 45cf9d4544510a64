#!/usr/bin/env bash
# The inner loop: the format lint, a build with warnings as errors, and every suite that needs
# nothing but the database (the restart, memory, interop, deployment and container checks are
# `make test`'s). Under two minutes with a warm build.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
# What its suites need beyond `make run`'s (the mail suites' SMTP server): a fresh clone's
# `make check` works right after `make run`, or alone.
scripts/setup.sh --check
scripts/postgres.sh start >/dev/null
export PIER_TEST_DATABASE_URL=$(scripts/postgres.sh url)
export SWIFT_BACKTRACE=enable=no

scripts/lint.sh
scripts/build.sh
swift test --skip-build --skip RestartTests --skip FeedbackExportMemoryTests --skip SlowClientTests
